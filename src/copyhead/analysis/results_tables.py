"""The results tables: every number of the results (results.json) from open datasets, the summary the
pages and figures read (:mod:`.summary`), and what fig3/fig4 draw beyond the aggregate's means. Pure
functions of the aggregates, theory files and same-dataset theory files; copyhead.results reads and
writes the files and renders the pages.

Input roles: ``aggregate_<attention>``, ``theory_<attention>`` (required for each attention type present)
and ``datasets_<attention>`` (optional: results/theory/<attention>_datasets.nc of
copyhead.theory.same_dataset).
"""
from __future__ import annotations

import math

import numpy as np

from ..config import ATTENTIONS
from ..config.schema import METHODS
from .adam import adam_table
from .agreement import agreement_summaries, agreement_table, natural_curve
from .convergence import RHAT_MAX, convergence_table, mixing_status
from .experiments import config_of, nonfinite_runs, recipes, sweep_table
from .samplers import sampler_summaries, sampler_table
from .summary import build_summary
from .transition_table import transition_table


def scaling_table(th) -> dict:
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
    """Every table of the results from open datasets (roles as in the module docstring): per attention
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
        mixing = mixing_status(conv)
        for r in agr:   # sampled points: whether their chains mixed (per training set)
            m = mixing.get((r["recipe"], float(r["P"]), r["param"]))
            if m is not None:
                r.update(mixed=m["mixed"], mix_rhat=m["rhat"], mix_ess=m["ess"])
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
            "sweep": sweep_table(ag, recs), "convergence": conv, "agreement": agr,
            "agreement_summary": agreement_summaries(agr), "transitions": trans,
            "adam": adam_table(ag, th, att, recs, trans, agr), "theory": theory, "scaling": scaling_table(th),
            "samplers": samplers, "sampler_summary": sampler_summaries(samplers),
            "aggregate": agg, "same_dataset": same is not None, "nonfinite": nonfinite_runs(ag),
            "same_dataset_config_hash": str(same.attrs.get("config_hash", "")) if same is not None else ""}
    out["summary"] = build_summary(jsonable(out))
    return out


def jsonable(obj, drop: tuple = ()):
    """``obj`` as strict JSON: NaN/inf as None, numpy scalars as Python numbers, tuple keys joined by "|",
    and the dict keys in ``drop`` left out (at every level). The one converter of the package's JSON."""
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


def figure_statistics(ag, th, same, attention: str, recs: dict, rhat_max: float = RHAT_MAX) -> dict:
    """What fig3/fig4 draw beyond the aggregate's means: ``flags`` (the sampled points whose chains have not
    mixed by the verdicts' rule, :func:`~copyhead.analysis.convergence.mixing_status`: hollow markers),
    ``convergence`` rows (the R̂ panel), ``residuals`` {recipe: rows of its natural curve} and
    ``reference`` {method: curve key}."""
    conv = convergence_table(ag, attention, recs, rhat_max) if "c1_sample" in ag else []
    rows = agreement_table(ag, th, same, attention, recs)
    ref = {m: natural_curve(rows, m) for m in METHODS}
    res = {}
    for r in recs.values():
        c = ref.get(r.method)
        res[r.name] = [x for x in rows if x["recipe"] == r.name and x["curve"] == c]
    flags = {k: not v["mixed"] for k, v in mixing_status(conv).items()}
    return {"flags": flags, "convergence": conv, "residuals": res, "reference": ref}
