"""Numbers of the cross-study report (issue 13), read from each study's results JSON (``copyhead results``)
and theory files; no plotting, no Markdown (:mod:`copyhead.studies.report` renders them).

- :func:`load_study`: one study's sizes, SGLD agreement (same-dataset and closed-form posterior mean, the
  latter under both priors), transitions with bootstrap CIs against the theory, convergence, job time.
- :func:`finite_size`: studies that differ in one size (d_k at fixed L, or L at fixed d_k/L); gaps at fixed
  P/P_ref and transition ratios experiment/theory against 1/size, with weighted fits ``y = y_∞ + b/size``.
- :func:`scaling`: transition points against L and V with the paper's two scaling forms.
- :func:`compare_twins`: a study against its ``P_like`` twin on the same P/σ² grid (σ² collapse, step size).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from copyhead.provenance import DataFileError
from copyhead.analysis.fits import fit_inverse_dk, row_error
from copyhead.studies.spec import REFERENCE
from copyhead.results.inputs import KEYS

Z95 = 1.959963984540054
# the experimental transition compared per attention type: (name in results.json, theory key)
TRANSITION = {"linear": ("crossover ĉG = ĉ1", "P_crossover"),
              "softmax": ("jump of âG (logistic midpoint)", "P_star")}
SAME_CURVE = {"linear": "same dataset, posterior mean (seed mean, swept P)",
              "softmax": "same dataset, posterior mean (seed mean, swept P, logistic midpoint)"}
PRIORS = {"large_deviation": "", "gaussian": "_gaussian"}   # theory-key suffix of each prior
CURVES = ("same_mean", "closed_mean", "closed_mean_gaussian")
CURVE_LABEL = {"same_mean": "same dataset, posterior mean (large-deviation prior)",
               "closed_mean": "closed form, posterior mean, large-deviation prior",
               "closed_mean_gaussian": "closed form, posterior mean, Gaussian prior"}
SGLD = ("sgld", "sgld_copy")
# softmax (â1, âG) = (m1, mP/L) with â1 + âG = 1 inside the span (copyhead.order_params): â1's gap is
# minus âG's, so the gap tables count âG only (the agreement numbers keep both, as docs/results.md does)
REPEATS = {("softmax", "a1")}


def _num(x) -> float:
    return float(x) if x is not None else math.nan


def _job_seconds(root: Path) -> dict:
    """Summed job wall times (s) of a study from its benchmark files, by rule family."""
    out = {"train": 0.0, "other": 0.0}
    bench = root / "results" / "benchmarks"
    for f in bench.rglob("*.tsv") if bench.is_dir() else []:
        lines = f.read_text().strip().splitlines()
        if len(lines) >= 2:
            s = float(lines[-1].split("\t")[0])
            out["train" if "train" in f.relative_to(bench).parts[:1] else "other"] += s
    return out


def _theory_curve(root: Path, inputs: dict, att: str, param: str, prior: str, L: int):
    """(P, values) of the closed-form posterior mean of one plotted order parameter (linear ĉ1, ĉG;
    softmax â1, âG) under one prior, read the way the results tables read it
    (``copyhead.order_params.paper_order_parameters``: softmax â1 = m1, âG = mP/L, not the Frobenius
    coordinates c1, cG of the file, which differ from them by √(L−1)). ``L``: the study's sequence length."""
    import xarray as xr

    from ..order_params import paper_order_parameters
    path = root / inputs[f"theory_{att}"]["path"]
    with xr.open_dataset(path) as ds:
        a, b = paper_order_parameters(ds, att, int(L), "_mean" + PRIORS[prior])
        return ds["P"].values.astype(float), np.asarray(dict(zip(KEYS[att], (a, b)))[param].values, float)


def load_study(path: str | Path) -> dict:
    """One study from its results JSON (``studies/<name>/results/docs/results.json``)."""
    path = Path(path)
    try:
        d = json.loads(path.read_text())
        d["attentions"], d["config"]["json"]
    except FileNotFoundError:
        raise DataFileError(f"{path}: no such results file (run the study first: "
                            "snakemake -s workflow/studies.smk --cores 2)") from None
    except (ValueError, KeyError, TypeError) as e:
        raise DataFileError(f"{path}: not a results JSON of `copyhead results` ({type(e).__name__}: {e}); "
                            "delete it and rerun its study") from None
    in_study = path.parent.name == "docs" and path.parent.parent.name == "results"
    root = path.parents[2] if in_study else path.parent   # studies/<name>/ or a published copy (docs/)
    cfg = json.loads(d["config"]["json"])
    m, t = cfg["model"], cfg["task"]
    name = root.name if in_study else Path(d.get("config_name", "") or path.stem).stem
    study = {"name": name, "path": str(path), "L": int(t["L"]), "V": int(t["V"]), "d_k": int(m["d_k"]),
             "sigma2": float(m["sigma2"]), "code_version": d.get("code_version", ""), "config": cfg,
             "seconds": _job_seconds(root), "attentions": {}}
    for att, a in d["attentions"].items():
        grid = sorted({float(P) for r in SGLD if r in cfg["sweep"].get(att, {})
                       for P in cfg["sweep"][att][r]["P"]})
        rows = [dict(r) for r in a["agreement"] if r["method"] == "sgld" and r["curve"] in CURVES
                and r["recipe"] in SGLD and r.get("experiment") is not None]
        has_theory = (root / d["inputs"].get(f"theory_{att}", {}).get("path", "-")).is_file()
        curves = {}   # param -> (P, values) of the Gaussian-prior posterior mean, read once
        for r in [r for r in rows if r["curve"] == "closed_mean" and has_theory]:   # the same points, Gaussian prior
            if r["param"] not in curves:
                curves[r["param"]] = _theory_curve(root, d["inputs"], att, r["param"], "gaussian",
                                                       study["L"])
            th = float(np.interp(r["P"], *curves[r["param"]]))
            err = row_error(r)
            rows.append(dict(r, curve="closed_mean_gaussian", curve_label=CURVE_LABEL["closed_mean_gaussian"],
                             theory=th, z=(r["experiment"] - th) / err if err > 0 else None))
        name, key = TRANSITION[att]
        tr = next((x for x in a["transitions"] if x["recipe"] == "sgld" and x["transition"] == name), None)
        same = next((x["value"] for x in (tr or {}).get("theory", []) if x["curve"] == SAME_CURVE[att]), None)
        conv = [c for c in a["convergence"] if c["recipe"] in SGLD]
        study["attentions"][att] = {
            "grid": grid, "rows": rows,
            "transition": {"name": name, "estimate": _num((tr or {}).get("estimate")),
                           "ci_lo": _num((tr or {}).get("ci_lo")), "ci_hi": _num((tr or {}).get("ci_hi")),
                           "resolved": bool((tr or {}).get("resolved")), "note": (tr or {}).get("note", ""),
                           "theory": {"large_deviation": _num(a["theory"].get(key)),
                                      "gaussian": _num(a["theory"].get(key + "_gaussian")),
                                      "exact": _num(a["theory"].get(key + "_exact")),
                                      "same_dataset": _num(same)}},
            # the transition the study's P grid was placed around (copyhead.studies.spec.REFERENCE)
            "P_ref": next((v for v in (_num(a["theory"].get(k)) for k in REFERENCE[att]) if math.isfinite(v)),
                          math.nan),
            "rhat_max": max((_num(c["rhat"]) for c in conv if c.get("rhat") is not None), default=math.nan),
            "n_rhat_flag": sum(bool(c.get("rhat_flag")) for c in conv), "n_conv": len(conv),
            "n_within_flag": sum(_num(c.get("rhat_within_max")) > 1.05 for c in conv),
            "rhat_within_max": max((_num(c["rhat_within_max"]) for c in conv if c.get("rhat_within_max") is not None),
                                   default=math.nan),
            "ess_min": min((_num(c["ess_bulk"]) for c in conv if c.get("ess_bulk") is not None), default=math.nan),
        }
    return study


def agreement(att: dict, curve: str, away_only: bool = True) -> dict:
    """RMS z, points within 2σ, χ²/dof of the SGLD chains (both starts) against one theory curve."""
    z = np.array([r["z"] for r in att["rows"] if r["curve"] == curve and r.get("z") is not None
                  and (r.get("away") or not away_only)], float)
    z = z[np.isfinite(z)]
    if not len(z):
        return {"n": 0, "n_within_2": 0, "rms_z": math.nan}
    return {"n": int(len(z)), "n_within_2": int(np.sum(np.abs(z) <= 2)), "rms_z": float(np.sqrt(np.mean(z ** 2)))}


def _ratio_err(tr: dict, theory: float) -> tuple[float, float]:
    """experiment/theory and its error (the CI's half width / 1.96, relative)."""
    est, lo, hi = tr["estimate"], tr["ci_lo"], tr["ci_hi"]
    if not all(math.isfinite(x) for x in (est, lo, hi, theory)) or theory <= 0:
        return math.nan, math.nan
    return est / theory, (hi - lo) / (2 * Z95) / theory


def _nominal(ratio: float, ratios) -> float:
    """The spec ratio a grid point stands for (the grid is round(r · P_ref))."""
    return float(min(ratios, key=lambda r: abs(math.log(ratio / r))))


def finite_size(studies: list[dict], ratios: dict, by: str = "d_k") -> dict:
    """Studies that differ in one size ``by`` (d_k, or L at fixed d_k/L), compared at fixed P/P_ref (P_ref:
    each study's own closed-form transition), with weighted fits y = y_∞ + b/x in x = 1/``by``.
    Returns {"by", "values", "L", "gaps": [...], "transitions": [...], "agreement": [...]}; every point
    carries "x" (its value of ``by``)."""
    studies = sorted(studies, key=lambda s: s[by])
    values = [s[by] for s in studies]
    gaps = {}
    for s in studies:
        for att, a in s["attentions"].items():
            for r in a["rows"]:
                if r["curve"] != "same_mean" or r.get("z") is None or (att, r["param"]) in REPEATS:
                    continue
                nominal = _nominal(r["P"] / a["P_ref"], ratios[att])
                err = row_error(r)
                key = (att, r["recipe"], nominal, r["param"])
                gaps.setdefault(key, {"name": r["name"], "points": []})["points"].append(
                    {"x": s[by], "d_k": s["d_k"], "L": s["L"], "P": r["P"], "experiment": r["experiment"],
                     "theory": r["theory"], "gap": r["experiment"] - r["theory"], "error": err, "z": r["z"]})
    gap_rows = []
    for (att, recipe, nominal, param), g in sorted(gaps.items()):
        pts = g["points"]
        fit = fit_inverse_dk([p["x"] for p in pts], [p["gap"] for p in pts], [p["error"] for p in pts])
        gap_rows.append({"attention": att, "recipe": recipe, "ratio": nominal, "param": param, "name": g["name"],
                         "points": pts, "fit": fit, "closes": _compatible(fit, 0.0)})
    trans = []
    for att in ("linear", "softmax"):
        for prior in ("large_deviation", "gaussian"):
            pts = []
            for s in studies:
                a = s["attentions"].get(att)
                if a is None:
                    continue
                th = a["transition"]["theory"][prior]
                q, e = _ratio_err(a["transition"], th)
                pts.append({"x": s[by], "d_k": s["d_k"], "L": s["L"], "experiment": a["transition"]["estimate"],
                            "ci_lo": a["transition"]["ci_lo"], "ci_hi": a["transition"]["ci_hi"], "theory": th,
                            "ratio": q, "error": e})
            fit = fit_inverse_dk([p["x"] for p in pts], [p["ratio"] for p in pts], [p["error"] for p in pts])
            trans.append({"attention": att, "transition": TRANSITION[att][0], "prior": prior, "points": pts,
                          "fit": fit, "tends_to_theory": _compatible(fit, 1.0)})
    agree = [{"name": s["name"], "x": s[by], "d_k": s["d_k"], "L": s["L"], "d_k_over_L": s["d_k"] / s["L"],
              "attention": att, **{c: agreement(a, c) for c in CURVES}}
             for s in studies for att, a in s["attentions"].items()]
    return {"by": by, "values": values, "L": studies[0]["L"] if studies else None,
            "d_k_over_L": studies[0]["d_k"] / studies[0]["L"] if studies else None,
            "gaps": gap_rows, "transitions": trans, "agreement": agree}


def _compatible(fit: dict, value: float) -> bool | None:
    if not (math.isfinite(fit["a"]) and math.isfinite(fit["a_err"])):
        return None
    return bool(abs(fit["a"] - value) <= 2 * fit["a_err"])


def scaling(studies: list[dict]) -> list[dict]:
    """One row per study: L, V, d_k, the two transitions (experiment with CI, theory under both priors),
    P*/ln²L (sequences; N*/(L ln²L) in tokens) and the linear-crossover / softmax-P* ratio with √(LV)."""
    out = []
    for s in sorted(studies, key=lambda s: (s["V"], s["L"])):
        lin, sm = s["attentions"].get("linear"), s["attentions"].get("softmax")
        row = {"name": s["name"], "L": s["L"], "V": s["V"], "d_k": s["d_k"], "sqrt_LV": math.sqrt(s["L"] * s["V"]),
               "ln2L": math.log(s["L"]) ** 2}
        for att, a in (("linear", lin), ("softmax", sm)):
            if a is not None:
                row[att] = a["transition"]
        if lin and sm:
            tl, ts = lin["transition"], sm["transition"]
            q = tl["estimate"] / ts["estimate"]
            rel = math.hypot(*(((t["ci_hi"] - t["ci_lo"]) / (2 * Z95)) / t["estimate"] for t in (tl, ts)))
            row["ratio"] = {"experiment": q, "error": q * rel,
                            **{p: tl["theory"][p] / ts["theory"][p] for p in ("large_deviation", "gaussian")}}
        out.append(row)
    return out


def _eta(study: dict) -> float:
    return float(study["config"]["optimizers"]["sgld"]["eta"]) if "sgld" in study["config"].get("optimizers", {}) \
        else math.nan


def compare_twins(study: dict, ref: dict) -> dict:
    """``study`` against its twin ``ref`` at equal P/σ² (a ``P_like`` pair of the spec): order parameters
    (same recipe in both) and transitions divided by σ². The twins differ in σ² (the collapse test) or,
    at equal σ², in the SGLD step size η (the step-size test); ``differs`` says which."""
    scale = study["sigma2"] / ref["sigma2"]
    differs = "σ²" if study["sigma2"] != ref["sigma2"] else ("η" if _eta(study) != _eta(ref) else "nothing")
    rows = []
    pairs = [(att, a, ref["attentions"][att]) for att, a in study["attentions"].items() if att in ref["attentions"]]
    for att, a, b in pairs:
        mine = {(r["recipe"], r["P"], r["param"]): r for r in a["rows"] if r["curve"] == "same_mean"}
        theirs = {(r["recipe"], r["P"] * scale, r["param"]): r for r in b["rows"] if r["curve"] == "same_mean"}
        for key in sorted(set(mine) & set(theirs)):
            x, y = mine[key], theirs[key]
            err = math.hypot(_num(x["error"]), _num(y["error"]))
            rows.append({"attention": att, "recipe": key[0], "P": key[1], "P_over_sigma2": key[1] / study["sigma2"],
                         "param": key[2], "name": x["name"], "value": x["experiment"], "error": x["error"],
                         "value_ref": y["experiment"], "error_ref": y["error"],
                         "theory": x["theory"], "theory_ref": y["theory"],
                         "z": (x["experiment"] - y["experiment"]) / err if err > 0 else math.nan,
                         # the difference the same-dataset theory predicts (its datasets differ in P too)
                         "z_vs_theory": ((x["experiment"] - y["experiment"]) - (x["theory"] - y["theory"])) / err
                         if err > 0 else math.nan})
    trans = {}
    for att, a, b in pairs:
        ta, tb = a["transition"], b["transition"]
        trans[att] = {"name": ta["name"], "value": ta["estimate"] / study["sigma2"],
                      "ci": [ta["ci_lo"] / study["sigma2"], ta["ci_hi"] / study["sigma2"]],
                      "value_ref": tb["estimate"] / ref["sigma2"],
                      "ci_ref": [tb["ci_lo"] / ref["sigma2"], tb["ci_hi"] / ref["sigma2"]],
                      "theory": ta["theory"]["large_deviation"] / study["sigma2"],
                      "theory_ref": tb["theory"]["large_deviation"] / ref["sigma2"]}
    for t in trans.values():   # the two 95% CIs overlap: the transition collapses within errors
        t["overlap"] = bool(max(t["ci"][0], t["ci_ref"][0]) <= min(t["ci"][1], t["ci_ref"][1])) \
            if all(math.isfinite(v) for v in (*t["ci"], *t["ci_ref"])) else None
    z = np.array([r["z"] for r in rows], float)
    z = z[np.isfinite(z)]
    zt = np.array([r["z_vs_theory"] for r in rows], float)
    zt = zt[np.isfinite(zt)]
    return {"study": study["name"], "ref": ref["name"], "sigma2": study["sigma2"], "sigma2_ref": ref["sigma2"],
            "differs": differs, "eta": _eta(study), "eta_ref": _eta(ref),
            "rows": rows, "transitions": trans, "n": int(len(z)), "n_within_2": int(np.sum(np.abs(z) <= 2)),
            "rms_z": float(np.sqrt(np.mean(z ** 2))) if len(z) else math.nan,
            "n_within_2_theory": int(np.sum(np.abs(zt) <= 2)),
            "rms_z_theory": float(np.sqrt(np.mean(zt ** 2))) if len(zt) else math.nan}


def start_agreement(studies: list[dict]) -> dict:
    """Prior- against copy-started chains of the same (study, attention, P, parameter): they start on opposite
    sides of the transition, so a mean biased by slow mixing shows as a difference. Returns n, n_within_2
    and the RMS z of the differences."""
    z = []
    for s in studies:
        for att, a in s["attentions"].items():
            rows = {(r["recipe"], r["P"], r["param"]): r for r in a["rows"] if r["curve"] == "same_mean"}
            for (recipe, P, param), r in rows.items():
                c = rows.get(("sgld_copy", P, param))
                if recipe != "sgld" or c is None or (att, param) in REPEATS:
                    continue
                err = math.hypot(_num(r["error"]), _num(c["error"]))
                if err > 0:
                    z.append((r["experiment"] - c["experiment"]) / err)
    z = np.asarray(z, float)
    z = z[np.isfinite(z)]
    return {"n": int(len(z)), "n_within_2": int(np.sum(np.abs(z) <= 2)),
            "rms_z": float(np.sqrt(np.mean(z ** 2))) if len(z) else math.nan}


def scaling_path(rows: list[dict]) -> dict:
    """The path in (L, d_k) that scaling studies lie on, at their most common V: a fixed head dimension
    (every study has the same d_k) or d_k = q·L (the most common d_k/L). ``label`` names it."""
    Vs = [r["V"] for r in rows]
    V = max(set(Vs), key=Vs.count)
    dks = {r["d_k"] for r in rows if r["V"] == V}
    if len(dks) == 1 and len({r["L"] for r in rows if r["V"] == V}) >= 2:
        d = dks.pop()
        return {"V": V, "d_k": d, "dk_per_L": None, "label": f"d_k = {d}",
                "Ls": [r["L"] for r in rows if r["V"] == V]}
    ratios = [r["d_k"] / r["L"] for r in rows if r["V"] == V]
    q = max(set(ratios), key=ratios.count)
    return {"V": V, "d_k": None, "dk_per_L": q, "label": f"d_k = {q:g}·L",
            "Ls": [r["L"] for r in rows if r["V"] == V and r["d_k"] / r["L"] == q]}


def theory_lines(rows: list[dict], grid_n: int = 161) -> dict:
    """Closed-form transitions along L on the studies' path (:func:`scaling_path`: fixed d_k or d_k = q·L)
    at their most common V, both priors."""
    from copyhead.config import ActionParams
    from copyhead.theory.scaling import closed_form_transitions

    if not rows:
        return {}
    path = scaling_path(rows)
    V, Ls = path["V"], path.pop("Ls")
    # from below the smallest studied L to L = 128 (where the paper's asymptotic forms are meant to hold)
    L_line = sorted(set(np.unique(np.round(np.geomspace(min(Ls) * 0.75, max(128, max(Ls)), 11))).astype(int)) | set(Ls))
    out = dict(path)
    for prior in ("large_deviation", "gaussian"):
        for att in ("linear", "softmax"):
            line = {"L": [], "P_crossover": [], "P_star": []}
            for L in L_line:
                d_k = path["d_k"] or int(round(path["dk_per_L"] * L))
                p = ActionParams(V=V, L=int(L), d_k=d_k, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=rows[0]["sigma2"],
                                 prior=prior)
                res = closed_form_transitions(att, p, grid_n)
                line["L"].append(int(L))
                line["P_crossover"].append(float(res["P_crossover"]))
                line["P_star"].append(float(res["P_star"]))
            out[(att, prior)] = line
    return out
