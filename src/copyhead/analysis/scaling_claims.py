"""Scaling of the transition points with the sequence length L and the vocabulary size V, across studies:
the paper's two claims (softmax P* ∝ L ln²L; softmax's advantage over linear attention grows like √(LV)),
measured (SGLD transitions with 95% CIs) and in the closed form along the studies' path in (L, d_k).

Pure functions of numbers: a *study* is the dict ``copyhead.studies.tables.load_study`` makes; a *theory
line* the closed-form transitions along L (``copyhead.studies.tables.theory_lines``: per (attention,
prior) the lists L, P_crossover, P_star). The σ² scale: every transition P is proportional to σ²
(docs/theory.md Sec. 6), so a transition divided by σ² is the same transition at σ² = 1 (:func:`per_sigma2`).
"""
from __future__ import annotations

import math

import numpy as np

from ..attention import ATTENTIONS
from .finite_size import PRIORS
from .convergence import is_mixed
from .fits import loglog_slope
from .results_model import ScalingRow, TheoryLines
from .transition_estimators import bracket_ratio

# the scaling forms of the softmax jump P* compared across L (P counts sequences; N = P·L tokens)
FORMS = {"P* ∝ ln²L (N* ∝ L ln²L in tokens)": lambda L: math.log(L) ** 2,
         "P* ∝ L ln²L (in sequences)": lambda L: L * math.log(L) ** 2,
         "P* independent of L": lambda L: 1.0}


def who_copies_first(lo: float, hi: float) -> str:
    """The verdict of a ratio interval [lo, hi] of linear crossover / softmax jump (> 1: softmax first)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "no interval"
    return "softmax copies first" if lo > 1 else "linear attention copies first" if hi < 1 else \
        "neither shown to copy first (the interval contains 1)"


def mixing(row: ScalingRow) -> tuple[bool | None, str]:
    """(mixed, words) of a scaling row's chains, per training set (a chain's halves, one chain's bulk ESS;
    :func:`copyhead.analysis.convergence.is_mixed` on the worst of them): None where the tables do not say."""
    m = row.mixing or {}
    rh = [v.rhat_within_max for v in m.values() if v.rhat_within_max is not None]
    es = [v.ess_chain_min for v in m.values() if v.ess_chain_min is not None]
    rh, es = [x for x in rh if math.isfinite(x)], [x for x in es if math.isfinite(x)]
    if not rh or not es:
        return None, ""
    return is_mixed(max(rh), min(es)), f"largest within-chain R̂ {max(rh):.4f}, smallest bulk ESS of one chain {min(es):.3g}"


def scaling_rows(studies: list[dict]) -> list[dict]:
    """One row per study (sorted by V, then L): L, V, d_k, σ², the sampler, the two transitions (experiment
    with CI, theory under both priors), √(LV), ln²L and, where both exist, the linear-crossover /
    softmax-jump ratio as an interval: [lo, hi] = the crossover's 95 % CI over the jump's interval (a grid
    bracket widened by the bootstrap), :func:`copyhead.analysis.transition_estimators.bracket_ratio`; ``experiment``
    the ratio of the point values (the jump's bracket midpoint). Theory read the same way: ``same_dataset``
    (the same-dataset posterior mean's crossover over its jump bracket on the study's own P) and
    ``closed_mean`` (the closed-form posterior mean's crossover over its bracket on the same P), both
    intervals; ``large_deviation``/``gaussian``: the closed form's crossover over its first-order point P*
    (the thermodynamic ratio the paper's claim is about: a different quantity from the data's)."""
    out = []
    for s in sorted(studies, key=lambda s: (s["V"], s["L"])):
        lin, sm = s["attentions"].get("linear"), s["attentions"].get("softmax")
        row = {"name": s["name"], "L": s["L"], "V": s["V"], "d_k": s["d_k"], "sigma2": s["sigma2"],
               "method": s.get("method", "SGLD"), "sqrt_LV": math.sqrt(s["L"] * s["V"]),
               "ln2L": math.log(s["L"]) ** 2}
        row["mixing"] = {}
        for att in ATTENTIONS:
            if s["attentions"].get(att) is not None:
                row[att] = s["attentions"][att]["transition"]
                row["mixing"][att] = {k: s["attentions"][att].get(k) for k in ("rhat_within_max", "ess_chain_min")}
        if lin and sm:
            tl, ts = lin["transition"], sm["transition"]
            lo, hi = bracket_ratio((tl["ci_lo"], tl["ci_hi"]), (ts["ci_lo"], ts["ci_hi"]))
            br = ts.get("theory_brackets", {})
            row["ratio"] = {"experiment": tl["estimate"] / ts["estimate"], "lo": lo, "hi": hi,
                            **{k: list(bracket_ratio((tl["theory"].get(k, math.nan),) * 2,
                                                     br.get(k, (math.nan, math.nan))))
                               for k in ("same_dataset", "closed_mean")},
                            **{p: tl["theory"][p] / ts["theory"][p] for p in PRIORS}}
        out.append(row)
    return out


def jump_forms(rows: list[ScalingRow]) -> list[dict]:
    """Per V with at least two finite softmax jumps: the L, d_k and jumps, the spread (max/min) of P* divided
    by each scaling form (:data:`FORMS`; flat = the form holds), the closest form and the log-log slope of
    P* in L."""
    byV = {}
    for r in rows:
        byV.setdefault(r.V, []).append(r)
    out = []
    for V, rs in sorted(byV.items()):
        rs = [r for r in rs if r.softmax and math.isfinite(r.softmax.estimate)]
        if len(rs) < 2:
            continue
        Ls = [r.L for r in rs]
        P = np.array([r.softmax.estimate for r in rs])
        spread = {}
        for name, form in FORMS.items():
            v = P / np.array([form(L) for L in Ls])
            spread[name] = float(v.max() / v.min())
        out.append({"V": V, "L": Ls, "d_k": [r.d_k for r in rs], "P_star": [float(x) for x in P],
                    "spread": spread, "closest": min(spread, key=spread.get), "slope": loglog_slope(Ls, P)})
    return out


def advantage_trend(rows: list[ScalingRow]) -> dict | None:
    """The linear-crossover / softmax-P* ratio against √(LV) over the rows that have a finite measured ratio
    (at least two): x = √(LV), the measured and closed-form (large-deviation prior) ratios, and the
    log-log slope of each (the paper's O(√(LV)) advantage of softmax means slope 1 and a ratio > 1)."""
    rat = [r for r in rows if r.ratio and math.isfinite(r.ratio.experiment)]
    if len(rat) < 2:
        return None
    x = [r.sqrt_LV for r in rat]
    y = [r.ratio.experiment for r in rat]
    yt = [r.ratio.large_deviation for r in rat]
    return {"x": x, "experiment": y, "theory": yt, "slope": loglog_slope(x, y), "slope_theory": loglog_slope(x, yt)}


def closed_form_path(tl: TheoryLines, prior: str) -> dict | None:
    """The closed form along L under one prior (theory lines :func:`copyhead.studies.tables.theory_lines`),
    over the L where both transitions are finite: the factor by which P*/ln²L and P*/(L ln²L) change over
    the upper half of that range (flat = the form holds), the crossover/P* ratio at both ends, and the
    first L from which softmax copies first (ratio > 1; NaN if nowhere). None with fewer than two such L."""
    lin, sm = tl.line("linear", prior), tl.line("softmax", prior)
    if not lin or not sm:
        return None
    L = np.asarray(sm.L, float)
    Ps, Pc = np.asarray(sm.P_star, float), np.asarray(lin.P_crossover, float)
    ok = np.isfinite(Ps) & np.isfinite(Pc)
    if ok.sum() < 2:
        return None
    L, Ps, Pc = L[ok], Ps[ok], Pc[ok]
    half = L >= np.median(L)
    f1, f2 = Ps[half] / np.log(L[half]) ** 2, Ps[half] / (L[half] * np.log(L[half]) ** 2)
    ratio = Pc / Ps
    above = L[ratio > 1]
    return {"L_first": float(L[0]), "L_last": float(L[-1]), "L_half": float(L[half][0]),
            "change_ln2L": float(f1.max() / f1.min()), "change_L_ln2L": float(f2.max() / f2.min()),
            "ratio_first": float(ratio[0]), "ratio_last": float(ratio[-1]),
            "softmax_first_from": float(above[0]) if len(above) else math.nan}


def per_sigma2(transition: dict, sigma2: float, paper_lo: float, paper_hi: float) -> dict:
    """A study's transition (estimate, 95% CI, large-deviation closed form) divided by its σ², i.e. at
    σ² = 1, and the paper's range [paper_lo, paper_hi] (quoted at σ² = 1) divided by that value."""
    val = transition["estimate"] / sigma2
    return {"value": val, "ci_lo": transition["ci_lo"] / sigma2, "ci_hi": transition["ci_hi"] / sigma2,
            "theory": transition["theory"]["large_deviation"] / sigma2,
            "paper_over_ours": [paper_lo / val, paper_hi / val]}
