"""The results page (results.md): what a referee reads in two minutes, from the results JSON's ``summary``
(:mod:`copyhead.analysis.summary`). Per attention type one transition table and one agreement line per
method, what the convergence diagnostics mean for the numbers, the key figures and the studies' page.
Everything else is in the appendix (:mod:`.appendix`). Nothing is computed or judged here.
"""
from __future__ import annotations

from ..analysis.convergence import MIXED_ESS, MIXED_RHAT
from ..analysis.results_model import (Agreement, AttentionSummary, Cell, Convergence, Effect, ResultsTables, Summary,
                                      Theory, TheoryValue, Transition)
from ..attention import variant
from ..format import METHOD, P_, ci, effect_text, g, ok, pct, sampler_name, significance_text, table, verdict_text
from .claims import claims_section, qualitative
from .findings import headline, recipe_lines

HOLLOW = (f"hollow: chains not mixed (split-R̂ > {MIXED_RHAT:g} or bulk ESS < {MIXED_ESS:g} on one training set, "
          "the verdicts' rule)")
# (figure, what it shows, what the points and lines are); what to see is written from the summary (_what_to_see)
# for the figures of one attention type's transition: figure -> (attention, what its transition looks like)
SEE = {"fig3_linear_order_params": ("linear", "ĉG (copy) overtakes ĉ1 (pooling)"),
       "fig4_softmax_order_params": ("softmax", "âG jumps")}
KEY_FIGURES = [("fig3_linear_order_params", "linear order parameters against P with the theory",
                "Points: seed means ± 1 standard error over seeds (HMC prior- and copy-started, SGLD, Adam); "
                f"{HOLLOW}; lines: closed-form and same-training-set theory; strip on top: the theory's "
                "transitions and the measured ones with their 95% bootstrap CIs."),
               ("fig4_softmax_order_params", "softmax order parameters against P with the theory",
                f"Points: seed means ± 1 standard error over seeds; {HOLLOW}; strip on top: transitions with "
                "their 95% bootstrap CIs and the prior- vs copy-start (hysteresis) check."),
               ("fig8_scaling", "transition points against L, with the experiment's at the run's L",
                "The closed form's transition points against L (lines) and this run's measured ones at its L "
                "(open markers, 95% bootstrap CIs; inset: zoom at that L). What to see: how the theory's "
                "transitions move with L; the data's single L only anchors them.")]
OTHER_FIGURES = [("fig3b_linear_diagnostics", "linear: residuals, test loss, split-R̂ of every recipe"),
                 ("fig4b_softmax_diagnostics", "softmax: residuals, test loss, split-R̂ of every recipe"),
                 ("fig1_stages", "mean attention per stage"), ("fig2_landscapes", "action landscapes"),
                 ("fig5_coverage", "coverage of the attention by span{J, I} (left: of each draw, averaged: low "
                  "below the transitions, where a draw's attention is mostly prior fluctuation outside that span "
                  "even when its posterior mean lies in it; right: of the mean attention)"),
                 ("fig6_linear_loss_curves", "linear Adam test loss (the dip, then the rise: the tuned recipe "
                  "ramps the prior's weight up over its first steps, docs/adam.md; with a weak prior Adam fits the "
                  "copy map early, and the full prior then pulls it back to the MAP, which has little copy "
                  "structure below the crossover)"),
                 ("fig7_softmax_loss_curves", "softmax Adam test loss")]
SOURCE = {"same": "same-dataset", "exact": "exact-average", "closed": "closed-form"}


def _curve(t: Theory) -> str:
    return f"{SOURCE[t.source]} {'posterior mean' if t.kind == 'mean' else 'minimiser'}"


def value(t: TheoryValue) -> str:
    """A theory value: a grid bracket lo–hi (the jump read on the swept P) or a number."""
    return f"{g(t.lo)}–{g(t.hi)}" if ok(t.lo) and ok(t.hi) else g(t.value)


def _cell(c: Cell | None) -> str:
    if not c or not ok(c.estimate):
        return "not found on the grid" if c else "–"
    br = c.bracket
    text = f"{g(br[0])}–{g(br[1])}" if br and ok(br[0]) else g(c.estimate)
    text += f" {ci(c.ci_lo, c.ci_hi)}" if ok(c.ci_lo) and ok(c.ci_hi) else " (no CI)"
    out = c.verdict.outcome
    words = {"inside": "theory inside", "outside": "theory outside", "overlaps": "theory's bracket overlaps",
             "disjoint": "theory's bracket disjoint"}
    return text + (f", {words[out]}" if out in words else "")


def _theory(r: Transition) -> str:
    cells = [(m, r.cell(m).theory) for m in METHOD if r.cell(m) and r.cell(m).theory]
    if len(cells) > 1 and len({t.label for _, t in cells}) == 1:
        cells = [("both" if len(cells) == 2 else "all", cells[0][1])]
    parts = [f"{value(t)} ({sampler_name(m)}: {_curve(t)})" for m, t in cells]
    if ok(r.closed_form.value):
        parts.append(f"closed form {value(r.closed_form)}")
    parts += [f"{t.label.split(' (')[0]} {g(t.value)} (not compared)" for t in r.theory_points]
    return "; ".join(dict.fromkeys(parts)) or "–"


def _paper(r: Transition) -> str:
    p = r.paper
    if not p:
        return "–"
    val = g(p.lo_ours) + (f"–{g(p.hi_ours)}" if p.hi != p.lo else "")
    return f"{val} ({p.quoted})"


def _block(r: Agreement) -> str:
    """The seed-block bootstrap interval of the RMS z (the points of one seed are correlated across P)."""
    if not (ok(r.rms_z_block_lo) and ok(r.rms_z_block_hi)):
        return ""
    return (f" (seed-block bootstrap 95%: {ci(r.rms_z_block_lo, r.rms_z_block_hi)}, "
            f"{r.block_n_distinct} distinct seed resamples)")


def _grid(r: Agreement) -> str:
    """Where the theory's own grid error exceeds the experimental error (its z then tests the grid)."""
    n = r.n_grid_limited
    return (f"; the theory's grid error exceeds the experimental error at {n} of these points" if n else
            "; the theory's grid error is below the experimental error at every point" if n == 0 else "")


def _agreement_line(a: str, r: Agreement) -> str:
    v = r.verdict
    if not r.n_away:
        return f"- {a}, {METHOD[r.method]} (`{r.recipe}`): no point away from the transitions has an error bar."
    worst = f"; worst P = {P_(r.worst_P)} {r.worst_param}, z = {g(r.worst_z)}" if ok(r.worst_z) else ""
    others = "".join(f" Beside it, `{o.recipe}`{_recipe_note(o.recipe_config)}: **{verdict_text(o.verdict)}** "
                     f"— {effect_text(o.verdict.effect)}." for o in r.others)
    return (f"- {a}, {METHOD[r.method]} (`{r.recipe}`{_recipe_note(r.recipe_config)}) against the "
            f"{r.curve_label}: **{verdict_text(v)}** — "
            f"{effect_text(v.effect)}. Significance: {r.n_within_2} of {r.n_away} points within 2σ, "
            f"RMS z = {g(r.rms_z)}{_block(r)}, χ²/dof = {g(r.chi2_per_dof)}{worst}{_grid(r)}.{others}")


def _recipe_note(rc: dict | None) -> str:
    """What an Adam recipe is, in a few words: plain MAP, or the prior's weight warmed up (docs/adam.md)."""
    if not rc or rc.get("method") != "adam" or "prior_warmup" not in rc:
        return ""
    w = rc["prior_warmup"]
    return (", plain MAP: the full prior from the first step" if not w else
            f", MAP with the prior's weight warmed up over the first {w} steps, a tuned variant (docs/adam.md)")


def _convergence(a: str, c: Convergence) -> str:
    if not c.n_rows:
        return f"- {a}: no SGLD chains with enough draws for R̂."
    within = (f" ({', '.join(c.within_points[:4])}{', …' if len(c.within_points) > 4 else ''})"
              if c.within_points else "")
    return (f"- {a}: {c.n_flag} of {c.n_rows} SGLD (recipe, P, parameter) rows have R̂ > {g(c.rhat_max)} "
            f"across chains (largest {g(c.largest_rhat)}); {c.n_within_flag} have a chain whose two halves "
            f"differ (within-chain R̂ > {g(c.rhat_max)}){within}; smallest bulk ESS {g(c.smallest_ess)}.")


def _sampler_verdict(e: Effect) -> str:
    """A method against the exact posterior on the same data: within the tolerance, or by how much not."""
    if not e.n:
        return "no points"
    if e.n_within_tol == e.n:
        return f"agrees within tolerance (|Δ| ≤ {g(e.tolerance)})"
    rel = f" ({pct(e.worst_rel)})" if ok(e.worst_rel) else ""
    return f"deviates by {g(e.max_abs_delta, 2)}{rel}"


def _and(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)


def _size(t: ResultsTables) -> str:
    """The study's size, e.g. 'V = 16, L = 16, d_k = 256, σ² = 1', and where d_k ≤ L a note that the
    large-d_k theory is not meant to be exact there (read from the config the sweep ran with: its own schema)."""
    import json as _json
    cfg = _json.loads(t.config.json if t.config and t.config.json else "{}")
    task, model = cfg.get("task", {}), cfg.get("model", {})
    size = ", ".join(f"{k} = {g(v)}" for k, v in (("V", task.get("V")), ("L", task.get("L")),
                                                   ("d_k", model.get("d_k")), ("σ²", model.get("sigma2"))) if v)
    return size + (" — d_k ≤ L, where the paper's large-d_k theory is not meant to be exact" if ok(model.get("d_k"))
                   and ok(task.get("L")) and model["d_k"] <= task["L"] else "")


def _worst(items: list[tuple[str, Effect]]) -> tuple[str, Effect] | None:
    """The (attention, effect) with the largest |Δ| among those outside the tolerance, if any."""
    bad = [(a, e) for a, e in items if e.n_within_tol < e.n]
    return max(bad, key=lambda x: x[1].max_abs_delta) if bad else None


def _differs(summ: Summary, tol: str) -> str:
    """The opening's second sentence: SGLD against HMC on the same training sets (with whether its chains
    mixed) and Adam against its minimiser, each by its largest |Δ| where it deviates."""
    sgld, adam, recipe = [], [], {}
    for a, sa in summ.attentions.items():
        for s in (sa.reference.sgld[:1] if sa.reference else ()):
            if s.effect.n:
                sgld.append((a, s.effect))
        for r in sa.agreement:
            if r.method == "adam" and r.verdict.effect.n:
                adam.append((a, r.verdict.effect))
                recipe[a] = r.recipe
    parts = []
    if sgld:
        w = _worst(sgld)
        # mixing by the verdicts' rule, on the points the SGLD-against-theory verdicts score
        eff = [r.verdict.effect for a, _ in sgld for r in summ.attentions[a].agreement if r.method == "sgld"]
        bad, points = sum(e.n_not_mixed for e in eff), sum(e.n + e.n_not_mixed for e in eff)
        chains = (f"SGLD, its chains not mixed at this size ({bad} of {points} points, R̂ > {g(MIXED_RHAT)} or "
                  f"ESS < {g(MIXED_ESS)}), " if bad else "SGLD ")
        parts.append(chains + (f"deviates from HMC by up to {g(w[1].max_abs_delta, 2)} for {w[0]} attention"
                               if w else f"matches HMC within |Δ| ≤ {tol}"))
    if adam:
        w = _worst(adam)
        parts.append(f"Adam (`{recipe[w[0]]}`) misses its minimiser by up to {g(w[1].max_abs_delta, 2)} for "
                     f"{w[0]} attention" if w else f"Adam matches its minimiser within |Δ| ≤ {tol}")
    return ", and ".join(parts) + "." if parts else ""


def _qualitative(summ: Summary) -> str:
    """The opening's third sentence: the paper's qualitative claims reproduced or not."""
    rows = qualitative(summ)
    yes, no = [w for w, s in rows if s], [w for w, s in rows if not s]
    if not rows:
        return ""
    if not no:
        return f"The paper's qualitative claim{'s are' if len(yes) > 1 else ' is'} reproduced: {_and(yes)}."
    if not yes:
        return f"The paper's qualitative claim{'s are' if len(no) > 1 else ' is'} not reproduced here: {_and(no)}."
    return f"Of the paper's qualitative claims, {_and(yes)} is reproduced, {_and(no)} is not."


def _opening(t: ResultsTables, summ: Summary) -> list[str]:
    """The page's opening, three sentences generated from the numbers: where the theory holds (on each run's
    own training set against the exact posterior, HMC, by its largest |Δ| against the tolerance, with the
    size of the study), what differs (SGLD and Adam) and the paper's qualitative claims."""
    tol = g(summ.tolerance)
    within, worst = [], []
    for a, sa in summ.attentions.items():
        for r in sa.agreement:
            e = r.verdict.effect
            if r.method == "hmc" and e.n:
                (within if e.n_within_tol == e.n else []).append(a)
                worst.append(f"{g(e.max_abs_delta, 2)} for {a}")
    if not worst:
        return []
    holds = "matches" if within else "does not match"
    where = f" for {_and(within)} attention only" if within and len(within) < len(worst) else ""
    first = (f"At this study's size ({_size(t)}), the theory on each run's own training set {holds} the exact "
             f"posterior (HMC) within the tolerance |Δ| ≤ {tol}{where}: the largest |Δ| is {_and(worst)} attention.")
    return [" ".join(x for x in (first, _differs(summ, tol), _qualitative(summ)) if x), ""]


def _posterior_method(sa: AttentionSummary) -> str:
    """The method whose numbers stand for the posterior: HMC (the reference) where the sweep has it."""
    return "hmc" if sa.reference else "sgld"


def _headline(summ: Summary) -> list[str]:
    out = []
    for a, sa in summ.attentions.items():
        m = _posterior_method(sa)
        main = next((r for r in sa.transitions if r.kind in ("crossover", "jump")), None)
        agr = next((r for r in sa.agreement if r.method == m), None)
        bits = []
        if main and main.cell(m):
            c = main.cell(m)
            t = c.theory
            bits.append(f"{METHOD[m]} {main.label} at P = {_cell(c)}" + (
                f" ({_curve(t)} {value(t)}; closed form {value(main.closed_form)})" if t else ""))
        if agr and agr.n_away:
            bits.append(f"{METHOD[m]} order parameters against the {agr.curve_label}: {verdict_text(agr.verdict)} "
                        f"({significance_text(agr.verdict)})")
        if sa.reference:
            for s in sa.reference.sgld[:1]:
                bits.append(f"SGLD (`{s.recipe}`) against HMC on the same training sets: "
                            f"{_sampler_verdict(s.effect)} ({s.n_within_2} of {s.n} points within 2σ, "
                            f"RMS z = {g(s.rms_z)})")
        if bits:
            out.append(f"- **{a}**: " + "; ".join(bits) + ".")
    return out


def _reference(summ: Summary) -> list[str]:
    """The HMC reference posterior: does it mix (per dataset), and how far is SGLD from it."""
    refs = {a: sa.reference for a, sa in summ.attentions.items() if sa.reference}
    if not refs:
        return []
    out = ["## The reference posterior: HMC, and SGLD against it", "",
           "HMC samples the posterior of (Q, K) with the readout integrated out exactly (Metropolis-adjusted: no "
           "step-size bias). Its chains are judged per training set: each dataset has a prior- and a "
           "copy-started chain, and their R̂ (split halves of both) is the convergence test; SGLD is compared "
           "with it on the same training sets, so the dataset cancels and only Monte Carlo error and SGLD's "
           "bias and mixing remain.", ""]
    rows = []
    for a, ref in refs.items():
        c = ref.convergence
        pts = ", ".join(c.paired_points[:4]) + (", …" if len(c.paired_points) > 4 else "")
        rows.append([a, f"{c.n_paired_flag} of {c.n_pairs}" + (f" ({pts})" if pts else ""),
                     g(c.largest_paired), g(c.smallest_paired_ess),
                     f"{c.n_within_flag} of {c.n_rows}", g(c.largest_within)])
    rmax = g(next(iter(refs.values())).convergence.rhat_max)
    out += [table(["attention", f"(P, parameter) with a dataset whose prior/copy R̂ > {rmax}",
                   "largest per-dataset R̂", "smallest per-dataset bulk ESS",
                   f"rows with a chain's halves R̂ > {rmax}", "largest within-chain R̂"], rows), "",
            "Per dataset: one training set's prior- and copy-started chains (R̂ and bulk ESS of those two "
            "chains, the worst over the datasets of a point). R̂ across the seeds of a point is not a "
            "convergence test (it measures the spread between datasets; it is in the appendix).", ""]
    for a, ref in refs.items():
        c = ref.convergence
        if c.n_pairs_on_target is None or not c.n_pairs:
            continue
        meta = ", ".join(c.paired_points) or "none"
        low = ", ".join(c.below_target_points or ()) or "none"
        out.append(f"- {a}: {c.n_pairs_on_target} of {c.n_pairs} (P, parameter) rows mixed on every training "
                   f"set to the reference's target (bulk ESS ≥ {g(c.target_ess)} and R̂ ≤ {g(c.target_rhat)}); "
                   f"metastable (a training set's prior- and copy-started chains on two branches, R̂ > {rmax}): "
                   f"{meta}; below the target otherwise: {low}.")
    out += [""]
    if any(ref.convergence.paired_points for ref in refs.values()):
        out += ["At a metastable point the posterior mean is a weighted mix of the two branches that neither "
                "chain estimates; the points are flagged, left out of the agreement verdicts, and drawn hollow. "
                "Which branch holds the posterior on these training sets, and by how many nats of free energy "
                "(umbrella sampling along âG, research package): "
                "[benchmarks/metastability.md](benchmarks/metastability.md).", ""]
    rows = [[a, f"`{s.recipe}` − `{s.reference}`", _sampler_verdict(s.effect),
             effect_text(s.effect), f"{s.n_within_2} of {s.n}", g(s.rms_z),
             f"P = {P_(s.worst_P)} {s.worst_param}: Δ = {g(s.worst_diff)}, z = {g(s.worst_z)}"
             if ok(s.worst_z) else "–", f"{g(s.ess_sgld)} / {g(s.ess_hmc)}"]
            for a, ref in refs.items() for s in ref.sgld]
    if rows:
        out += [table(["attention", "SGLD − HMC", "verdict", "effect size", "points within 2σ", "RMS z",
                       "largest |z|", "median ESS per chain SGLD / HMC"], rows), "",
                "z = (mean over seeds of SGLD − HMC on the same training set) / its Monte Carlo error; an SGLD "
                "chain that has not mixed underestimates its error, so its |z| is an upper bound. The points of "
                "one recipe share seeds across P, so they are not independent (the RMS z is a summary, not a "
                "χ² test). Every point: the appendix.", ""]
    return out


def _studies(studies) -> list[str]:
    """What the studies found: each studies report's findings (copyhead.results.findings) with its link and
    the code version that made it; without reports, what the studies are and how to run them."""
    out = []
    for folder, rep in studies:
        lines = headline(rep)
        if not lines:
            continue
        names = ", ".join(s.name for s in rep.studies)
        codes = sorted({s.code_version or "" for s in rep.studies} - {""})
        out += [f"From [docs/{folder}/studies.md]({folder}/studies.md) ({names}; made by copyhead "
                f"{', '.join(codes) or 'unknown'}):", "", *recipe_lines(rep.studies, say_current=False)] + [f"- {x}" for x in lines] + [""]
    if not out:
        out = ["Further sweeps, each the whole workflow at another size (finite d_k, L and V, σ², step size, a fixed "
               "head dimension), ask why theory and experiment differ at the default size and whether the paper's "
               "scaling claims hold: `snakemake -s workflow/studies.smk --cores 2`, then `copyhead publish-studies` "
               "(docs/studies/studies.md).", ""]
    return out


def _scaling_elsewhere(studies) -> list[str]:
    """Without studies reports (the main pipeline's page, made from one config): where the two scaling claims
    are answered, since one size cannot answer them."""
    if studies:
        return []
    return ["The paper's two scaling claims (the softmax jump against L; softmax copying with O(√(LV)) fewer "
            "samples than linear attention) need sweeps over L and V, which this run at one size does not "
            "make: they are answered on the published results page (`docs/results.md` of the repository) "
            "from the studies' pages (`docs/studies*/studies.md`; `snakemake -s workflow/studies.smk` "
            "makes them).", ""]


def _what_to_see(summ: Summary, fname: str) -> str:
    """The first sentence of fig3's or fig4's caption, from the summary: where the reference (HMC) puts the
    figure's transition against the closed form's (the strip above the panel shows both)."""
    attention, what = SEE.get(fname, (None, ""))
    sa = summ.attentions.get(attention) if attention else None
    t = sa.transition(variant(attention).transition) if sa else None
    cell = t.cell("hmc") if t else None
    if cell is None or not ok(cell.estimate):
        return ""
    cf = t.closed_form
    where = ("inside" if cell.ci_lo <= cf.value <= cell.ci_hi else "below" if cell.ci_lo > cf.value else "above")
    bracket = f" (read on the same grid: {ci(cf.lo, cf.hi)})" if ok(cf.lo) else ""
    return (f"What to see: {what} at P = {P_(cell.estimate)} {ci(cell.ci_lo, cell.ci_hi)} in HMC, the reference "
            f"posterior; the closed form's {t.label} is at P = {P_(cf.value)}{bracket}, {where} that interval. ")


def render_page(tables: dict, figure_dir: str = "results_figures", appendix_name: str = "results_appendix.md",
                json_name: str = "results.json", studies=()) -> str:
    """The Markdown of the results page from the results JSON (read only, as
    :class:`~copyhead.analysis.results_model.ResultsTables`: a missing key is named with the file) and, for its
    Studies section, ``studies``: (docs folder name, :class:`~copyhead.analysis.results_model.StudiesReport`) pairs."""
    t = ResultsTables.from_dict(tables, json_name)
    summ = t.summary
    name = t.config_name or "the config recorded in the inputs"
    out = ["# Results: theory against experiment", "",
           f"*Generated by `copyhead results` from `{json_name}` (config `{name}`; the code version is in "
           f"the provenance record beside this page); do not edit by hand. Every table, per-point z, R̂ and definition: [{appendix_name}]({appendix_name}).*", ""] \
        + _opening(t, summ) + claims_section(summ, studies) + _scaling_elsewhere(studies) \
        + ["## Headline", ""] + _headline(summ) + [""]
    for a, sa in summ.attentions.items():
        methods = [m for m in METHOD if m != "hmc" or any(r.hmc for r in sa.transitions)]
        rows = [[r.label, _theory(r)] + [_cell(r.cell(m)) for m in methods] + [_paper(r)] for r in sa.transitions]
        recs = {m: next((r.cell(m).recipe for r in sa.transitions if r.cell(m)), "") for m in methods}
        out += [f"## {a} attention", ""]
        out += [table(["transition", "theory (curve)"] + [f"{METHOD[m]} `{recs[m]}` [95% CI]" for m in methods]
                      + [f"paper, on our σ² = {g(sa.sigma2)} (quoted at σ² = {g(summ.paper_sigma2)})"], rows), ""] \
            if rows else ["No transition can be read from this sweep (too few P per recipe).", ""]
        out += [_agreement_line(a, r) for r in sa.agreement]
        for n in sa.nonfinite:
            out.append(f"- **non-finite result**: {a} `{n.recipe}` P = {P_(n.P)} seed {n.seed} "
                       f"({', '.join(n.variables) or 'variables not named'}): left out like a diverged run.")
        out.append("")
    est = {r.kind: (r.label, r.estimator) for sa in summ.attentions.values() for r in sa.transitions}
    present = [METHOD[m] for m in METHOD
               if any(r.cell(m) for sa in summ.attentions.values() for r in sa.transitions)]
    samplers = " and ".join(n for n in ("HMC", "SGLD") if n in present) or "SGLD"
    out += ["How to read the tables: each transition is read from the data with one estimator, the same for "
            + ", ".join(present + ["the figures"]) + " and the theory curves it is compared with: "
            + "; ".join(f"*{lab}*: {e}" for lab, e in est.values()) + ". The theory value is that of the "
            f"method's natural curve — the posterior mean for {samplers} (what a chain's average estimates), the "
            "minimiser for Adam (a MAP estimate) — from the most specific theory: *same* (each run's own training "
            "set), else *exact* (the dataset-averaged exact action), else the *closed form*. 'theory inside / "
            "outside': whether that value lies in the 95% bootstrap CI over seeds; for the jump, a bracket "
            "against a bracket: whether the theory's grid step overlaps the data's interval. The theory's "
            "first-order point P* (where its global minimum switches branch) is a different quantity: shown, "
            "never compared. Resolution of the intervals: the bootstrap redraws the seeds at each P, and with 4 "
            "seeds a redraw at one P is one of only 35 multisets, so a 95% interval from 4 seeds is coarse; the "
            "crossover's interval also holds its interpolation error between grid points (log P against P). "
            "Every transition P scales "
            "with σ², so the paper's numbers are multiplied by our σ² over theirs.", "",
            "## Convergence: what it means for these numbers", ""]
    out += [_convergence(a, sa.convergence) for a, sa in summ.attentions.items()]
    out += ["", "R̂ across chains compares chains on different training sets, so it also grows with the "
            "dataset-to-dataset variation that the error bars already contain (the spread of the chain means); "
            "a chain whose own halves differ has not mixed, and there its Monte Carlo error — and the "
            "error bar and z built on it — is likely too small: at those points |z| overstates the disagreement and "
            "the agreement verdicts above are provisional. The transition CIs resample seeds, so they contain the "
            "spread between chains but not a bias all chains share (e.g. prior-started chains that have not yet "
            "jumped). Those points are drawn hollow in fig3/fig4.", ""]
    out += _reference(summ)
    out += ["## Key figures", ""]
    for fname, what, caption in KEY_FIGURES:
        see = _what_to_see(summ, fname)
        out += [f"![{fname}: {what}]({figure_dir}/{fname}.png)", "", f"*{fname}.* {see}{caption}", ""]
    out += ["Also: " + "; ".join(f"[{f}]({figure_dir}/{f}.png) ({w})" for f, w in OTHER_FIGURES) + ".", "",
            "## Studies", ""]
    out += _studies(studies)
    return "\n".join(out).rstrip() + "\n"
