"""What the one loop leaves at the size people train (docs/one_loop.md, Section 0b): the page's Markdown lines
(the answer's line and the section) from the remainders and their fit against L/d_k, which
:mod:`research.one_loop.remainder_fit` computes (``points``, ``relative_fit``; see there for the
measurement)."""
from __future__ import annotations

import numpy as np

from copyhead.format import g

from . import compare as cmp
from .page_tables import NAME, TOLERANCE_TEXT, f2
from .remainder_fit import (COPY_SIDE, LAW_RATIO, MIN_DK_OVER_L, NEAR_RATIO, PARAM, at_ratio, bracket,
                            relative_fit)


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
        largest = max(abs(p["r"]) for p in conv)
        line += (f". At the default size the copy side's remainders, largest |Δ| = |measured gap − pooling-sector "
                 f"shift| = {g(largest, 2)} ({f2(min(p['r'] for p in conv), 4)} to {f2(max(p['r'] for p in conv), 4)}), "
                 f"are {'within' if largest <= cmp.TOLERANCE else 'outside'} the {TOLERANCE_TEXT}; significance: "
                 f"{g(min(abs(p['r']) / p['err'] for p in conv), 2)}–{g(abs(worst['r']) / worst['err'], 3)} measured "
                 f"errors (largest at P = {g(worst['P'])}): no one-loop variant can reach RMS z ≤ 5 there")
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
           "`research.one_loop.page_remainder`.", "",
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
