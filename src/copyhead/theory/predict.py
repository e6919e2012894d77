"""Former home of the action models, the P scan, the grid ranges and scaling; kept as a re-export so
that existing imports keep working. New code imports from ``models``, ``scan``, ``ranges`` and
``scaling`` (docs/theory.md, "Code map")."""
from __future__ import annotations

from copyhead.config import ActionParams, theory_params

from .models import ActionModel, LinearModel, SoftmaxModel, hess_origin  # noqa: F401
from .ranges import auto_landscape_P, beta_range, exact_P_grid, linear_range, make_model  # noqa: F401
from .scaling import closed_form_transitions, scaling  # noqa: F401
from .scan import analyse, landscape, local_minima_near, scan  # noqa: F401


def params_from_config(theory_cfg: dict, prior: str | None = None) -> ActionParams:
    """The action's parameters from ``config.theory_config(cfg)`` (now typed: ``ActionParams``), with the
    configured prior unless ``prior`` is given."""
    p = theory_params(theory_cfg).action
    return p if prior is None else p.replace(prior=prior)
