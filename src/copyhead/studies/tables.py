"""The studies' tables (``copyhead studies-report``): studies.json from the studies' results JSON files.

This is the compute step of the studies report; :mod:`copyhead.studies.report` renders the page and its
figures from the JSON it writes, never from the studies themselves.

- :func:`load_study`: one study's sizes, SGLD agreement rows (same-dataset and closed-form posterior mean,
  the latter under both priors: the Gaussian-prior curve is read from the study's theory file), its
  transitions with bootstrap CIs against the theory, convergence, job time and cost.
- :func:`theory_lines`: the closed-form transitions along L on the studies' path (:func:`scaling_path`).
- :func:`build`: every table of the report (the statistics are :mod:`copyhead.analysis.finite_size`,
  :mod:`copyhead.analysis.scaling_claims`, :mod:`copyhead.analysis.twins`); :func:`write_tables` writes them.
"""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import xarray as xr

from copyhead.analysis.agreement import z_scores
from copyhead.analysis.convergence import point_status
from copyhead.analysis.finite_size import CURVES, PRIORS, finite_size
from copyhead.analysis.fits import row_error
from copyhead.analysis.experiments import KEYS
from copyhead.analysis.results_model import (AttentionTables, InputFile, ResultsFormatError, ResultsTables,
                                             read_studies)
from copyhead.analysis.results_tables import jsonable
from copyhead.analysis.scaling_claims import scaling_rows
from copyhead.analysis.twins import compare_twins, transitions_collapse
from copyhead.attention import ATTENTIONS
from copyhead.config import ActionParams
from copyhead.format import METHOD
from copyhead.order_params import paper_order_parameters
from copyhead.provenance import DataFileError, product_record, sidecar_path, write_product
from copyhead.resources import sweep_seconds
from copyhead.studies.spec import REFERENCE, load_spec, spec_view, study_config
from copyhead.theory.scaling import closed_form_transitions

# the experimental transition compared per attention type: (kind, the prefix of its row's name in
# results.json, e.g. "jump" for "jump of âG (steepest rise)"; the closed form's own transition point)
TRANSITION = {a: (v.transition, v.theory_transition) for a, v in ATTENTIONS.items()}
SAME_CURVE = {"linear": "same dataset, posterior mean (seed mean, swept P)",
              "softmax": "same dataset, posterior mean (seed mean, swept P, steepest rise)"}
CURVE_LABEL = {"same_mean": "same dataset, posterior mean (large-deviation prior)",
               "closed_mean": "closed form, posterior mean, large-deviation prior",
               "closed_mean_gaussian": "closed form, posterior mean, Gaussian prior"}
CLOSED_CURVE = {"linear": "closed form, posterior mean",
                "softmax": "closed form, posterior mean (seed mean, swept P, steepest rise)"}
COLLAPSE_RULE = "Rule: the transition points collapse when the 95% CIs of every σ² twin overlap."


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


def _cost(cfg: dict) -> dict:
    """The study's training jobs and the Slurm resource model's predicted summed job seconds on CPU and on
    one GPU per job (copyhead.resources)."""
    return {"train_jobs": sum(len(v["P"]) for att in cfg["sweep"].values() for v in att.values()),
            "train_model_s": sweep_seconds(cfg, "cpu"), "gpu_model_s": sweep_seconds(cfg, "gpu")}


def _theory_curve(root: Path, inputs: dict[str, InputFile], att: str, param: str, prior: str, L: int):
    """(P, values) of the closed-form posterior mean of one plotted order parameter (linear ĉ1, ĉG;
    softmax â1, âG) under one prior, read the way the results tables read it
    (``copyhead.order_params.paper_order_parameters``: softmax â1 = m1, âG = mP/L, not the Frobenius
    coordinates c1, cG of the file, which differ from them by √(L−1)). ``L``: the study's sequence length."""
    with xr.open_dataset(root / inputs[f"theory_{att}"].path) as ds:
        a, b = paper_order_parameters(ds, att, int(L), "_mean" + PRIORS[prior])
        return ds["P"].values.astype(float), np.asarray(dict(zip(KEYS[att], (a, b)))[param].values, float)


def _read(path: Path) -> ResultsTables:
    """A study's results JSON as the typed results model (strict: a key it does not know, or a missing one,
    is named)."""
    try:
        d = ResultsTables.from_dict(json.loads(path.read_text()), str(path))
        if d.config is None:
            raise ResultsFormatError(f"{path}: missing key 'config'")
    except FileNotFoundError:
        raise DataFileError(f"{path}: no such results file (run the study first: "
                            "snakemake -s workflow/studies.smk --cores 2)") from None
    except ValueError as e:     # not JSON, or not the results model's shape (ResultsFormatError)
        raise DataFileError(f"{path}: not a results JSON of `copyhead results` ({type(e).__name__}: {e}); "
                            "delete it and rerun its study") from None
    return d


def _transition(att: str, a: AttentionTables, recipe: str = "sgld") -> dict:
    """The transition of one attention type of a results JSON read from ``recipe``'s chains, with the
    theory's values of it: the closed form's own transition point (crossover; softmax: P*) under both
    priors and the dataset average, and the same estimator on the same-dataset and closed-form posterior
    means (softmax: their jump brackets on the swept P, ``theory_brackets``)."""
    kind, key = TRANSITION[att]
    tr = next((x for x in a.transitions if x.recipe == recipe and x.transition.startswith(kind)), None)
    th = {x.curve: x for x in tr.theory} if tr else {}
    pts, nan = a.theory.points, math.nan
    closed = CLOSED_CURVE[att]
    out = {"name": tr.transition if tr else kind, "recipe": recipe,
           **({"estimate": tr.estimate, "ci_lo": tr.ci_lo, "ci_hi": tr.ci_hi} if tr else
              {"estimate": nan, "ci_lo": nan, "ci_hi": nan}),
           "resolved": bool(tr and tr.resolved), "note": tr.note if tr else "",
           "theory": {"large_deviation": pts.get(key, nan), "gaussian": pts.get(key + "_gaussian", nan),
                      "exact": pts.get(key + "_exact", nan),
                      "same_dataset": th[SAME_CURVE[att]].value if SAME_CURVE[att] in th else nan,
                      "closed_mean": th[closed].value if closed in th else nan}}
    if tr and tr.bracket:
        out["bracket"] = list(tr.bracket)
        out["theory_brackets"] = {k: [_num(th[c].lo), _num(th[c].hi)] if c in th else [nan, nan]
                                  for k, c in (("same_dataset", SAME_CURVE[att]), ("closed_mean", closed))}
    return out


def _made_by(path: Path) -> str:
    """The code version that made a results JSON, from its provenance record ("" where it has none)."""
    try:
        return str(json.loads(sidecar_path(path).read_text()).get("code_version") or "")
    except (FileNotFoundError, ValueError):
        return ""


def _sizes(path: Path, d: ResultsTables, name: str) -> dict:
    cfg = json.loads(d.config.json)
    m, t = cfg["model"], cfg["task"]
    return {"name": name, "path": str(path), "L": int(t["L"]), "V": int(t["V"]), "d_k": int(m["d_k"]),
            "sigma2": float(m["sigma2"]), "code_version": _made_by(path), "config": cfg,
            "eta": float(cfg["optimizers"]["sgld"]["eta"]) if "sgld" in cfg.get("optimizers", {}) else math.nan}


# what names a study's sampler on its page: the stage recipe's length, step and thinning (HMC: steps of
# n_leapfrog leapfrog steps of step_size; SGLD: steps of eta)
SAMPLER_KEYS = ("steps", "n_leapfrog", "step_size", "eta", "burn_in", "thin")


def sampler(recipe: dict) -> dict:
    """The sampler settings of one recipe of a config's ``optimizers`` (:data:`SAMPLER_KEYS` it has)."""
    return {k: recipe[k] for k in SAMPLER_KEYS if k in recipe}


def is_current(spec: dict, study: dict) -> bool:
    """Whether a study was sampled with the recipe the spec gives it now: its recorded sampler equals its
    stage recipe's in the config :func:`copyhead.studies.spec.study_config` generates today (a study
    without a recorded sampler, or no longer in the spec, is not)."""
    if not study.get("sampler") or study["name"] not in spec["studies"]:
        return False
    cfg, _ = study_config(spec, study["name"])
    return sampler(cfg["optimizers"].get(study.get("recipe") or "", {})) == study["sampler"]


def _nan(obj):
    """JSON's null numbers as NaN again (the inverse of :func:`jsonable` on a study's tables)."""
    if isinstance(obj, dict):
        return {k: _nan(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_nan(v) for v in obj]
    return math.nan if obj is None else obj


def carry_studies(path: str | Path, exclude=()) -> tuple[dict, dict]:
    """({name: study}, where) of the studies of a published studies.json (docs/studies*/studies.json) that
    are not in ``exclude``, as :func:`load_study` gives them, so that a group can be rerun a few studies at
    a time: each is marked ``carried`` with the commit of the report it first came from (its provenance
    record's ``git_commit``). ``where``: the file's path, sha256 and commit, for the new record."""
    path = Path(path)
    try:
        read_studies(path)                       # a clear error for a file that is not a studies.json
        data = path.read_bytes()
        raw = json.loads(data)
        rec = json.loads(sidecar_path(path).read_text()) if sidecar_path(path).is_file() else {}
    except FileNotFoundError:
        raise DataFileError(f"{path}: no such studies tables file to carry studies from") from None
    except (ValueError, ResultsFormatError) as e:
        raise DataFileError(f"{path}: not a studies.json of `copyhead studies-report` ({type(e).__name__}: {e})") from None
    commit = str(rec.get("git_commit") or "")[:12] or "unrecorded"
    out = {}
    for s in raw["studies"]:
        if s["name"] not in exclude:
            s = _nan(s)
            s["carried"] = s.get("carried") or commit
            out[s["name"]] = s
    where = {"path": str(path), "sha256": hashlib.sha256(data).hexdigest(), "git_commit": commit,
             "studies": sorted(out)}
    return out, where


def _extreme(f, values) -> float:
    """max or min over the finite values (NaN where none is)."""
    return f((v for v in values if math.isfinite(v)), default=math.nan)


def load_transitions(path: str | Path) -> dict:
    """Sizes, σ² and per attention type the SGLD transition of one results JSON (the converged study's
    docs/results.json, put on the paper's σ² = 1 scale by the page)."""
    path = Path(path)
    d = _read(path)
    study = _sizes(path, d, Path(d.config_name or path.stem).stem)
    study["attentions"] = {att: {"transition": _transition(att, a, "sgld")} for att, a in d.attentions.items()}
    return study


def load_study(path: str | Path) -> dict:
    """One study from its results JSON (``studies/<name>/results/docs/results.json``)."""
    path = Path(path)
    d = _read(path)
    in_study = path.parent.name == "docs" and path.parent.parent.name == "results"
    root = path.parents[2] if in_study else path.parent   # studies/<name>/ or a published copy (docs/)
    study = _sizes(path, d, root.name if in_study else Path(d.config_name or path.stem).stem)
    cfg, inputs = study["config"], d.inputs or {}
    # the study's sampler: its first recipe (the figures' stage recipe) and every recipe of that method
    swept = list(dict.fromkeys(r for att in cfg["sweep"].values() for r in att))
    stage = cfg.get("figures", {}).get("stage_optimizer") or next(
        (r for r in swept if cfg["optimizers"][r]["method"] != "adam"), swept[0])
    method = cfg["optimizers"][stage]["method"]
    own = [r for r in swept if cfg["optimizers"][r]["method"] == method]
    study.update(seconds=_job_seconds(root), cost=_cost(cfg), attentions={}, method=METHOD[method],
                 recipe=stage, sampler=sampler(cfg["optimizers"][stage]))
    for att, a in d.attentions.items():
        grid = sorted({float(P) for r in own if r in cfg["sweep"].get(att, {})
                       for P in cfg["sweep"][att][r]["P"]})
        rows = [r.to_dict() for r in a.agreement if r.method == method and r.curve in CURVES
                and r.recipe in own and not math.isnan(r.experiment)]
        has_theory = f"theory_{att}" in inputs and (root / inputs[f"theory_{att}"].path).is_file()
        curves = {}   # param -> (P, values) of the Gaussian-prior posterior mean, read once
        for r in [r for r in rows if r["curve"] == "closed_mean" and has_theory]:   # the same points, Gaussian prior
            if r["param"] not in curves:
                curves[r["param"]] = _theory_curve(root, inputs, att, r["param"], "gaussian", study["L"])
            th = float(np.interp(r["P"], *curves[r["param"]]))
            z = float(z_scores(r["experiment"], th, row_error(r)))
            rows.append(dict(r, curve="closed_mean_gaussian", curve_label=CURVE_LABEL["closed_mean_gaussian"],
                             theory=th, z=z if math.isfinite(z) else None))
        conv = [c for c in a.convergence if c.recipe in own]
        pairs = [c for c in a.convergence if "+" in c.recipe and set(c.recipe.split("+")) <= set(own)]
        study["attentions"][att] = {
            "grid": grid, "rows": rows, "transition": _transition(att, a, stage),
            # the transition the study's P grid was placed around (copyhead.studies.spec.REFERENCE)
            "P_ref": next((v for v in (a.theory.points.get(k, math.nan) for k in REFERENCE[att]) if math.isfinite(v)),
                          math.nan),
            "rhat_max": _extreme(max, (c.rhat for c in conv)),
            "n_rhat_flag": sum(c.rhat_flag for c in conv), "n_conv": len(conv),
            "n_within_flag": sum(c.rhat_within_max > 1.05 for c in conv),
            "rhat_within_max": _extreme(max, (c.rhat_within_max for c in conv)),
            "ess_min": _extreme(min, (c.ess_bulk for c in conv)),
            # per chain (one training set), never pooled across seeds: what "mixed" is judged on
            "ess_chain_min": _extreme(min, (c.ess_chain_min for c in conv)),
            "points": point_status([c.to_dict() for c in conv + pairs]),   # mixed / metastable / not mixed
        }
    return study


def path_label(d_k: int | None, dk_per_L: float | None) -> str:
    """The name of a path in (L, d_k): a fixed head dimension ``d_k = 16`` or ``d_k = 2·L``."""
    return f"d_k = {d_k}" if d_k else f"d_k = {dk_per_L:g}·L"


def scaling_path(rows: list[dict]) -> dict:
    """The path in (L, d_k) that scaling studies lie on, at their most common V: a fixed head dimension
    (every study has the same d_k) or d_k = q·L (the most common d_k/L). ``label`` names it."""
    Vs = [r["V"] for r in rows]
    V = max(set(Vs), key=Vs.count)
    dks = {r["d_k"] for r in rows if r["V"] == V}
    if len(dks) == 1 and len({r["L"] for r in rows if r["V"] == V}) >= 2:
        d = dks.pop()
        return {"V": V, "d_k": d, "dk_per_L": None, "label": path_label(d, None),
                "Ls": [r["L"] for r in rows if r["V"] == V]}
    ratios = [r["d_k"] / r["L"] for r in rows if r["V"] == V]
    q = max(set(ratios), key=ratios.count)
    return {"V": V, "d_k": None, "dk_per_L": q, "label": path_label(None, q),
            "Ls": [r["L"] for r in rows if r["V"] == V and r["d_k"] / r["L"] == q]}


def theory_lines(rows: list[dict], grid_n: int = 161) -> dict:
    """Closed-form transitions along L on the studies' path (:func:`scaling_path`: fixed d_k or d_k = q·L)
    at their most common V, both priors: {(attention, prior): {"L", "P_crossover", "P_star"}} with the
    path's V, d_k, dk_per_L and label."""
    if not rows:
        return {}
    path = scaling_path(rows)
    V, Ls = path["V"], path.pop("Ls")
    # from below the smallest studied L to L = 128 (where the paper's asymptotic forms are meant to hold)
    L_line = sorted(set(np.unique(np.round(np.geomspace(min(Ls) * 0.75, max(128, max(Ls)), 11))).astype(int)) | set(Ls))
    out = dict(path)
    for prior in PRIORS:
        for att in ATTENTIONS:
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


def load_studies(paths: list[str | Path]) -> dict:
    """{name: study} of the studies' results JSON files (:func:`load_study`; named by their study folder)."""
    studies = {}
    for p in paths:
        s = load_study(p)
        studies[s["name"]] = s
    return studies


def build(spec: dict, studies: dict) -> dict:
    """Every table of the studies report from the studies (:func:`load_studies`) and the spec's groups:
    ``studies`` (those the spec lists); ``finite_size`` (group finite_size: d_k at fixed L); ``scaling``
    (group scaling) with ``finite_L`` (its studies at the most common d_k/L: L at fixed d_k/L);
    ``fixed_dk`` (each group fixed_dk*: L at a fixed head dimension); ``twins`` (the spec's P_like pairs)
    with ``sigma2_collapse`` (do the σ² twins' transitions collapse)."""
    groups = spec.get("groups", {})

    def members(group):
        return [studies[n] for n in groups.get(group, []) if n in studies]

    def scaling_part(group):
        rows = scaling_rows(members(group))
        return {"group": group, "rows": rows, "theory_lines": theory_lines(rows)}

    rep = {"studies": [studies[n] for n in spec["studies"] if n in studies]}
    if len(members("finite_size")) >= 2:
        rep["finite_size"] = finite_size(members("finite_size"), spec["ratios"])
    fixed = [grp for grp in groups if grp.startswith("fixed_dk") and len(members(grp)) >= 2]
    if fixed:   # the same comparison along a fixed head dimension
        rep["fixed_dk"] = [dict(scaling_part(grp), figure=f"fig8_{grp}.png") for grp in fixed]
    sc = members("scaling")
    if len(sc) >= 2:
        rep["scaling"] = scaling_part("scaling")
        tl = rep["scaling"]["theory_lines"]
        same = [s for s in sc if s["V"] == tl["V"] and tl["dk_per_L"] and s["d_k"] / s["L"] == tl["dk_per_L"]]
        if len({s["L"] for s in same}) >= 2:
            rep["finite_L"] = finite_size(same, spec["ratios"], by="L")
    pairs = [(n, s["P_like"]) for n, s in spec["studies"].items() if s.get("P_like")]
    twins = [compare_twins(studies[a], studies[b]) for a, b in pairs if a in studies and b in studies]
    if twins:
        rep["twins"] = twins
        ok = transitions_collapse(twins)
        rep["sigma2_collapse"] = {"transitions_collapse": ok, "rule": COLLAPSE_RULE}
    return rep


def write_tables(spec_path: str | Path, paths: list[str | Path], out_json: str | Path,
                 carry: str | Path | None = None) -> dict:
    """Write studies.json (every table of :func:`build`, JSON-ready: NaN as null, tuple keys joined by "|",
    the studies' configs left out) with its provenance record ``studies.json.provenance.json`` (the spec
    and every study's results JSON with their sha256; marked ``data``: its inputs live outside the checkout,
    in the studies' folders, so it is remade there, not by the docs rules).

    ``carry``: a published studies.json whose other studies join the new ones (:func:`carry_studies`; the
    record names the file, its sha256 and commit under ``options.carried``). Every study is marked
    ``current`` or not (:func:`is_current`), so a page that mixes recipes says so."""
    out_json = Path(out_json)
    if out_json.suffix != ".json":
        raise DataFileError(f"{out_json}: the studies' tables are a .json file (render the page from it with "
                            "`copyhead studies-page`)")
    spec = load_spec(spec_path)
    fresh = load_studies(paths)
    carried, where = carry_studies(carry, exclude=fresh) if carry else ({}, None)
    studies = {**carried, **fresh}
    for s in studies.values():
        s["current"] = is_current(spec, s)
    rep = build(spec, studies)
    inputs = {"spec": spec_path, **{f"study_{name}": s["path"] for name, s in fresh.items()}}
    text = json.dumps(jsonable(rep, drop=("config",)), indent=1, sort_keys=True) + "\n"
    out_json.parent.mkdir(parents=True, exist_ok=True)
    options = {"spec": str(spec_path), **({"carried": where} if where else {})}
    # data whose inputs (the studies' results) live outside the checkout: remade where the studies are
    names = sorted(studies)   # the spec entries this report reads: an edit to another study's leaves it current
    views = {"spec": {"studies": names, "sha256": spec_view(spec_path, names)}}
    record = dict(product_record("studies_tables", "studies_tables", inputs, options, kind="table", views=views),
                  data=True)
    write_product({out_json: text}, record)
    return rep
