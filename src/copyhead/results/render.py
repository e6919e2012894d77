"""docs/results.md from the results tables (:func:`copyhead.results.build_tables`, JSON-ready).

Every number on the page is read from the tables, except the paper's own numbers in :data:`PAPER`, which
are quoted and labelled as the paper's. Sentences that judge (agrees / does not, the likely reason) are
generated from the numbers by the rules in :func:`_verdict` and :func:`_reasons`, never typed as claims.
"""
from __future__ import annotations

import json
import math

# The paper's own numbers (arXiv 2606.12058; summary in ../shared/seeds/), quoted, not computed here.
PAPER = {
    "softmax_jump": ("softmax first-order jump", "P ≈ 300"),
    "linear_onset": ("linear second-order onset", "P ≈ 100"),
    "linear_crossover": ("linear crossover ĉG = ĉ1", "P ≈ 322–400"),
    "scaling": ("softmax P* scaling", "P* ~ L ln²L"),
    "agreement": ("theory vs experiment", "\"theory agrees with Adam and SGLD\""),
}
PAPER_VALUES = {"softmax_jump": (300.0, 300.0), "linear_onset": (100.0, 100.0), "linear_crossover": (322.0, 400.0)}

FIGURES = [("fig1_stages", "mean attention pattern per stage"), ("fig2_landscapes", "action landscapes"),
           ("fig3_linear_order_params", "linear order parameters vs P, residuals, R̂"),
           ("fig4_softmax_order_params", "softmax order parameters vs P, residuals, R̂"),
           ("fig5_coverage", "coverage of Ā by span{J, I}"), ("fig6_linear_loss_curves", "linear Adam loss curves"),
           ("fig7_softmax_loss_curves", "softmax Adam loss curves"), ("fig8_scaling", "transition points vs L")]


# ------------------------------------------------------------------------------------------- formatting
def _ok(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def g(x, digits: int = 3) -> str:
    """A number with ``digits`` significant digits; '–' where there is none."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not _ok(x):
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** digits:
        return f"{x:.0f}"
    if abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def pm(x, e) -> str:
    return f"{g(x)} ± {g(e, 2)}" if _ok(e) else g(x)


def ci(lo, hi) -> str:
    return f"[{g(lo)}, {g(hi)}]" if _ok(lo) and _ok(hi) else "–"


def yn(b) -> str:
    return "–" if b is None else ("yes" if b else "**no**")


def table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _P(x) -> str:
    return g(x, 4) if _ok(x) and x != int(x) else (str(int(x)) if _ok(x) else "–")


# ------------------------------------------------------------------------------------------ selections
def _summary(att: dict, recipe: str, curve: str) -> dict | None:
    for s in att["agreement_summary"]:
        if s["recipe"] == recipe and s["curve"] == curve:
            return s
    return None


def _best_curve(att: dict, method: str, kind: str) -> str | None:
    """The most specific theory curve of ``kind`` present: same dataset, else exact average, else closed."""
    have = {r["curve"] for r in att["agreement"]}
    for src in ("same", "exact", "closed"):
        if f"{src}_{kind}" in have:
            return f"{src}_{kind}"
    return None


def _recipes(att: dict, method: str, init: str | None = None) -> list[str]:
    return [n for n, r in att["recipes"].items() if r["method"] == method and (init is None or r["init"] == init)
            and att["sweep"].get(n, {}).get("n_ok", 0) > 0]


def _verdict(s: dict | None) -> str:
    """One generated sentence on a summary row: how many points agree within 2σ, RMS z, χ²/dof, worst point."""
    if not s or not s["n_away"]:
        n_no = s["n_no_error"] if s else 0
        return ("no point away from the transitions has an error bar" + (f" ({n_no} without one: a single seed)"
                                                                           if n_no else "") + ".")
    k, n = s["n_within_2"], s["n_away"]
    rms, c = s["rms_z"], s["chi2_per_dof"]
    if k == n and rms <= 1.5:
        word = "agrees"
    elif k >= 0.9 * n and rms <= 2:
        word = "mostly agrees"
    else:
        word = "does not agree"
    text = (f"{word}: within 2σ at {k} of {n} points away from the transitions, RMS z = {g(rms)}, "
            f"χ²/dof = {g(c)} (p = {g(s['p_value'], 2)})")
    if _ok(s["worst_z"]):
        text += f"; worst point {s['worst_recipe']} P = {_P(s['worst_P'])} {s['worst_param']}, z = {g(s['worst_z'])}"
    if s["n_all"] > s["n_away"]:
        text += f"; all {s['n_all']} points incl. near transitions: RMS z = {g(s['rms_z_all'])}"
    return text + "."


def _flagged(att: dict) -> tuple[int, int, list[str]]:
    rows = [r for r in att["convergence"] if r["n_chains"] > 0]
    bad = [r for r in rows if r["rhat_flag"]]
    names = [f"{rec} P = {_P(P)}" for rec, P in sorted({(r["recipe"], r["P"]) for r in bad})]
    return len(bad), len(rows), names


def _reasons(name: str, att: dict) -> list[str]:
    """Generated evidence for why SGLD and theory differ (each line states the numbers it rests on)."""
    out = []
    sg = _recipes(att, "sgld", "prior")
    if not sg:
        return out
    rec = sg[0]
    rows = [r for r in att["agreement"] if r["recipe"] == rec and r["kind"] == "mean"]
    cur = _best_curve(att, "sgld", "mean")
    bad = [r for r in rows if r["curve"] == cur and r["away"] and _ok(r["z"]) and abs(r["z"]) > 2]
    flags = {(r["recipe"], r["P"], r["param"]): r["rhat_flag"] for r in att["convergence"]}
    for r in att["convergence"]:
        if "+" in r["recipe"] and r["rhat_flag"]:
            for rr in r["recipe"].split("+"):
                flags[(rr, r["P"], r["param"])] = True
    if bad:
        nb = sum(bool(flags.get((r["recipe"], r["P"], r["param"]))) for r in bad)
        out.append(f"{nb} of the {len(bad)} points of {rec} outside 2σ of the {_label(cur)} away from the "
                   f"transitions have R̂ > {g(att_rhat(att))} (chains not shown converged there).")
    s = {c: _summary(att, rec, c) for c in ("same_mean", "exact_mean", "closed_mean", "same_saddle",
                                           "exact_saddle", "closed_saddle")}
    if s["same_mean"] and s["exact_mean"] and _ok(s["same_mean"]["rms_z"]) and _ok(s["exact_mean"]["rms_z"]):
        a, b = s["same_mean"]["rms_z"], s["exact_mean"]["rms_z"]
        out.append(f"Dataset-to-dataset variation: RMS z against the same-dataset posterior mean is {g(a)}, against "
                   f"the dataset-averaged one {g(b)} ({'lower' if a < b else 'not lower'} with each chain's own "
                   "training set).")
    for src in ("exact", "closed"):
        m, sd = s[f"{src}_mean"], s[f"{src}_saddle"]
        if m and sd and _ok(m["rms_z"]) and _ok(sd["rms_z"]):
            out.append(f"Posterior mean vs minimiser ({_label(src + '_mean').split(',')[0]}): RMS z {g(m['rms_z'])} "
                       f"against the posterior mean, {g(sd['rms_z'])} against the minimiser "
                       f"({'the finite-d_k fluctuations around the saddle matter' if m['rms_z'] < sd['rms_z'] else 'the minimiser is not worse'}).")
            break
    if s.get("closed_mean") and s.get("exact_mean") and _ok(s["closed_mean"]["rms_z"]) and _ok(s["exact_mean"]["rms_z"]):
        a, b = s["closed_mean"]["rms_z"], s["exact_mean"]["rms_z"]
        out.append(f"Closed form vs exact average: RMS z {g(a)} against the closed form, {g(b)} against the exact "
                   "dataset average (docs/theory.md Sec. 7: the closed form needs N ≫ (V+L)²).")
    sc = s.get(cur) if cur else None
    if sc and _ok(sc["rms_z_all"]) and _ok(sc["rms_z"]) and sc["n_all"] > sc["n_away"]:
        where = ("concentrated near the transitions" if sc["rms_z_all"] > 1.5 * sc["rms_z"]
                 else "not concentrated near the transitions")
        out.append(f"The disagreement is {where}: RMS z over all {sc['n_all']} points is {g(sc['rms_z_all'])}, "
                   f"over the {sc['n_away']} away from them {g(sc['rms_z'])}.")
    return out


def att_rhat(att: dict) -> float:
    return att.get("_rhat_max", 1.05)


def _label(curve: str | None) -> str:
    from .inputs import CURVES
    return CURVES[curve][0] if curve in CURVES else "–"


# ---------------------------------------------------------------------------------------------- sections
def _config_section(t: dict) -> list[str]:
    out = ["## Configuration", ""]
    name = t.get("config_name")
    cfg_hash = (t.get("config") or {}).get("hash", "")
    out.append((f"Produced from `{name}`" if name else "Produced from the config recorded in the inputs")
               + (f" (config hash `{cfg_hash}`)" if cfg_hash else "")
               + (f" by copyhead {t['code_version']}" if t.get("code_version") else "") + ".")
    cfg = json.loads((t.get("config") or {}).get("json") or "{}")
    used = sorted({n for att in t["attentions"].values() for n in att["recipes"]})
    rec_rows = []
    for n in used:
        r = cfg.get("optimizers", {}).get(n)
        if r:
            rec_rows.append([n, r.get("method"), r.get("init"), r.get("steps"),
                             r.get("eta") if r.get("method") == "sgld" else r.get("lr"),
                             r.get("burn_in", "–"), r.get("thin", "–"), r.get("prior_warmup", "–")])
    if rec_rows:
        out += ["", table(["recipe", "method", "start", "steps", "η (SGLD) / lr (Adam)", "burn-in", "thin",
                           "prior warm-up"], rec_rows), ""]
    for a, att in t["attentions"].items():
        want = cfg.get("sweep", {}).get(a) if cfg else None
        if want is not None:
            have = {n: (sorted(float(p) for p in v["P"]), sorted(v["seeds"])) for n, v in att["sweep"].items()}
            cfg_sweep = {n: (sorted(float(p) for p in v["P"]), sorted(int(x) for x in v["seeds"]))
                         for n, v in want.items()}
            if have != cfg_sweep:
                diff = sorted(n for n in set(have) | set(cfg_sweep) if have.get(n) != cfg_sweep.get(n))
                out.append(f"- **warning**: the {a} runs in the aggregate are not the sweep of this config "
                           f"(recipes {', '.join(diff)} differ in P or seeds): the recipe table above may not "
                           "describe them.")
        th = att["theory"]["config"]
        task, model = th.get("task", {}), th.get("model", {})
        out.append(f"- **{a}**: V = {task.get('V', '–')}, L = {task.get('L', '–')}, d_k = {model.get('d_k', '–')}, "
                   f"σ² = {model.get('sigma2', '–')}, prior {att['theory']['prior']}; exact average over "
                   f"{att['theory']['exact_n_datasets']} datasets; same-dataset theory: "
                   f"{'yes' if att['same_dataset'] else 'not given'}. Sweep: " + "; ".join(
                       f"{n} ({r['method']}, {r['init']} start): P = {', '.join(_P(p) for p in att['sweep'][n]['P'])}, "
                       f"{len(att['sweep'][n]['seeds'])} seed(s), {att['sweep'][n]['n_ok']} ok, "
                       f"{att['sweep'][n]['n_diverged']} diverged" for n, r in att["recipes"].items()) + ".")
    return out + [""]


def _headline(t: dict) -> list[str]:
    out = ["## Headline (generated from the tables below)", ""]
    for a, att in t["attentions"].items():
        for rec in _recipes(att, "sgld", "prior") + _recipes(att, "adam", "prior"):
            method = att["recipes"][rec]["method"]
            kind = "mean" if method == "sgld" else "saddle"
            cur = _best_curve(att, method, kind)
            s = _summary(att, rec, cur) if cur else None
            out.append(f"- {a} {rec} against the {_label(cur)}: {_verdict(s)}")
        for tr in att["transitions"]:
            if att["recipes"].get(tr["recipe"].split("+")[0], {}).get("method") not in ("sgld",):
                continue
            inside = [x["curve"] for x in tr["theory"] if x["contains"]]
            outside = [x["curve"] for x in tr["theory"] if x["contains"] is False]
            if not _ok(tr["estimate"]):
                out.append(f"- {a} {tr['transition']} ({tr['recipe']}): not found on the swept P grid "
                           f"({tr['n_valid']} of {tr['n_boot']} bootstrap replicates found one)"
                           + (f"; {tr['note']}" if tr.get("note") else "") + ".")
                continue
            interval = (f"95% CI {ci(tr['ci_lo'], tr['ci_hi'])}" if _ok(tr["ci_lo"]) else
                        f"no interval ({tr['n_valid']} of {tr['n_boot']} bootstrap replicates found it)")
            out.append(f"- {a} {tr['transition']} ({tr['recipe']}): {g(tr['estimate'])}, {interval}"
                       + (f"; contains {', '.join(inside)}" if inside else "")
                       + (f"; excludes {', '.join(outside)}" if outside else "")
                       + (f" ({tr['note']})" if tr.get("note") else "") + ".")
        nb, n, names = _flagged(att)
        out.append(f"- {a} convergence: {nb} of {n} (recipe, P, order parameter) SGLD rows have R̂ > "
                   f"{g(att_rhat(att))}" + (f" ({', '.join(names)})" if names else "") + ".")
    return out + [""]


def _figures(figure_dir: str) -> list[str]:
    out = ["## Figures", "", "Hollow markers in fig3/fig4: R̂ > the threshold below (not shown converged). "
           "Residual panels: z against the theory curve named on the panel.", ""]
    for name, what in FIGURES:
        out.append(f"- [{name}]({figure_dir}/{name}.png): {what}")
    out += ["", f"![fig3]({figure_dir}/fig3_linear_order_params.png)", "",
            f"![fig4]({figure_dir}/fig4_softmax_order_params.png)", ""]
    return out


def _agreement(t: dict) -> list[str]:
    out = ["## Agreement: z = (experiment − theory)/error", "",
           "Per attention type, recipe and theory curve, over the points away from the theory's transitions "
           f"(outside [T/{g(t['settings']['away_factor'])}, T·{g(t['settings']['away_factor'])}] of each "
           "transition point and of the spinodal window). *natural*: the curve that estimates what the method "
           "measures (SGLD: posterior mean; Adam: minimiser). Errors: see Definitions.", ""]
    rows = []
    for a, att in t["attentions"].items():
        for s in att["agreement_summary"]:
            rows.append([a, s["recipe"], s["curve_label"], "yes" if s["natural"] else "", s["n_away"],
                         s["n_within_2"], g(s["rms_z"]), g(s["chi2_per_dof"]), g(s["p_value"], 2),
                         f"{s['worst_recipe']} P={_P(s['worst_P'])} {s['worst_param']} z={g(s['worst_z'])}"
                         if _ok(s["worst_z"]) else "–", f"{g(s['rms_z_all'])} ({s['n_all']})", s["n_no_error"]])
    out.append(table(["attention", "recipe", "theory curve", "natural", "n away", "|z| ≤ 2", "RMS z", "χ²/dof", "p",
                      "worst point", "RMS z all (n)", "no error"], rows))
    out += ["", "### Per point (natural curves)", "",
            "Experiment ± error (basis: spread = sd over chains/√n, mcse = from ESS), theory value and z per "
            "source; † marks points near a transition (not in the summaries).", ""]
    for a, att in t["attentions"].items():
        pts: dict[tuple, dict] = {}
        for r in att["agreement"]:
            if not r["natural"]:
                continue
            key = (r["recipe"], r["P"], r["name"])
            d = pts.setdefault(key, {"exp": r["experiment"] if r["source"] != "same_dataset" else None,
                                     "err": r["error"] if r["source"] != "same_dataset" else None,
                                     "basis": r["error_basis"], "n": r["n"], "near": False})
            if r["source"] != "same_dataset":
                d["exp"], d["err"], d["basis"] = r["experiment"], r["error"], r["error_basis"]
            d[r["source"]] = f"{g(r['theory'])} ({g(r['z'], 2)})"
            d["near"] = d["near"] or not r["away"]
        srcs = [s for s in ("closed_form", "exact_avg", "same_dataset") if any(s in d for d in pts.values())]
        rows = [[rec, _P(P) + (" †" if d["near"] else ""), name, d["n"],
                 pm(d["exp"], d["err"]) + (f" ({d['basis']})" if d["basis"] else "") if d["exp"] is not None else "–"]
                + [d.get(s, "–") for s in srcs] for (rec, P, name), d in sorted(pts.items())]
        out += [f"**{a}**", "", table(["recipe", "P", "param", "n", "experiment ± error"] +
                                      [f"{s.replace('_', ' ')}: theory (z)" for s in srcs], rows), ""]
    return out


def _transitions(t: dict) -> list[str]:
    lvl = t["settings"].get("level", 0.95)
    out = ["## Transition points from data", "",
           f"Percentile bootstrap over chains/seeds ({t['settings']['n_boot']} replicates, {g(100 * lvl)}% "
           "intervals; `valid`: replicates that found the transition on the grid). Theory values each with "
           "'in CI'.", ""]
    rows = []
    for a, att in t["attentions"].items():
        for tr in att["transitions"]:
            th = "<br>".join(f"{x['curve']}: {g(x['value'])} ({yn(x['contains'])})" for x in tr["theory"])
            for w in tr.get("windows", []):
                th += f"<br>{w['curve']} spinodal window [{g(w['lo'])}, {g(w['hi'])}] overlaps CI: {yn(w['overlaps'])}"
            rows.append([a, tr["transition"], tr["recipe"], g(tr["estimate"]), ci(tr["ci_lo"], tr["ci_hi"]),
                         f"{tr['n_valid']}/{tr['n_boot']}", th or "–",
                         "; ".join(x for x in (tr.get("note", ""), f"disagree at P = {', '.join(_P(p) for p in tr['disagree_P'])}"
                                               if tr.get("disagree_P") else "") if x)])
    out.append(table(["attention", "transition", "recipe", "estimate", "CI", "valid", "theory (in CI)", "note"], rows))
    return out + [""]


def _convergence(t: dict) -> list[str]:
    rmax = t["settings"]["rhat_max"]
    out = ["## Convergence of the SGLD chains", "",
           f"Rank-normalised split-R̂ across chains (flag: R̂ > {g(rmax)}; chains of different seeds have "
           "different training sets, so this R̂ also grows with the dataset-to-dataset variation of the posterior), "
           "*within-chain R̂*: the largest split-R̂ of a single chain (its two halves), bulk ESS, Σ ESS of the "
           "chains, the MCSE of the chain-averaged mean and the spread of the chain means (sd/√n). Rows `a+b`: "
           "prior- and copy-started chains pooled; *paired R̂*: per seed, its two chains (same training set), "
           "the largest over seeds.", ""]
    rows = []
    for a, att in t["attentions"].items():
        for r in att["convergence"]:
            if r["n_chains"] == 0:
                continue
            rows.append([a, r["recipe"], _P(r["P"]), r["name"], r["n_chains"], r["n_draws"], g(r["mean"]),
                         g(r["rhat"]), g(r.get("rhat_within_max")), g(r.get("rhat_paired_max")), g(r["ess_bulk"]),
                         g(r["ess_sum"]),
                         g(r["err_mcse"], 2), g(r["err_spread"], 2), "**R̂**" if r["rhat_flag"] else ""])
    out.append(table(["attention", "recipe", "P", "param", "chains", "draws", "mean", "R̂", "within-chain R̂",
                      "paired R̂", "bulk ESS", "Σ ESS", "MCSE", "sd/√n", "flag"], rows))
    for a, att in t["attentions"].items():
        flagged = [r for r in att["convergence"] if r["n_chains"] and r["rhat_flag"] and "+" not in r["recipe"]]
        also = [r for r in flagged if _ok(r.get("rhat_within_max")) and r["rhat_within_max"] > rmax]
        if flagged:
            out += ["", f"{a}: {len(also)} of the {len(flagged)} flagged single-recipe rows also have a single "
                        f"chain with split-R̂ > {g(rmax)} (its two halves differ), so their flag is not only the "
                        "dataset-to-dataset variation between chains."]
    return out + [""]


def _adam(t: dict) -> list[str]:
    out = ["## Adam: a MAP estimate, not a posterior mean", "",
           "Adam minimises the posterior energy U of the weights (with the `adam` recipe's prior warm-up, "
           "docs/adam.md): it estimates a mode, which is compared with the action's minimiser, not its "
           "posterior mean; which minimum it reaches depends on where it starts and on the warm-up.", ""]
    for a, att in t["attentions"].items():
        ad = att["adam"]
        if ad["position"]:
            rows = [[p["recipe"], p["transition"], p["source"], g(p["estimate"]), ci(p["ci_lo"], p["ci_hi"]),
                     p["estimate_is"] or "–", ", ".join(f"{m['name']} = {g(m['P'])}" for m in p["marks"])]
                    for p in ad["position"]]
            out += [f"**{a}: where the Adam transition lies among the theory's marks**", "",
                    table(["recipe", "transition", "theory", "estimate", "CI", "estimate lies", "marks"], rows), ""]
        if ad.get("vs_minimiser"):
            rows = [[v["recipe"], v["name"], _label(v["curve"]), v["n"], v["n_below"], g(v["median_difference"]),
                     g(v["median_relative_difference"])] for v in ad["vs_minimiser"]]
            out += [f"**{a}: Adam against the minimiser** (points away from the transitions)", "",
                    table(["recipe", "param", "minimiser of", "n", "Adam below", "median Adam − minimiser",
                           "median relative"], rows), ""]
            for v in ad["vs_minimiser"]:
                side = ("below" if v["n_below"] > v["n"] / 2 else "above") if v["n_below"] != v["n"] / 2 else "on both sides of"
                out.append(f"- {a} {v['recipe']} {v['name']}: {v['n_below']} of {v['n']} points below the "
                           f"{_label(v['curve'])}; Adam lies mostly {side} it (median relative difference "
                           f"{g(100 * v['median_relative_difference'] if _ok(v['median_relative_difference']) else None)} %). "
                           "A mode of the weight posterior is not the minimiser of the order-parameter action, "
                           "which integrates the readout and the scores out.")
            out.append("")
        if ad["landscape"]:
            rows = [[l["source"], _P(l["P"]), l["n_minima"], g(l["beta_uniform"]), g(l["beta_copy"]),
                     g(l["dS_copy_minus_uniform"])] for l in ad["landscape"]]
            out += [f"**{a}: minima of the theory's action landscapes S(β)** (ΔS < 0: the copy minimum is global)", "",
                    table(["source", "P", "minima", "β uniform side", "β copy side", "ΔS"], rows), ""]
            two = [l for l in ad["landscape"] if l["n_minima"] > 1]
            if two:
                out.append(f"Two minima (a metastable branch Adam can stop on) at P = "
                           f"{', '.join(_P(l['P']) + ' (' + l['source'] + ')' for l in two)}.")
                out.append("")
        if ad["map_vs_prior_warmup"]:
            rows = [[" vs ".join(p["recipes"]), _P(p["P"]), p["name"], f"{pm(p['mean_a'], p['sem_a'])} (n={p['n_a']})",
                     f"{pm(p['mean_b'], p['sem_b'])} (n={p['n_b']})", g(p["difference"]), g(p["z"], 2)]
                    for p in ad["map_vs_prior_warmup"]]
            out += [f"**{a}: Adam recipes against each other**", "",
                    table(["recipes", "P", "param", "first", "second", "difference", "z"], rows), ""]
            big = [p for p in ad["map_vs_prior_warmup"] if _ok(p["z"]) and abs(p["z"]) > 2]
            out += [f"They differ by more than 2σ at {len(big)} of {len(ad['map_vs_prior_warmup'])} common P"
                    + (f" (P = {', '.join(_P(p['P']) for p in big)})" if big else "") + ".", ""]
    return out


def _paper(t: dict) -> list[str]:
    out = ["## Against the paper's own numbers", "",
           "The paper's values are quoted from the paper (arXiv 2606.12058) and labelled as such; ours are read "
           "from the tables above. Every transition P of the closed-form theory is proportional to σ² "
           "(docs/theory.md Sec. 6), so the column 'ours ÷ σ²' is the closed form rescaled to σ² = 1 (the "
           "other settings as in our config).", ""]
    lin, sm = t["attentions"].get("linear"), t["attentions"].get("softmax")
    rows = []

    def sigma2(att):
        return att["theory"]["config"].get("model", {}).get("sigma2")

    def first(att, trans_prefix, method="sgld"):
        for tr in att["transitions"]:
            if tr["transition"].startswith(trans_prefix) and att["recipes"].get(tr["recipe"], {}).get("method") == method:
                return tr
        return None

    for key, att, th_key, prefix in (("linear_onset", lin, "P_onset", "onset"),
                                     ("linear_crossover", lin, "P_crossover", "crossover"),
                                     ("softmax_jump", sm, "P_star", "jump")):
        if att is None:
            continue
        what, quoted = PAPER[key]
        th = att["theory"]
        tr_s, tr_a = first(att, prefix, "sgld"), first(att, prefix, "adam")
        s2 = sigma2(att)
        closed = th.get(th_key)
        lo, hi = PAPER_VALUES[key]
        rows.append([what, f"{quoted} (paper)", g(closed), g(th.get(th_key + "_exact")),
                     f"{g(tr_s['estimate'])} {ci(tr_s['ci_lo'], tr_s['ci_hi'])}" if tr_s else "–",
                     f"{g(tr_a['estimate'])} {ci(tr_a['ci_lo'], tr_a['ci_hi'])}" if tr_a else "–",
                     g(closed / s2) if _ok(closed) and s2 else "–",
                     f"{g(lo / closed, 2)}–{g(hi / closed, 2)}" if _ok(closed) and lo != hi else
                     (g(lo / closed, 2) if _ok(closed) else "–")])
    out.append(table(["quantity", "paper", "ours: closed form", "ours: exact avg.", "ours: SGLD (95% CI)",
                      "ours: Adam (95% CI)", "ours ÷ σ² (closed)", "paper ÷ ours (closed)"], rows))
    out.append("")
    if sm and sm["scaling"].get("P_star_over_ln2L"):
        sc = sm["scaling"]
        a, b = sc["P_star_over_ln2L"], sc["P_star_over_L_ln2L"]
        fa = [x for x in a if _ok(x)]
        fb = [x for x in b if _ok(x)]
        if fa and fb:
            p = [x for x in sc["P_star_vs_L"] if _ok(x)]
            spreads = {"P* independent of L": max(p) / min(p),
                       "P* ∝ ln²L in sequences (N* = P* L ∝ L ln²L in tokens)": max(fa) / min(fa),
                       "P* ∝ L ln²L in sequences": max(fb) / min(fb)}
            best = min(spreads, key=spreads.get)
            out.append(f"{PAPER['scaling'][0]}: the paper states {PAPER['scaling'][1]}. Our closed-form P* at "
                       f"L = {', '.join(_P(x) for x in sc['L'])}: {', '.join(g(x) for x in sc['P_star_vs_L'])} "
                       f"(config d_k = {sm['theory']['config'].get('model', {}).get('d_k', '–')}). Over this range "
                       f"P* varies by a factor {g(spreads['P* independent of L'])}, P*/ln²L by "
                       f"{g(max(fa) / min(fa))} and P*/(L ln²L) by {g(max(fb) / min(fb))}: the closest of the three "
                       f"descriptions here is '{best}' (docs/theory.md Sec. 6: the asymptotic ln²L form needs "
                       "large d_k).")
            out.append("")
    verdicts = []
    for a, att in t["attentions"].items():
        for method, kind in (("sgld", "mean"), ("adam", "saddle")):
            for rec in _recipes(att, method, "prior"):
                cur = _best_curve(att, method, kind)
                s = _summary(att, rec, cur)
                if s and s["n_away"]:
                    verdicts.append(f"{a} {rec}: {s['n_within_2']} of {s['n_away']} points within 2σ of the "
                                    f"{_label(cur)} (RMS z {g(s['rms_z'])})")
    out.append(f"{PAPER['agreement'][0]}: the paper says {PAPER['agreement'][1]}. Here: " +
               ("; ".join(verdicts) if verdicts else "no point with an error bar away from the transitions") + ".")
    out.append("")
    reasons = []
    for a, att in t["attentions"].items():
        for line in _reasons(a, att):
            reasons.append(f"- {a}: {line}")
    if reasons:
        out += ["Evidence on the likely reasons for the differences (generated from the tables):", ""] + reasons + [""]
    return out


def _definitions(t: dict) -> list[str]:
    st = t["settings"]
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
            f"- Away from transitions: factor {g(st['away_factor'])}; closed-form curves against the closed "
            "form's transitions, exact-average and same-dataset curves against the exact average's.",
            f"- R̂ flag: rank-normalised split-R̂ > {g(st['rhat_max'])} (Vehtari et al. 2021); chains of "
            "different seeds sample different posteriors, so a large R̂ across seeds can also be dataset "
            "variation; the paired R̂ (prior vs copy start, same seed) is free of it.",
            "- Transition estimators and their limits: docs/figures.md (copyhead.analysis.transitions).", ""]


def _inputs(t: dict, json_name: str) -> list[str]:
    rows = [[role, f"`{v['path']}`", f"`{v['sha256'][:12]}`", f"`{v['config_hash']}`", v["kind"]]
            for role, v in (t.get("inputs") or {}).items()]
    out = ["## Inputs", "", f"The same numbers, machine-readable: `{json_name}`.", ""]
    if rows:
        out.append(table(["role", "path", "sha256", "config hash", "kind"], rows))
    for a, att in t["attentions"].items():
        ag = att["aggregate"]
        out.append("")
        out.append(f"{a} aggregate: {ag.get('n_runs')} runs ({ag.get('n_diverged')} diverged), "
                   f"{len(ag.get('run_config_hashes', []))} distinct run config hashes (a run's config includes "
                   f"its P and seed; listed in the JSON), run code fingerprints `{ag.get('run_code_fingerprints')}`"
                   f"{' (mixed code!)' if ag.get('mixed_code') else ''}; theory config hash "
                   f"`{att['theory']['config_hash']}`.")
    return out + [""]


def render_results_md(tables: dict, figure_dir: str = "../results/figures", json_name: str = "results.json") -> str:
    """The Markdown of docs/results.md from the JSON-ready tables (``build_tables`` + ``jsonable``)."""
    for att in tables["attentions"].values():
        att["_rhat_max"] = tables["settings"]["rhat_max"]
    parts = ["# Results: theory against experiment", "",
             "*Generated by `copyhead.results` from the workflow's products; do not edit by hand. Every number "
             "is read from the inputs listed at the end, except the paper's own numbers, which are quoted and "
             "labelled as the paper's.*", ""]
    parts += _config_section(tables) + _headline(tables) + _figures(figure_dir) + _agreement(tables)
    parts += _transitions(tables) + _convergence(tables) + _adam(tables) + _paper(tables)
    parts += _definitions(tables) + _inputs(tables, json_name)
    for att in tables["attentions"].values():
        att.pop("_rhat_max", None)
    return "\n".join(parts).rstrip() + "\n"
