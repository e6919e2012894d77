"""Transition points against L, V and d_k, closed form (docs/theory.md, Sec. 6)."""
from __future__ import annotations

import numpy as np

from copyhead.config import ActionParams

from .models import LinearModel
from .ranges import make_model
from .scan import analyse
from .transitions import TRANSITION_KEYS



def closed_form_transitions(attention, p: ActionParams, grid_n=161, n_P=120):
    """Transition points of the closed-form action for one parameter set, with an automatic P range
    (used by ``scaling``): [P_c/8, 40 P_c] around the linear Hessian instability P_c (Eq. (19));
    returns ``transitions.classify``'s dict."""
    lin = LinearModel(p, 41, 1.0)
    Ps = np.geomspace(1e-3, 1e7, 101) * p.sigma2
    vals = np.array([lin.hess_origin(P)[0][0] for P in Ps])
    k = np.where((vals[:-1] > 0) & (vals[1:] <= 0))[0]
    Pc = Ps[k[0] + 1] if len(k) else 100.0 * p.sigma2
    P_grid = np.geomspace(Pc / 8, Pc * 40, n_P)
    model = make_model(attention, p, grid_n, P_grid[-1])
    return analyse(model, P_grid)[2]


def scaling(p: ActionParams, attention, L=(), V=(), d_k=(), grid_n=161, n_P=120):
    """Transition points of one attention type vs L, V and d_k (one varied at a time, others from p).

    Returns {name: {"values", "P_onset", "P_crossover", "P_fastest_growth", "P_star", "P_spinodal_low",
    "P_spinodal_high"}} (lists, NaN where not applicable), closed-form action (Sec. 6).
    """
    out = {}
    for name, vals in (("L", L), ("V", V), ("d_k", d_k)):
        if not len(vals):
            continue
        rows = {"values": [float(v) for v in vals], **{k: [] for k in TRANSITION_KEYS}}
        for v in vals:
            res = closed_form_transitions(attention, p.replace(**{name: v}), grid_n, n_P)
            for k in TRANSITION_KEYS:
                rows[k].append(float(res[k]))
        out[name] = rows
    return out
