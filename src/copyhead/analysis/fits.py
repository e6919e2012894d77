"""Fits of the cross-study comparisons (copyhead.studies) and the theory's maps: a weighted straight line in
1/size, log-log slopes and power laws, and the error of one agreement row's experiment − theory. Pure
numpy, numbers in / dicts out."""
from __future__ import annotations

import math

import numpy as np


def row_error(r: dict) -> float:
    """The error of experiment − theory of one agreement row: its experimental error (NaN when it has none)
    and the theory's own error (0 when it has none) combined in quadrature."""
    return math.hypot(r["error"] if r["error"] is not None else math.nan, r.get("theory_error") or 0.0)


def fit_inverse_dk(d_k, gap, err) -> dict:
    """Weighted least squares of gap = a + b/d_k (weights 1/err²; any size in place of d_k): a (the
    size → ∞ value) ± its error, b ± its error, χ²/dof and n; the errors are scaled by √(χ²/dof) when that
    exceeds 1. NaN with fewer than two usable points."""
    x, y, e = 1.0 / np.asarray(d_k, float), np.asarray(gap, float), np.asarray(err, float)
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(e) & (e > 0)
    x, y, e = x[ok], y[ok], e[ok]
    if len(x) < 2:
        return {"a": math.nan, "a_err": math.nan, "b": math.nan, "b_err": math.nan, "chi2_dof": math.nan,
                "n": int(len(x))}
    X = np.stack([np.ones_like(x), x], 1) / e[:, None]
    coef, *_ = np.linalg.lstsq(X, y / e, rcond=None)
    cov = np.linalg.inv(X.T @ X)
    dof = len(x) - 2
    chi2 = float(np.sum(((y - coef[0] - coef[1] * x) / e) ** 2))
    scale = max(1.0, chi2 / dof) if dof > 0 else 1.0
    return {"a": float(coef[0]), "a_err": float(math.sqrt(cov[0, 0] * scale)), "b": float(coef[1]),
            "b_err": float(math.sqrt(cov[1, 1] * scale)), "chi2_dof": chi2 / dof if dof > 0 else math.nan,
            "n": int(len(x))}


def loglog_slope(x, y) -> float:
    """The exponent k of y ∝ x^k by least squares in log-log (unweighted; the studies' scaling statements);
    NaN with fewer than two points with positive finite x and y."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0]) if ok.sum() >= 2 else math.nan


def power_law_fit(L, V, ratio) -> tuple[float, float, float]:
    """ratio ∝ L^b V^c by least squares of ln ratio = a + b ln L + c ln V over an (L, V) grid (``ratio`` of
    shape (len(L), len(V)); non-finite cells left out): (b, c, the rms residual in ln)."""
    lnL, lnV = np.meshgrid(np.log(np.asarray(L, float)), np.log(np.asarray(V, float)), indexing="ij")
    r = np.asarray(ratio, float)
    ok = np.isfinite(r)
    X = np.stack([np.ones(ok.sum()), lnL[ok], lnV[ok]], 1)
    coef, *_ = np.linalg.lstsq(X, np.log(r[ok]), rcond=None)
    return float(coef[1]), float(coef[2]), float(np.sqrt(np.mean((X @ coef - np.log(r[ok])) ** 2)))
