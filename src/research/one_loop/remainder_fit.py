"""What the one loop leaves at the size people train (docs/one_loop.md, Section 0b), in numbers: the remainder
of the measured ĉG gap after the pooling-sector shift (Eq. (37), the most complete linear correction), across
the three linear studies, against L/d_k.

The one loop is the first term of an expansion in the transverse fluctuations, whose size per mode is set
by 1/d_k and whose number of modes by L²; so what it leaves should fall faster than its own shift as d_k
grows at fixed L, and grow with L/d_k. This module measures that, with the measured errors only:

- ``points``: one row per distinct (L, d_k, P/P_ref) of the finite-size (L = 16, d_k = 16…256), scaling
  (d_k = 2L) and converged (L = d_k = 32) studies: the measured gap, the pooling-sector shift, the remainder
  r = gap − shift and r/shift;
- ``relative_fit``: r/shift = a + b (L/d_k), weighted least squares over the sizes with d_k ≥ 2L at one
  P/P_ref; a is what the one loop misses at its own order, b the next order relative to it, and the law's
  value at d_k = L is tested against the d_k = L points, which the fit does not use.

Pure functions of the one-loop netCDF files (``research.one_loop.compare``); the page's Markdown
lines are ``research.one_loop.page_remainder``'s, the figure ``research.one_loop.figures.draw_remainder``.
"""
from __future__ import annotations

import numpy as np

from . import compare as cmp

VARIANT = cmp.POOLING        # the correction whose remainder is measured
PARAM = "cG"                 # the copy side's order parameter (the RMS z at the default size is its)
LAW_RATIO = 2.0              # P/P_ref where the scaling is fitted (copy side, on the studies' grid)
NEAR_RATIO = 1.35            # P/P_ref next to the crossover (the studies' grid)
MIN_DK_OVER_L = 2            # the fit's sizes; d_k = L is the test
COPY_SIDE = 1.2              # P/P_ref from which the converged study's points are the copy side
LINEAR = ("finite_size", "finite_L", "converged")


def points(named):
    """Rows (dicts) of the linear studies in ``named`` ((key, ds, by, what) as on the page) that have the
    pooling sector: study, L, d_k, P, ratio (P/P_ref), gap ± err, shift, remainder r = gap − shift and
    r/shift of ĉG with its measured error (q_err = err/|shift|), and whether the point is usable (a measured
    gap, the correction not flagged). A (L, d_k, ratio) met twice (the scaling study's L = 16 is the
    finite-size study's d_k = 32) is kept once."""
    rows, seen = [], set()
    for key, ds, _, _ in named:
        if key not in LINEAR or ds is None or f"mean_{VARIANT}" not in ds:
            continue
        sh = cmp.shift(ds, VARIANT).sel(param=PARAM)
        ok = cmp.usable(ds, variant=VARIANT)
        for x in ds["x"].values:
            L, d_k = int(ds["L"].sel(x=x)), int(ds["d_k"].sel(x=x))
            for ratio in ds["ratio"].values:
                s = ds.sel(x=x, ratio=ratio)
                tag = (L, d_k, round(float(ratio), 2))
                if tag in seen or not np.isfinite(float(s["P"])):
                    continue
                seen.add(tag)
                gap, err = float(s["gap"].sel(param=PARAM)), float(s["error"].sel(param=PARAM))
                shift = float(sh.sel(x=x, ratio=ratio))
                rows.append({"study": key, "L": L, "d_k": d_k, "P": float(s["P"]), "ratio": float(ratio),
                             "gap": gap, "err": err, "shift": shift, "r": gap - shift,
                             "r_over_shift": (gap - shift) / shift if shift else np.nan,
                             "q_err": err / abs(shift) if shift else np.nan,
                             "usable": bool(ok.sel(x=x, ratio=ratio))})
    return rows


def at_ratio(rows, ratio):
    return [p for p in rows if p["usable"] and np.isclose(p["ratio"], ratio) and np.isfinite(p["r"])]


def relative_fit(rows, ratio=LAW_RATIO, min_dk_over_L=MIN_DK_OVER_L):
    """q = r/shift = a + b (L/d_k) over the usable points at ``ratio`` with d_k ≥ min_dk_over_L·L: weighted
    least squares (σ_q = measured error/|shift|), the errors scaled by √(χ²/dof) where that is above 1. a is
    what the one loop misses at its own order (1/d_k), b the next order relative to it. Returns a, b, their
    errors, chi2_dof, n, the law's value at d_k = L with its error, and the points used; None below 3 points."""
    use = [p for p in at_ratio(rows, ratio) if p["d_k"] >= min_dk_over_L * p["L"] and p["shift"]]
    if len(use) < 3:
        return None
    u = np.array([p["L"] / p["d_k"] for p in use])
    q = np.array([p["r_over_shift"] for p in use])
    w = np.array([p["q_err"] ** -2.0 for p in use])
    X = np.c_[np.ones(len(u)), u]
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    ab = cov @ X.T @ (w * q)
    chi2 = float((w * (q - X @ ab) ** 2).sum() / max(len(u) - 2, 1))
    cov = cov * max(chi2, 1.0)
    one = np.array([1.0, 1.0])
    return {"a": float(ab[0]), "a_err": float(np.sqrt(cov[0, 0])), "b": float(ab[1]),
            "b_err": float(np.sqrt(cov[1, 1])), "chi2_dof": chi2, "n": len(u), "at_1": float(one @ ab),
            "at_1_err": float(np.sqrt(one @ cov @ one)), "points": use}


def law(fit, L_over_dk):
    """The fitted relative remainder a + b (L/d_k)."""
    return fit["a"] + fit["b"] * np.asarray(L_over_dk, dtype=float)


def bracket(rows, ratio, L, d_k):
    """The converged study's grid is not the studies' one: its two usable points at (L, d_k) around
    ``ratio`` (below, above), or None."""
    pts = sorted((p for p in rows if p["usable"] and p["L"] == L and p["d_k"] == d_k and p["study"] == "converged"),
                 key=lambda p: p["ratio"])
    lo = [p for p in pts if p["ratio"] <= ratio]
    hi = [p for p in pts if p["ratio"] >= ratio]
    return (lo[-1], hi[0]) if lo and hi else None
