"""Grid ranges: the order-parameter box of each action model and the P values it is evaluated at
(docs/theory.md, Sec. 5).

``make_model`` builds an action model on a box sized from the saddle at the largest P (``linear_range``,
``beta_range``); ``exact_P_grid`` is the integer P grid of the exact dataset average, ``auto_landscape_P``
the landscape P chosen from the predicted transitions.
"""
from __future__ import annotations

import numpy as np

from copyhead.config import ActionParams, TheoryParams

from .action import ExactAverage
from .models import LinearModel, SoftmaxModel
from .prior import PRIORS
from .scan import argmin_refined


def linear_range(p: ActionParams, P_ref, grid_n=81):
    """Half-width R of the (c1, cG) box: 1.4× the largest saddle component at P_ref (Sec. 5)."""
    R = 1.0
    for _ in range(12):
        m = LinearModel(p, grid_n, R)
        x = m.canon(argmin_refined(m, P_ref, m.grid(P_ref))[0])
        ext = float(np.max(np.abs(x)))
        if ext < 0.7 * R:
            break
        R *= 2
    floor = 4.0 * np.sqrt(p.g_Q * p.g_K / p.d_k)
    return max(1.4 * ext, floor, 0.05)


def beta_range(p: ActionParams, P_ref, grid_n=201):
    """(β_lo, β_hi) of the softmax grid: β_hi = 1.4× the saddle at P_ref, at least 3 (Sec. 5)."""
    hi = 4.0
    for _ in range(12):
        m = SoftmaxModel(p, grid_n, -1.0, hi)
        b = float(argmin_refined(m, P_ref, m.grid(P_ref))[0][0])
        if b < 0.7 * hi:
            break
        hi *= 2
    return -0.5, max(3.0, 1.4 * b)


def theory_grid(th: TheoryParams, attention, P_more=()):
    """(P_ref, ranges) of the grid of results/theory/{attention}.nc: sized at the largest P of the dense
    and the exact grids, wide enough for both priors (one grid, so the exact statistics are shared; the
    same-dataset theory uses it too, with its P in ``P_more``: larger P widen the grid)."""
    P_ref = max(th.P_max, max(th.exact.P) if th.exact.enabled else 0, *P_more)
    p = th.action
    po = p.replace(prior=[q for q in PRIORS if q != p.prior][0])
    if attention == "linear":
        return P_ref, max(linear_range(p, P_ref), linear_range(po, P_ref))
    (lo, hi), (lo2, hi2) = beta_range(p, P_ref), beta_range(po, P_ref)
    return P_ref, (min(lo, lo2), max(hi, hi2))


def make_model(attention, p: ActionParams, grid_n, P_ref, exact: ExactAverage | None = None, centred=False,
               ranges=None):
    """LinearModel or SoftmaxModel on ``ranges`` (R, or (β_lo, β_hi)); by default sized at P_ref."""
    if attention == "linear":
        R = ranges if ranges is not None else linear_range(p, P_ref)
        return LinearModel(p, grid_n, R, exact, centred)
    lo, hi = ranges if ranges is not None else beta_range(p, P_ref)
    return SoftmaxModel(p, grid_n, lo, hi, exact, centred)


def exact_P_grid(P_list, max_points=200):
    """Integer P grid for exact-average transitions: all integers in [min, max] of P_list; when there are
    more than max_points, at most max_points log-spaced integers plus every P of P_list (the output reads
    its values at the configured P, so they must be grid points)."""
    lo, hi = int(min(P_list)), int(max(P_list))
    if hi - lo + 1 <= max_points:
        return np.arange(lo, hi + 1, dtype=float)
    return np.union1d(np.round(np.geomspace(lo, hi, max_points)), np.asarray(P_list, int)).astype(float)


def auto_landscape_P(attention, tr_res, P_grid):
    """Landscape P values chosen from the transitions (linear: before onset, pooling, copy stage;
    softmax: five values spanning the spinodals through P*), clipped to the P grid."""
    lo, hi = float(np.min(P_grid)), float(np.max(P_grid))
    if attention == "linear":
        Pc, Px = tr_res["P_onset"], tr_res["P_crossover"]
        if np.isfinite(Pc) and np.isfinite(Px):
            vals = [0.6 * Pc, np.sqrt(Pc * Px), 2.0 * Px]
        else:
            vals = list(np.geomspace(lo, hi, 5)[1:4])
    else:
        a, s, b = tr_res["P_spinodal_low"], tr_res["P_star"], tr_res["P_spinodal_high"]
        if np.isfinite(s):
            a = a if np.isfinite(a) else 0.9 * s
            b = b if np.isfinite(b) else 1.1 * s
            vals = [0.95 * a, 0.5 * (a + s), s, 0.5 * (s + b), 1.05 * b]
        else:
            vals = list(np.geomspace(lo, hi, 7)[1:6])
    return sorted({float(np.clip(round(v, 3), lo, hi)) for v in vals})
