"""What the one loop leaves at the size people train (docs/one_loop.md, Section 0b): the remainder of the
measured ĉG gap after the pooling-sector shift (Eq. (37), the most complete linear correction), across the
three linear studies, against L/d_k.

The one loop is the first term of an expansion in the transverse fluctuations, whose size per mode is set
by 1/d_k and whose number of modes by L²; so what it leaves should fall faster than its own shift as d_k
grows at fixed L, and grow with L/d_k. This module measures that, with the measured errors only:

- ``points``: one row per distinct (L, d_k, P/P_ref) of the finite-size (L = 16, d_k = 16…256), scaling
  (d_k = 2L) and converged (L = d_k = 32) studies: the measured gap, the pooling-sector shift, the remainder
  r = gap − shift and r/shift;
- ``relative_fit``: r/shift = a + b (L/d_k), weighted least squares over the sizes with d_k ≥ 2L at one
  P/P_ref; a is what the one loop misses at its own order, b the next order relative to it, and the law's
  value at d_k = L is tested against the d_k = L points, which the fit does not use.

Pure functions of the one-loop netCDF files (``copyhead.analysis.one_loop_compare``); Markdown lines for the
page and the arrays for ``copyhead.figures.one_loop.draw_remainder``.
"""
from __future__ import annotations

import numpy as np

from ..analysis import one_loop_compare as cmp
from .format import g
from .one_loop_tables import NAME, f2

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


def _q(p):
    """r/shift with its measured error."""
    return f"{g(p['r_over_shift'], 2)} ± {g(p['q_err'], 1)}"


def _tests(rows, fit):
    """The d_k = L points the fit does not use: the studies' at LAW_RATIO, and the converged study's two
    points around it (a bracket), each as r/shift against the law's a + b."""
    out = []
    for p in at_ratio(rows, LAW_RATIO):
        if p["d_k"] == p["L"]:
            out.append(f"d_k = L = {p['L']}: {_q(p)}")
    for L in sorted({p["L"] for p in rows if p["study"] == "converged"}):
        b = bracket(rows, LAW_RATIO, L, L)
        if b:
            out.append(f"the default size (L = d_k = {L}): {_q(b[0])} at P/P_ref = {g(b[0]['ratio'], 3)} and "
                       f"{_q(b[1])} at {g(b[1]['ratio'], 3)}")
    return out


def _sigma(x, err):
    return g(abs(x) / err, 2) if err > 0 else "∞"


def answer_line(rows, fit):
    """One line for the page's answer: why the aim fails at the default size, from the fit (``relative_fit`` of
    ``rows``, the ``points``) and the d_k = L points."""
    if fit is None:
        return []
    conv = [p for p in rows if p["usable"] and p["study"] == "converged" and p["ratio"] >= COPY_SIDE]
    line = (f"- **Why the aim fails at the default size** (Section 0b): what the pooling-sector one loop leaves of the "
            f"{NAME[PARAM]} gap at {g(LAW_RATIO)} P_ref, relative to its shift, grows with L/d_k: r/shift = "
            f"{g(fit['a'], 2)} ± {g(fit['a_err'], 1)} + ({g(fit['b'], 2)} ± {g(fit['b_err'], 1)}) L/d_k over the "
            f"{fit['n']} sizes with d_k ≥ {MIN_DK_OVER_L}L — the one loop's own 1/d_k term is right within "
            f"{_sigma(fit['a'], fit['a_err'])} σ, the next order is {_sigma(fit['b'], fit['b_err'])} σ from 0. At "
            f"d_k = L the law gives {g(fit['at_1'], 2)} ± {g(fit['at_1_err'], 1)} and the measured "
            + "; ".join(_tests(rows, fit)) + ": the orders beyond one loop are nearly as large as the one loop itself there")
    if conv:
        worst = max(conv, key=lambda p: abs(p["r"]) / p["err"])
        line += (f". At the default size the copy side's remainders ({f2(min(p['r'] for p in conv), 4)} to "
                 f"{f2(max(p['r'] for p in conv), 4)}) are {g(min(abs(p['r']) / p['err'] for p in conv), 2)}–"
                 f"{g(abs(worst['r']) / worst['err'], 3)} measured errors (largest at P = {g(worst['P'])}): no "
                 "one-loop variant can reach RMS z ≤ 5 there")
    return [line + "."]


def _largest(rows, k=3):
    """The converged study's k largest |r| on the copy side: 'r at P/P_ref x, ...'."""
    conv = sorted((p for p in rows if p["usable"] and p["study"] == "converged" and p["ratio"] >= COPY_SIDE),
                  key=lambda p: -abs(p["r"]))[:k]
    return ", ".join(f"{f2(p['r'], 4)} at P/P_ref {g(p['ratio'], 3)}" for p in conv)


def _row(p):
    return (f"| {p['study'].replace('_', ' ')} | {p['L']} | {p['d_k']} | {g(p['L'] / p['d_k'], 3)} | {g(p['P'])} | "
            f"{g(p['ratio'], 3)} | {f2(p['gap'], 4)} ± {p['err']:.4f} | {f2(p['shift'], 4)} | {f2(p['r'], 4)} | "
            f"{_q(p)} |")


def section(rows, fit):
    """Section 0b from the ``points`` ``rows`` and their ``relative_fit``: the table of remainders on the copy side
    (the studies at NEAR_RATIO and LAW_RATIO, the converged study from P/P_ref 1.2 on), the fit and its test at
    d_k = L, and the crossover's lack of a law."""
    if fit is None:
        return []
    near = relative_fit(rows, NEAR_RATIO)
    show = ([p for p in rows if p["study"] != "converged" and any(np.isclose(p["ratio"], q) for q in (NEAR_RATIO, LAW_RATIO))]
            + [p for p in rows if p["study"] == "converged" and p["ratio"] >= COPY_SIDE])
    show.sort(key=lambda p: (p["study"] == "converged", round(p["ratio"], 2), p["L"] / p["d_k"]))
    out = ["## 0b. What the one loop leaves at d_k = L", "",
           f"The remainder r = measured gap − pooling-sector shift of {NAME[PARAM]} (the pooling sector, Eq. (37), "
           "is the most complete linear correction here; its RMS z is the answer's). The one loop is the first term "
           "of an expansion in the transverse fluctuations: per mode they scale like 1/d_k, and there are L² of "
           "them. If it has its own order right, r/shift → 0 as d_k grows at fixed L, and the next order makes "
           "r/shift grow with L/d_k. Measured errors only (± of r/shift: the measured error over |shift|); "
           "`copyhead.results.one_loop_remainder`.", "",
           "| study | L | d_k | L/d_k | P | P/P_ref | measured gap ± err | pooling-sector shift | remainder r | "
           "r/shift |", "|---|---|---|---|---|---|---|---|---|---|"]
    out += [_row(p) for p in show if p["usable"]]
    out += ["", f"- Copy side, P/P_ref = {g(LAW_RATIO)}: r/shift = a + b L/d_k fitted over the {fit['n']} sizes with "
            f"d_k ≥ {MIN_DK_OVER_L}L (weights shift²/σ²): a = {g(fit['a'], 2)} ± {g(fit['a_err'], 1)} (what the one "
            f"loop misses at its own order: {_sigma(fit['a'], fit['a_err'])} σ from 0), b = {g(fit['b'], 2)} ± "
            f"{g(fit['b_err'], 1)} (the next order relative to the one loop: {_sigma(fit['b'], fit['b_err'])} σ "
            f"from 0), χ²/dof = {g(fit['chi2_dof'], 2)} (errors scaled by √(χ²/dof) where above 1). Every "
            "remainder here has the sign of the gap: the one loop predicts too little of it.",
            f"- The test, at d_k = L (not used by the fit): the law gives {g(fit['at_1'], 2)} ± "
            f"{g(fit['at_1_err'], 1)}; measured " + "; ".join(_tests(rows, fit)) + ". Above the law: at L/d_k = 1 "
            "the orders beyond the next one do not fall off either, and the remainder is most of the one loop's "
            "shift — there is no small parameter at the size people train, and the one loop cannot reach the "
            "aim there.",
            f"- Next to the crossover (P/P_ref = {g(NEAR_RATIO)}) there is no such law: at d_k = 2L the remainder "
            "changes sign with L (" + ", ".join(f"L = {p['L']}: {f2(p['r'], 4)}" for p in at_ratio(rows, NEAR_RATIO)
                                               if p["d_k"] == 2 * p["L"]) + ")"
            + (f"; the same fit has χ²/dof = {g(near['chi2_dof'], 2)}" if near else "")
            + ". Where the crossover sharpens with L, the remainder depends on L, not on L/d_k alone; the "
            "default size's largest remainders are next to it (" + _largest(rows) + ").", ""]
    return out
