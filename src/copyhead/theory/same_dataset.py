"""Same-dataset theory: the exact action on a run's own training set (docs/theory.md, Sec. 4.4).

For a run (attention, P, seed) the training set is ``copyhead.task.make_data(seed, V, L, P, n_test).train``
(a pure function of (seed, V, L, P), nested in P). The theory's prediction for that run is the exact
action of Eq. (16) with the evidence of that one dataset (Eq. (4)-(5), i.e. Eq. (17) with n = 1): its
global minimiser, its posterior mean (Eq. (18)) and, where the action has more than one local minimum,
the minimum on the side where prior-started chains begin (reached by steepest descent on the grid from
A = 0 for linear, β = 0 for softmax attention) and the one with the most copying (largest cG, softmax
largest β: where copy-started chains sit), with their action difference.

Nothing is re-implemented here: the datasets go into ``action.ExactAverage.of_tokens`` (one dataset per
seed), the action on its grid is ``models.LinearModel``/``SoftmaxModel``, minimisers, local minima and
means come from ``scan.scan``/``scan.argmin_refined``; the training sets from ``copyhead.task``
(``run_training_tokens``). Pure: ``copyhead.theory.output.write_same_dataset_theory`` writes one netCDF per
attention type with dims (P, seed); it is what the workflow calls (results/theory/{attention}_datasets.nc).
"""
from __future__ import annotations

import json
import time
from typing import Callable, Iterable

import numpy as np
import xarray as xr

from copyhead.config import ActionParams, TheoryParams, runs
from copyhead.task import run_training_tokens

from .action import ExactAverage
from .ranges import family, make_model, theory_grid
from .scan import _local_minima, argmin_refined, drop_origin, scan

SUFFIX = "_same"                        # the global minimiser is <k>_saddle_same, the mean <k>_mean_same
SIDES = {"prior_side": "local minimum reached by steepest descent on the grid from the prior start "
                       "(A = 0 linear, beta = 0 softmax), where prior-started chains begin",
         "copy_side": "local minimum with the most copying (largest cG; softmax largest beta), where "
                      "copy-started chains sit"}

Tokens = Callable[[ActionParams, int, int], np.ndarray]
# more variables of each (P, seed) on the same datasets: extend(ds, p, attention, pairs, tokens, log) -> ds
Extension = Callable[..., xr.Dataset]


def _descend(S: np.ndarray, start: tuple) -> tuple:
    """Grid index reached from ``start`` by steepest descent over the 3^dim neighbourhood."""
    idx = tuple(int(i) for i in start)
    while True:
        win = tuple(slice(max(i - 1, 0), i + 2) for i in idx)
        sub = S[win]
        k = np.unravel_index(int(np.argmin(sub)), sub.shape)
        new = tuple(w.start + j for w, j in zip(win, k))
        if not S[new] < S[idx]:
            return idx
        idx = new


def _index_of(model, x) -> tuple:
    return tuple(int(np.argmin(np.abs(ax - xi))) for ax, xi in zip(model.axes, x))


def _prior_start(model) -> np.ndarray:
    return np.zeros(model.dim)      # linear: A = 0 (c1 = cG = 0); softmax: beta = 0 (uniform attention)


def _copy_amount(x) -> float:
    return float(x[-1])             # linear: cG; softmax: beta (cG increases with beta)


def dataset_branches(model, P, S) -> dict:
    """Minima of the action S (grid values at P) of one dataset on both sides: {"n_minima",
    "prior_side": (x, S(x)), "copy_side": (x, S(x))}, x refined like the global minimiser."""
    minima = _local_minima(model, S)
    origin_unstable = model.symmetric and model.hess_origin(P)[0][0] < 0
    if origin_unstable:
        minima = drop_origin(model, minima)
    end = _descend(S, _index_of(model, _prior_start(model)))
    x_end = model.canon(np.array([ax[i] for ax, i in zip(model.axes, end)]))
    if origin_unstable and np.linalg.norm(x_end) <= 0.5 * model.spacing and minima:
        # the grid stencil missed a weak instability of the origin: take the nearest true local minimum
        x_end = min(minima, key=lambda m: np.linalg.norm(m[0]))[0]
        end = _index_of(model, x_end)
    out = {"n_minima": len(minima)}
    x, s = argmin_refined(model, P, S, start=end)
    out["prior_side"] = (model.canon(x), s)
    top = max(minima, key=lambda m: _copy_amount(m[0])) if minima else None
    if top is None or np.linalg.norm(top[0] - x_end) <= 1.5 * model.spacing:
        out["copy_side"] = out["prior_side"]            # one minimum (or only a boundary one): both sides
    else:
        x, s = argmin_refined(model, P, S, start=_index_of(model, top[0]))
        out["copy_side"] = (model.canon(x), s)
    return out


def dataset_predictions(model, P_list: Iterable[int]) -> tuple[list[dict], int]:
    """Per P of one dataset (``model`` built on ``ExactAverage.of_tokens`` of that dataset alone): global
    minimiser, posterior mean and the two sides' minima, as order-parameter dicts, plus the actions;
    and the number of P whose grid argmin lies on the grid boundary."""
    P_list = [int(P) for P in P_list]
    sc = scan(model, P_list)
    op = model.order_params(sc["x"])
    out = []
    for i, P in enumerate(P_list):
        br = dataset_branches(model, P, model.grid(P))
        rec = {"P": P, "saddle": {k: float(v[i]) for k, v in op.items()},
               "mean": {k: float(v[i]) for k, v in sc["mean"].items()},
               "action_min": float(sc["S_min"][i]), "n_minima": br["n_minima"]}
        for side in SIDES:
            x, s = br[side]
            rec[side] = {k: float(v) for k, v in model.order_params(x).items()}
            rec[f"action_{side}"] = s
        out.append(rec)
    return out, sc["boundary_hits"]


def same_dataset_theory(th: TheoryParams, attention: str, pairs: Iterable[tuple[int, int]],
                        tokens: Tokens = run_training_tokens, ranges=None, log=print,
                        extend: Extension | None = None) -> xr.Dataset:
    """The exact action on each run's own training set, for the (P, seed) ``pairs`` of one attention type,
    as an xarray Dataset with dims (P, seed) (NaN where a pair is not requested; no provenance attrs).

    ``tokens(p, seed, P)`` gives dataset ``seed`` at P, nested in P (default: the runs' training sets);
    ``ranges``: the grid range (R, or (beta_lo, beta_hi)), by default that of results/theory/{attention}.nc
    (``ranges.theory_grid``), so the same-dataset and dataset-averaged predictions share one grid (sized
    at a larger P where a pair's P exceeds the theory's P_max and exact P).

    ``extend(ds, p, attention, pairs, tokens, log)`` adds variables computed on the same datasets before the
    attributes are set (the pipeline passes none; a study beyond the paper may, e.g. the research package's
    per-dataset corrections).
    """
    family(attention)                # ValueError for a name that is not an attention variant
    t0 = time.perf_counter()
    pairs = sorted({(int(P), int(s)) for P, s in pairs})
    if not pairs:
        raise ValueError("no (P, seed) pairs given")
    p = th.action
    Ps = sorted({P for P, _ in pairs})
    seeds = sorted({s for _, s in pairs})
    P_ref, grid = theory_grid(th, attention, Ps)
    ranges = grid if ranges is None else ranges
    recs, hits = {}, 0
    for seed in seeds:
        P_seed = [P for P, s in pairs if s == seed]
        ex = ExactAverage.of_tokens(p, tokens(p, seed, max(P_seed))[None])
        model = make_model(attention, p, th.grid_n, P_ref, exact=ex, ranges=ranges)
        seed_recs, seed_hits = dataset_predictions(model, P_seed)
        # the grid error: the same dataset's minimiser and posterior mean on a twice finer grid
        fine = make_model(attention, p, 2 * (th.grid_n - 1) + 1, P_ref, exact=ex, ranges=ranges)
        scf = scan(fine, P_seed)
        opf = fine.order_params(scf["x"])
        for i, rec in enumerate(seed_recs):
            rec["grid_err"] = {kind: {k: abs(rec[kind][k] - float(v[i])) for k, v in vals.items()}
                               for kind, vals in (("saddle", opf), ("mean", scf["mean"]))}
        recs.update({(rec["P"], seed): rec for rec in seed_recs})
        hits += seed_hits
    if hits:
        log(f"same-dataset theory {attention}: warning: the global minimum is on the grid boundary for "
            f"{hits} (P, seed) pairs (grid range {ranges})")
    ds = _dataset(attention, p, Ps, seeds, recs)
    if extend is not None:
        ds = extend(ds, p, attention, pairs, tokens, log)
    ds.attrs.update({
        "attention": attention, "prior": p.prior, "grid_n": th.grid_n,
        "grid_range": json.dumps(list(np.atleast_1d(ranges).astype(float))), "grid_boundary_hits": int(hits),
        "pairs_json": json.dumps(pairs),
        "data": "each (P, seed): the run's own training set, copyhead.task.make_data(seed, V, L, P, n_test)"
                ".train (uncentred one-hot targets), not the theory's dataset-average draws "
                "(copyhead.theory.data)" if tokens is run_training_tokens else "given token sets",
        "branches": "; ".join(f"{k}: {v}" for k, v in SIDES.items()),
        "compute_seconds": round(time.perf_counter() - t0, 2), "docs": "docs/theory.md Sec. 4.4"})
    log(f"same-dataset theory {attention}: {len(pairs)} (P, seed) pairs in {time.perf_counter() - t0:.1f} s")
    return ds


def _dataset(attention, p, Ps, seeds, recs) -> xr.Dataset:
    dims = ("P", "seed")
    shape = (len(Ps), len(seeds))
    ds = xr.Dataset(coords={
        "P": ("P", np.asarray(Ps, float), {"long_name": "training-set size P of the run", "units": "sequences"}),
        "seed": ("seed", np.asarray(seeds, np.int64), {"long_name": "seed of the run (its training set is "
                                                                    "make_data(seed, V, L, P).train)"})})
    names = {"c1": "pooling order parameter c1 = m1 + mP/L", "cG": "copy order parameter cG = mP sqrt(L-1)/L",
             "m1": "coefficient m1 of A = (m1 J + mP I)/L", "mP": "coefficient mP of A = (m1 J + mP I)/L",
             "beta": "softmax copy logit beta"}
    keys = family(attention).variables
    what = f"exact action of the run's own training set, {p.prior} prior"
    kinds = {"saddle": "global minimiser of S", "mean": "posterior mean over exp(-S)",
             "saddle_prior_side": SIDES["prior_side"], "saddle_copy_side": SIDES["copy_side"]}

    def fill(get):
        a = np.full(shape, np.nan)
        for (P, s), rec in recs.items():
            a[Ps.index(P), seeds.index(s)] = get(rec)
        return a

    for kind, desc in kinds.items():
        field = {"saddle": "saddle", "mean": "mean", "saddle_prior_side": "prior_side",
                 "saddle_copy_side": "copy_side"}[kind]
        base, _, side = kind.partition("_")
        for k in keys:
            ds[f"{k}_{base}{SUFFIX}{'_' + side if side else ''}"] = (
                dims, fill(lambda r: r[field][k]), {"long_name": f"{names[k]}, {desc} ({what})", "units": "1"})
    for kind in ("saddle", "mean"):
        for k in keys:
            ds[f"{k}_{kind}{SUFFIX}_grid_err"] = (dims, fill(lambda r: r.get("grid_err", {}).get(kind, {}).get(k, np.nan)), {
                "long_name": f"grid error of {k} ({kinds[kind]}, {what}): |value at grid_n − value on a twice "
                             "finer grid|", "units": "1"})
    ds[f"action_min{SUFFIX}"] = (dims, fill(lambda r: r["action_min"]),
                                 {"long_name": f"minimum of the action S = -ln p(Y|m) - ln p(m) + const ({what})",
                                  "units": "1"})
    for side in SIDES:
        ds[f"action{SUFFIX}_{side}"] = (dims, fill(lambda r: r[f"action_{side}"]),
                                        {"long_name": f"S at the {side.replace('_', ' ')} minimum ({what})",
                                         "units": "1"})
    ds[f"action_gap{SUFFIX}"] = (dims, fill(lambda r: r["action_copy_side"] - r["action_prior_side"]),
                                 {"long_name": "S(copy-side minimum) - S(prior-side minimum); 0 where both "
                                               f"sides reach the same minimum ({what})", "units": "1"})
    ds[f"n_minima{SUFFIX}"] = (dims, fill(lambda r: r["n_minima"]),
                               {"long_name": f"number of local minima of S inside the grid ({what}); NaN: "
                                             "pair not requested", "units": "1"})
    return ds


def sweep_pairs(cfg: dict, attention: str) -> list[tuple[int, int]]:
    """Every (P, seed) a validated config trains for one attention type (union over its recipes), sorted:
    the training sets the workflow evaluates the same-dataset theory on."""
    return sorted({(P, seed) for att, _, P, seed in runs(cfg) if att == attention})
