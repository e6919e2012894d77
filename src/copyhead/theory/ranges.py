"""Grid ranges: the order-parameter box of each action model and the P values it is evaluated at
(docs/theory.md, Sec. 5).

``make_model`` builds an action model on a box sized from the saddle at the largest P (``linear_range``,
``beta_range``); ``exact_P_grid`` is the integer P grid of the exact dataset average, ``auto_landscape_P``
the landscape P chosen from the predicted transitions.

:data:`FAMILIES` holds the theory family of each attention variant (the variant's ``theory``, in the
registry ``copyhead.attention``): its action model, its grid box and its landscape P.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from copyhead.attention import variant
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


def _linear_landscape_P(tr_res, lo, hi):
    """Before the onset, the pooling stage, the copy stage."""
    Pc, Px = tr_res["P_onset"], tr_res["P_crossover"]
    if np.isfinite(Pc) and np.isfinite(Px):
        return [0.6 * Pc, np.sqrt(Pc * Px), 2.0 * Px]
    return list(np.geomspace(lo, hi, 5)[1:4])


def _softmax_landscape_P(tr_res, lo, hi):
    """Five values spanning the spinodals through P*."""
    a, s, b = tr_res["P_spinodal_low"], tr_res["P_star"], tr_res["P_spinodal_high"]
    if np.isfinite(s):
        a = a if np.isfinite(a) else 0.9 * s
        b = b if np.isfinite(b) else 1.1 * s
        return [0.95 * a, 0.5 * (a + s), s, 0.5 * (s + b), 1.05 * b]
    return list(np.geomspace(lo, hi, 7)[1:6])


@dataclass(frozen=True)
class TheoryFamily:
    """The theory functions of a family of attention variants: the action on its order-parameter grid."""
    model: Callable         # (p, grid_n, box, exact, centred) -> the action model (copyhead.theory.models)
    box: Callable           # (p, P_ref) -> its grid's box sized from the saddle at P_ref
    union: Callable         # (box, box) -> the smallest box holding both
    landscape_P: Callable   # (transitions, P_lo, P_hi) -> landscape P values chosen from the transitions
    variables: tuple        # the model's order-parameter fields written per prediction curve
    grid_coords: tuple      # (name, long name) of each grid axis of the landscapes
    mean_measure: str       # the measure of the posterior mean over the grid
    coefficient_note: str   # what the coefficients m1, mP mean for the family ("" when nothing to add)


FAMILIES = {
    "linear": TheoryFamily(
        model=lambda p, grid_n, R, exact, centred: LinearModel(p, grid_n, R, exact, centred),
        box=linear_range, union=max, landscape_P=_linear_landscape_P,
        variables=("c1", "cG", "m1", "mP"), grid_coords=(("c1_grid", "c1 grid"), ("cG_grid", "cG grid")),
        mean_measure="uniform on the (c1, cG) grid restricted to the gauge half-plane c1 >= 0",
        coefficient_note=""),
    "softmax": TheoryFamily(
        model=lambda p, grid_n, b, exact, centred: SoftmaxModel(p, grid_n, *b, exact, centred),
        box=beta_range, union=lambda a, b: (min(a[0], b[0]), max(a[1], b[1])), landscape_P=_softmax_landscape_P,
        variables=("c1", "cG", "m1", "mP", "beta"),
        grid_coords=(("beta_grid", "softmax copy logit beta grid"),),
        mean_measure="uniform in beta",
        coefficient_note=(" (softmax: A = softmax(beta I) = (m1 J + mP I)/L; the figures plot â1 = m1 and "
                          "âG = mP/L, docs/theory.md Sec. 4.1)")),
}


def family(attention) -> TheoryFamily:
    """The theory family of an attention variant (ValueError for a name that is not one)."""
    return FAMILIES[variant(attention).theory]


def theory_grid(th: TheoryParams, attention, P_more=()):
    """(P_ref, ranges) of the grid of results/theory/{attention}.nc: sized at the largest P of the dense
    and the exact grids, wide enough for both priors (one grid, so the exact statistics are shared; the
    same-dataset theory uses it too, with its P in ``P_more``: larger P widen the grid)."""
    P_ref = max(th.P_max, max(th.exact.P) if th.exact.enabled else 0, *P_more)
    p = th.action
    po = p.replace(prior=[q for q in PRIORS if q != p.prior][0])
    f = family(attention)
    return P_ref, f.union(f.box(p, P_ref), f.box(po, P_ref))


def make_model(attention, p: ActionParams, grid_n, P_ref, exact: ExactAverage | None = None, centred=False,
               ranges=None):
    """LinearModel or SoftmaxModel on ``ranges`` (R, or (β_lo, β_hi)); by default sized at P_ref."""
    f = family(attention)
    return f.model(p, grid_n, ranges if ranges is not None else f.box(p, P_ref), exact, centred)


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
    vals = family(attention).landscape_P(tr_res, lo, hi)
    return sorted({float(np.clip(round(v, 3), lo, hi)) for v in vals})
