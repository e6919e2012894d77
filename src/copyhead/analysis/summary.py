"""The results model's summary: what the results page, fig3/fig4 and fig8 show, computed once.

A pure function of the results tables (:func:`copyhead.analysis.results_tables.build_tables`, JSON-ready: NaN as
None). Per
attention type:

- ``transitions`` — one row per transition kind (:data:`KINDS`), each read with ONE estimator
  (:data:`ESTIMATORS`) from the tables' bootstrap rows, for HMC, SGLD and Adam (the first prior-started
  recipe of each method; None where the sweep has none): estimate, 95 % CI, and the theory value of the
  method's *natural* curve — the posterior mean for the samplers HMC and SGLD (what a chain's average
  estimates), the minimiser for Adam (a MAP estimate) — from the most specific source present (same
  dataset: the same estimator on the runs' own training sets and P grid; else the dataset-averaged exact
  action; else the closed form). Each method's verdict is data: ``{"rule", "value", "outcome"}`` with
  outcome "inside" | "outside" | "no interval" | "no estimate" | "no theory". The closed-form (large-N)
  value and the paper's number on our σ² scale stand beside them.
- ``agreement`` — one row per method: the natural curve's summary over the points away from the
  transitions, with the verdict of :func:`agreement_verdict`: the effect size |Δ| against the tolerance
  (:data:`AGREE_TOLERANCE`, or the config's ``results.tolerance``) decides, significance stands beside it.
- ``convergence`` — counts of R̂ flags of the SGLD chains and what they mean for the error bars;
  ``reference`` — the HMC reference posterior where the sweep has one: its convergence (per dataset across
  prior- and copy-started chains) and SGLD against it on the same datasets; ``evidence`` — numbers on the
  likely reasons for disagreement; ``nonfinite`` — runs that ended with a non-finite result.

Every transition P of the theory is proportional to σ² (docs/theory.md Sec. 6): the paper's numbers, quoted
at the paper's σ² = :data:`PAPER_SIGMA2`, are put on our σ² by multiplying with σ²/:data:`PAPER_SIGMA2`.
"""
from __future__ import annotations

import json
import math

from ..config.schema import METHODS, SAMPLERS
from .agreement import SOURCES, counted, natural_curve
from .convergence import MIXED_RHAT, REFERENCE_ESS
from .stats import is_number as _ok

# The paper's own numbers (arXiv 2606.12058; summary in shared/seeds/), quoted, not computed: (what, quoted
# text, low, high) at the paper's σ². The one copy in the package (the pages and the studies read it here).
PAPER = {
    "softmax_jump": ("softmax first-order jump", "P ≈ 300", 300.0, 300.0),
    "linear_onset": ("linear second-order onset", "P ≈ 100", 100.0, 100.0),
    "linear_crossover": ("linear crossover ĉG = ĉ1", "P ≈ 322–400", 322.0, 400.0),
    "scaling": ("softmax P* scaling", "P* ~ L ln²L", math.nan, math.nan),
    "agreement": ("theory vs experiment", "\"theory agrees with Adam and SGLD\"", math.nan, math.nan),
}
PAPER_SIGMA2 = 1.0   # the σ² the paper's numbers are quoted at (as the studies assume)

# transition kind -> (attention, prefix of the tables' transition name, paper key, closed-form theory label)
KINDS = {
    "crossover": ("linear", "crossover", "linear_crossover", "closed form, minimiser"),
    "onset": ("linear", "onset", "linear_onset", "closed form, Hessian instability"),
    "jump": ("softmax", "jump", "softmax_jump", "closed form, posterior mean (seed mean, swept P, steepest rise)"),
    "hysteresis_lower": (None, "hysteresis window, lower", None, "closed form, lower spinodal"),
    "hysteresis_upper": (None, "hysteresis window, upper", None, "closed form, upper spinodal"),
}
LABELS = {"crossover": "crossover ĉG = ĉ1", "onset": "onset of ĉ1", "jump": "jump of âG",
          "hysteresis_lower": "hysteresis, lower edge", "hysteresis_upper": "hysteresis, upper edge"}
# the one estimator of each kind (copyhead.analysis.transition_estimators), applied to data and theory curves
ESTIMATORS = {
    "crossover": "first P where the seed mean of ĉG overtakes that of ĉ1, interpolated in log P",
    "onset": "where the seed mean of ĉ1 leaves its smallest-P level by 2 standard errors for good (a "
             "detection point: interval widened to its grid step)",
    "jump": "the step between neighbouring swept P where the seed mean of âG rises fastest per unit log P "
            "(a grid bracket: the data locate a jump only to the grid; interval: the bootstrap's union of such "
            "steps; theory curves read the same way on the same P, and a theory bracket agrees when it "
            "overlaps the interval)",
    "hysteresis_lower": "lower edge of the P range where prior- and copy-started chains of the same seeds "
                        "differ by more than 2 errors and 0.01 (a detection point)",
    "hysteresis_upper": "upper edge of that P range (a detection point)",
}
WHY = {"mean": "posterior mean: what an SGLD chain's average estimates",
       "saddle": "minimiser: what Adam (a MAP estimate) reaches",
       "same": "each run's own training set, the same estimator on the swept P",
       "exact": "the dataset-averaged exact action", "closed": "closed form (N ≫ (V+L)²)"}
CI_RULE = "the natural theory value lies inside the method's 95% bootstrap CI"
# The agreement tolerance: |Δ| = |experiment − theory| in each order parameter below which a point agrees.
# Fixed before looking at the effect sizes (docs/config.md, "Agreement tolerance"); a config may set its own
# (``results: {tolerance: ...}``).
AGREE_TOLERANCE = 0.02
# The location tolerance: |r − 1| of a ratio experiment/theory of transition points (or of its
# extrapolation r_∞) within which a transition agrees; ±10 %, the precision of the paper's own transition
# locations (it quotes the linear crossover as P ≈ 322–400, ±11 % around the midpoint). Set on 2026-12-07,
# after the studies' extrapolations had been seen (docs/config.md, "Agreement tolerance").
LOCATION_TOLERANCE = 0.1
AGREE_RULE = ("effect size first: the largest |Δ| = |experiment − theory| over the points away from the "
              "transitions (a sampler's: those whose chains mixed) against the tolerance |Δ| ≤ {tol:g} in each "
              "order parameter, fixed before looking: 'agrees within tolerance' when every such point is inside "
              "it, else 'deviates by |Δ| (Δ relative to the theory's value)' at the worst point; 'not mixed' when "
              "no point's chains mixed (bulk ESS ≥ 100 and R̂ ≤ 1.01 on its training set); significance (RMS z, "
              "points within 2σ) stands beside it")


def _num(x) -> float:
    return float(x) if _ok(x) else math.nan


def curve_of(label: str) -> tuple[str, str]:
    """(source, kind) of a theory value's label in the tables: source same | exact | closed; kind mean
    (posterior mean) | saddle (minimiser, P*, Hessian instability, spinodal) | alt (another closed-form
    mark, e.g. the weak first-order P* beside the onset)."""
    source = next((s for s, prefix in SOURCES if label.startswith(prefix)), "")
    kind = "mean" if "posterior mean" in label else ("alt" if "weak first-order" in label else "saddle")
    return source, kind


def natural_theory(theory: list[dict], method: str, kind_of_transition: str) -> dict | None:
    """The theory value a method's transition is judged against: the natural kind (SGLD: posterior mean;
    Adam: minimiser; the onset and the hysteresis edges exist for the minimiser only: the origin's Hessian
    instability, the spinodals) of the most specific source with a finite value."""
    want = "mean" if method in SAMPLERS and kind_of_transition in ("crossover", "jump") else "saddle"
    have = {}
    for t in theory:
        if t.get("compared") is False:   # the thermodynamic P*: a different quantity, never a comparison value
            continue
        source, kind = curve_of(t["curve"])
        if kind == want and _ok(t["value"]) and source not in have:
            have[source] = t
    for source, _ in SOURCES:
        if source in have:
            t = have[source]
            out = {"label": t["curve"], "value": float(t["value"]), "source": source, "kind": want,
                   "why": f"{WHY[want]}; {WHY[source]}"}
            if _ok(t.get("lo")) and _ok(t.get("hi")):
                out.update(lo=float(t["lo"]), hi=float(t["hi"]))
            return out
    return None


def _method_cell(row: dict | None, kind: str, method: str) -> dict | None:
    if row is None:
        return None
    th = natural_theory(row.get("theory", []), method, kind)
    est, lo, hi = _num(row["estimate"]), _num(row["ci_lo"]), _num(row["ci_hi"])
    if not math.isfinite(est):
        outcome = "no estimate"
    elif th is None:
        outcome = "no theory"
    elif not (math.isfinite(lo) and math.isfinite(hi)):
        outcome = "no interval"
    elif "lo" in th:   # a theory bracket against the data's interval: they agree when they overlap
        outcome = "overlaps" if th["lo"] <= hi and lo <= th["hi"] else "disjoint"
    else:
        outcome = "inside" if lo <= th["value"] <= hi else "outside"
    return {"recipe": row["recipe"], "estimate": est, "ci_lo": lo, "ci_hi": hi, "resolved": row.get("resolved"),
            "bracket": row.get("bracket"), "rise_share": row.get("rise_share"),
            "n_valid": row.get("n_valid"), "n_boot": row.get("n_boot"), "note": row.get("note", ""),
            "theory": th, "verdict": {"rule": CI_RULE, "value": th["value"] if th else math.nan,
                                      "outcome": outcome}}


def _first(att: dict, kind: str, method: str) -> dict | None:
    prefix = KINDS[kind][1]
    for tr in att["transitions"]:
        if not tr["transition"].startswith(prefix) or tr.get("method") != method:
            continue
        first = tr["recipe"].split("+")[0]
        if att["recipes"].get(first, {}).get("init") == "prior":
            return tr
    return None


def _paper(key: str | None, sigma2) -> dict | None:
    if key is None:
        return None
    what, quoted, lo, hi = PAPER[key]
    s = _num(sigma2) / PAPER_SIGMA2
    return {"what": what, "quoted": quoted, "sigma2_paper": PAPER_SIGMA2, "lo": lo, "hi": hi,
            "lo_ours": lo * s, "hi_ours": hi * s}


def transition_rows(att: dict, attention: str) -> list[dict]:
    """One row per transition kind measured for this attention type (module docstring)."""
    sigma2 = att["theory"].get("config", {}).get("model", {}).get("sigma2")
    out = []
    for kind, (only, _, paper_key, closed_label) in KINDS.items():
        if only not in (None, attention):
            continue
        first = {m: _first(att, kind, m) for m in METHODS}
        any_row = next((r for r in first.values() if r is not None), None)
        if any_row is None:
            continue
        closed = next((t for t in any_row.get("theory", []) if t["curve"] == closed_label), {})
        # the theory's own transition points of another kind (the thermodynamic P*), shown, never compared
        own = [{"label": t["curve"], "value": _num(t["value"])} for t in any_row.get("theory", [])
               if t.get("compared") is False and _ok(t["value"])]
        out.append({"kind": kind, "label": LABELS[kind], "estimator": ESTIMATORS[kind],
                    **{m: _method_cell(r, kind, m) for m, r in first.items()},
                    "closed_form": {"label": closed_label, "value": _num(closed.get("value")),
                                    **({"lo": closed["lo"], "hi": closed["hi"]} if "lo" in closed else {})},
                    "theory_points": own, "paper": _paper(paper_key, sigma2)})
    return out


def tolerance(tables: dict) -> float:
    """The agreement tolerance of a results model: its config's ``results.tolerance``, else
    :data:`AGREE_TOLERANCE`."""
    cfg = json.loads((tables.get("config") or {}).get("json") or "{}")
    return float((cfg.get("results") or {}).get("tolerance", AGREE_TOLERANCE))


def effect_size(rows: list[dict], recipe: str, curve: str | None, tol: float) -> dict:
    """|Δ| = |experiment − theory| of one recipe against one curve over the points away from the transitions
    (softmax: âG only, :func:`copyhead.analysis.agreement.counted`); for a sampler only the points whose
    chains mixed count (``n_not_mixed`` the others). ``max_abs_delta``, the worst point's Δ and Δ relative to
    the theory's value there (``worst_rel``; NaN where |theory| < tol, a relative error of a near-zero value
    says nothing), ``rms_delta``, ``n_within_tol`` of ``n``. Where no point mixed, those numbers are of all
    the points and ``provisional`` is True (the verdict is then 'not mixed')."""
    pts = [r for r in rows if r["recipe"] == recipe and r["curve"] == curve and r["away"]
           and counted(r["attention"], r["param"]) and _ok(r.get("experiment")) and _ok(r.get("theory"))]
    use = [r for r in pts if r.get("mixed") is not False]
    provisional = not use and bool(pts)      # no point mixed: the effect size of all of them, said to be provisional
    out = {"tolerance": tol, "n": len(use), "n_not_mixed": len(pts) - len(use), "n_within_tol": 0,
           "provisional": provisional,
           "max_abs_delta": math.nan, "rms_delta": math.nan, "worst_P": math.nan, "worst_param": "",
           "worst_delta": math.nan, "worst_rel": math.nan, "worst_experiment": math.nan, "worst_theory": math.nan}
    if provisional:
        use = pts
    if not use:
        return out
    d = [r["experiment"] - r["theory"] for r in use]
    i = max(range(len(d)), key=lambda j: abs(d[j]))
    w = use[i]
    out.update(n_within_tol=sum(abs(x) <= tol for x in d), max_abs_delta=abs(d[i]),
               rms_delta=math.sqrt(sum(x * x for x in d) / len(d)), worst_P=w["P"], worst_param=w["name"],
               worst_delta=d[i], worst_experiment=w["experiment"], worst_theory=w["theory"],
               worst_rel=d[i] / abs(w["theory"]) if abs(w["theory"]) >= tol else math.nan)
    return out


def agreement_verdict(s: dict | None, eff: dict | None = None) -> dict:
    """{"rule", "outcome", "effect", ...} of one method against one curve: the effect size decides
    (:data:`AGREE_RULE`): outcome "agrees within tolerance" | "deviates" | "not mixed" | "no points";
    significance (RMS z, points within 2σ of the summary row ``s``) is carried beside it."""
    eff = eff or {"n": 0, "n_not_mixed": 0, "tolerance": AGREE_TOLERANCE}
    out = {"rule": AGREE_RULE.format(tol=eff["tolerance"]), "effect": eff, "value": eff.get("max_abs_delta"),
           "rms_z": (s or {}).get("rms_z"), "n_within_2": (s or {}).get("n_within_2"),
           "n_away": (s or {}).get("n_away")}
    if eff.get("provisional") or not eff["n"]:
        out["outcome"] = "not mixed" if eff["n_not_mixed"] else "no points"
    elif eff["n_within_tol"] == eff["n"]:
        out["outcome"] = "agrees within tolerance"
    else:
        out["outcome"] = "deviates"
    return out


def prior_recipes(att: dict, method: str) -> list[str]:
    return [n for n, r in att["recipes"].items() if r["method"] == method and r["init"] == "prior"
            and att["sweep"].get(n, {}).get("n_ok", 0) > 0]


def _find(att: dict, recipe: str, curve: str | None) -> dict | None:
    return next((s for s in att["agreement_summary"] if s["recipe"] == recipe and s["curve"] == curve), None)


def agreement_rows(att: dict, tol: float = AGREE_TOLERANCE, optimizers: dict | None = None) -> list[dict]:
    optimizers = optimizers or {}
    out = []
    for method in METHODS:
        recs = prior_recipes(att, method)
        if not recs:
            continue
        curve = natural_curve(att["agreement"], method)
        s = _find(att, recs[0], curve)
        row = {"method": method, "recipe": recs[0], "curve": curve,
               "curve_label": s["curve_label"] if s else "", "recipe_config": optimizers.get(recs[0], {}),
               "verdict": agreement_verdict(s, effect_size(att["agreement"], recs[0], curve, tol)),
               # the method's other prior-started recipes beside it (Adam: the scored recipe warms the prior
               # up; plain MAP is shown next to it), each with its recipe settings and effect size
               "others": [{"recipe": n, "recipe_config": optimizers.get(n, {}),
                           "verdict": agreement_verdict(_find(att, n, curve),
                                                        effect_size(att["agreement"], n, curve, tol))}
                          for n in recs[1:]]}
        for k in ("n_away", "n_within_2", "rms_z", "chi2_per_dof", "p_value", "worst_recipe", "worst_P",
                  "worst_param", "worst_z", "n_all", "rms_z_all", "rms_z_block_lo", "rms_z_block_hi",
                  "block_n_distinct", "n_grid_limited"):
            row[k] = s.get(k) if s else None
        out.append(row)
    return out


def _of_method(att: dict, recipe: str, method: str) -> bool:
    return all(att["recipes"].get(n, {}).get("method") == method for n in recipe.split("+"))


def _on_target(pair: dict) -> bool:
    """A prior/copy pair of one training set mixed to the reference's target (bulk ESS and R̂)."""
    return _num(pair.get("rhat_paired_max")) <= MIXED_RHAT and _num(pair.get("ess_paired_min")) >= REFERENCE_ESS


def convergence_summary(att: dict, rhat_max: float, method: str = "sgld") -> dict:
    """R̂ flags of the single-recipe rows of one sampling method (across chains; within one chain) and of
    its prior/copy pairs (per dataset: the R̂ of one training set's prior- and copy-started chains)."""
    conv = [r for r in att["convergence"] if r["n_chains"] > 0 and _of_method(att, r["recipe"], method)]
    rows = [r for r in conv if "+" not in r["recipe"]]
    pairs = [r for r in conv if "+" in r["recipe"]]
    within = [r for r in rows if _num(r.get("rhat_within_max")) > rhat_max]
    return {"rhat_max": rhat_max, "n_rows": len(rows), "n_flag": sum(bool(r["rhat_flag"]) for r in rows),
            "n_within_flag": len(within), "n_pairs": len(pairs),
            "n_paired_flag": sum(_num(r.get("rhat_paired_max")) > rhat_max for r in pairs),
            "largest_paired": max((_num(r.get("rhat_paired_max")) for r in pairs), default=math.nan),
            "smallest_paired_ess": min((_num(r.get("ess_paired_min")) for r in pairs), default=math.nan),
            "paired_points": sorted({f"P = {r['P']:g} {r['name']}" for r in pairs
                                     if _num(r.get("rhat_paired_max")) > rhat_max}),
            # the reference's target: per training set bulk ESS >= REFERENCE_ESS and R̂ <= MIXED_RHAT
            "target_ess": REFERENCE_ESS, "target_rhat": MIXED_RHAT,
            "n_pairs_on_target": sum(map(_on_target, pairs)),
            "below_target_points": sorted({f"P = {r['P']:g} {r['name']}" for r in pairs
                                           if _num(r.get("rhat_paired_max")) <= rhat_max and not _on_target(r)}),
            "largest_rhat": max((_num(r["rhat"]) for r in rows), default=math.nan),
            "largest_within": max((_num(r.get("rhat_within_max")) for r in rows), default=math.nan),
            "smallest_ess": min((_num(r["ess_bulk"]) for r in rows), default=math.nan),
            "within_points": sorted({f"{r['recipe']} P = {r['P']:g}" for r in within})}


def evidence(att: dict) -> list[dict]:
    """Numbers on why SGLD and its natural curve differ: how many of the points outside 2σ have chains that
    have not mixed; same-dataset against dataset-averaged posterior mean; posterior mean against minimiser."""
    out = []
    recs = prior_recipes(att, "sgld")
    if not recs:
        return out
    rec, cur = recs[0], natural_curve(att["agreement"], "sgld")
    bad = [r for r in att["agreement"] if r["recipe"] == rec and r["curve"] == cur and r["away"]
           and _ok(r["z"]) and abs(r["z"]) > 2]
    if bad:   # not mixed by the verdicts' rule (the rows' ``mixed``, analysis.convergence.mixing_status)
        out.append({"what": "outside 2σ and not mixed", "n": sum(r.get("mixed") is not True for r in bad),
                    "of": len(bad)})
    s = {c: _find(att, rec, c) for c in ("same_mean", "exact_mean", "closed_mean", "exact_saddle", "closed_saddle")}
    rms = {c: _num(v["rms_z"]) if v else math.nan for c, v in s.items()}
    if math.isfinite(rms["same_mean"]) and math.isfinite(rms["exact_mean"]):
        out.append({"what": "own training set vs dataset average", "same_mean": rms["same_mean"],
                    "exact_mean": rms["exact_mean"]})
    for src in ("exact", "closed"):
        if math.isfinite(rms[f"{src}_mean"]) and math.isfinite(rms[f"{src}_saddle"]):
            out.append({"what": "posterior mean vs minimiser", "source": src, "mean": rms[f"{src}_mean"],
                        "saddle": rms[f"{src}_saddle"]})
            break
    return out


def sampler_effect(att: dict, recipe: str, tol: float) -> dict:
    """SGLD against HMC on the same training sets, effect size first: the largest |Δ| = |SGLD − HMC| over the
    recipe's points (softmax: âG only), Δ relative to HMC's value, and the points within the tolerance."""
    rows = [r for r in att.get("samplers", []) if r["recipe"] == recipe and counted(r["attention"], r["param"])
            and _ok(r.get("diff"))]
    out = {"tolerance": tol, "n": len(rows), "n_not_mixed": 0, "n_within_tol": sum(abs(r["diff"]) <= tol for r in rows),
           "max_abs_delta": math.nan, "worst_P": math.nan, "worst_param": "", "worst_delta": math.nan,
           "worst_rel": math.nan, "worst_experiment": math.nan, "worst_theory": math.nan}
    if rows:
        w = max(rows, key=lambda r: abs(r["diff"]))
        ref = w.get("hmc")
        out.update(max_abs_delta=abs(w["diff"]), worst_P=w["P"], worst_param=w["name"], worst_delta=w["diff"],
                   worst_experiment=w.get("sgld"), worst_theory=ref,
                   worst_rel=w["diff"] / abs(ref) if _ok(ref) and abs(ref) >= tol else math.nan)
    return out


def reference_posterior(att: dict, rhat_max: float, tol: float = AGREE_TOLERANCE) -> dict | None:
    """The HMC reference posterior of one attention type (None without HMC recipes): its convergence
    (:func:`convergence_summary` of the HMC rows: across its chains and per dataset across the prior- and
    copy-started chains of one training set) and SGLD against it on the same training sets (the tables'
    ``sampler_summary`` rows, one per SGLD recipe, each with its effect size, :func:`sampler_effect`)."""
    if not any(r["method"] == "hmc" for r in att["recipes"].values()):
        return None
    return {"convergence": convergence_summary(att, rhat_max, "hmc"),
            "sgld": [dict(s, effect=sampler_effect(att, s["recipe"], tol)) for s in att.get("sampler_summary", [])]}


SCALING_RULE = "the form whose ratio max/min over the theory's L range is smallest"


def scaling_summary(att: dict) -> dict | None:
    """The closed-form P* against L (the theory file's scaling scan) under the paper's forms: the spread
    max/min of P*, P*/ln²L and P*/(L ln²L) over the L range and the flattest (:data:`SCALING_RULE`)."""
    sc = att.get("scaling") or {}
    vals = {"flat": sc.get("P_star_vs_L"), "ln2L": sc.get("P_star_over_ln2L"), "L_ln2L": sc.get("P_star_over_L_ln2L")}
    spread = {}
    for k, v in vals.items():
        v = [x for x in (v or []) if _ok(x) and x > 0]
        if not v:
            return None
        spread[k] = max(v) / min(v)
    names = {"flat": "'P* independent of L'", "ln2L": "'P* ∝ ln²L in sequences (N* = P* L ∝ L ln²L in tokens)'",
             "L_ln2L": "'P* ∝ L ln²L in sequences'"}
    return {"L": sc["L"], "P_star": sc["P_star_vs_L"], "spread": spread, "best": names[min(spread, key=spread.get)],
            "rule": SCALING_RULE, "d_k": att["theory"].get("config", {}).get("model", {}).get("d_k")}


def build_summary(tables: dict) -> dict:
    """The summary of the module docstring from the JSON-ready tables."""
    rhat_max = tables["settings"]["rhat_max"]
    tol = tolerance(tables)
    optimizers = json.loads((tables.get("config") or {}).get("json") or "{}").get("optimizers", {})
    out = {"paper_sigma2": PAPER_SIGMA2, "tolerance": tol, "attentions": {}}
    if "softmax" in tables["attentions"]:
        out["scaling"] = scaling_summary(tables["attentions"]["softmax"])
    for a, att in tables["attentions"].items():
        out["attentions"][a] = {
            "sigma2": att["theory"].get("config", {}).get("model", {}).get("sigma2"),
            "transitions": transition_rows(att, a), "agreement": agreement_rows(att, tol, optimizers),
            "convergence": convergence_summary(att, rhat_max), "evidence": evidence(att),
            "reference": reference_posterior(att, rhat_max, tol),
            "nonfinite": att.get("nonfinite", [])}
    return out
