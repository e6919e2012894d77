"""What an aggregate dataset (dims ``optimizer, P, seed``; copyhead.aggregate) holds, read for the analysis:
its recipes, the per-run values and per-chain sample series of the plotted order parameters, the sweep and
the runs left out, and statistics the figures draw from it.

Plotted order parameters (``copyhead.order_params.paper_order_parameters``): linear ĉ1 = c1, ĉG = cG;
softmax â1 = m1, âG = mP/L. Keys in the tables: ``c1``, ``cG`` (linear) and ``a1``, ``aG`` (softmax).

The figures plot the aggregate's ``<var>_mean`` / ``<var>_sem`` (the definition of
:func:`copyhead.analysis.stats.mean_sem`) and use :func:`~copyhead.analysis.stats.seed_mean_sem` only for
quantities the aggregate does not store (e.g. :func:`theory_pattern_cosine`). The experimental transition
points are the results model's (:mod:`copyhead.analysis.summary`), one estimator per kind.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from ..attention import ATTENTIONS
from ..config.schema import SAMPLERS
from ..order_params import paper_order_parameters

KEYS = {a: v.keys for a, v in ATTENTIONS.items()}                      # (registry copyhead.attention)
NAMES = {k: n for v in ATTENTIONS.values() for k, n in zip(v.keys, v.names)}
COPY_KEY = {a: v.copy_key for a, v in ATTENTIONS.items()}   # the copy order parameter of each attention type


@dataclass(frozen=True)
class Recipe:
    """One training recipe of the sweep: its method (adam | sgld | hmc), its start (prior | copy) and, for
    a copy-started recipe, the prior-started ``twin`` it brackets the posterior with (or "")."""
    name: str
    method: str
    init: str
    twin: str = ""

    @property
    def sampler(self) -> bool:
        """A posterior sampler (SGLD, HMC): its runs' sample means estimate the posterior mean."""
        return self.method in SAMPLERS


def config_of(ds) -> dict:
    """The config a dataset records (``config_json``); {} where it has none or it does not parse."""
    try:
        return json.loads(ds.attrs.get("config_json", "{}"))
    except (TypeError, ValueError):
        return {}


def sequence_length(*datasets) -> int:
    """L from the first dataset (run, aggregate or theory) whose config or attention matrix gives it."""
    for ds in datasets:
        if ds is None:
            continue
        cfg = config_of(ds)
        if "task" in cfg:
            return int(cfg["task"]["L"])
        if "query" in ds.sizes:
            return int(ds.sizes["query"])
    raise ValueError("no input gives the sequence length L (config_json without task, no query dim)")


def order_parameters(ds, attention: str, L: int, suffix: str) -> dict:
    """{key: variable} of the two plotted order parameters stored with ``suffix`` (``_sample``, ``_mean``,
    ``_saddle_exact``, ...) in a run, aggregate or theory dataset."""
    return dict(zip(KEYS[attention], paper_order_parameters(ds, attention, L, suffix)))


def _n_finite_samples(ag, name: str) -> int:
    if "c1_sample" not in ag:
        return 0
    x = np.asarray(ag["c1_sample"].sel(optimizer=name).values, float)
    return int(np.isfinite(x).sum(axis=-1).max()) if x.size else 0


def recipes(ag, config: dict | None = None) -> dict[str, Recipe]:
    """The recipes of an aggregate (its ``optimizer`` coordinate) with method and init: from ``config``
    (the validated config, its ``optimizers`` section) where given, else from the data (more than one
    recorded sample per run: SGLD) and the name (``<twin>_copy``: copy-started). A copy-started recipe's
    twin is the recipe of the same method and prior start named like it without ``_copy`` (else the only
    prior-started recipe of that method, if there is exactly one)."""
    opts = (config or {}).get("optimizers", {})
    out = {}
    for name in (str(o) for o in ag["optimizer"].values):
        spec = opts.get(name, {})
        method = spec.get("method") or ("hmc" if "hmc" in name else
                                        "sgld" if _n_finite_samples(ag, name) > 1 or "sgld" in name else "adam")
        init = spec.get("init") or ("copy" if name.endswith("_copy") else "prior")
        out[name] = Recipe(name, str(method), str(init))
    for name, r in list(out.items()):
        if r.init != "copy":
            continue
        base = name[:-len("_copy")] if name.endswith("_copy") else ""
        cands = [o for o in out.values() if o.method == r.method and o.init == "prior"]
        twin = base if base in out and out[base] in cands else (cands[0].name if len(cands) == 1 else "")
        out[name] = Recipe(name, r.method, r.init, twin)
    return out


def swept_P(ag, recipe: str) -> np.ndarray:
    """The P values at which ``recipe`` has at least one run (any status but absent)."""
    st = ag["status"].sel(optimizer=recipe)
    return np.asarray([P for P in ag["P"].values if (st.sel(P=P) != "absent").any()], float)


def run_values(ag, attention: str, recipe: str) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(P, seeds, {key: (n_P, n_seeds)}) of the plotted order parameters per run (the run's result: the
    mean over its samples for SGLD, the final state for Adam); NaN where the run is not ok."""
    L = sequence_length(ag)
    ok = ag["status"].sel(optimizer=recipe) == "ok"
    vals = {k: np.asarray(v.sel(optimizer=recipe).where(ok).transpose("P", "seed").values, float)
            for k, v in order_parameters(ag, attention, L, "").items()}
    return ag["P"].values.astype(float), ag["seed"].values.astype(int), vals


def chain_series(ag, attention: str, recipe: str, P) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(seeds, {key: (n_chains, n_draws)}) of the sample series of the ok chains of one (recipe, P), cut
    to the draws every chain has (the common finite prefix). Empty arrays where there is none."""
    L = sequence_length(ag)
    if "c1_sample" not in ag:
        return np.zeros(0, int), {k: np.zeros((0, 0)) for k in KEYS[attention]}
    sel = ag.sel(optimizer=recipe, P=P)
    ok = np.asarray(sel["status"].values == "ok")
    series = {k: np.asarray(v.transpose("seed", "sample").values, float)[ok]
              for k, v in order_parameters(sel, attention, L, "_sample").items()}
    seeds = sel["seed"].values.astype(int)[ok]
    first = next(iter(series.values()))
    fin = np.all([np.isfinite(s) for s in series.values()], axis=0) if len(first) else np.zeros((0, 0), bool)
    keep = fin.any(axis=1) if fin.size else np.zeros(len(first), bool)
    n = int(fin[keep].all(axis=0).cumprod().sum()) if keep.any() else 0
    return seeds[keep], {k: s[keep, :n] for k, s in series.items()}


def sweep_table(ag, recs) -> dict:
    """Per recipe: the swept P, the seeds with a run, and the counts of ok, diverged and non-finite runs."""
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


def ok_runs(ag, var: str):
    """``ag[var]`` with every run whose status is not "ok" (diverged, absent) set to NaN."""
    return ag[var].where(ag["status"] == "ok")


def theory_pattern_cosine(ag, th):
    """cos(Ā, A_th) per (optimizer, P, seed): Frobenius cosine between the learned mean attention and the
    theory's predicted pattern A_th = (m1 J + mP I)/L at the nearest theory P (closed-form saddle).
    NaN where the theory predicts A_th = 0 (linear attention before the onset)."""
    L = sequence_length(ag)
    Pth = th["P"].values
    A = ok_runs(ag, "attention").values  # (optimizer, P, seed, query, key)
    out = np.full(A.shape[:3], np.nan)
    I, J = np.eye(L), np.ones((L, L))
    for j, P in enumerate(ag["P"].values):
        k = int(np.argmin(np.abs(np.log(Pth) - np.log(P))))
        At = (float(th["m1_saddle"][k]) * J + float(th["mP_saddle"][k]) * I) / L
        nt = np.linalg.norm(At)
        if nt < 1e-12:
            continue
        a = A[:, j]
        out[:, j] = np.einsum("osqk,qk->os", a, At) / (np.linalg.norm(a, axis=(-2, -1)) * nt)
    return ag["c1"].copy(data=out)
def posterior(ag, optimizer: str, P=None):
    """The SGLD samples of one recipe as the posterior group ArviZ reads: every ``<var>_sample`` of the
    aggregate renamed to ``<var>`` with dims ``chain`` (the seeds: independent chains, each its own dataset
    and noise stream) and ``draw`` (the recorded samples, burn-in removed), e.g.
    ``arviz_stats.summary(posterior(ag, "sgld", P=16), kind="diagnostics")``. With ``P`` the chains
    that are not ok (diverged, absent, left out) are dropped; without it they are NaN (their P get NaN
    diagnostics). Draws that no kept chain has (a shorter recipe in the same aggregate) are cut."""
    names = [v for v in ag.data_vars if v.endswith("_sample")]
    if not names or "sample" not in ag.dims:
        raise ValueError(f"the aggregate has no SGLD samples (no <var>_sample variables) for {optimizer!r}")
    sel = ag.sel(optimizer=optimizer) if P is None else ag.sel(optimizer=optimizer, P=P)
    ok = sel["status"] == "ok"
    post = sel[names].where(ok)
    if P is not None:
        post = post.isel(seed=np.flatnonzero(ok.values))
    post = post.rename({v: v[:-len("_sample")] for v in names}).rename({"seed": "chain", "sample": "draw"})
    have = np.isfinite(post[names[0][:-len("_sample")]]).any([d for d in post.dims if d != "draw"]).values
    post = post.isel(draw=slice(0, int(have.nonzero()[0][-1]) + 1 if have.any() else 0))
    post.attrs = {"optimizer": optimizer, "source": "copyhead.analysis.posterior of an aggregate"}
    return post.drop_vars([c for c in ("optimizer", "P") if c in post.coords and c not in post.dims])
