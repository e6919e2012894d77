"""Typed theory parameters (:class:`TheoryParams`), built once from the theory subset of the config."""
from __future__ import annotations

import dataclasses as _dc
import json

from .runs import _typed
from .schema import ConfigError, schema, schema_problems

# ==== typed theory parameters (TheoryParams): owned by the theory work ====
# The theory's parameters, typed and normalised once (docs/theory.md): `theory_params(theory_config(cfg))`.
# Integer fields hold ints (an integral 32.0 becomes 32), real fields floats (so `g_Q: 1` and `g_Q: 1.0`
# give equal, hashable params), P lists read as sets are sorted without repeats. The defaults of the
# optional keys (scaling V and d_k) are the field defaults below, and nowhere else.
_P_SET = {"as_set": True}    # field metadata: a P list read as a set (sorted, repeats dropped)


class _Normalised:
    """Frozen-dataclass mixin: every field is coerced to its annotated type on construction (also by
    ``dataclasses.replace``)."""

    def __post_init__(self):
        for f in _dc.fields(self):
            object.__setattr__(self, f.name, _typed(getattr(self, f.name), f.type, f.name,
                                                    f.metadata.get("as_set", False)))


@_dc.dataclass(frozen=True)
class ActionParams(_Normalised):
    """What the order-parameter action S depends on (docs/theory.md, Sec. 1-4): the task (V, L), the
    model (d_k, g_Q, g_K, g_O, sigma2) and the prior over the scores."""
    V: int
    L: int
    d_k: int
    g_Q: float
    g_K: float
    g_O: float
    sigma2: float
    prior: str

    def replace(self, **changes) -> "ActionParams":
        """A copy with some fields changed (and normalised), e.g. ``p.replace(prior="gaussian")``."""
        return _dc.replace(self, **changes)


@_dc.dataclass(frozen=True)
class ExactSettings(_Normalised):
    """``theory.exact``: the action averaged exactly over n_datasets nested datasets at the integer P."""
    n_datasets: int
    P: tuple[int, ...] = _dc.field(metadata=_P_SET)
    seed: int

    @property
    def enabled(self) -> bool:
        return self.n_datasets > 0 and len(self.P) > 0


@_dc.dataclass(frozen=True)
class LandscapeP(_Normalised):
    """``theory.landscape_P``: P of the action landscapes per attention type (empty: chosen from the
    predicted transitions)."""
    linear: tuple[float, ...] = _dc.field(metadata=_P_SET)
    softmax: tuple[float, ...] = _dc.field(metadata=_P_SET)

    def of(self, attention: str) -> tuple[float, ...]:
        return getattr(self, attention)


@_dc.dataclass(frozen=True)
class ScalingSettings(_Normalised):
    """``theory.scaling``: values of L, V and d_k (one varied at a time) of the scaling study, in order."""
    L: tuple[int, ...]
    V: tuple[int, ...] = ()
    d_k: tuple[int, ...] = ()


@_dc.dataclass(frozen=True)
class TheoryParams(_Normalised):
    """Everything ``copyhead theory`` depends on, built by :func:`theory_params`."""
    action: ActionParams
    P_min: float
    P_max: float
    n_P: int
    grid_n: int
    landscape_P: LandscapeP
    exact: ExactSettings
    scaling: ScalingSettings


def _theory_subset_schema() -> dict:
    """The schema of :func:`theory_config`'s subset, cut from the config schema."""
    root = schema()
    props = root["properties"]
    model_keys = [f.name for f in _dc.fields(ActionParams) if f.name not in ("V", "L", "prior")]

    def part(section, keys):
        return {"type": "object", "additionalProperties": False, "required": list(keys),
                "properties": {k: props[section]["properties"][k] for k in keys}}

    return {"$defs": root.get("$defs", {}), "type": "object", "additionalProperties": False,
            "required": ["task", "model", "theory"],
            "properties": {"task": part("task", ("V", "L")), "model": part("model", model_keys),
                           "theory": props["theory"]}}


def theory_params(theory_cfg: dict) -> TheoryParams:
    """Typed theory parameters from :func:`theory_config`'s subset (checked against the schema, so a
    hand-written ``--theory-config`` gets the same readable errors as config.yaml)."""
    sub = _theory_subset_schema()
    msgs = sorted(schema_problems(json.loads(json.dumps(theory_cfg)), sub))
    if msgs:
        raise ConfigError("invalid theory config:\n  - " + "\n  - ".join(msgs))
    t, m, th = theory_cfg["task"], theory_cfg["model"], theory_cfg["theory"]
    return TheoryParams(
        action=ActionParams(V=t["V"], L=t["L"], prior=th["prior"], **m),
        P_min=th["P_min"], P_max=th["P_max"], n_P=th["n_P"], grid_n=th["grid_n"],
        landscape_P=LandscapeP(**th["landscape_P"]), exact=ExactSettings(**th["exact"]),
        scaling=ScalingSettings(**th["scaling"]))
