"""Agreement of experiment and theory by a number: z-scores and their summaries.

Pure numpy/scipy, arrays in / arrays or numbers out. z = (experiment − theory)/error per point, with
error = √(err_exp² + err_theory²); per curve or attention type a summary: RMS z, χ² = Σ z² with its
degrees of freedom (the number of points, minus fitted parameters: the theory curves have none), χ²/dof, the
p-value of χ² and the worst point. Typically restricted to points away from the transitions
(:func:`away_from`), where a sharp curve sampled on a grid is not a fair comparison.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def interp_log_P(P, P_grid, y_grid) -> np.ndarray:
    """A theory curve y(P_grid) at the points P, linear in log P; NaN outside the grid or where y is NaN."""
    P_grid, y_grid = np.asarray(P_grid, float), np.asarray(y_grid, float)
    ok = np.isfinite(P_grid) & np.isfinite(y_grid) & (P_grid > 0)
    order = np.argsort(P_grid[ok])
    xg, yg = np.log(P_grid[ok][order]), y_grid[ok][order]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(np.asarray(P, float))
    if len(xg) == 0:
        return np.full(np.shape(x), np.nan)
    return np.interp(x, xg, yg, left=np.nan, right=np.nan)


def z_scores(experiment, theory, error, theory_error=None) -> np.ndarray:
    """(experiment − theory)/√(error² + theory_error²), elementwise (broadcasting); NaN where the combined
    error is not positive and finite (e.g. a single seed without an error bar)."""
    e = np.asarray(experiment, float) - np.asarray(theory, float)
    var = np.asarray(error, float) ** 2
    if theory_error is not None:
        var = var + np.asarray(theory_error, float) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(var) & (var > 0), e / np.sqrt(var), np.nan)


@dataclass(frozen=True)
class Agreement:
    """Summary of z-scores: n points, RMS z, χ², dof, χ²/dof, p = P(χ²_dof ≥ χ²), and the worst point
    (its index into the z array and its z)."""
    n: int
    rms_z: float
    chi2: float
    dof: int
    chi2_per_dof: float
    p_value: float
    worst_index: tuple | None
    worst_z: float


def agreement_summary(z, mask=None, n_params: int = 0) -> Agreement:
    """Summarise the finite z-scores (those where ``mask`` is True, if given): RMS z, χ²/dof with
    dof = n − ``n_params``, its p-value, and the point of largest |z|."""
    from scipy.stats import chi2 as chi2_dist
    z = np.asarray(z, float)
    use = np.isfinite(z) if mask is None else np.isfinite(z) & np.broadcast_to(np.asarray(mask, bool), z.shape)
    n = int(use.sum())
    if n == 0:
        return Agreement(0, float("nan"), float("nan"), 0, float("nan"), float("nan"), None, float("nan"))
    zz = z[use]
    chi2 = float((zz ** 2).sum())
    dof = n - int(n_params)
    flat = int(np.argmax(np.where(use, np.abs(z), -np.inf)))
    worst = tuple(int(i) for i in np.unravel_index(flat, z.shape))
    return Agreement(n, float(np.sqrt(chi2 / n)), chi2, dof, chi2 / dof if dof > 0 else float("nan"),
                     float(chi2_dist.sf(chi2, dof)) if dof > 0 else float("nan"), worst, float(z[worst]))


def away_from(P, transitions, factor: float = 1.5, windows=()) -> np.ndarray:
    """True for the P outside [T/factor, T·factor] of every finite transition point T and outside
    [lo/factor, hi·factor] of every window (lo, hi) with finite edges (e.g. the spinodal window of a
    first-order transition, where two minima coexist)."""
    P = np.asarray(P, float)
    out = np.ones(P.shape, bool)
    for T in np.atleast_1d(np.asarray(transitions, float)):
        if np.isfinite(T):
            out &= (P < T / factor) | (P > T * factor)
    for lo, hi in windows:
        if np.isfinite(lo) and np.isfinite(hi):
            out &= (P < min(lo, hi) / factor) | (P > max(lo, hi) * factor)
    return out
