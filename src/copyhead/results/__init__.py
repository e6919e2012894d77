"""docs/results.md and its tables, from the aggregates, the theory files and (optionally) the same-dataset
theory files (issue 11).

- :mod:`.inputs` — recipes (method, start, copy twin), per-run and per-chain values of the plotted order
  parameters, theory curves at the runs' P and the theory's transition points.
- :mod:`.tables` — convergence (split-R̂, ESS, MCSE), agreement (z per point, summaries), SGLD against the
  HMC reference on the same training sets; the definitions
  are in its docstring. :mod:`.transitions` — transitions with bootstrap intervals; :mod:`.adam` — Adam
  against the MAP landscape.
- :mod:`.page`, :mod:`.appendix` — the Markdown pages, every number read from the JSON (:mod:`.format`:
  number formatting and tables).

``build_tables(datasets, config=None, ...)`` makes every table from open datasets (pure), with the
summary every page and figure reads (:mod:`copyhead.analysis.summary`: one estimator per transition kind,
verdicts as data); ``write_results(inputs, out, ...)`` reads the files and writes them as JSON;
``write_pages(json, out_md)`` renders the results page (:mod:`.page`, short) and its appendix
(:mod:`.appendix`, every table) from that JSON. Input roles: ``aggregate_<attention>``,
``theory_<attention>`` (required for each attention type present) and ``datasets_<attention>`` (optional:
results/theory/<attention>_datasets.nc of copyhead.theory.same_dataset).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from .inputs import CURVES, KEYS, NAMES, Recipe, config_of, recipes
from .adam import adam_table, softmax_landscape_minima
from .tables import (RHAT_MAX, agreement_summaries, agreement_table, convergence_table, figure_statistics,
                     flagged_points, reference_curve, sampler_summaries, sampler_table)
from .transitions import transition_table

from ..analysis.summary import build_summary
from ..config import ATTENTIONS

__all__ = ["ATTENTIONS", "CURVES", "KEYS", "NAMES", "RHAT_MAX", "Recipe", "adam_table", "agreement_summaries",
           "agreement_table", "build_tables", "convergence_table", "figure_statistics", "flagged_points",
           "jsonable", "recipes", "reference_curve", "sampler_summaries", "sampler_table", "softmax_landscape_minima", "transition_table",
           "write_pages", "write_results"]


def _sweep(ag, recs) -> dict:
    from .inputs import swept_P
    out = {}
    for name in recs:
        st = ag["status"].sel(optimizer=name)
        seeds = [int(s) for s in ag["seed"].values if (st.sel(seed=s) != "absent").any()]
        out[name] = {"P": [float(p) for p in swept_P(ag, name)], "seeds": seeds,
                     "n_ok": int((st == "ok").sum()), "n_diverged": int((st == "diverged").sum()),
                     "n_nonfinite": int((st == "nonfinite").sum())}
    return out


_RUN = re.compile(r"([A-Za-z0-9_]+)/P([0-9]+)/seed([0-9]+)\.nc$")


def nonfinite_runs(ag) -> list[dict]:
    """The runs whose file says ok but that hold a non-finite result (aggregate status "nonfinite"; their
    results are blanked like a diverged run's): recipe, P, seed and the variables named in the aggregate's
    ``nonfinite_json`` ({run path: [variables]}). [] for an aggregate without them."""
    import numpy as np
    names = {}
    for path, variables in json.loads(ag.attrs.get("nonfinite_json") or "{}").items():
        m = _RUN.search(str(path).replace("\\", "/"))
        if m:
            names[(m.group(1), float(m.group(2)), int(m.group(3)))] = list(variables)
    st = np.asarray(ag["status"].transpose("optimizer", "P", "seed").values).astype(str)
    out = []
    for i, j, k in zip(*np.nonzero(st == "nonfinite")):
        key = (str(ag["optimizer"].values[i]), float(ag["P"].values[j]), int(ag["seed"].values[k]))
        out.append({"recipe": key[0], "P": key[1], "seed": key[2], "variables": names.get(key, [])})
    return out


def _scaling(th) -> dict:
    """P* (and the linear transitions) against L from the theory file, with P*/ln²L and P*/(L ln²L)."""
    if "scaling_L" not in th.coords:
        return {}
    Ls = [float(v) for v in th["scaling_L"].values]
    out = {"L": Ls}
    for k in ("P_star_vs_L", "P_onset_vs_L", "P_crossover_vs_L"):
        if k in th:
            out[k] = [float(v) for v in th[k].values]
    if "P_star_vs_L" in out:
        out["P_star_over_ln2L"] = [p / math.log(L) ** 2 for p, L in zip(out["P_star_vs_L"], Ls)]
        out["P_star_over_L_ln2L"] = [p / (L * math.log(L) ** 2) for p, L in zip(out["P_star_vs_L"], Ls)]
    return out


def build_tables(datasets: dict, config: dict | None = None, *, n_boot: int = 1000, away_factor: float = 1.5,
                 rhat_max: float = RHAT_MAX, seed: int = 0) -> dict:
    """Every table of docs/results.md from open datasets (roles as in the module docstring): per attention
    type ``recipes``, ``sweep``, ``convergence``, ``agreement``, ``agreement_summary``, ``transitions``,
    ``samplers`` and ``sampler_summary`` (SGLD against HMC on the same datasets), ``adam``, ``theory`` (its
    transition points and config), ``scaling``, ``aggregate`` (its provenance);
    and ``settings`` (n_boot, away_factor, rhat_max, the bootstrap seed)."""
    out = {"settings": {"n_boot": n_boot, "away_factor": away_factor, "rhat_max": rhat_max,
                        "bootstrap_seed": seed, "level": 0.95}, "attentions": {}}
    for att in ATTENTIONS:
        ag, th = datasets.get(f"aggregate_{att}"), datasets.get(f"theory_{att}")
        if ag is None:
            continue
        if th is None:
            raise ValueError(f"aggregate_{att} given without theory_{att}")
        same = datasets.get(f"datasets_{att}")
        recs = recipes(ag, config)
        conv = convergence_table(ag, att, recs, rhat_max)
        agr = agreement_table(ag, th, same, att, recs, away_factor)
        trans = transition_table(ag, th, same, att, recs, n_boot=n_boot, seed=seed)
        samplers = sampler_table(ag, att, recs) if "c1_sample" in ag else []
        theory = {k: float(th[k]) for k in th.data_vars if th[k].ndim == 0}
        theory.update(config=config_of(th), prior=str(th.attrs.get("prior", "")),
                      exact_n_datasets=int(th.attrs.get("exact_n_datasets", 0) or 0),
                      config_hash=str(th.attrs.get("config_hash", "")),
                      code_version=str(th.attrs.get("code_version", "")))
        agg = {k: ag.attrs.get(k) for k in ("n_runs", "n_diverged", "n_absent", "code_version", "config_hash",
                                            "run_code_fingerprints", "mixed_code")}
        agg["run_config_hashes"] = sorted({str(h) for h in ag["run_config_hash"].values.ravel() if str(h)}) \
            if "run_config_hash" in ag else []
        out["attentions"][att] = {
            "recipes": {n: {"method": r.method, "init": r.init, "twin": r.twin} for n, r in recs.items()},
            "sweep": _sweep(ag, recs), "convergence": conv, "agreement": agr,
            "agreement_summary": agreement_summaries(agr), "transitions": trans,
            "adam": adam_table(ag, th, att, recs, trans, agr), "theory": theory, "scaling": _scaling(th),
            "samplers": samplers, "sampler_summary": sampler_summaries(samplers),
            "aggregate": agg, "same_dataset": same is not None, "nonfinite": nonfinite_runs(ag),
            "same_dataset_config_hash": str(same.attrs.get("config_hash", "")) if same is not None else ""}
    out["summary"] = build_summary(jsonable(out))
    return out


def jsonable(obj, drop: tuple = ()):
    """``obj`` as strict JSON: NaN/inf as None, numpy scalars as Python numbers, tuple keys joined by "|",
    and the dict keys in ``drop`` left out (at every level). The one converter of the package's JSON."""
    import numpy as np
    if isinstance(obj, dict):
        return {("|".join(map(str, k)) if isinstance(k, tuple) else str(k)): jsonable(v, drop)
                for k, v in obj.items() if k not in drop}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, drop) for v in obj]
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    return obj


def write_results(inputs: dict, out: Path, out_json: Path | None = None, config: dict | None = None, *,
                  config_name: str = "", figure_dir: str = "../results/figures", n_boot: int = 1000,
                  away_factor: float = 1.5, rhat_max: float = RHAT_MAX, seed: int = 0) -> dict:
    """Read the input files (role -> path; roles in the module docstring; missing optional roles are
    skipped), build the tables and write them as JSON (NaN as null, plus the inputs' sha256) atomically:
    to ``out`` when it ends in .json, else to ``out_json`` (default: ``out`` with suffix .json) and the
    pages (:func:`write_pages`) to ``out``. ``config``: the validated config the sweep ran with (recipes'
    method and start; its name ``config_name`` is quoted in the page). Returns the JSON-ready tables."""
    from ..provenance import code_version, code_version_string, read_dataset, sha256_file, write_json
    inputs = {k: Path(v) for k, v in inputs.items() if v}
    datasets = {k: read_dataset(p) for k, p in inputs.items()}
    tables = build_tables(datasets, config, n_boot=n_boot, away_factor=away_factor, rhat_max=rhat_max, seed=seed)
    tables["inputs"] = {k: {"path": str(p), "sha256": sha256_file(p),
                            "config_hash": str(datasets[k].attrs.get("config_hash", "")),
                            "kind": str(datasets[k].attrs.get("copyhead_kind", ""))} for k, p in sorted(inputs.items())}
    tables["config_name"] = config_name
    if config is not None:
        from ..config import canonical_json, config_hash
        tables["config"] = {"hash": config_hash(config), "json": canonical_json(config)}
    tables["code_version"] = code_version_string(code_version())
    tables = jsonable(tables)
    out = Path(out)
    if out.suffix == ".json":
        write_json(tables, out)
        return tables
    out_json = Path(out_json) if out_json else out.with_suffix(".json")
    write_json(tables, out_json)
    write_pages(out_json, out, figure_dir=figure_dir)
    return tables


def write_pages(tables_json: Path, out_md: Path, figure_dir: str = "../results/figures", studies=()) -> None:
    """The results page ``out_md`` and its appendix (``<stem>_appendix.md`` beside it) from a results JSON
    (:func:`write_results`), atomically; every number is read from that file and, for the page's Studies
    section, from the studies reports' JSON files ``studies`` (docs/studies*/studies.json)."""
    from ..provenance import atomic_write
    from .appendix import render_appendix
    from .page import render_page
    tables_json, out_md = Path(tables_json), Path(out_md)
    tables = json.loads(tables_json.read_text())
    appendix = out_md.with_name(out_md.stem + "_appendix.md")
    reps = [(Path(p).parent.name, json.loads(Path(p).read_text())) for p in studies]
    page = render_page(tables, figure_dir=figure_dir, appendix_name=appendix.name, json_name=tables_json.name,
                       studies=reps)
    text = render_appendix(tables, json_name=tables_json.name, page_name=out_md.name)
    atomic_write(appendix, lambda t: Path(t).write_text(text))
    atomic_write(out_md, lambda t: Path(t).write_text(page))
