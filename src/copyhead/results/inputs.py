"""What the results tables read from the inputs: recipes, per-run and per-chain values of the plotted order
parameters from an aggregate, and the theory curves and transition points.

Plotted order parameters (``copyhead.order_params.paper_order_parameters``): linear ĉ1 = c1, ĉG = cG;
softmax â1 = m1, âG = mP/L. Keys in the tables: ``c1``, ``cG`` (linear) and ``a1``, ``aG`` (softmax).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..config.schema import SAMPLERS

KEYS = {"linear": ("c1", "cG"), "softmax": ("a1", "aG")}
NAMES = {"c1": "ĉ1", "cG": "ĉG", "a1": "â1", "aG": "âG"}
COPY_KEY = {"linear": "cG", "softmax": "aG"}          # the copy order parameter of each attention type

# Theory curves: key -> (label, source, kind). ``source``: closed_form (Eq. 12, dense P grid), exact_avg
# (dataset-averaged exact action, Eq. 17, on P_exact), same_dataset (each run's own training set, per
# (P, seed)); ``kind``: saddle (global minimiser of S: what MAP/Adam estimates) or mean (posterior mean,
# Eq. 18: what an SGLD chain's sample mean estimates).
CURVES = {
    "closed_saddle": ("closed form, minimiser", "closed_form", "saddle"),
    "closed_mean": ("closed form, posterior mean", "closed_form", "mean"),
    "exact_saddle": ("exact avg. action, minimiser", "exact_avg", "saddle"),
    "exact_mean": ("exact avg. action, posterior mean", "exact_avg", "mean"),
    "same_saddle": ("same dataset, minimiser", "same_dataset", "saddle"),
    "same_mean": ("same dataset, posterior mean", "same_dataset", "mean"),
}


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


def sequence_length(*datasets) -> int:
    """L from the first dataset whose config (or attention matrix) gives it."""
    from ..analysis import sequence_length as L
    for ds in datasets:
        if ds is not None and ("task" in config_of(ds) or "query" in ds.sizes):
            return L(ds)
    raise ValueError("no input gives the sequence length L (config_json without task, no query dim)")


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


def _op(ds, attention: str, L: int, suffix: str):
    from ..order_params import paper_order_parameters
    a, b = paper_order_parameters(ds, attention, L, suffix)
    return dict(zip(KEYS[attention], (a, b)))


def run_values(ag, attention: str, recipe: str) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(P, seeds, {key: (n_P, n_seeds)}) of the plotted order parameters per run (the run's result: the
    mean over its samples for SGLD, the final state for Adam); NaN where the run is not ok."""
    L = sequence_length(ag)
    ok = ag["status"].sel(optimizer=recipe) == "ok"
    vals = {k: np.asarray(v.sel(optimizer=recipe).where(ok).transpose("P", "seed").values, float)
            for k, v in _op(ag, attention, L, "").items()}
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
              for k, v in _op(sel, attention, L, "_sample").items()}
    seeds = sel["seed"].values.astype(int)[ok]
    first = next(iter(series.values()))
    fin = np.all([np.isfinite(s) for s in series.values()], axis=0) if len(first) else np.zeros((0, 0), bool)
    keep = fin.any(axis=1) if fin.size else np.zeros(len(first), bool)
    n = int(fin[keep].all(axis=0).cumprod().sum()) if keep.any() else 0
    return seeds[keep], {k: s[keep, :n] for k, s in series.items()}


def config_of(ds) -> dict:
    try:
        return json.loads(ds.attrs.get("config_json", "{}"))
    except (TypeError, ValueError):
        return {}


# ----------------------------------------------------------------------------------------------- theory
def theory_transitions(th, source: str) -> dict[str, float]:
    """The theory's transition points (P_onset, P_crossover, P_star, P_spinodal_low, P_spinodal_high) of
    one source: closed_form (no suffix) or exact_avg/same_dataset (``_exact``; the same-dataset file has no
    transitions of its own, so it is judged against the dataset average's). NaN where absent."""
    suffix = "" if source == "closed_form" else "_exact"
    out = {}
    for k in ("P_onset", "P_crossover", "P_star", "P_spinodal_low", "P_spinodal_high"):
        v = th.get(k + suffix) if th is not None else None
        out[k] = float(v) if v is not None and np.ndim(v) == 0 else float("nan")
    return out


def theory_resolution(ds, attention: str, L: int) -> float:
    """Numerical resolution of a theory value in order-parameter units: the minimiser is refined to about
    1/128 of the grid spacing (docs/theory.md Sec. 1). Linear: spacing of the (c1, cG) grid [-R, R] / 128;
    softmax: spacing of the β grid / 128 times the largest slope of âG(β) = (e^β − 1)/(e^β + L − 1), which is
    L/(4(L − 1)) (an upper bound for â1 too). 0 when the file does not record its grid."""
    try:
        rng = [float(v) for v in json.loads(ds.attrs["grid_range"])]
        n = int(ds.attrs["grid_n"])
    except (KeyError, TypeError, ValueError):
        return 0.0
    if n < 2:
        return 0.0
    if attention == "linear":
        return 2 * abs(rng[0]) / (n - 1) / 128
    if len(rng) < 2:
        return 0.0
    return abs(rng[1] - rng[0]) / (n - 1) / 128 * L / (4 * (L - 1))


def curve_values(curve: str, attention: str, th, same, P, seeds, L: int | None = None) -> tuple[dict, dict] | None:
    """Theory curve ``curve`` (a key of CURVES) at the runs' P (and seeds): ({key: (n_P, n_seeds)},
    {key: (n_P, n_seeds)} theory error), or None when the inputs do not have it. Closed form: interpolated
    in log P on the dense grid. Exact average: only at P of its own grid (no interpolation across a jump);
    its error is the sd over the averaged datasets of the per-dataset minimiser divided by √n_datasets (the
    only dataset spread the theory file stores; used for the minimiser and the mean). Same dataset: the
    value of each (P, seed). Every error includes (in quadrature) the file's numerical resolution
    (:func:`theory_resolution`), so a run sitting exactly on a theory value (e.g. Adam at A = 0) does not get
    an infinite z. ``L``: the sequence length (default: from the theory's config)."""
    from ..analysis import interp_log_P
    label, source, kind = CURVES[curve]
    P = np.asarray(P, float)
    seeds = np.asarray(seeds, int)
    shape = (len(P), len(seeds))
    if source == "closed_form":
        if th is None or f"c1_{kind}" not in th:
            return None
        L = L or sequence_length(th)
        vals = {k: np.broadcast_to(interp_log_P(P, th["P"].values, v.values)[:, None], shape)
                for k, v in _op(th, attention, L, f"_{kind}").items()}
        return vals, {k: np.full(shape, theory_resolution(th, attention, L)) for k in vals}
    if source == "exact_avg":
        if th is None or "P_exact" not in th.coords or f"c1_{kind}_exact" not in th:
            return None
        L = L or sequence_length(th)
        Pe = th["P_exact"].values.astype(float)
        idx = [int(np.flatnonzero(np.isclose(Pe, p))[0]) if np.isclose(Pe, p).any() else -1 for p in P]

        def at(v):
            v = np.asarray(v, float)
            return np.broadcast_to(np.array([v[i] if i >= 0 else np.nan for i in idx])[:, None], shape)

        vals = {k: at(v.values) for k, v in _op(th, attention, L, f"_{kind}_exact").items()}
        n = float(th.attrs.get("exact_n_datasets", 0) or 0)
        sd_names = {"c1": "c1", "cG": "cG", "a1": "m1", "aG": "mP"}
        errs = {}
        res = theory_resolution(th, attention, L)
        for k in vals:
            name = f"{sd_names[k]}_saddle_exact_sd"
            if name in th and n > 1:
                sd = np.asarray(th[name].values, float) / (L if k == "aG" else 1.0)
                errs[k] = np.hypot(at(sd / np.sqrt(n)), res)
            else:
                errs[k] = np.full(shape, res)
        return vals, errs
    # same dataset
    if same is None or f"c1_{kind}_same" not in same:
        return None
    L = L or sequence_length(same, th)
    Ps, ss = same["P"].values.astype(float), same["seed"].values.astype(int)
    vals = {}
    for k, v in _op(same, attention, L, f"_{kind}_same").items():
        v = np.asarray(v.transpose("P", "seed").values, float)
        out = np.full(shape, np.nan)
        for i, p in enumerate(P):
            ii = np.flatnonzero(np.isclose(Ps, p))
            for j, s in enumerate(seeds):
                jj = np.flatnonzero(ss == s)
                if len(ii) and len(jj):
                    out[i, j] = v[ii[0], jj[0]]
        vals[k] = out
    return vals, {k: np.full(shape, theory_resolution(same, attention, L)) for k in vals}
