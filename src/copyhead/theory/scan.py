"""The scan driver: minimisers, local minima and posterior means of an action model on a P grid, and its
transitions (docs/theory.md, Sec. 5).

``scan`` gives, for each P, the global minimiser (grid argmin refined by a shrinking pattern search), the
local minima and the posterior mean over exp(-S) (Eq. (18)); ``analyse`` turns a scan into transition
points with ``transitions.classify``, refining at any P where the model allows, and follows the branch of
a weak first-order jump off the origin (Eq. (19b)). Works on any ``models.ActionModel``.
"""
from __future__ import annotations

import numpy as np
from scipy.ndimage import minimum_filter

from . import transitions as tr
from .models import ActionModel


def argmin_refined(model: ActionModel, P, S, iters=4, dataset=None, start=None):
    """Global minimiser of S (the grid values ``S`` at P) refined by a shrinking pattern search: returns
    (x, S(x)); ``dataset`` = d uses the evidence of dataset d alone; ``start`` (a grid index, e.g. of a
    local minimum) refines the minimum there instead of the grid argmin."""
    idx = np.unravel_index(int(np.argmin(S)), S.shape) if start is None else tuple(start)
    x = np.array([ax[i] for ax, i in zip(model.axes, idx)], float)
    step = model.spacing
    offs = np.array(np.meshgrid(*[np.arange(-2, 3)] * model.dim, indexing="ij")).reshape(model.dim, -1).T
    best = float(S[idx])
    for _ in range(iters):
        pts = x[None, :] + step * 0.5 * offs
        f = model.points(P, pts) if dataset is None else model.points_dataset(P, pts, dataset)
        k = int(np.argmin(f))
        if f[k] < best:
            best, x = float(f[k]), pts[k]
        step *= 0.25
    return x, best


def _local_minima(model, S, axes=None, spacing=None):
    axes = model.axes if axes is None else axes
    spacing = model.spacing if spacing is None else spacing
    mask = minimum_filter(S, size=3, mode="nearest") == S
    inner = np.zeros_like(mask)
    inner[tuple(slice(1, -1) for _ in range(S.ndim))] = True
    out = []
    for idx in zip(*np.where(mask & inner)):
        x = model.canon(np.array([ax[i] for ax, i in zip(axes, idx)], float))
        if all(np.linalg.norm(x - y) > 1.5 * spacing for y, _ in out):
            out.append((x, float(S[idx])))
    return out


def drop_origin(model, minima):
    """The local minima (list of (x, S)) without the origin: for a symmetric model whose Hessian at the
    origin is indefinite (a coarse grid stencil can miss a weakly unstable direction)."""
    return [mm for mm in minima if np.linalg.norm(mm[0]) > 0.5 * model.spacing]


def local_minima_near(model, P, x, half=10, n=81):
    """Local minima of S on a fine sub-grid (spacing/4) of ±half grid spacings around x (spinodals)."""
    x = np.asarray(x, float)
    h = half * model.spacing
    axes = [np.linspace(xi - h, xi + h, n) for xi in x]
    X = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    S = model.points(P, X.reshape(-1, model.dim)).reshape(X.shape[:-1])
    return _local_minima(model, S, axes, 2 * h / (n - 1))


def scan(model: ActionModel, P_grid, per_dataset=False, keep=()):
    """Saddle, action minimum, local minima and posterior means on P_grid (Eqs. (16), (18)).

    ``keep``: P values whose S - min S grids are returned in res["landscapes"] (dict P -> array).
    """
    n = len(P_grid)
    res = {"x": np.empty((n, model.dim)), "S_min": np.empty(n), "minima": [], "mean": {}, "landscapes": {},
           "boundary_hits": 0}
    keep = {float(k) for k in keep}
    mask = model.weights_mask()
    fields = model.order_params(np.stack(np.meshgrid(*model.axes, indexing="ij"), axis=-1))
    for k in fields:
        res["mean"][k] = np.empty(n)
    if per_dataset:
        res["x_sd"] = np.empty((n, model.dim))
    for i, P in enumerate(P_grid):
        S = model.grid(P)
        idx = np.unravel_index(int(np.argmin(S)), S.shape)
        if any(j in (0, n_ax - 1) for j, n_ax in zip(idx, S.shape)):
            res["boundary_hits"] += 1
        x, s = argmin_refined(model, P, S)
        res["x"][i], res["S_min"][i] = model.canon(x), s
        if float(P) in keep:
            res["landscapes"][float(P)] = S - S.min()
        res["minima"].append(_local_minima(model, S))
        w = np.exp(-(S - S.min())) * mask
        w = w / w.sum()
        for k, f in fields.items():
            res["mean"][k][i] = np.sum(w * f)
        if per_dataset:
            res["x_sd"][i] = np.nan
            if float(P) in keep:
                xs = [model.canon(argmin_refined(model, P, nle + model.prior_grid, dataset=d)[0])
                      for d, nle in enumerate(model.nle_per_dataset(P))]
                if len(xs) > 1:
                    res["x_sd"][i] = np.std(np.array(xs), axis=0, ddof=1)
    return res


def analyse(model: ActionModel, P_grid, continuous=True, per_dataset=False, keep=()):
    """scan + transitions for one model on one P grid; ``continuous`` allows refinement at any P."""
    P_grid = np.asarray(P_grid, float)
    sc = scan(model, P_grid, per_dataset, keep)
    op = model.order_params(sc["x"])
    kw = {}

    def global_min_at(P):
        return model.canon(argmin_refined(model, P, model.grid(P))[0])

    if continuous:
        kw["global_at"] = global_min_at
        kw["minima_at"] = lambda P, x: local_minima_near(model, P, x)
    if model.symmetric:
        kw["lam_min"] = np.array([model.hess_origin(P)[0][0] for P in P_grid])
        # the origin is a stationary point of an even action: it is a local minimum iff its Hessian is
        # positive definite (a coarse grid stencil can miss a weakly unstable direction)
        for i, lam in enumerate(kw["lam_min"]):
            if lam < 0:
                sc["minima"][i] = drop_origin(model, sc["minima"][i])
        kw["hess_at"] = model.hess_origin if continuous else None
        kw["action_at"] = model.points if continuous else None
        kw["crossover_curves"] = (op["c1"], op["cG"])
        if continuous:
            kw["saddle_at"] = global_min_at
    tr_res = tr.classify(P_grid, sc["x"], sc["minima"], model.spacing, **kw)
    if continuous and model.symmetric and np.isfinite(tr_res["P_onset"]):
        _weak_first_order(model, tr_res)
    if model.symmetric and not continuous and np.isfinite(tr_res["P_onset"]):
        # direction from the Hessian at the nearest grid P past the onset (exact average: integer P)
        k = int(np.searchsorted(P_grid, tr_res["P_onset"]))
        v = model.hess_origin(P_grid[min(k, len(P_grid) - 1)])[1][:, 0]
        v = v / np.linalg.norm(v) * (1 if v[0] >= 0 else -1)
        tr_res["onset_direction"] = [float(v[0]), float(v[1])]
        for t in tr_res["transitions"]:
            if t["kind"] == "onset":
                t["details"]["unstable_direction_c1_cG"] = tr_res["onset_direction"]
    return sc, op, tr_res


def _branch_min(model, P, x0, scale):
    """Local minimum of S(., P) reached by Nelder-Mead from x0 (simplex of size scale)."""
    from scipy.optimize import minimize
    x0 = np.asarray(x0, float)
    simplex = np.array([x0, x0 + [scale, 0.0], x0 + [0.0, scale]])
    r = minimize(lambda x: float(model.points(P, x[None, :])[0]), x0, method="Nelder-Mead",
                 options={"initial_simplex": simplex, "xatol": 1e-4 * scale, "fatol": 1e-12, "maxiter": 4000})
    return model.canon(r.x), float(r.fun)


def _weak_first_order(model, tr_res):
    """A negative Landau quartic (Eq. (19b)) means the minimiser jumps off the origin just before the
    onset P_c. Follow the non-zero branch downward from P_c with warm-started Nelder-Mead (independent of
    the grid): P* is where its action crosses S(0) (Eq. (21)), the lower spinodal where it collapses onto
    the origin; the origin branch ends exactly at P_c (upper spinodal)."""
    Pc = tr_res["P_onset"]
    onset = [t for t in tr_res["transitions"] if t["kind"] == "onset"][0]
    if not onset["classification"].startswith("first-order"):
        return
    v = np.asarray(tr_res["onset_direction"], float)
    h = model.spacing
    zero = np.zeros((1, 2))
    cands = [_branch_min(model, Pc, t * v, 0.5 * h) for t in (0.5 * h, h, 2 * h, 4 * h, 8 * h)]
    cands = [c for c in cands if np.linalg.norm(c[0]) > 0.05 * h]
    if not cands:
        return
    x, _ = min(cands, key=lambda c: c[1])
    norm_c = np.linalg.norm(x)
    prev = (Pc, x, _branch_min(model, Pc, x, 0.1 * h)[1] - float(model.points(Pc, zero)[0]))
    Pstar, Plow = np.nan, np.nan
    for P in Pc * (1 - 0.002 * np.arange(1, 201)):
        xb, sb = _branch_min(model, P, prev[1], 0.1 * max(np.linalg.norm(prev[1]), 0.05 * h))
        if np.linalg.norm(xb) < 0.2 * norm_c:       # collapsed onto the origin: branch gone
            Plow = 0.5 * (P + prev[0])
            break
        gap = sb - float(model.points(P, zero)[0])
        if np.isnan(Pstar) and prev[2] < 0 <= gap:
            Pstar = prev[0] + (P - prev[0]) * (-prev[2]) / (gap - prev[2])
        prev = (P, xb, gap)
    if np.isnan(Pstar):
        return
    tr_res["transitions"] = [t for t in tr_res["transitions"]
                             if not (t["kind"] == "first_order" and 0.7 * Pc <= t["P"] <= 1.001 * Pc)]
    tr_res["transitions"].append({
        "kind": "first_order", "P": float(Pstar), "classification": "first-order",
        "details": {"P_spinodal_low": float(Plow), "P_spinodal_high": float(Pc),
                    "order_parameters_before": [0.0, 0.0], "order_parameters_after": x.tolist(),
                    "rule": "global minimum switches between coexisting local minima (Eq. 21)",
                    "note": "weak first-order jump off the origin just before the Hessian instability "
                            "P_onset (negative Landau quartic, Eq. 19b); branch followed by Nelder-Mead"}})
    tr_res["transitions"].sort(key=lambda t: t["P"])
    others = [t for t in tr_res["transitions"] if t["kind"] == "first_order"]
    if others and others[0]["P"] == Pstar:
        tr_res["P_star"], tr_res["P_spinodal_low"], tr_res["P_spinodal_high"] = float(Pstar), float(Plow), float(Pc)


def landscape(model: ActionModel, P_list):
    """S - min S on the model's grid at each P (shape (len(P_list), *grid))."""
    out = []
    for P in P_list:
        S = model.grid(P)
        out.append(S - S.min())
    return np.array(out)
