"""The theory at the runs' P: each theory curve (closed form, dataset-averaged exact action, each run's own
training set; minimiser or posterior mean) with its error, and the theory's transition points.

Theory curves: key -> (label, source, kind). ``source``: closed_form (Eq. 12, dense P grid), exact_avg
(dataset-averaged exact action, Eq. 17, on P_exact), same_dataset (each run's own training set, per
(P, seed)); ``kind``: saddle (global minimiser of S: what MAP/Adam estimates) or mean (posterior mean,
Eq. 18: what an SGLD chain's sample mean estimates).
"""
from __future__ import annotations

import json

import numpy as np

from .experiments import order_parameters, sequence_length

CURVES = {
    "closed_saddle": ("closed form, minimiser", "closed_form", "saddle"),
    "closed_mean": ("closed form, posterior mean", "closed_form", "mean"),
    "exact_saddle": ("exact avg. action, minimiser", "exact_avg", "saddle"),
    "exact_mean": ("exact avg. action, posterior mean", "exact_avg", "mean"),
    "same_saddle": ("same dataset, minimiser", "same_dataset", "saddle"),
    "same_mean": ("same dataset, posterior mean", "same_dataset", "mean"),
}


def interp_log_P(P, P_grid, y_grid) -> np.ndarray:
    """A theory curve y(P_grid) at the points P, linear in log P; NaN outside the grid or where y is NaN."""
    P_grid, y_grid = np.asarray(P_grid, float), np.asarray(y_grid, float)
    ok = np.isfinite(P_grid) & np.isfinite(y_grid) & (P_grid > 0)
    order = np.argsort(P_grid[ok])
    xg, yg = np.log(P_grid[ok][order]), y_grid[ok][order]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(np.asarray(P, float))
    if len(xg) == 0:
        return np.full(np.shape(x), np.nan)
    return np.interp(x, xg, yg, left=np.nan, right=np.nan)


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


def _grid_err(ds, attention: str, L: int, suffix: str) -> dict | None:
    """The file's recorded grid error of the plotted pair (``<k><suffix>_grid_err``: |value − value on a finer
    grid|, copyhead.theory.output), read like the values themselves; None for files without it."""
    try:
        return {k: v for k, v in order_parameters(ds, attention, L, f"{suffix}_grid_err").items()}
    except KeyError:
        return None


def curve_values(curve: str, attention: str, th, same, P, seeds, L: int | None = None,
                 grid_only: bool = False) -> tuple[dict, dict] | None:
    """Theory curve ``curve`` (a key of CURVES) at the runs' P (and seeds): ({key: (n_P, n_seeds)},
    {key: (n_P, n_seeds)} theory error), or None when the inputs do not have it. Closed form: interpolated
    in log P on the dense grid. Exact average: only at P of its own grid (no interpolation across a jump);
    its error is the sd over the averaged datasets of the per-dataset minimiser divided by √n_datasets (the
    only dataset spread the theory file stores; used for the minimiser and the mean). Same dataset: the
    value of each (P, seed). Every error includes (in quadrature) the file's numerical resolution
    (:func:`theory_resolution`), so a run sitting exactly on a theory value (e.g. Adam at A = 0) does not get
    an infinite z, and the file's recorded grid error (the value's change on a finer grid) where it has one.
    ``grid_only``: the errors are the grid errors alone (0 where the file records none).
    ``L``: the sequence length (default: from the theory's config)."""
    label, source, kind = CURVES[curve]
    P = np.asarray(P, float)
    seeds = np.asarray(seeds, int)
    shape = (len(P), len(seeds))
    if source == "closed_form":
        if th is None or f"c1_{kind}" not in th:
            return None
        L = L or sequence_length(th)
        vals = {k: np.broadcast_to(interp_log_P(P, th["P"].values, v.values)[:, None], shape)
                for k, v in order_parameters(th, attention, L, f"_{kind}").items()}
        ge = _grid_err(th, attention, L, f"_{kind}") or {}
        grid = {k: np.broadcast_to(interp_log_P(P, th["P"].values, ge[k].values)[:, None], shape) if k in ge
                else np.zeros(shape) for k in vals}
        return vals, _errors(grid, theory_resolution(th, attention, L), grid_only)
    if source == "exact_avg":
        if th is None or "P_exact" not in th.coords or f"c1_{kind}_exact" not in th:
            return None
        L = L or sequence_length(th)
        Pe = th["P_exact"].values.astype(float)
        idx = [int(np.flatnonzero(np.isclose(Pe, p))[0]) if np.isclose(Pe, p).any() else -1 for p in P]

        def at(v):
            v = np.asarray(v, float)
            return np.broadcast_to(np.array([v[i] if i >= 0 else np.nan for i in idx])[:, None], shape)

        vals = {k: at(v.values) for k, v in order_parameters(th, attention, L, f"_{kind}_exact").items()}
        n = float(th.attrs.get("exact_n_datasets", 0) or 0)
        sd_names = {"c1": "c1", "cG": "cG", "a1": "m1", "aG": "mP"}
        errs = {}
        ge = _grid_err(th, attention, L, f"_{kind}_exact") or {}
        grid = {k: at(ge[k].values) if k in ge else np.zeros(shape) for k in vals}
        if grid_only:
            return vals, grid
        res = theory_resolution(th, attention, L)
        for k in vals:
            name = f"{sd_names[k]}_saddle_exact_sd"
            if name in th and n > 1:
                sd = np.asarray(th[name].values, float) / (L if k == "aG" else 1.0)
                errs[k] = np.hypot(np.hypot(at(sd / np.sqrt(n)), res), grid[k])
            else:
                errs[k] = np.hypot(np.full(shape, res), grid[k])
        return vals, errs
    # same dataset
    if same is None or f"c1_{kind}_same" not in same:
        return None
    L = L or sequence_length(same, th)
    Ps, ss = same["P"].values.astype(float), same["seed"].values.astype(int)

    def at(v):
        v = np.asarray(v.transpose("P", "seed").values, float)
        out = np.full(shape, np.nan)
        for i, p in enumerate(P):
            ii = np.flatnonzero(np.isclose(Ps, p))
            for j, s in enumerate(seeds):
                jj = np.flatnonzero(ss == s)
                if len(ii) and len(jj):
                    out[i, j] = v[ii[0], jj[0]]
        return out

    vals = {k: at(v) for k, v in order_parameters(same, attention, L, f"_{kind}_same").items()}
    ge = _grid_err(same, attention, L, f"_{kind}_same") or {}
    grid = {k: np.nan_to_num(at(ge[k])) if k in ge else np.zeros(shape) for k in vals}
    return vals, _errors(grid, theory_resolution(same, attention, L), grid_only)


def _errors(grid: dict, resolution: float, grid_only: bool) -> dict:
    """The theory's error per key: the grid error alone, or with the resolution in quadrature."""
    return {k: g if grid_only else np.hypot(g, resolution) for k, g in grid.items()}


def seed_mean_curve(curve: str, attention: str, th, same, P, seeds, key: str):
    """The mean over seeds of theory curve ``curve`` at the runs' P (what an estimator on the seed means
    of the runs is compared with); None when the inputs do not have the curve."""
    cv = curve_values(curve, attention, th, same, P, seeds)
    if cv is None:
        return None
    with np.errstate(invalid="ignore"):
        y = cv[0][key]
        n = np.isfinite(y).sum(axis=1)
        return np.where(n > 0, np.nansum(np.where(np.isfinite(y), y, 0), axis=1) / np.maximum(n, 1), np.nan)
