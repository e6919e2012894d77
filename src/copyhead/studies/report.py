"""The studies page (``copyhead studies-page``): studies.md and its figures, rendered from studies.json
alone (the studies' tables, :mod:`copyhead.studies.tables`) and, for the table that puts the converged
default-size study on the paper's σ² = 1 scale, that study's current results JSON (docs/results.json).

Every number on the page is a table entry of studies.json, a statistic of them (:mod:`copyhead.analysis`)
or the converged study's transitions; the paper's own numbers come from
:data:`copyhead.analysis.summary.PAPER`. The conclusions are rules applied to the numbers
(:mod:`copyhead.studies.conclude`, each rule stated next to its verdict), not text typed after looking at
them. The page and every figure are written with a provenance record (``<page>.provenance.json``,
``<figure>.provenance.json``: the sha256 of each input); rendered into a published folder (one with a
publish manifest, :mod:`copyhead.publish`), the manifest is kept up to date.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from copyhead.analysis.finite_size import CURVES, PRIOR_LABEL, ratio_verdict
from copyhead.analysis.results_model import (FiniteSize, Fit, Ratio, ResultsFormatError, StudiesReport, Study,
                                             StudyPath, StudyTransition, Twin, read_studies)
from copyhead.analysis.summary import AGREE_TOLERANCE, LOCATION_TOLERANCE, PAPER
from copyhead.figures import write_figure
from copyhead.figures.studies import draw_finite_size, draw_scaling, draw_twins, twin_label
from copyhead.format import ci, g, pm, table, yn
from copyhead.provenance import DataFileError, product_record, sidecar_path, write_product
from copyhead.results.findings import headline, recipe_lines, sampler_text, samplers
from copyhead.studies.conclude import (RANK_NOTE, collapse_verdict, conclude_dk_over_L, conclude_finite_size,
                                       conclude_scaling, conclude_scaling_theory, convergence_summary, mixing_line,
                                       paper_scale, point_mixing, unsettled)
from copyhead.publish import check_published, record_written
from copyhead.studies.tables import CURVE_LABEL, load_transitions, path_label

FIGURES = {"finite_size": "fig9_finite_size.png", "finite_L": "fig9b_gap_vs_L.png", "scaling": "fig8_scaling_experiment.png",
           "twins": "fig10_twins.png"}
def load_report(path: str | Path) -> StudiesReport:
    """studies.json as the renderer reads it (:class:`~copyhead.analysis.results_model.StudiesReport`: null
    numbers as NaN), each path's theory lines with their label (a studies.json of older code lacks it: made
    from its d_k or d_k/L)."""
    path = Path(path)
    try:
        rep = read_studies(path)
    except FileNotFoundError:
        raise DataFileError(f"{path}: no such studies tables file (make it with `copyhead studies-report`)") from None
    except (ValueError, ResultsFormatError) as e:
        raise DataFileError(f"{path}: not a studies.json of `copyhead studies-report` ({type(e).__name__}: {e})") from None

    def labelled(part: StudyPath | None) -> StudyPath | None:
        tl = part.theory_lines if part else None
        if tl is None or tl.label is not None:
            return part
        return dataclasses.replace(part, theory_lines=dataclasses.replace(tl, label=path_label(tl.d_k, tl.dk_per_L)))
    return dataclasses.replace(rep, scaling=labelled(rep.scaling),
                               fixed_dk=None if rep.fixed_dk is None else tuple(map(labelled, rep.fixed_dk)))


def _tr(t: StudyTransition) -> str:
    """A transition: its grid bracket (the softmax jump) or point value, with its 95% interval."""
    if not math.isfinite(t.estimate):
        return "–"
    br = t.bracket
    return f"{g(br[0])}–{g(br[1])} {ci(t.ci_lo, t.ci_hi)}" if br else f"{g(t.estimate)} {ci(t.ci_lo, t.ci_hi)}"


def _fit(fit: Fit) -> str:
    return f"{pm(fit.a, fit.a_err)} (b = {g(fit.b)}, χ²/dof = {g(fit.chi2_dof)})"


def _ratio_outcome(fit: Fit) -> str:
    """The extrapolated ratio's verdict word, its distance from 1 in σ beside it."""
    word = ratio_verdict(fit.a, fit.a_err)[0]
    return word if word == "–" else f"{word if word == 'agrees' else f'**{word}**'} ({_sigmas(fit.a - 1, fit.a_err)})"


def _gap_closes(fit: Fit) -> str:
    """|gap_∞| within the agreement tolerance (yes / **no**), its distance from 0 in σ beside it."""
    if not (math.isfinite(fit.a) and math.isfinite(fit.a_err)):
        return "–"
    return f"{yn(abs(fit.a) <= AGREE_TOLERANCE)} ({_sigmas(fit.a, fit.a_err)})"


def _sigmas(d: float, err: float) -> str:
    return f"{g(abs(d) / err, 2)}σ" if err > 0 else "no error"


def _train_jobs(s: Study) -> int:
    """Training jobs of a study: one per (attention, recipe, P) (from its rows where studies.json has no cost)."""
    if s.cost:
        return s.cost.train_jobs
    return len({(att, r.recipe, r.P) for att, a in s.attentions.items() for r in a.rows})


def _cost_rows(studies: tuple[Study, ...]) -> list[list]:
    rows = []
    for s in studies:
        sec, cost = s.seconds, s.cost
        rows.append([s.name, s.L, s.V, s.d_k, g(s.sigma2), _train_jobs(s), g(sec.train, 3),
                     g(cost.train_model_s if cost else None, 3), g(sec.other, 3),
                     g((sec.train + sec.other) / 2 / 60, 2), g((cost.gpu_model_s if cost else math.nan) / 60, 2)])
    return rows


def _title(rep: StudiesReport) -> str:
    """What the page holds, from its sections."""
    parts = [what for part, what in ((rep.finite_size, "finite d_k"), (rep.scaling, "scaling in L and V"),
                                     (rep.fixed_dk, "scaling in L at a fixed head dimension"),
                                     (rep.twins, "σ² and step-size twins")) if part]
    return "# Studies: " + (", ".join(parts) if parts else "the studies' sizes and convergence")


def paper_scale_lines(converged: dict | None) -> list[str]:
    """The paper-scale part of the twins section: with the converged study, its transitions divided by σ²
    next to the paper's numbers; the rule of the twins' collapse verdicts."""
    if converged is not None:
        return paper_scale(converged) + ["", COLLAPSE_RULE]
    return ["(No converged study given: `copyhead studies-page --converged docs/results.json` adds its transitions "
            "on the paper's σ² = 1 scale.)", "", COLLAPSE_RULE]


COLLAPSE_RULE = (f"Rule: a transition collapses at equal P/σ² when the interval its two 95% CIs allow for the ratio "
                 f"lies inside 1 ± {LOCATION_TOLERANCE:g} (the location tolerance), differs when it lies wholly "
                 "outside, and is not resolved otherwise; whether the CIs overlap stands beside it.")


def render(rep: StudiesReport, json_name: str = "studies.json", converged: dict | None = None,
           converged_name: str = "") -> list[str]:
    """The page's lines from studies.json (:func:`load_report`) and the converged study
    (:func:`copyhead.studies.tables.load_transitions`; used only where the page has σ² twins)."""
    conv = f"; the converged study's transitions from `{converged_name}`" if converged is not None and rep.twins else ""
    out = [_title(rep), "",
           f"*Generated by `copyhead studies-page` from [{json_name}]({json_name}) (the studies' tables, made by "
           f"`copyhead studies-report` from each study's results; each study is the main workflow in `studies/<name>/`, "
           f"listed at the end{conv}); do not edit by hand. Rerun everything with "
           "`snakemake -s workflow/studies.smk --cores 2`.*", "",
           f"Every study samples {samplers(rep)} chains (HMC, the reference sampler: a prior-started and a "
           "copy-started chain per training set, recipes hmc and hmc_copy; SGLD: 4 prior-started, 4 copy-started "
           "per (attention, P) unless stated; each chain its own seed, training set and noise stream) on a P grid at fixed multiples of its own "
           "closed-form transition P_ref (linear: crossover ĉG = ĉ1; softmax: first-order point P*), so the "
           "grids move with d_k, L, V and σ² as the transitions do — or on a dense grid listed in the spec. Errors: MCSE of the chain means (or the "
           "spread across chains when larger) combined with the theory's own error; transition CIs: 95% "
           "bootstrap over chains (docs/results.md, Definitions).", "",
           f"Studies in this report: {', '.join(s.name for s in rep.studies)}.", "",
           *recipe_lines(rep.studies),
           "## Findings", ""] + [f"- {x}" for x in headline(rep)] + [""]
    fs = rep.finite_size
    if fs:
        out += _finite_size_section(fs, "1", f"Finite d_k at L = {fs.L}: does the gap to the theory close?",
                                    FIGURES["finite_size"], conclude_finite_size(fs, rep.studies), samplers(rep))
    sc = rep.scaling
    if sc:
        out += _scaling_section(sc, "2", f"Scaling in L and V along {sc.theory_lines.label}: the paper's two "
                                "claims", FIGURES["scaling"])
    for i, fx in enumerate(rep.fixed_dk or ()):
        out += _scaling_section(fx, f"2{'cdefg'[i]}", f"Scaling in L at a fixed head dimension, "
                                f"{fx.theory_lines.label} (group `{fx.group}`): the regime L > d_k",
                                fx.figure)
    fl = rep.finite_L
    if fl:
        conclusion = conclude_finite_size(fl, rep.studies) + (conclude_dk_over_L(fs, fl) if fs else [])
        out += _finite_size_section(fl, "2b", f"The gap against L at fixed d_k/L = {g(fl.d_k_over_L)} (the "
                                    "transverse directions of the attention matrix grow as L²)", FIGURES["finite_L"],
                                    conclusion, samplers(rep))
    if rep.twins:
        out += _twins_section(rep.twins, paper_scale_lines(converged),
                              {x.name: x.method or "SGLD" for x in rep.studies})
    out += _per_study_section(rep.studies)
    return out


# under each figure that fades points (figures.studies.FADED_LABEL)
FADED_CAPTION = ("Faded markers: points whose chains have not mixed or are metastable, and the transitions (and "
                 "ratios) of a study with such a point (section 4, 'Mixing per P point').")


def _finite_size_section(fs: FiniteSize, number: str, title: str, figure: str, conclusion: list[str],
                         sampler: str) -> list[str]:
    B, vals = fs.by, fs.values
    out = [f"## {number}. {title}", "", f"![{figure}]({figure})", "", FADED_CAPTION, "",
           f"### Agreement per {B} ({sampler}, both starts, points away from the transitions)", ""]
    rows = []
    for a in fs.agreement:
        rows.append([a.attention, a.L, a.d_k, g(a.d_k_over_L)] + [_agree_cell(getattr(a, c)) for c in CURVES])
    out.append(f"Cells: the effect size first, the largest |Δ| = |experiment − theory| and the points within the "
               f"agreement tolerance |Δ| ≤ {g(AGREE_TOLERANCE)}; then the significance, the points within 2σ and "
               "the RMS z.")
    out.append("")
    out.append(table(["attention", "L", "d_k", "d_k/L"] +
                     [f"{CURVE_LABEL[c]}: largest |Δ| (≤ tol); within 2σ, RMS z" for c in CURVES], rows))
    out += ["", f"### Transition points: experiment / theory against 1/{B}", "",
            f"Fit ratio = r_∞ + b/{B} (weighted by the bootstrap CIs; errors scaled by √(χ²/dof) when > 1). "
            f"Verdict (effect size first): r_∞'s 95% interval inside 1 ± {g(LOCATION_TOLERANCE)} agrees, wholly "
            "outside deviates, else not resolved; its distance from 1 in σ beside it.", ""]
    rows = []
    for t in fs.transitions:
        pts = {p.x: p for p in t.points}
        rows.append([t.attention, t.transition, PRIOR_LABEL[t.prior]] +
                    [f"{g(pts[d].experiment)} / {g(pts[d].theory)} = {g(pts[d].ratio)}" if d in pts else "–"
                     for d in vals] + [_fit(t.fit), _ratio_outcome(t.fit)])
    out.append(table(["attention", "transition", "prior"] + [f"{B} = {d}" for d in vals] +
                     ["r_∞ (fit)", "verdict"], rows))
    out += ["", f"### Order parameters at fixed P/P_ref: experiment − same-dataset theory against 1/{B}", "",
            f"Fit gap = gap_∞ + b/{B}; 'closes' = |gap_∞| ≤ {g(AGREE_TOLERANCE)} (the agreement tolerance), its "
            "distance from 0 in σ beside it. Softmax: âG only (â1 = 1 − âG).", ""]
    rows = []
    for r in fs.gaps:
        pts = {p.x: p for p in r.points}
        rows.append([r.attention, r.recipe, g(r.ratio), r.name] +
                    [f"{pm(pts[d].gap, pts[d].error)}" if d in pts else "–" for d in vals] +
                    [_fit(r.fit), _gap_closes(r.fit)])
    out.append(table(["attention", "recipe", "P/P_ref", "param"] + [f"{B} = {d}" for d in vals] +
                     ["gap_∞ (fit)", "closes?"], rows))
    out += ["", "### Conclusion (rules applied to the tables above)", ""] + conclusion + [""]
    return out


def _agree_cell(z) -> str:
    """One study's agreement with one theory curve: the effect size (largest |Δ|, the points within the
    tolerance), then the significance (within 2σ, RMS z)."""
    sig = f"{z.n_within_2}/{z.n} within 2σ, RMS z {g(z.rms_z)}"
    if z.max_delta is None:                 # tables made before the effect size was stored
        return sig
    return f"{g(z.max_delta)} ({z.n_within_tol}/{z.n}); {sig}"


def _ratio_cell(rat: Ratio | None) -> str:
    if not rat:
        return "–"
    return f"[{g(rat.lo)}, {g(rat.hi)}]"


def _scaling_section(sc: StudyPath, number: str, title: str, figure: str) -> list[str]:
    method = "/".join(dict.fromkeys(r.method for r in sc.rows)) or "SGLD"
    out = [f"## {number}. {title}", "", f"![{figure}]({figure})", "", FADED_CAPTION, "",
           f"Paper: {PAPER['scaling'][1]}. P counts sequences; in tokens N = P·L, so 'N* ∝ L ln²L' is "
           f"P* ∝ ln²L and 'P* ∝ L ln²L' counts sequences. Both are shown. Experiment: {method} transitions with 95% "
           "intervals (softmax: the grid step where âG rises fastest, widened by the bootstrap); theory: the "
           "closed form's own transition points (crossover; first-order P*, a different quantity from the data's "
           "jump) under both priors. The crossover / jump ratio is an interval (the crossover's CI over the jump's "
           "interval); beside it the same estimator on the same-dataset posterior mean on the same P, and the "
           "closed form's crossover / P*.", ""]
    rows = []
    for r in sc.rows:
        lin, sm, rat = r.linear, r.softmax, r.ratio
        rows.append([r.name, r.L, r.V, r.d_k if r.d_k >= r.L else f"{r.d_k} (< L)",
                     _tr(lin) if lin else "–", g(lin.theory["large_deviation"]) if lin else "–",
                     g(lin.theory["gaussian"]) if lin else "–",
                     _tr(sm) if sm else "–", g(sm.theory["large_deviation"]) if sm else "–",
                     g(sm.theory["gaussian"]) if sm else "–",
                     g(sm.estimate / r.ln2L) if sm else "–", g(sm.estimate / (r.L * r.ln2L)) if sm else "–",
                     g(r.sqrt_LV), _ratio_cell(rat),
                     (lambda v: f"[{g(v[0])}, {g(v[1])}]" if v and math.isfinite(v[0]) else "–")(
                         rat.same_dataset if rat else None),
                     g(rat.large_deviation if rat else math.nan)])
    out.append(table(["study", "L", "V", "d_k", f"linear crossover ({method})", "theory LD", "theory Gauss.",
                      f"softmax jump ({method})", "theory LD P*", "theory Gauss. P*", "jump/ln²L", "jump/(L ln²L)",
                      "√(LV)", f"crossover/jump ({method})", "same estimator, same-dataset theory",
                      "crossover/P* (theory LD)"], rows))
    if any(r.d_k < r.L for r in sc.rows):
        out += ["", RANK_NOTE]
    out += ["", "### Conclusion (rules applied to the table above)", ""] + (conclude_scaling(sc.rows)
                                                                          + conclude_scaling_theory(sc.theory_lines)) + [""]
    return out



def _twins_section(twins: tuple[Twin, ...], paper_scale: tuple[str, ...] | None,
                   methods: dict[str, str]) -> list[str]:
    """Section 3; ``methods`` names each study's sampler (its transitions are read from that sampler's chains)."""
    out = ["## 3. Twin studies: the σ² collapse (every transition P ∝ σ²) and the SGLD step size", "",
           f"![fig10]({FIGURES['twins']})", "",
           "Each twin pair samples the same P/σ² grid; the order parameters should be equal within errors (a "
           "pair differing in σ² tests the collapse, one differing only in the SGLD step size η tests the "
           "sampler's step-size bias).", ""]
    for c in twins:
        what = "σ² collapse" if c.differs == "σ²" else "step size"
        out += [f"**{what}**: `{c.study}` ({twin_label(c)}) against `{c.ref}` ({twin_label(c, True)}) at equal "
                f"P/σ², {c.n} pairs of order parameters.", ""]
        out += collapse_verdict(c) + [""]
        rows = [[r.attention, r.recipe, g(r.P_over_sigma2), r.name, pm(r.value, r.error),
                 pm(r.value_ref, r.error_ref), g(r.z), g(r.theory), g(r.theory_ref),
                 g(r.z_vs_theory)] for r in c.rows]
        out.append(table(["attention", "recipe", "P/σ²", "param", twin_label(c), twin_label(c, True),
                          "z (difference)", f"theory, {twin_label(c)}", f"theory, {twin_label(c, True)}",
                          "z (difference − theory's difference)"], rows))
        out.append("")
        rows = [[att, t.name, f"{g(t.value)} {ci(*t.ci)}", f"{g(t.value_ref)} {ci(*t.ci_ref)}",
                 g(t.theory), g(t.theory_ref)] for att, t in c.transitions.items()]
        method = methods.get(c.study, "SGLD")
        out.append(table(["attention", "transition ÷ σ²", f"{method}, {twin_label(c)}", f"{method}, {twin_label(c, True)}",
                          f"theory, {twin_label(c)}", f"theory, {twin_label(c, True)}"], rows))
        out.append("")
    if paper_scale:
        out += ["### On the paper's scale", ""] + list(paper_scale) + [""]
    return out


def _per_study_section(studies: tuple[Study, ...]) -> list[str]:
    out = ["## 4. The studies: sizes, convergence, cost", "",
           "Convergence is judged per training set, never across them (different training sets are different "
           "posteriors): per study and attention type, the largest split-R̂ of one chain (its two halves) and the "
           "smallest bulk ESS of one chain, over every (recipe, P, parameter); the rule and each point's status "
           "follow in 'Mixing per P point'.", ""]
    rows = []
    for s in studies:
        for att, a in s.attentions.items():
            rows.append([s.name, att, ", ".join(g(P) for P in a.grid), g(a.P_ref),
                         f"{a.rhat_within_max:.4f}" if math.isfinite(a.rhat_within_max) else "–",
                         g(a.ess_chain_min)])
    out.append(table(["study", "attention", "P grid", "P_ref (closed form)", "largest split-R̂ of one chain",
                      "smallest bulk ESS of one chain"], rows))
    out += ["", "Samplers (the stage recipe of each study; 'current': the recipe the spec gives it now):", ""]
    out.append(table(["study", "recipe", "sampler", "current", "from"],
                     [[s.name, s.recipe or "–", sampler_text(s.sampler), "–" if s.current is None else yn(s.current),
                       f"carried ({s.carried})" if s.carried else "this report"] for s in studies]))
    mix = point_mixing(studies)
    if mix:
        out += ["", "Mixing per P point (worst over its parameters and training sets; metastable: the largest R̂ of a "
                    "training set's prior- and copy-started chains beside each P; not mixed: the largest split-R̂ of "
                    "one chain and the smallest bulk ESS of one chain):", ""]
        out.append(table(["study", "attention", "starts", "mixed", "metastable", "not mixed"],
                         [[r["study"], r["attention"], "prior + copy" if r["paired"] else "prior only",
                           f"{len(r['mixed'])}/{r['n']}",
                           ", ".join(f"{g(P)} (R̂ {r['rhat_paired'][P]:.4f})" for P in r["metastable"]) or "–",
                           ", ".join(f"{g(P)} (R̂ {r['within'][P][0]:.4f}, ESS {r['within'][P][1]:.0f})"
                                     for P in r["not mixed"]) or "–"] for r in mix]))
        unknown = [s.name for s in studies if not any(a.points for a in s.attentions.values())]
        if unknown:
            out += ["", f"Not classified per point: {', '.join(unknown)} (their tables predate the per-point status, "
                        "which `copyhead studies-report` stores from a study's results; the largest within-chain R̂ and "
                        "the smallest ESS per study are in the table above)."]
    out += ["", *convergence_summary(studies), *mixing_line(studies)]
    out += ["", "Cost: measured job times summed from each study's benchmark files (this 2-core machine; wall ≈ "
                "sum / 2 with `--cores 2`), next to the Slurm resource model's prediction (copyhead.resources: an "
                "upper bound on CPU). GPU: the same model's estimate for one GPU per job, summed over jobs (not "
                "measured: no GPU was lent). Jobs this small are bound by per-step kernel launches and start-up on "
                "a GPU, so a GPU node buys parallel jobs, not faster ones.", ""]
    out.append(table(["study", "L", "V", "d_k", "σ²", "train jobs", "train, measured [s]", "train, model [s]",
                      "theory+rest [s]", "wall on 2 cores [min]", "GPU estimate, summed [GPU-min]"],
                     _cost_rows(studies)))
    if any(s.cost is None for s in studies):
        out += ["", "'–' in the model columns: the resource model's prediction needs each study's config, which this "
                    "studies.json does not hold (its tables were computed before they stored the prediction); "
                    "`copyhead studies-report` on the studies' results stores it."]
    out += ["", "Inputs (code version of each):", ""]
    out += [f"- `{s.path}` ({s.code_version})" for s in studies]
    return out


# ---------------------------------------------------------------- the page and its figures

def _figures(rep: StudiesReport) -> dict:
    """{file name: (draw function, its arguments, options)} of every figure the page shows."""
    out = {}
    faded = unsettled(rep.studies)
    if rep.finite_size:
        fs = rep.finite_size
        out[FIGURES["finite_size"]] = (draw_finite_size, (fs, f"Finite d_k at L = {fs.L}: d_k = "
                                                               f"{', '.join(map(str, fs.values))}", faded),
                                       {"table": "finite_size"})
    if rep.finite_L:
        fl = rep.finite_L
        out[FIGURES["finite_L"]] = (draw_finite_size, (fl, f"L = {', '.join(map(str, fl.values))} at d_k/L = "
                                                           f"{g(fl.d_k_over_L)}", faded), {"table": "finite_L"})
    if rep.scaling:
        out[FIGURES["scaling"]] = (draw_scaling, (rep.scaling.rows, rep.scaling.theory_lines, faded),
                                   {"table": "scaling"})
    for fx in rep.fixed_dk or ():
        out[fx.figure] = (draw_scaling, (fx.rows, fx.theory_lines, faded), {"table": f"fixed_dk:{fx.group}"})
    if rep.twins:
        out[FIGURES["twins"]] = (draw_twins, (rep.twins,), {"table": "twins"})
    return out


def write_page(studies_json: str | Path, out_md: str | Path, converged: str | Path | None = None) -> dict:
    """Render the page ``out_md`` and its figures (beside it) from ``studies_json`` and, where the page has σ²
    twins, the converged study's results JSON ``converged``; each with its provenance record. Into a
    published folder only when it holds what its manifest lists, unchanged; the manifest then lists the new
    files. Returns the page's record."""
    studies_json, out_md = Path(studies_json), Path(out_md)
    rep = load_report(studies_json)
    folder = out_md.parent
    folder.mkdir(parents=True, exist_ok=True)
    check_published(folder)
    use_conv = converged is not None and bool(rep.twins)
    conv = load_transitions(converged) if use_conv else None
    for name, (draw, args, options) in _figures(rep).items():
        out = folder / name
        rec = product_record(Path(name).stem, "studies", {"studies": studies_json}, options, kind="figure")
        write_figure(draw(*args), out, rec, formats=("png",))
        record_written(folder, [out, out.with_suffix(".provenance.json")])
    inputs = {"studies": studies_json, **({"converged": converged} if use_conv else {})}
    text = "\n".join(render(rep, studies_json.name if studies_json.parent == folder else str(studies_json), conv,
                            str(converged) if use_conv else "")) + "\n"
    record = write_product({out_md: text}, product_record("studies_page", "studies", inputs, {"page": out_md.name}))
    record_written(folder, [out_md, sidecar_path(out_md)])
    return record
