"""The studies report's conclusions: rules applied to the numbers of :mod:`copyhead.studies.tables`, each
stated next to its verdict (rendered by :mod:`copyhead.studies.report`)."""
from __future__ import annotations

import math

import numpy as np

from copyhead.analysis.fits import loglog_slope
from copyhead.analysis.summary import PAPER
from copyhead.results.format import ci, g, pm, table

PRIOR_LABEL = {"large_deviation": "large-deviation", "gaussian": "Gaussian"}


def decay(fs: dict, att: str) -> dict | None:
    """How the gaps of one attention type shrink from the smallest to the largest size: over the rows that
    carry the information (a gap of more than 5σ at the smallest size), the medians of |gap| at both ends
    and the power ``rate`` in |gap| ∝ size^(−rate); the same for the largest quarter of those rows (they
    dominate the RMS z). None when no row has such a gap."""
    vals = fs["values"]
    rows = [r for r in fs["gaps"] if r["attention"] == att and len(r["points"]) == len(vals)
            and abs(r["points"][0]["gap"]) > 5 * r["points"][0]["error"]]
    if not rows:
        return None

    def ends(rs):
        a = float(np.median([abs(r["points"][0]["gap"]) for r in rs]))
        b = float(np.median([abs(r["points"][-1]["gap"]) for r in rs]))
        return a, b, (math.log(a / b) / math.log(vals[-1] / vals[0]) if a > 0 and b > 0 else math.nan)

    top = sorted(rows, key=lambda r: -abs(r["points"][0]["gap"]))[:max(1, len(rows) // 4)]
    first, last, rate = ends(rows)
    top_first, top_last, rate_top = ends(top)
    return {"n": len(rows), "n_top": len(top), "first": first, "last": last, "rate": rate, "top_first": top_first,
            "top_last": top_last, "rate_top": rate_top,
            "top": sorted({f"{r['name']} at {g(r['ratio'])}·P_ref" for r in top})}


def conclude_finite_size(fs: dict) -> list[str]:
    out = []
    B, vals = fs["by"], fs["values"]
    for att in ("linear", "softmax"):
        rms = {a["x"]: a["same_mean"]["rms_z"] for a in fs["agreement"] if a["attention"] == att}
        if rms:
            out.append(f"- {att}: RMS z against the same-dataset posterior mean at {B} = "
                       f"{', '.join(str(d) for d in vals)}: {', '.join(g(rms.get(d, math.nan)) for d in vals)}.")
    n_close = sum(1 for r in fs["gaps"] if r["closes"])
    n_fit = sum(1 for r in fs["gaps"] if r["closes"] is not None)
    out.append(f"- Order parameters: the extrapolated gap gap_∞ ({B} → ∞) is within 2σ of 0 at {n_close} of {n_fit} "
               "(attention, recipe, P/P_ref, parameter) rows.")
    for att in ("linear", "softmax"):
        d = decay(fs, att)
        if d:
            out.append(f"- {att}: median |gap| over the {d['n']} rows with a gap > 5σ at {B} = {vals[0]}: {g(d['first'])} "
                       f"there and {g(d['last'])} at {B} = {vals[-1]}: |gap| ∝ {B}^(−{g(d['rate'], 2)}) on average; the "
                       f"largest {d['n_top']} ({', '.join(d['top'])}): {g(d['top_first'])} → {g(d['top_last'])}, "
                       f"∝ {B}^(−{g(d['rate_top'], 2)}).")
    for att in ("linear", "softmax"):
        rows = [r for r in fs["gaps"] if r["attention"] == att and math.isfinite(r["fit"]["b"])]
        if rows and B == "d_k":
            worst = max(rows, key=lambda r: abs(r["fit"]["b"]))
            err = float(np.nanmedian([p["error"] for r in rows for p in r["points"]]))
            need = abs(worst["fit"]["b"]) / (2 * err) if err > 0 else math.nan
            out.append(f"- {att}: the largest fitted correction is b/d_k with b = {g(worst['fit']['b'])} ({worst['name']} "
                       f"at {g(worst['ratio'])}·P_ref); it falls below twice these chains' median error ({g(err, 2)}) "
                       f"only at d_k ≈ {g(need, 2)} (d_k/L ≈ {g(need / fs['L'], 2)}), the size where the theory would "
                       "agree within these errors at every point, if the gap is b/d_k alone.")
    for att in ("linear", "softmax"):
        last = [a for a in fs["agreement"] if a["attention"] == att and a["x"] == vals[-1]]
        if last:
            a = last[0]
            ld, ga = a["closed_mean"]["rms_z"], a["closed_mean_gaussian"]["rms_z"]
            if math.isfinite(ld) and math.isfinite(ga):
                out.append(f"- {att}, order parameters at the largest {B} = {vals[-1]}: RMS z against the closed-form "
                           f"posterior mean {g(ld)} with the large-deviation prior, {g(ga)} with the Gaussian prior: "
                           f"the {'large-deviation' if ld < ga else 'Gaussian'} prior describes the sampled posterior "
                           "better there.")
    for t in fs["transitions"]:
        f = t["fit"]
        if math.isfinite(f["a"]):
            verdict = ("tends to the theory (r_∞ within 2σ of 1)" if t["tends_to_theory"] else
                       "does not tend to the theory (r_∞ more than 2σ from 1)")
            out.append(f"- {t['attention']} {t['transition']}, {PRIOR_LABEL[t['prior']]} prior: "
                       f"experiment/theory → {pm(f['a'], f['a_err'])} at {B} → ∞: {verdict}.")
    for att in ("linear", "softmax"):
        cand = {t["prior"]: t for t in fs["transitions"] if t["attention"] == att and math.isfinite(t["fit"]["a"])}
        if len(cand) == 2:
            dist = {p: abs(t["fit"]["a"] - 1) / t["fit"]["a_err"] if t["fit"]["a_err"] > 0 else math.inf
                    for p, t in cand.items()}
            best = min(dist, key=dist.get)
            out.append(f"- {att}: the prior whose transition the large-{B} extrapolation is closer to (in σ): "
                       f"{PRIOR_LABEL[best]} ({g(dist[best])}σ vs {g(dist[[p for p in dist if p != best][0]])}σ).")
        elif len(cand) == 1:
            (p_only,) = cand
            cand = {}
            other = [p for p in PRIOR_LABEL if p != p_only][0]
            out.append(f"- {att}: only the {PRIOR_LABEL[p_only]} prior has this transition at every {B}; the "
                       f"{PRIOR_LABEL[other]} prior's closed form has none at some of them.")
    return out


def conclude_dk_over_L(fs: dict, fl: dict) -> list[str]:
    """Is the gap a function of d_k alone, or of d_k/L? At fixed L it falls as d_k^(−a); at fixed d_k/L a
    gap in 1/d_k alone would fall as L^(−a) too, a gap in L/d_k not at all."""
    out = []
    for att in ("linear", "softmax"):
        da, db = decay(fs, att), decay(fl, att)
        if not (da and db):
            continue
        for key, what in (("rate", "typical gaps (median)"), ("rate_top", "largest gaps")):
            a, b = da[key], db[key]
            if math.isfinite(a) and math.isfinite(b) and a > 0:
                verdict = ("a function of d_k/L (a correction in L/d_k), not of d_k alone" if b < 0.5 * a else
                           "a function of d_k alone (they shrink with L at fixed d_k/L as with d_k)")
                out.append(f"- {att}, {what}: ∝ d_k^(−{g(a, 2)}) at fixed L, ∝ L^(−{g(b, 2)}) at fixed d_k/L: "
                           f"{verdict} (rule: L-rate < half the d_k-rate).")
    return out


def conclude_scaling_theory(tl: dict) -> list[str]:
    """The closed form along L on the studies' path (fixed d_k or d_k = q·L): does P*/ln²L or P*/(L ln²L) flatten, and from which L on does
    softmax copy before linear attention (crossover/P* > 1)?"""
    out = []
    for prior in ("large_deviation", "gaussian"):
        lin, sm = tl.get(("linear", prior)), tl.get(("softmax", prior))
        if not lin or not sm:
            continue
        L = np.asarray(sm["L"], float)
        Ps, Pc = np.asarray(sm["P_star"], float), np.asarray(lin["P_crossover"], float)
        ok = np.isfinite(Ps) & np.isfinite(Pc)
        if ok.sum() < 2:
            continue
        L, Ps, Pc = L[ok], Ps[ok], Pc[ok]
        half = L >= np.median(L)
        f1, f2 = Ps[half] / np.log(L[half]) ** 2, Ps[half] / (L[half] * np.log(L[half]) ** 2)
        ratio = Pc / Ps
        above = L[ratio > 1]
        out.append(f"- Closed form, {PRIOR_LABEL[prior]} prior, V = {tl['V']}, {tl['label']}, L = "
                   f"{g(L[0])}–{g(L[-1])}: over L ≥ {g(L[half][0])} P*/ln²L changes by a factor {g(f1.max() / f1.min())} "
                   f"and P*/(L ln²L) by {g(f2.max() / f2.min())}; linear crossover / softmax P* = {g(ratio[0])} at "
                   f"L = {g(L[0])} and {g(ratio[-1])} at L = {g(L[-1])}: "
                   + (f"softmax copies first from L ≈ {g(above[0])} on." if len(above) else
                      f"softmax never copies before linear attention in this range (along {tl['label']})."))
    return out


def conclude_scaling(rows: list[dict]) -> list[str]:
    out = []
    byV = {}
    for r in rows:
        byV.setdefault(r["V"], []).append(r)
    for V, rs in sorted(byV.items()):
        rs = [r for r in rs if "softmax" in r and math.isfinite(r["softmax"]["estimate"])]
        if len(rs) >= 2:
            Ls = [r["L"] for r in rs]
            P = np.array([r["softmax"]["estimate"] for r in rs])
            forms = {"P* ∝ ln²L (N* ∝ L ln²L in tokens)": P / np.array([r["ln2L"] for r in rs]),
                     "P* ∝ L ln²L (in sequences)": P / np.array([r["L"] * r["ln2L"] for r in rs]),
                     "P* independent of L": P}
            spread = {k: float(v.max() / v.min()) for k, v in forms.items()}
            best = min(spread, key=spread.get)
            slope = loglog_slope(Ls, P)
            out.append(f"- V = {V}, L = {', '.join(map(str, Ls))} (d_k = {', '.join(str(r['d_k']) for r in rs)}): "
                       f"SGLD softmax jump {', '.join(g(x) for x in P)}; log-log slope in L {g(slope)}; spread "
                       f"(max/min) of P*/ln²L {g(spread[list(forms)[0]])}, of P*/(L ln²L) {g(spread[list(forms)[1]])}, "
                       f"of P* {g(spread[list(forms)[2]])}: closest form '{best}'.")
    rat = [r for r in rows if "ratio" in r and math.isfinite(r["ratio"]["experiment"])]
    for r in rat:
        q, e = r["ratio"]["experiment"], r["ratio"]["error"]
        first = ("softmax copies first" if q - 2 * e > 1 else "linear attention copies first" if q + 2 * e < 1
                 else "neither copies first within 2σ")
        out.append(f"- {r['name']} (L = {r['L']}, d_k = {r['d_k']}{', rank-deficient: d_k < L' if r['d_k'] < r['L'] else ''}): "
                   f"SGLD linear crossover / softmax jump = {pm(q, e)} (closed form, large-deviation prior: "
                   f"{g(r['ratio']['large_deviation'])}): {first}.")
    if len(rat) >= 2:
        x = np.array([r["sqrt_LV"] for r in rat])
        y = np.array([r["ratio"]["experiment"] for r in rat])
        yt = np.array([r["ratio"]["large_deviation"] for r in rat])
        sl, slt = loglog_slope(x, y), loglog_slope(x, yt)
        out.append(f"- Linear crossover / softmax P* against √(LV) = {', '.join(g(v) for v in x)}: SGLD "
                   f"{', '.join(g(v) for v in y)} (log-log slope {g(sl)}), closed form {', '.join(g(v) for v in yt)} "
                   f"(slope {g(slt)}). The paper's O(√(LV)) advantage of softmax means slope 1 and a ratio > 1; "
                   + ("it holds here." if sl > 0.5 and np.all(y > 1) else
                      "it does not hold at these sizes (ratio " + ("< 1: linear attention copies first" if np.all(y < 1)
                                                                   else "not growing like √(LV)") + ")."))
    return out


def paper_scale(converged: dict | None, collapse_ok: bool) -> list[str]:
    """The default-size (converged study) transitions on the paper's σ² = 1 scale, if the collapse holds."""
    if converged is None:
        return []
    s2 = converged["sigma2"]
    out = [f"The transition points {'collapse' if collapse_ok else 'do NOT collapse'} at equal P/σ² within their "
           f"95% CIs (studies report, section 3), so {'' if collapse_ok else 'only as a theory statement: '}the transitions of the "
           f"converged study "
           f"(L = {converged['L']}, V = {converged['V']}, d_k = {converged['d_k']}, σ² = {g(s2)}) divided by σ² are "
           f"its transitions at σ² = 1:", ""]
    rows = []
    for key, att in (("linear_crossover", "linear"), ("softmax_jump", "softmax")):
        a = converged["attentions"].get(att)
        if a is None:
            continue
        t = a["transition"]
        lo, hi = PAPER[key][2:]
        val = t["estimate"] / s2
        rows.append([PAPER[key][0], PAPER[key][1], f"{g(val)} {ci(t['ci_lo'] / s2, t['ci_hi'] / s2)}",
                     g(t["theory"]["large_deviation"] / s2), g(lo / val, 2) + (f"–{g(hi / val, 2)}" if hi != lo else "")])
    out.append(table(["quantity", "paper", "ours ÷ σ² (SGLD, 95% CI)", "ours ÷ σ² (closed form)",
                      "paper ÷ ours"], rows))
    return out


