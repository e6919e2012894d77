"""The results appendix (results_appendix.md): every table behind the results page, read from the results
JSON (:func:`copyhead.results.write_results`): configuration, agreement per curve and per point,
transitions with every theory value, convergence, Adam against the landscape, the paper's numbers,
definitions and inputs. Nothing is judged here: verdicts come from the JSON's ``summary``
(:mod:`copyhead.analysis.summary`).
"""
from __future__ import annotations

import json

from ..analysis.curves import CURVES
from ..analysis.agreement import largest_delta
from ..analysis.convergence import MIXED_ESS, MIXED_RHAT
from ..analysis.results_model import AgreementPoint, AttentionSummary, ResultsTables
from ..analysis.summary import AGREE_TOLERANCE, PAPER, PAPER_SIGMA2
from ..format import P_ as _P, ci, g, ok as _ok, pm, table, verdict_text, yn


def _label(curve: str | None) -> str:
    return CURVES[curve][0] if curve in CURVES else "–"


# ---------------------------------------------------------------------------------------------- sections
def _config_section(t: ResultsTables) -> list[str]:
    out = ["## Configuration", ""]
    name = t.config_name
    cfg_hash = t.config.hash if t.config else ""
    out.append((f"Produced from `{name}`" if name else "Produced from the config recorded in the inputs")
               + (f" (config hash `{cfg_hash}`)" if cfg_hash else "") + "; the code that made it: the provenance "
               "records beside this page and results.json.")
    cfg = json.loads(t.config.json if t.config and t.config.json else "{}")   # the config itself: its own schema
    used = sorted({n for att in t.attentions.values() for n in att.recipes})
    rec_rows = []
    for n in used:
        r = cfg.get("optimizers", {}).get(n)
        if r:
            rec_rows.append([n, r.get("method"), r.get("init"), r.get("steps"),
                             {"sgld": r.get("eta"), "hmc": f"{r.get('step_size')} ({r.get('n_leapfrog')} leapfrog)"}
                             .get(r.get("method"), r.get("lr")),
                             r.get("burn_in", "–"), r.get("thin", "–"), r.get("prior_warmup", "–")])
    if rec_rows:
        out += ["", table(["recipe", "method", "start", "steps", "η (SGLD) / initial step (HMC) / lr (Adam)", "burn-in", "thin",
                           "prior warm-up"], rec_rows), ""]
    overrides = [f"- {a} attention runs `{n}` with " + ", ".join(f"{k} = {v}" for k, v in sorted(e["recipe"].items()))
                 for a, sw in sorted(cfg.get("sweep", {}).items()) for n, e in sorted(sw.items())
                 if n in used and e.get("recipe")]
    if overrides:
        out += ["Per-attention overrides of the table (`sweep.<attention>.<recipe>.recipe`):", "", *overrides, ""]
    for a, att in t.attentions.items():
        want = cfg.get("sweep", {}).get(a) if cfg else None
        if want is not None:
            have = {n: (sorted(float(p) for p in v.P), sorted(v.seeds)) for n, v in att.sweep.items()}
            cfg_sweep = {n: (sorted(float(p) for p in v["P"]), sorted(int(x) for x in v["seeds"]))
                         for n, v in want.items()}
            if have != cfg_sweep:
                diff = sorted(n for n in set(have) | set(cfg_sweep) if have.get(n) != cfg_sweep.get(n))
                out.append(f"- **warning**: the {a} runs in the aggregate are not the sweep of this config "
                           f"(recipes {', '.join(diff)} differ in P or seeds): the recipe table above may not "
                           "describe them.")
        th = att.theory.config   # the theory's config (its own schema)
        task, model = th.get("task", {}), th.get("model", {})
        out.append(f"- **{a}**: V = {task.get('V', '–')}, L = {task.get('L', '–')}, d_k = {model.get('d_k', '–')}, "
                   f"σ² = {model.get('sigma2', '–')}, prior {att.theory.prior}; exact average over "
                   f"{att.theory.exact_n_datasets} datasets; same-dataset theory: "
                   f"{'yes' if att.same_dataset else 'not given'}. Sweep: " + "; ".join(
                       f"{n} ({r.method}, {r.init} start): P = {', '.join(_P(p) for p in att.sweep[n].P)}, "
                       f"{len(att.sweep[n].seeds)} seed(s), {att.sweep[n].n_ok} ok, "
                       f"{att.sweep[n].n_diverged} diverged" for n, r in att.recipes.items()) + ".")
    return out + [""]


def _agreement(t: ResultsTables) -> list[str]:
    out = ["## Agreement: Δ = experiment − theory and z = Δ/error", "",
           "Per attention type, recipe and theory curve, over the points away from the theory's transitions "
           f"(outside [T/{g(t.settings.away_factor)}, T·{g(t.settings.away_factor)}] of each "
           "transition point and of the spinodal window). *natural*: the curve that estimates what the method "
           "measures (SGLD: posterior mean; Adam: minimiser). The effect size first: the largest |Δ| = "
           "|experiment − theory| over those points; their z's beside it. Errors: see Definitions.", ""]
    rows = []
    for a, att in t.attentions.items():
        for s in att.agreement_summary:
            rows.append([a, s.recipe, s.curve_label, "yes" if s.natural else "", s.n_away, g(s.max_abs_delta, 2),
                         s.n_within_2, g(s.rms_z), g(s.chi2_per_dof), g(s.p_value, 2),
                         f"{s.worst_recipe} P={_P(s.worst_P)} {s.worst_param} z={g(s.worst_z)}"
                         if _ok(s.worst_z) else "–", f"{g(s.rms_z_all)} ({s.n_all})", s.n_no_error])
    out.append(table(["attention", "recipe", "theory curve", "natural", "n away", "largest |Δ|", "|z| ≤ 2", "RMS z",
                      "χ²/dof", "p",
                      "worst point", "RMS z all (n)", "no error"], rows))
    out += ["", "### Per point (natural curves)", "",
            "Experiment ± error (basis: spread = sd over chains/√n, mcse = from ESS), theory value and z per "
            "source; † marks points near a transition (not in the summaries).", ""]
    for a, att in t.attentions.items():
        pts: dict[tuple, dict] = {}
        for r in att.agreement:
            if not r.natural:
                continue
            key = (r.recipe, r.P, r.name)
            d = pts.setdefault(key, {"exp": r.experiment if r.source != "same_dataset" else None,
                                     "err": r.error if r.source != "same_dataset" else None,
                                     "basis": r.error_basis, "n": r.n, "near": False})
            if r.source != "same_dataset":
                d["exp"], d["err"], d["basis"] = r.experiment, r.error, r.error_basis
            d[r.source] = f"{g(r.theory)} ({g(r.z, 2)})"
            d["near"] = d["near"] or not r.away
        srcs = [s for s in ("closed_form", "exact_avg", "same_dataset") if any(s in d for d in pts.values())]
        rows = [[rec, _P(P) + (" †" if d["near"] else ""), name, d["n"],
                 pm(d["exp"], d["err"]) + (f" ({d['basis']})" if d["basis"] else "") if d["exp"] is not None else "–"]
                + [d.get(s, "–") for s in srcs] for (rec, P, name), d in sorted(pts.items())]
        out += [f"**{a}**", "", table(["recipe", "P", "param", "n", "experiment ± error"] +
                                      [f"{s.replace('_', ' ')}: theory (z)" for s in srcs], rows), ""]
    return out


def _transitions(t: ResultsTables) -> list[str]:
    lvl = 0.95 if t.settings.level is None else t.settings.level
    out = ["## Transition points from data", "",
           f"Percentile bootstrap over chains/seeds ({t.settings.n_boot} replicates, {g(100 * lvl)}% "
           "intervals; `valid`: replicates that found the transition on the grid). Theory values each with "
           "'in CI'.", ""]
    rows = []
    for a, att in t.attentions.items():
        for tr in att.transitions:
            th = "<br>".join(f"{x.curve}: {g(x.value)} ({yn(x.contains)})" for x in tr.theory)
            for w in tr.windows or ():
                th += f"<br>{w.curve} spinodal window [{g(w.lo)}, {g(w.hi)}] overlaps CI: {yn(w.overlaps)}"
            rows.append([a, tr.transition, tr.recipe, g(tr.estimate), ci(tr.ci_lo, tr.ci_hi),
                         f"{tr.n_valid}/{tr.n_boot}", th or "–",
                         "; ".join(x for x in (tr.note, f"disagree at P = {', '.join(_P(p) for p in tr.disagree_P)}"
                                               if tr.disagree_P else "") if x)])
    out.append(table(["attention", "transition", "recipe", "estimate", "CI", "valid", "theory (in CI)", "note"], rows))
    return out + [""]


def _convergence(t: ResultsTables) -> list[str]:
    rmax = t.settings.rhat_max
    out = ["## Convergence of the sampling chains (SGLD, HMC)", "",
           f"Rank-normalised split-R̂ across chains (flag: R̂ > {g(rmax)}; chains of different seeds have "
           "different training sets, so this R̂ also grows with the dataset-to-dataset variation of the posterior), "
           "*within-chain R̂*: the largest split-R̂ of a single chain (its two halves), bulk ESS, Σ ESS of the "
           "chains, the MCSE of the chain-averaged mean and the spread of the chain means (sd/√n). Rows `a+b`: "
           "prior- and copy-started chains pooled; *paired R̂*: per seed, its two chains (same training set), "
           "the largest over seeds; *paired ESS*: the bulk ESS of those two chains, the smallest over seeds.", ""]
    rows = []
    for a, att in t.attentions.items():
        for r in att.convergence:
            if r.n_chains == 0:
                continue
            rows.append([a, r.recipe, _P(r.P), r.name, r.n_chains, r.n_draws, g(r.mean),
                         g(r.rhat), g(r.rhat_within_max), g(r.rhat_paired_max),
                         g(r.ess_paired_min), g(r.ess_bulk),
                         g(r.ess_sum),
                         g(r.err_mcse, 2), g(r.err_spread, 2), "**R̂**" if r.rhat_flag else ""])
    out.append(table(["attention", "recipe", "P", "param", "chains", "draws", "mean", "R̂", "within-chain R̂",
                      "paired R̂", "paired ESS", "bulk ESS", "Σ ESS", "MCSE", "sd/√n", "flag"], rows))
    for a, att in t.attentions.items():
        flagged = [r for r in att.convergence if r.n_chains and r.rhat_flag and "+" not in r.recipe]
        also = [r for r in flagged if _ok(r.rhat_within_max) and r.rhat_within_max > rmax]
        if flagged:
            out += ["", f"{a}: {len(also)} of the {len(flagged)} flagged single-recipe rows also have a single "
                        f"chain with split-R̂ > {g(rmax)} (its two halves differ), so their flag is not only the "
                        "dataset-to-dataset variation between chains."]
    return out + [""]


def _samplers(t: ResultsTables) -> list[str]:
    rows = [[a, r.recipe, r.reference, _P(r.P), r.name, r.n_seeds, g(r.sgld), g(r.hmc),
             g(r.diff, 2), g(r.error, 2), g(r.z), g(r.z_seed_max), g(r.ess_sgld), g(r.ess_hmc)]
            for a, att in t.attentions.items() for r in att.samplers]
    if not rows:
        return []
    return ["## SGLD against the HMC reference, every point", "",
            "Per SGLD recipe and its HMC recipe of the same start, over the seeds both ran (the same training "
            "sets): the seed means of both samplers, their difference Δ and its Monte Carlo error "
            "√(Σ MCSE_SGLD² + MCSE_HMC²)/n, z = Δ/error, the largest per-seed |z|, and the median ESS of the "
            "mean per chain.", "",
            table(["attention", "SGLD recipe", "HMC recipe", "P", "param", "seeds", "SGLD", "HMC", "Δ", "error",
                   "z", "max seed |z|", "ESS SGLD", "ESS HMC"], rows), ""]


def _adam(t: ResultsTables) -> list[str]:
    out = ["## Adam: a MAP estimate, not a posterior mean", "",
           "Adam minimises the posterior energy U of the weights (with the `adam` recipe's prior warm-up, "
           "docs/adam.md): it estimates a mode, which is compared with the action's minimiser, not its "
           "posterior mean; which minimum it reaches depends on where it starts and on the warm-up.", ""]
    for a, att in t.attentions.items():
        ad = att.adam
        if ad.position:
            rows = [[p.recipe, p.transition, p.source, g(p.estimate), ci(p.ci_lo, p.ci_hi),
                     p.estimate_is or "–", ", ".join(f"{m.name} = {g(m.P)}" for m in p.marks)]
                    for p in ad.position]
            out += [f"**{a}: where the Adam transition lies among the theory's marks**", "",
                    table(["recipe", "transition", "theory", "estimate", "CI", "estimate lies", "marks"], rows), ""]
        if ad.vs_minimiser:
            rows = [[v.recipe, v.name, _label(v.curve), v.n, v.n_below, g(v.median_difference),
                     g(v.median_relative_difference)] for v in ad.vs_minimiser]
            out += [f"**{a}: Adam against the minimiser** (points away from the transitions)", "",
                    table(["recipe", "param", "minimiser of", "n", "Adam below", "median Adam − minimiser",
                           "median relative"], rows), ""]
            for v in ad.vs_minimiser:
                side = ("below" if v.n_below > v.n / 2 else "above") if v.n_below != v.n / 2 else "on both sides of"
                out.append(f"- {a} {v.recipe} {v.name}: {v.n_below} of {v.n} points below the "
                           f"{_label(v.curve)}; Adam lies mostly {side} it (median relative difference "
                           f"{g(100 * v.median_relative_difference if _ok(v.median_relative_difference) else None)} %). "
                           "A mode of the weight posterior is not the minimiser of the order-parameter action, "
                           "which integrates the readout and the scores out.")
            out.append("")
        if ad.landscape:
            rows = [[l.source, _P(l.P), l.n_minima, g(l.beta_uniform), g(l.beta_copy),
                     g(l.dS_copy_minus_uniform)] for l in ad.landscape]
            out += [f"**{a}: minima of the theory's action landscapes S(β)** (ΔS < 0: the copy minimum is global)", "",
                    table(["source", "P", "minima", "β uniform side", "β copy side", "ΔS"], rows), ""]
            two = [l for l in ad.landscape if l.n_minima > 1]
            if two:
                out.append(f"Two minima (a metastable branch Adam can stop on) at P = "
                           f"{', '.join(_P(l.P) + ' (' + l.source + ')' for l in two)}.")
                out.append("")
        if ad.map_vs_prior_warmup:
            rows = [[" vs ".join(p.recipes), _P(p.P), p.name, f"{pm(p.mean_a, p.sem_a)} (n={p.n_a})",
                     f"{pm(p.mean_b, p.sem_b)} (n={p.n_b})", g(p.difference), g(p.z, 2)]
                    for p in ad.map_vs_prior_warmup]
            out += [f"**{a}: Adam recipes against each other**", "",
                    table(["recipes", "P", "param", "first", "second", "difference", "z"], rows), ""]
            out += [_adam_recipes_effect(ad.map_vs_prior_warmup, t.summary.tolerance if t.summary else
                                         AGREE_TOLERANCE), ""]
    return out


def _adam_recipes_effect(pairs, tol: float) -> str:
    """Two Adam recipes against each other, effect size first: the largest |difference| and how many common
    P lie within the agreement tolerance; how many differ by more than 2σ beside it."""
    fin = [p for p in pairs if _ok(p.difference)]
    big = [p for p in pairs if _ok(p.z) and abs(p.z) > 2]
    worst = max(fin, key=lambda p: abs(p.difference), default=None)
    size = (f"Largest |difference| {g(abs(worst.difference))} (P = {_P(worst.P)} {worst.name}); "
            f"{sum(abs(p.difference) <= tol for p in fin)} of {len(pairs)} (P, parameter) pairs within |Δ| ≤ {g(tol)}. "
            if worst is not None else "")
    return (f"{size}Significance beside it: more than 2σ apart at {len(big)} of {len(pairs)}"
            + (f" (P = {', '.join(_P(p.P) for p in big)})" if big else "") + ".")


def evidence_lines(a: str, sa: AttentionSummary, rows: tuple[AgreementPoint, ...] = ()) -> list[str]:
    """The summary's evidence on the reasons for disagreement (analysis.summary.evidence), as sentences; each
    comparison of two theory curves gives the largest |Δ| against each first (over the SGLD recipe's agreement
    ``rows`` behind the RMS z, :func:`copyhead.analysis.agreement.largest_delta`), the RMS z beside it."""
    recipe = next((r.recipe for r in sa.agreement if r.method == "sgld"), None)

    def versus(first: str, second: str, a_label: str, b_label: str, z_a: float, z_b: float, note: str = "") -> str:
        da, db = (largest_delta(rows, c, recipe) for c in (first, second))
        if _ok(da) and _ok(db):
            return (f"largest |Δ| against the {a_label} {g(da)}, against {b_label} {g(db)} "
                    f"(RMS z {g(z_a)}, {g(z_b)}{'; ' + note if note else ''})")
        return (f"RMS z against the {a_label} {g(z_a)}, against {b_label} {g(z_b)} "
                f"(no |Δ|: no agreement rows{'; ' + note if note else ''})")

    out = []
    for e in sa.evidence:
        if e.what == "outside 2σ and not mixed":
            out.append(f"- {a}: {e.n} of the {e.of} SGLD points outside 2σ of the natural curve away from "
                       f"the transitions have chains that have not mixed (split-R̂ > {g(MIXED_RHAT)} or bulk ESS < "
                       f"{g(MIXED_ESS)} on a training set: their error bars, and so their z, are not trusted).")
        elif e.what == "own training set vs dataset average":
            out.append(f"- {a}: " + versus("same_mean", "exact_mean", "same-dataset posterior mean",
                                            "the dataset-averaged one", e.same_mean, e.exact_mean,
                                            "dataset-to-dataset variation") + ".")
        elif e.what == "posterior mean vs minimiser":
            src = "exact avg." if e.source == "exact" else "closed form"
            out.append(f"- {a}: " + versus(f"{e.source}_mean", f"{e.source}_saddle", f"{src} posterior mean",
                                            "its minimiser", e.mean, e.saddle) + ".")
    return out


def _paper(t: ResultsTables) -> list[str]:
    summ = t.summary
    out = ["## Against the paper's own numbers", "",
           f"The paper's values are quoted from the paper (arXiv 2606.12058), at its σ² = {g(PAPER_SIGMA2)}. Every "
           "transition P of the theory is proportional to σ² (docs/theory.md Sec. 6), so they are shown here "
           "multiplied by our σ²/σ²_paper, beside our numbers at our σ².", ""]
    rows = []
    for a, sa in summ.attentions.items():
        for r in sa.transitions:
            p = r.paper
            if not p:
                continue
            s, d = r.sgld, r.adam
            rows.append([r.label, f"{p.quoted} at σ² = {g(p.sigma2_paper)}",
                         f"{g(p.lo_ours)}" + (f"–{g(p.hi_ours)}" if p.hi != p.lo else ""),
                         g(sa.sigma2), g(r.closed_form.value),
                         f"{g(s.estimate)} {ci(s.ci_lo, s.ci_hi)}" if s else "–",
                         f"{g(d.estimate)} {ci(d.ci_lo, d.ci_hi)}" if d else "–"])
    out.append(table(["quantity", "paper", "paper on our σ²", "our σ²", "closed form", "SGLD (95% CI)",
                      "Adam (95% CI)"], rows))
    out.append("")
    sc = summ.scaling
    if sc:
        out.append(f"{PAPER['scaling'][0]}: the paper states {PAPER['scaling'][1]}. Our closed-form P* at "
                   f"L = {', '.join(_P(x) for x in sc.L)}: {', '.join(g(x) for x in sc.P_star)} "
                   f"(d_k = {sc.d_k}). Over this range P* varies by a factor {g(sc.spread['flat'])}, "
                   f"P*/ln²L by {g(sc.spread['ln2L'])} and P*/(L ln²L) by {g(sc.spread['L_ln2L'])}: the "
                   f"flattest is {sc.best} (rule: {sc.rule}; docs/theory.md Sec. 6: the asymptotic ln²L "
                   "form needs large d_k).")
        out.append("")
    verdicts = [f"{a} {r.recipe}: {r.n_within_2} of {r.n_away} points within 2σ of the {r.curve_label} "
                f"(RMS z {g(r.rms_z)}: {verdict_text(r.verdict)})"
                for a, sa in summ.attentions.items() for r in sa.agreement if r.n_away]
    out.append(f"{PAPER['agreement'][0]}: the paper says {PAPER['agreement'][1]}. Here: " +
               ("; ".join(verdicts) if verdicts else "no point with an error bar away from the transitions") + ".")
    out.append("")
    reasons = [line for a, sa in summ.attentions.items()
               for line in evidence_lines(a, sa, t.attentions[a].agreement if a in t.attentions else ())]
    if reasons:
        out += ["Evidence on the likely reasons for the differences (from the summary):", ""] + reasons + [""]
    return out


def _definitions(t: ResultsTables) -> list[str]:
    st = t.settings
    return ["## Definitions", "",
            "- Plotted order parameters: linear ĉ1 = c1, ĉG = cG; softmax â1 = m1, âG = mP/L "
            "(copyhead.order_params.paper_order_parameters).",
            "- SGLD point (recipe, P): mean over chains (one per seed, each with its own training set) of the "
            "chains' sample means; error = the larger of sd over chains/√n (includes dataset-to-dataset "
            "variation) and √(Σ MCSE_i²)/n with MCSE_i = sd_i/√ESS_i (Monte Carlo only). With one chain only "
            "the MCSE exists. Adam: mean ± sem over seeds (no error with one seed: no z).",
            "- Same-dataset theory: per chain the difference to its own training set's prediction, averaged "
            "with the same error rule (the dataset variation cancels).",
            "- Exact dataset average: only at its own P grid; theory error sd/√n of the per-dataset minimiser "
            "over its n datasets. Closed form: no error.",
            f"- Away from transitions: factor {g(st.away_factor)}; closed-form curves against the closed "
            "form's transitions, exact-average and same-dataset curves against the exact average's.",
            f"- R̂ flag: rank-normalised split-R̂ > {g(st.rhat_max)} (Vehtari et al. 2021); chains of "
            "different seeds sample different posteriors, so a large R̂ across seeds can also be dataset "
            "variation; the paired R̂ (prior vs copy start, same seed) is free of it.",
            "- Transition estimators and their limits: docs/figures.md (copyhead.analysis.transition_estimators).", ""]


def _inputs(t: ResultsTables, json_name: str) -> list[str]:
    rows = [[role, f"`{v.path}`", f"`{v.sha256[:12]}`", f"`{v.config_hash}`", v.kind]
            for role, v in (t.inputs or {}).items()]
    out = ["## Inputs", "", f"The same numbers, machine-readable: `{json_name}`.", ""]
    if rows:
        out.append(table(["role", "path", "sha256", "config hash", "kind"], rows))
    for a, att in t.attentions.items():
        ag = att.aggregate
        out.append("")
        out.append(f"{a} aggregate: {ag.n_runs} runs ({ag.n_diverged} diverged), "
                   f"{len(ag.run_config_hashes)} distinct run config hashes (a run's config includes "
                   f"its P and seed; listed in the JSON), run code fingerprints `{ag.run_code_fingerprints}`"
                   f"{' (mixed code!)' if ag.mixed_code else ''}; theory config hash "
                   f"`{att.theory.config_hash}`.")
    return out + [""]


def render_appendix(tables: dict, json_name: str = "results.json", page_name: str = "results.md") -> str:
    """The Markdown of the appendix from the results JSON (read only, as
    :class:`~copyhead.analysis.results_model.ResultsTables`: a missing key is named with the file)."""
    t = ResultsTables.from_dict(tables, json_name)
    parts = ["# Results appendix: every table", "",
             f"*Generated by `copyhead results` from `{json_name}`; do not edit by hand. The short page is "
             f"[{page_name}]({page_name}). Every number is read from the inputs listed at the end, except the "
             "paper's own numbers, which are quoted and labelled as the paper's.*", ""]
    parts += _config_section(t) + _agreement(t) + _transitions(t) + _convergence(t) + _samplers(t)
    parts += _adam(t) + _paper(t) + _definitions(t) + _inputs(t, json_name)
    return "\n".join(parts).rstrip() + "\n"
