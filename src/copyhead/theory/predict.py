"""Predictions on a P grid, landscapes and scaling (docs/theory.md, Sec. 5 and 6).

An *action model* bundles one action (linear or softmax; closed form or exact dataset average) with its
order-parameter grid: ``grid(P)`` evaluates S on the whole grid, ``points(P, x)`` anywhere. ``scan`` gives
the global minimiser (grid argmin refined by a shrinking pattern search), the local minima and the
posterior mean over exp(-S) (Eq. (18)); ``transitions.classify`` turns a scan into transition points.
"""
from __future__ import annotations

import numpy as np
from scipy.ndimage import minimum_filter

from . import transitions as tr
from .action import (ExactAverage, _cf_from_invariants, action_softmax, coeffs_to_order, order_to_coeffs,
                     softmax_coeffs)
from .prior import neg_log_prior_family, neg_log_prior_softmax


def params_from_config(theory_cfg: dict, prior: str | None = None) -> dict:
    """Flat parameter dict used by every theory function, from ``config.theory_config(cfg)``."""
    t, m, th = theory_cfg["task"], theory_cfg["model"], theory_cfg["theory"]
    return {"V": int(t["V"]), "L": int(t["L"]), "d_k": float(m["d_k"]), "g_Q": float(m["g_Q"]),
            "g_K": float(m["g_K"]), "g_O": float(m["g_O"]), "sigma2": float(m["sigma2"]),
            "prior": prior or th.get("prior", "large_deviation")}


# ============================================================================= action models
class LinearModel:
    """Linear attention on the square grid (c1, cG) ∈ [-R, R]² (grid_n points per axis)."""
    dim = 2
    symmetric = True

    def __init__(self, p, grid_n, R, exact: ExactAverage | None = None, centred=False):
        self.p, self.exact, self.centred = p, exact, centred
        self.axes = (np.linspace(-R, R, grid_n), np.linspace(-R, R, grid_n))
        self.spacing = 2 * R / (grid_n - 1)
        C1, CG = np.meshgrid(*self.axes, indexing="ij")
        self._m = order_to_coeffs(C1, CG, p["L"])
        self._prior = self.prior(*self._m)
        self._inv = self._invariants(*self._m)

    def prior(self, m1, mP):
        p = self.p
        return neg_log_prior_family(m1, mP, p["L"], p["d_k"], p["g_Q"], p["g_K"], p["prior"])

    def _invariants(self, m1, mP):
        V, L = self.p["V"], self.p["L"]
        s = m1 + mP
        return ((s**2 + (L - 1) * m1**2) / (V * L**2), s / (V * L), mP**2 / L**3,
                (m1 + mP / L) ** 2 * (1.0 / V + 1.0 / L))

    def coeffs(self, x):
        x = np.asarray(x, float)
        return order_to_coeffs(x[..., 0], x[..., 1], self.p["L"])

    def nle_per_dataset(self, P):
        return np.transpose(self.exact.nle_grid(P, self.axes[0], self.axes[1]), (0, 2, 1))

    def grid(self, P):
        p = self.p
        if self.exact is None:
            return _cf_from_invariants(*self._inv, P * p["L"], p["V"], p["L"], p["g_O"], p["sigma2"],
                                       self.centred) + self._prior
        return self.nle_per_dataset(P).mean(0) + self._prior

    def points(self, P, x):
        m1, mP = self.coeffs(x)
        p = self.p
        if self.exact is None:
            nle = _cf_from_invariants(*self._invariants(m1, mP), P * p["L"], p["V"], p["L"], p["g_O"],
                                      p["sigma2"], self.centred)
        else:
            nle = self.exact.nle_points(P, m1, mP).mean(0)
        return nle + self.prior(m1, mP)

    def points_dataset(self, P, x, d):
        m1, mP = self.coeffs(x)
        return self.exact.nle_points(P, m1, mP, d) + self.prior(m1, mP)

    def canon(self, x):
        x = np.asarray(x, float)
        flip = (x[..., 0] < 0) | ((x[..., 0] == 0) & (x[..., 1] < 0))
        return np.where(flip[..., None], -x, x)

    def weights_mask(self):
        c1 = self.axes[0]
        w = np.where(c1 > 0, 1.0, np.where(c1 == 0, 0.5, 0.0))
        return np.broadcast_to(w[:, None], (len(c1), len(self.axes[1])))

    def hess_origin(self, P, h=None):
        return hess_origin(self, P, h)


class SoftmaxModel:
    """Softmax attention on the copy-logit grid β ∈ [β_lo, β_hi] (uniform score is a gauge)."""
    dim = 1
    symmetric = False

    def __init__(self, p, grid_n, beta_lo, beta_hi, exact: ExactAverage | None = None, centred=False):
        self.p, self.exact, self.centred = p, exact, centred
        self.axes = (np.linspace(beta_lo, beta_hi, grid_n),)
        self.spacing = (beta_hi - beta_lo) / (grid_n - 1)
        self._prior = self.prior(self.axes[0])

    def prior(self, beta):
        p = self.p
        return neg_log_prior_softmax(beta, p["L"], p["d_k"], p["g_Q"], p["g_K"], p["prior"])

    def coeffs(self, x):
        return softmax_coeffs(np.asarray(x, float)[..., 0], self.p["L"])

    def nle_per_dataset(self, P):
        return self.exact.nle_beta(P, self.axes[0])

    def grid(self, P):
        if self.exact is None:
            return action_softmax(self.axes[0], P, self.p, self.centred)
        return self.nle_per_dataset(P).mean(0) + self._prior

    def points(self, P, x):
        b = np.asarray(x, float)[..., 0]
        if self.exact is None:
            return action_softmax(b, P, self.p, self.centred)
        return self.exact.nle_beta(P, b.ravel()).mean(0).reshape(b.shape) + self.prior(b)

    def points_dataset(self, P, x, d):
        b = np.asarray(x, float)[..., 0]
        return self.exact.nle_beta(P, b.ravel(), d).reshape(b.shape) + self.prior(b)

    def canon(self, x):
        return np.asarray(x, float)

    def weights_mask(self):
        return np.ones(len(self.axes[0]))


def hess_origin(model, P, h=None):
    """Eigen-decomposition of the 2×2 Hessian of S at the origin by central differences (Eq. (19))."""
    h = h or 1e-3 * max(model.spacing, 1e-3)
    e = np.array([[h, 0], [-h, 0], [0, h], [0, -h], [h, h], [h, -h], [-h, h], [-h, -h], [0, 0]])
    f = model.points(P, e)
    H11 = (f[0] - 2 * f[8] + f[1]) / h**2
    H22 = (f[2] - 2 * f[8] + f[3]) / h**2
    H12 = (f[4] - f[5] - f[6] + f[7]) / (4 * h * h)
    return np.linalg.eigh(np.array([[H11, H12], [H12, H22]]))


class FunctionModel:
    """Any action S(x; P) on a grid (1-D, or 2-D with x -> -x symmetry), for classifier checks.

    ``f(P, x)`` takes points x of shape (..., dim). Order-parameter fields are the coordinates themselves.
    """

    def __init__(self, f, axes, symmetric=False):
        self.f, self.axes = f, tuple(np.asarray(a, float) for a in axes)
        self.dim, self.symmetric = len(self.axes), symmetric
        self.spacing = min(float(a[1] - a[0]) for a in self.axes)
        self.p = {"L": 2}

    def grid(self, P):
        return self.f(P, np.stack(np.meshgrid(*self.axes, indexing="ij"), axis=-1))

    def points(self, P, x):
        return self.f(P, np.asarray(x, float))

    def coeffs(self, x):
        x = np.asarray(x, float)   # read x as (c1, cG) (1-D: c1 = cG = x), so scan's c1/cG fields are x
        return order_to_coeffs(x[..., 0], x[..., -1], self.p["L"])

    def canon(self, x):
        x = np.asarray(x, float)
        if not self.symmetric:
            return x
        flip = (x[..., 0] < 0) | ((x[..., 0] == 0) & (x[..., -1] < 0))
        return np.where(flip[..., None], -x, x)

    def weights_mask(self):
        return np.ones(tuple(len(a) for a in self.axes))

    def hess_origin(self, P, h=None):
        return hess_origin(self, P, h)


# ============================================================================= scanning
def _argmin_refined(model, P, S, iters=4, dataset=None):
    idx = np.unravel_index(int(np.argmin(S)), S.shape)
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


def local_minima_near(model, P, x, half=10, n=81):
    """Local minima of S on a fine sub-grid (spacing/4) of ±half grid spacings around x (spinodals)."""
    x = np.asarray(x, float)
    h = half * model.spacing
    axes = [np.linspace(xi - h, xi + h, n) for xi in x]
    X = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    S = model.points(P, X.reshape(-1, model.dim)).reshape(X.shape[:-1])
    return _local_minima(model, S, axes, 2 * h / (n - 1))


def scan(model, P_grid, per_dataset=False, keep=()):
    """Saddle, action minimum, local minima and posterior means on P_grid (Eqs. (16), (18)).

    ``keep``: P values whose S - min S grids are returned in res["landscapes"] (dict P -> array).
    """
    n = len(P_grid)
    res = {"x": np.empty((n, model.dim)), "S_min": np.empty(n), "minima": [], "mean": {}, "landscapes": {},
           "boundary_hits": 0}
    keep = {float(k) for k in keep}
    mask = model.weights_mask()
    mesh = np.meshgrid(*model.axes, indexing="ij")
    X = np.stack(mesh, axis=-1)
    m1g, mPg = model.coeffs(X)
    c1g, cGg = coeffs_to_order(m1g, mPg, model.p["L"])
    fields = {"m1": m1g, "mP": mPg, "c1": c1g, "cG": cGg}
    if model.dim == 1:
        fields["beta"] = mesh[0]
    for k in fields:
        res["mean"][k] = np.empty(n)
    if per_dataset:
        res["x_sd"] = np.empty((n, model.dim))
    for i, P in enumerate(P_grid):
        S = model.grid(P)
        idx = np.unravel_index(int(np.argmin(S)), S.shape)
        if any(j in (0, n_ax - 1) for j, n_ax in zip(idx, S.shape)):
            res["boundary_hits"] += 1
        x, s = _argmin_refined(model, P, S)
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
                xs = [model.canon(_argmin_refined(model, P, nle + model._prior, dataset=d)[0])
                      for d, nle in enumerate(model.nle_per_dataset(P))]
                if len(xs) > 1:
                    res["x_sd"][i] = np.std(np.array(xs), axis=0, ddof=1)
    return res


def order_params_of(model, x):
    """(c1, cG, m1, mP[, beta]) columns of the minimiser positions x (n, dim)."""
    m1, mP = model.coeffs(x)
    c1, cG = coeffs_to_order(m1, mP, model.p["L"])
    out = {"c1": c1, "cG": cG, "m1": m1, "mP": mP}
    if model.dim == 1:
        out["beta"] = np.asarray(x)[..., 0]
    return out


def analyse(model, P_grid, continuous=True, per_dataset=False, keep=()):
    """scan + transitions for one model on one P grid; ``continuous`` allows refinement at any P."""
    P_grid = np.asarray(P_grid, float)
    sc = scan(model, P_grid, per_dataset, keep)
    op = order_params_of(model, sc["x"])
    kw = {}
    if continuous:
        kw["global_at"] = lambda P: model.canon(_argmin_refined(model, P, model.grid(P))[0])
        kw["minima_at"] = lambda P, x: local_minima_near(model, P, x)
    if model.symmetric:
        kw["lam_min"] = np.array([model.hess_origin(P)[0][0] for P in P_grid])
        # the origin is a stationary point of an even action: it is a local minimum iff its Hessian is
        # positive definite (a coarse grid stencil can miss a weakly unstable direction)
        for i, lam in enumerate(kw["lam_min"]):
            if lam < 0:
                sc["minima"][i] = [mm for mm in sc["minima"][i] if np.linalg.norm(mm[0]) > 0.5 * model.spacing]
        kw["hess_at"] = model.hess_origin if continuous else None
        kw["action_at"] = model.points if continuous else None
        kw["crossover_curves"] = (op["c1"], op["cG"])
        if continuous:
            kw["saddle_at"] = lambda P: model.canon(_argmin_refined(model, P, model.grid(P))[0])
    tr_res = tr.classify(P_grid, sc["x"], sc["minima"], model.spacing, **kw)
    if continuous and model.symmetric and np.isfinite(tr_res["P_onset"]):
        _weak_first_order(model, tr_res, kw)
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


def _weak_first_order(model, tr_res, kw):
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


# ============================================================================= grid ranges
def linear_range(p, P_ref, grid_n=81):
    """Half-width R of the (c1, cG) box: 1.4× the largest saddle component at P_ref (Sec. 5)."""
    R = 1.0
    for _ in range(12):
        m = LinearModel(p, grid_n, R)
        x = m.canon(_argmin_refined(m, P_ref, m.grid(P_ref))[0])
        ext = float(np.max(np.abs(x)))
        if ext < 0.7 * R:
            break
        R *= 2
    floor = 4.0 * np.sqrt(p["g_Q"] * p["g_K"] / p["d_k"])
    return max(1.4 * ext, floor, 0.05)


def beta_range(p, P_ref, grid_n=201):
    """(β_lo, β_hi) of the softmax grid: β_hi = 1.4× the saddle at P_ref, at least 3 (Sec. 5)."""
    hi = 4.0
    for _ in range(12):
        m = SoftmaxModel(p, grid_n, -1.0, hi)
        b = float(_argmin_refined(m, P_ref, m.grid(P_ref))[0][0])
        if b < 0.7 * hi:
            break
        hi *= 2
    return -0.5, max(3.0, 1.4 * b)


def make_model(attention, p, grid_n, P_ref, exact=None, centred=False, ranges=None):
    if attention == "linear":
        R = ranges if ranges is not None else linear_range(p, P_ref)
        return LinearModel(p, grid_n, R, exact, centred)
    lo, hi = ranges if ranges is not None else beta_range(p, P_ref)
    return SoftmaxModel(p, grid_n, lo, hi, exact, centred)


def exact_P_grid(P_list, max_points=200):
    """Integer P grid for exact-average transitions: all integers in [min, max] of P_list; when there are
    more than max_points, about max_points log-spaced integers plus every P of P_list (the output reads
    its values at the configured P, so they must be grid points)."""
    lo, hi = int(min(P_list)), int(max(P_list))
    if hi - lo + 1 <= max_points:
        return np.arange(lo, hi + 1, dtype=float)
    return np.union1d(np.round(np.geomspace(lo, hi, max_points)), np.asarray(P_list, int)).astype(float)


# ============================================================================= landscapes, scaling
def auto_landscape_P(attention, tr_res, P_grid):
    """Landscape P values chosen from the transitions (linear: before onset, pooling, copy stage;
    softmax: five values spanning the spinodals through P*), clipped to the P grid."""
    lo, hi = float(np.min(P_grid)), float(np.max(P_grid))
    if attention == "linear":
        Pc, Px = tr_res["P_onset"], tr_res["P_crossover"]
        if np.isfinite(Pc) and np.isfinite(Px):
            vals = [0.6 * Pc, np.sqrt(Pc * Px), 2.0 * Px]
        else:
            vals = list(np.geomspace(lo, hi, 5)[1:4])
    else:
        a, s, b = tr_res["P_spinodal_low"], tr_res["P_star"], tr_res["P_spinodal_high"]
        if np.isfinite(s):
            a = a if np.isfinite(a) else 0.9 * s
            b = b if np.isfinite(b) else 1.1 * s
            vals = [0.95 * a, 0.5 * (a + s), s, 0.5 * (s + b), 1.05 * b]
        else:
            vals = list(np.geomspace(lo, hi, 7)[1:6])
    return sorted({float(np.clip(round(v, 3), lo, hi)) for v in vals})


def landscape(model, P_list):
    """S - min S on the model's grid at each P (shape (len(P_list), *grid))."""
    out = []
    for P in P_list:
        S = model.grid(P)
        out.append(S - S.min())
    return np.array(out)


def closed_form_transitions(attention, p, grid_n=161, n_P=120):
    """Transition points of the closed-form action for one parameter set, with an automatic P range
    (used by ``scaling``): [P_c/8, 40 P_c] around the linear Hessian instability P_c (Eq. (19));
    returns ``transitions.classify``'s dict."""
    lin = LinearModel(p, 41, 1.0)
    Ps = np.geomspace(1e-3, 1e7, 101) * p["sigma2"]
    vals = np.array([lin.hess_origin(P)[0][0] for P in Ps])
    k = np.where((vals[:-1] > 0) & (vals[1:] <= 0))[0]
    Pc = Ps[k[0] + 1] if len(k) else 100.0 * p["sigma2"]
    P_grid = np.geomspace(Pc / 8, Pc * 40, n_P)
    model = make_model(attention, p, grid_n, P_grid[-1])
    return analyse(model, P_grid)[2]


def scaling(p, attention, L=(), V=(), d_k=(), grid_n=161, n_P=120):
    """Transition points of one attention type vs L, V and d_k (one varied at a time, others from p).

    Returns {name: {"values", "P_onset", "P_crossover", "P_fastest_growth", "P_star", "P_spinodal_low",
    "P_spinodal_high"}} (lists, NaN where not applicable), closed-form action (Sec. 6).
    """
    keys = ("P_onset", "P_crossover", "P_fastest_growth", "P_star", "P_spinodal_low", "P_spinodal_high")
    out = {}
    for name, vals in (("L", L), ("V", V), ("d_k", d_k)):
        if not len(vals):
            continue
        rows = {"values": [float(v) for v in vals], **{k: [] for k in keys}}
        for v in vals:
            q = dict(p, **{name: (int(v) if name != "d_k" else float(v))})
            res = closed_form_transitions(attention, q, grid_n, n_P)
            for k in keys:
                rows[k].append(float(res[k]))
        out[name] = rows
    return out
