"""The studies report's conclusions: rules applied to the numbers of studies.json, each stated next to its
verdict (rendered by :mod:`copyhead.studies.report`). Words only: every number they quote is a table entry
or comes from :mod:`copyhead.analysis` (finite_size, scaling, twins)."""
from __future__ import annotations

import math

from copyhead.analysis.convergence import MIXED_ESS, MIXED_RHAT, is_mixed
from copyhead.analysis.finite_size import (PRIOR_LABEL, correction_size, decay, largest_gaps, prior_distances,
                                          ratio_verdict, study_largest_delta)
from copyhead.analysis.scaling_claims import (FORMS, advantage_trend, closed_form_path, jump_forms, per_sigma2,
                                      mixing, who_copies_first)
from copyhead.analysis.results_model import FiniteSize, ScalingRow, Study, TheoryLines, Twin
from copyhead.analysis.summary import AGREE_TOLERANCE, PAPER
from copyhead.analysis.twins import (start_agreement, theory_difference_effect, transition_collapse,
                                     twin_effect)
from copyhead.attention import ATTENTIONS
from copyhead.format import ci, g, pm, table, twin_effect_text


def _top(d: dict) -> str:
    return ", ".join(sorted({f"{name} at {g(ratio)}·P_ref" for name, ratio in d["top"]}))


def conclude_finite_size(fs: FiniteSize, studies: tuple[Study, ...] = (),
                         tol: float = AGREE_TOLERANCE) -> list[str]:
    """The finite-size section's conclusions, effect size first (|Δ| against ``tol``), significance beside it;
    ``studies`` (the report's) give the largest |Δ| against the closed form under each prior."""
    out = []
    B, vals = fs.by, fs.values
    for att in ATTENTIONS:
        rms = {a.x: a.same_mean.rms_z for a in fs.agreement if a.attention == att}
        xs, ds = largest_gaps(fs, att, B)
        delta = dict(zip(xs, ds))
        if rms:
            out.append(f"- {att}: largest |Δ| against the same-dataset posterior mean at {B} = "
                       f"{', '.join(str(d) for d in vals)}: {', '.join(g(delta.get(d, math.nan)) for d in vals)} "
                       f"(tolerance |Δ| ≤ {g(tol)}); RMS z beside it: "
                       f"{', '.join(g(rms.get(d, math.nan)) for d in vals)}.")
    fitted = [r for r in fs.gaps if r.closes is not None]
    n_small = sum(1 for r in fitted if abs(r.fit.a) <= tol)
    n_close = sum(1 for r in fitted if r.closes)
    out.append(f"- Order parameters: the extrapolated gap gap_∞ ({B} → ∞) is within |Δ| ≤ {g(tol)} of 0 at {n_small} "
               f"of {len(fitted)} (attention, recipe, P/P_ref, parameter) rows; within 2σ of 0 at {n_close} of them.")
    for att in ATTENTIONS:
        d = decay(fs, att)
        if d:
            out.append(f"- {att}: median |gap| over the {d['n']} rows with a gap > 5σ at {B} = {vals[0]}: {g(d['first'])} "
                       f"there and {g(d['last'])} at {B} = {vals[-1]}: |gap| ∝ {B}^(−{g(d['rate'], 2)}) on average; the "
                       f"largest {d['n_top']} ({_top(d)}): {g(d['top_first'])} → {g(d['top_last'])}, "
                       f"∝ {B}^(−{g(d['rate_top'], 2)}).")
    for att in ATTENTIONS:
        c = correction_size(fs, att) if B == "d_k" else None
        if c:
            out.append(f"- {att}: the largest fitted correction is b/d_k with b = {g(c['b'])} ({c['row'].name} "
                       f"at {g(c['row'].ratio)}·P_ref); it falls below twice these chains' median error "
                       f"({g(c['median_error'], 2)}) only at d_k ≈ {g(c['need'], 2)} (d_k/L ≈ {g(c['need'] / fs.L, 2)}), "
                       "the size where the theory would agree within these errors at every point, if the gap is b/d_k alone.")
    by_name = {s.name: s for s in studies}
    for att in ATTENTIONS:
        last = [a for a in fs.agreement if a.attention == att and a.x == vals[-1]]
        if last and last[0].name in by_name:
            a, study = last[0], by_name[last[0].name]
            ld, ga = (study_largest_delta(study, att, c) for c in ("closed_mean", "closed_mean_gaussian"))
            if math.isfinite(ld) and math.isfinite(ga):
                out.append(f"- {att}, order parameters at the largest {B} = {vals[-1]}: largest |Δ| against the "
                           f"closed-form posterior mean {g(ld)} with the large-deviation prior, {g(ga)} with the "
                           f"Gaussian prior (RMS z {g(a.closed_mean.rms_z)}, {g(a.closed_mean_gaussian.rms_z)}): the "
                           f"{'large-deviation' if ld <= ga else 'Gaussian'} prior describes the sampled posterior "
                           "better there.")
    for t in fs.transitions:
        f = t.fit
        if math.isfinite(f.a):
            out.append(f"- {t.attention} {t.transition}, {PRIOR_LABEL[t.prior]} prior: "
                       f"experiment/theory → {pm(f.a, f.a_err)} at {B} → ∞: {ratio_verdict(f.a, f.a_err)[1]}.")
    for att in ATTENTIONS:
        dist = prior_distances(fs, att)
        if len(dist) == 2:
            best = min(dist, key=lambda p: dist[p][0])
            (d, z), (d2, z2) = dist[best], dist[[p for p in dist if p != best][0]]
            out.append(f"- {att}: the prior whose transition the large-{B} extrapolation is closer to: "
                       f"{PRIOR_LABEL[best]} (|r_∞ − 1| = {g(d, 2)} against {g(d2, 2)}; {g(z, 2)}σ against {g(z2, 2)}σ).")
        elif len(dist) == 1:
            (p_only,) = dist
            other = [p for p in PRIOR_LABEL if p != p_only][0]
            out.append(f"- {att}: only the {PRIOR_LABEL[p_only]} prior has this transition at every {B}; the "
                       f"{PRIOR_LABEL[other]} prior's closed form has none at some of them.")
    return out


def conclude_dk_over_L(fs: FiniteSize, fl: FiniteSize) -> list[str]:
    """Is the gap a function of d_k alone, or of d_k/L? At fixed L it falls as d_k^(−a); at fixed d_k/L a
    gap in 1/d_k alone would fall as L^(−a) too, a gap in L/d_k not at all."""
    out = []
    for att in ATTENTIONS:
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


def conclude_scaling_theory(tl: TheoryLines) -> list[str]:
    """The closed form along L on the studies' path (fixed d_k or d_k = q·L): does P*/ln²L or P*/(L ln²L)
    flatten, and from which L on does softmax copy before linear attention (crossover/P* > 1)?"""
    out = []
    for prior in PRIOR_LABEL:
        c = closed_form_path(tl, prior)
        if c is None:
            continue
        out.append(f"- Closed form, {PRIOR_LABEL[prior]} prior, V = {tl.V}, {tl.label}, L = "
                   f"{g(c['L_first'])}–{g(c['L_last'])}: over L ≥ {g(c['L_half'])} P*/ln²L changes by a factor "
                   f"{g(c['change_ln2L'])} and P*/(L ln²L) by {g(c['change_L_ln2L'])}; linear crossover / softmax P* = "
                   f"{g(c['ratio_first'])} at L = {g(c['L_first'])} and {g(c['ratio_last'])} at L = {g(c['L_last'])}: "
                   + (f"softmax copies first from L ≈ {g(c['softmax_first_from'])} on."
                      if math.isfinite(c["softmax_first_from"]) else
                      f"softmax never copies before linear attention in this range (along {tl.label})."))
    return out


def _method(rows: list[ScalingRow]) -> str:
    return "/".join(dict.fromkeys(r.method for r in rows)) or "SGLD"


def verdict(r: ScalingRow, lo: float, hi: float) -> str:
    """Who copies first from the ratio interval — 'not mixed' first where the study's chains have not."""
    ok, words = mixing(r)
    return who_copies_first(lo, hi) if ok is not False else \
        f"not mixed ({words}); the interval alone would say: {who_copies_first(lo, hi)}"


def conclude_scaling(rows: list[ScalingRow]) -> list[str]:
    out = []
    names = list(FORMS)
    for f in jump_forms(rows):
        out.append(f"- V = {f['V']}, L = {', '.join(map(str, f['L']))} (d_k = {', '.join(map(str, f['d_k']))}): "
                   f"{_method(rows)} softmax jump {', '.join(g(x) for x in f['P_star'])}; log-log slope in L "
                   f"{g(f['slope'])}; spread "
                   f"(max/min) of P*/ln²L {g(f['spread'][names[0]])}, of P*/(L ln²L) {g(f['spread'][names[1]])}, "
                   f"of P* {g(f['spread'][names[2]])}: closest form '{f['closest']}'.")
    for r in [r for r in rows if r.ratio and math.isfinite(r.ratio.experiment)]:
        lo, hi = r.ratio.lo, r.ratio.hi
        same = r.ratio.same_dataset or [math.nan, math.nan]
        closed = r.ratio.closed_mean or [math.nan, math.nan]
        theory = "; ".join(f"{what} [{g(a)}, {g(b)}]" for what, (a, b) in
                           (("same-dataset posterior mean, same estimator", same),
                            ("closed-form posterior mean, same estimator", closed)) if math.isfinite(a))
        out.append(f"- {r.name} (L = {r.L}, d_k = {r.d_k}{', rank-deficient: d_k < L' if r.d_k < r.L else ''}): "
                   f"{r.method} linear crossover / softmax jump in [{g(lo)}, {g(hi)}] (95% interval; "
                   + (f"{theory}; " if theory else "")
                   + f"closed-form crossover / P*, a different quantity: {g(r.ratio.large_deviation)}): "
                   f"{verdict(r, lo, hi)}.")
    t = advantage_trend(rows)
    if t:
        y = t["experiment"]
        out.append(f"- Linear crossover / softmax jump against √(LV) = {', '.join(g(v) for v in t['x'])}: {_method(rows)} "
                   f"{', '.join(g(v) for v in y)} (log-log slope {g(t['slope'])}), closed form "
                   f"{', '.join(g(v) for v in t['theory'])} (slope {g(t['slope_theory'])}). The paper's O(√(LV)) "
                   "advantage of softmax means slope 1 and a ratio > 1; "
                   + ("it holds here." if t["slope"] > 0.5 and all(v > 1 for v in y) else
                      "it does not hold at these sizes (ratio " + (
                          "< 1: linear attention copies first" if all(v < 1 for v in y) else
                          f"grows (slope {g(t['slope'])}) but is below 1 at √(LV) = "
                          + ", ".join(g(x) for x, v in zip(t["x"], y) if v <= 1) if t["slope"] > 0.5 else
                          "not growing like √(LV)") + ")."))
    return out


def collapse_verdict(c: Twin) -> list[str]:
    """Effect size first: the twins agree when every pair of order parameters is within the agreement
    tolerance (|Δ| ≤ 0.02, fixed before looking; copyhead.analysis.twins.twin_effect), else they differ by
    the largest |Δ| (relative to the value there). Significance beside it: equal within 2σ at ≥ 90 % of the
    points. Whether the same-dataset theory predicts the differences, by effect size too: every
    |Δ − Δ_theory| within the tolerance (predicts them), a largest |Δ − Δ_theory| below the largest |Δ|
    (part of them), else not (:func:`~copyhead.analysis.twins.theory_difference_effect`)."""
    e = twin_effect(c)
    within = e.get("n") and e["n_within_tol"] == e["n"]
    sig = c.n and c.n_within_2 >= 0.9 * c.n
    th = theory_difference_effect(c)
    explained = th["n"] and th["n_within_tol"] == th["n"]     # every difference the theory's, within tolerance
    better = th["max_abs"] < e.get("max_abs_delta", math.nan)
    tr = [f"{att} {t.name} ÷ σ²: {transition_collapse(t)[1]}" for att, t in c.transitions.items()
          if t.overlap is not None]
    size = twin_effect_text(e)
    stat = (f"significance: {c.n_within_2} of {c.n} equal within 2σ (RMS z {g(c.rms_z)}; "
            f"{'≥' if sig else '<'} 90 %)")
    if c.differs == "σ²":
        head = (f"- Verdict: the order parameters {'collapse' if within else 'do not collapse'} at equal P/σ² "
                f"({size}); {stat}.")
        vs = (f"largest |Δ − Δ_theory| {g(th['max_abs'])} against the largest |Δ| "
              f"{g(e.get('max_abs_delta', math.nan))}; {th['n_within_tol']} of {th['n']} within {g(th['tolerance'])}; "
              f"significance beside it: {c.n_within_2_theory} of {c.n} within 2σ, RMS z {g(c.rms_z_theory)}")
        if sig:
            head += f" Against the difference the same-dataset theory predicts: {vs}."
        else:
            head += (f" The same-dataset theory predicts the differences ({vs}: the twins' training sets differ in P, "
                     "so their finite-P fluctuations differ; only the population (closed-form) theory collapses exactly)."
                     if explained else
                     (f" The same-dataset theory accounts for part of the differences ({vs}): finite-P dataset "
                      "fluctuations break the exact collapse of the closed form."
                      if better else f" The same-dataset theory does not account for the differences ({vs})."))
    else:
        head = (f"- Verdict: {'no step-size bias beyond the tolerance' if within else 'the step size changes the sampled order parameters'}"
                f" ({size}); {stat}.")
    return [head] + ([f"- Transition points: {'; '.join(tr)}."] if tr else [])


def paper_scale(converged: dict | None) -> list[str]:
    """The default-size (converged study) transitions on the paper's σ² = 1 scale."""
    if converged is None:
        return []
    s2 = converged["sigma2"]
    out = ["The closed form depends on P/σ² only (the σ² twins above test this on the sampled transitions), so "
           "the transitions of the "
           f"converged study (L = {converged['L']}, V = {converged['V']}, d_k = {converged['d_k']}, σ² = {g(s2)}) "
           "divided by σ² are its transitions at σ² = 1:", ""]
    rows = []
    for key, att in (("linear_crossover", "linear"), ("softmax_jump", "softmax")):
        a = converged["attentions"].get(att)
        if a is None:
            continue
        p = per_sigma2(a["transition"], s2, *PAPER[key][2:])
        lo, hi = p["paper_over_ours"]
        rows.append([PAPER[key][0], PAPER[key][1], f"{g(p['value'])} {ci(p['ci_lo'], p['ci_hi'])}", g(p["theory"]),
                     g(lo, 2) + (f"–{g(hi, 2)}" if PAPER[key][2] != PAPER[key][3] else "")])
    out.append(table(["quantity", "paper", "ours ÷ σ² (SGLD, 95% CI)", "ours ÷ σ² (closed form)",
                      "paper ÷ ours"], rows))
    return out


RANK_NOTE = ("What the rank bound proves at d_k < L (Eq. (26), docs/theory.md Sec. 12.3): the score matrix M = QᵀK/d_k "
             "has rank ≤ d_k, so the copy fraction of the FULL matrix, Tr(Π⊥M)²/((L−1)‖M‖²_F), is at most "
             "d_k/(L−1). Linear attention (A = M/L) inherits it: where its predicted copy state needs a larger "
             "fraction, that state is not representable and the theory's linear crossover is an optimistic bound. "
             "It does NOT bound the in-plane fraction ‖ΠM‖²/‖M‖² that the (m1, mP) theory keeps, and it does not "
             "bind softmax attention, whose softmax(M) can approach I at rank d_k < L; so it neither predicts "
             "nor forbids softmax copying first along a fixed d_k.")


# worst first: a (study, attention, P) point takes the worst status of its parameters
POINT_ORDER = ("not mixed", "metastable", "mixed")


def point_mixing(studies) -> list[dict]:
    """Per study and attention type, its P points by what their chains show (:class:`PointStatus`, worst over
    the parameters and training sets): the P's that are mixed, metastable (``rhat_paired``: the largest R̂ of a
    training set's two starts) and not mixed (``within``: the largest split-R̂ of one chain and the smallest
    bulk ESS of one chain); ``paired``: whether both starts were sampled. Tables that predate the per-point
    status are skipped."""
    out = []
    for s in studies:
        for att, a in s.attentions.items():
            if not a.points:
                continue
            at = {}
            for p in a.points:
                at.setdefault(p.P, []).append(p)
            worst = {P: min((x.status for x in ps), key=POINT_ORDER.index) for P, ps in sorted(at.items())}
            by = {st: [P for P, w in worst.items() if w == st] for st in POINT_ORDER}
            rp = {P: max(x.rhat_paired for x in at[P]) for P in by["metastable"]}
            within = {P: (max(x.rhat_within for x in at[P]), min(x.ess_chain for x in at[P])) for P in by["not mixed"]}
            out.append({"study": s.name, "attention": att, "paired": any(p.paired for p in a.points),
                        "n": len(worst), **by, "rhat_paired": rp, "within": within})
    return out


def unsettled(studies) -> tuple[frozenset, frozenset]:
    """What the figures fade: (points, transitions). ``points``: the (study, attention, P, param) whose status
    (:class:`PointStatus`) is not mixed or metastable; ``transitions``: the (study, attention) with such a
    point, or, for tables that predate the per-point status, whose worst chain fails
    :func:`~copyhead.analysis.convergence.is_mixed` (the verdicts' rule, :func:`~copyhead.analysis.scaling_claims.mixing`)."""
    points, transitions = set(), set()
    for s in studies:
        for att, a in s.attentions.items():
            if a.points:
                bad = {(s.name, att, p.P, p.param) for p in a.points if p.status != "mixed"}
                points |= bad
            else:
                bad = not is_mixed(a.rhat_within_max, a.ess_chain_min)
            if bad:
                transitions.add((s.name, att))
    return frozenset(points), frozenset(transitions)


def mixing_line(studies) -> list[str]:
    """The per-point mixing verdict over all studies, with its rule; nothing where no table has it."""
    rows = point_mixing(studies)
    if not rows:
        return []
    n = {st: sum(len(r[st]) for r in rows) for st in POINT_ORDER}
    total = sum(r["n"] for r in rows)
    one = sum(r["n"] for r in rows if not r["paired"])
    return [f"Mixing per point (each (study, attention, P), worst over its parameters and training sets): "
            f"{n['mixed']} of {total} mixed, {n['metastable']} metastable, {n['not mixed']} not mixed. Rule: mixed = "
            f"every chain's two halves agree (split-R̂ ≤ {g(MIXED_RHAT)}) with bulk ESS ≥ {g(MIXED_ESS)}, and where a "
            f"training set has a prior- and a copy-started chain they agree (R̂ ≤ {g(MIXED_RHAT)}); metastable = every chain mixed within itself "
            "but a training set's two starts disagree (two branches no single chain crosses); not mixed = some "
            "chain fails within itself. How often a chain that has mixed fails this rule at its ESS (a chain too "
            "short to show it has, not one that has not): [rhat_null.md](../benchmarks/rhat_null.md)."
            + (f" {one} of the points were sampled from prior starts only, where a second branch cannot show (the "
               "copy start needs d_k ≥ L): there a chain at a jump still moving from one branch to the other during "
               "its kept draws is 'not mixed', never 'metastable', and a longer warm-up is its remedy." if one else "")
            + (" A metastable point's two branches are weighed by umbrella sampling in the research package "
               "(`python src/research/benchmarks/metastability.py --study NAME --P P --umbrella P SEED`, pages "
               "docs/benchmarks/metastability*.md); here its chains' means are reported as they are."
               if n["metastable"] else "")]


def convergence_summary(studies: list[Study]) -> list[str]:
    n = sum(a.n_conv for s in studies for a in s.attentions.values())
    flag = sum(a.n_within_flag for s in studies for a in s.attentions.values())
    return [f"Convergence over all studies: {flag} of {n} (recipe, P, parameter) rows have a chain whose two halves "
            f"disagree (within-chain R̂ > 1.05): slowly mixing chains (the largest values and the smallest ESS per "
            "study: studies report, section 4). Their errors come from few effective samples and may be underestimated, which inflates "
            "|z| at those points."] + _start_line(studies)


def _start_line(studies: list[Study]) -> list[str]:
    sa = start_agreement(studies)
    if not sa["n"]:
        return []
    return [f"Prior- against copy-started chains on the same training sets (opposite sides of the transition; a "
            f"difference is slow mixing or a second branch): largest |Δ| = {g(sa['max_delta'])}, {sa['n_within_tol']} "
            f"of {sa['n']} (study, attention, P, parameter) points within |Δ| ≤ {g(AGREE_TOLERANCE)}; significance: "
            f"{sa['n_within_2']} of {sa['n']} within 2σ (RMS z of the difference {g(sa['rms_z'])}; about 95% within "
            "2σ if they sample the same posterior)."]
