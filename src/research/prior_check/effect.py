"""What the checked prior does to the transitions (docs/theory.md, Sec. 12.3; rendered on docs/prior_check.md).

The closed-form action (Eq. (16)) with the large-deviation rate of Eq. (9) replaced by the exact −ln
density of the projection (x, mP) of QᵀK/d_k (a product of two variance-gamma densities,
``sampling.log_vg``): the softmax P* and the linear crossover with either prior, and the copy fraction
cG²/(c1² + cG²) of the predicted linear copy state, which a rank-≤ d_k score matrix can reach only if it
is at most d_k/(L − 1) (``rank_bound``; Tr(Π⊥ M) ≤ √rank ‖M‖_F). :func:`compute_check` gathers the
prior check of docs/prior_check.md; ``python -m research prior-check --out FILE`` writes it
(:func:`research.prior_check.output.write_check`).
"""
from __future__ import annotations

import time

import numpy as np
import xarray as xr

from copyhead.config import ActionParams
from copyhead.theory.action import closed_form_nle, softmax_coeffs
from copyhead.theory.models import LinearModel, SoftmaxModel
from copyhead.theory.phase_map import softmax_copy_point
from copyhead.theory.prior import phi
from copyhead.theory.ranges import beta_range, linear_range
from copyhead.theory.scan import analyse, argmin_refined

from .sampling import coverage, log_vg, projection_density, rank_samples, rates, kl_to_exact


def exact_rate(n_products, c=1.0, lam_max=6.0, n_grid=1201):
    """λ ↦ −ln p(λ) (zero at λ = 0) of the mean λ of n products of N(0, c) pairs, tabulated once and
    interpolated: the exact counterpart of n φ(λ) (Eq. (7))."""
    grid = np.linspace(-lam_max, lam_max, n_grid)
    vals = -log_vg(n_products * grid / np.sqrt(c), n_products)
    vals = vals - vals[n_grid // 2]
    return lambda lam: np.interp(np.asarray(lam, float), grid, vals)


class SoftmaxVariant(SoftmaxModel):
    """Closed-form softmax action (Eqs. (12), (14)) with the prior of β replaced by ``prior_fn(β)``."""

    def __init__(self, p, grid_n, lo, hi, prior_fn):
        self._prior_fn = prior_fn
        super().__init__(p, grid_n, lo, hi)

    def prior(self, beta):
        return self._prior_fn(beta)

    def points(self, P, x):
        b = np.asarray(x, float)[..., 0]
        p = self.p
        return closed_form_nle(*softmax_coeffs(b, p.L), P, p.V, p.L, p.g_O, p.sigma2) + self.prior(b)

    def grid(self, P):
        return self.points(P, self.axes[0][:, None])


class LinearVariant(LinearModel):
    """Closed-form linear action (Eq. (12)) with the prior of (m1, mP) replaced by ``prior_fn(m1, mP)``."""

    def __init__(self, p, grid_n, R, prior_fn):
        self._prior_fn = prior_fn
        super().__init__(p, grid_n, R)

    def prior(self, m1, mP):
        return self._prior_fn(m1, mP)


def rank_bound(L, d_k):
    """Largest copy fraction Tr(Π⊥M)²/((L−1)‖M‖²_F) of a rank-≤ d_k L×L matrix, Π⊥ = I − J/L."""
    return min(1.0, d_k / (L - 1))


def effects(p: ActionParams, grid_n=81, n_P=80):
    """Softmax P* and linear crossover at p with the large-deviation prior (Eq. (9)) and with the exact
    projection prior, and the copy fraction cG²/(c1² + cG²) of the large-deviation linear saddle at twice
    its crossover; dict of floats (NaN: no such transition). Grids: P log-spaced on [0.3, 3]× the
    transition, continuous=False (grid interpolation, ~1 % in P)."""
    p = p.replace(prior="large_deviation")
    c = p.g_Q * p.g_K
    out = {}
    lo, hi = beta_range(p, 40 * p.sigma2 * p.V)
    models = {"ld": lambda b: (p.L - 1) * p.d_k * phi(b, c),
              "exact_prior": exact_rate(p.d_k * (p.L - 1), c)}
    base = analyse(SoftmaxVariant(p, grid_n, lo, hi, models["ld"]), _P(p, n_P), continuous=False)[2]["P_star"]
    if not np.isfinite(base):   # smooth crossover: locate it by the fastest growth of âG
        P0 = _P(p, n_P)
        base = softmax_copy_point(analyse(SoftmaxVariant(p, grid_n, lo, hi, models["ld"]), P0, continuous=False)[1],
                                  P0, p.L)
    P = np.geomspace(0.3 * base, 3 * base, n_P)
    for key, fn in models.items():
        _, op, tr = analyse(SoftmaxVariant(p, grid_n, lo, hi, fn), P, continuous=False)
        jump = np.isfinite(tr["P_star"])
        out[f"P_copy_{key}"] = float(tr["P_star"] if jump else softmax_copy_point(op, P, p.L))
        out[f"softmax_jump_{key}"] = float(jump)
    R = linear_range(p, 40 * p.sigma2 * p.V)
    r_x, r_p = exact_rate(p.d_k, c), exact_rate(p.d_k * (p.L - 1), c)
    models = {"ld": lambda m1, mP: p.d_k * (phi(p.L * np.asarray(m1) + mP, c) + (p.L - 1) * phi(mP, c)),
              "exact_prior": lambda m1, mP: r_x(p.L * np.asarray(m1) + mP) + r_p(mP)}
    base = analyse(LinearVariant(p, grid_n, R, models["ld"]), _P(p, n_P), continuous=False)[2]["P_crossover"]
    P = np.geomspace(0.3 * base, 3 * base, n_P)
    for key, fn in models.items():
        model = LinearVariant(p, grid_n, R, fn)
        out[f"P_crossover_{key}"] = float(analyse(model, P, continuous=False)[2]["P_crossover"])
    model = LinearVariant(p, grid_n, R, models["ld"])
    x = model.canon(argmin_refined(model, 2 * base, model.grid(2 * base))[0])
    out["copy_fraction_linear"] = float(x[1] ** 2 / (x @ x))
    out["rank_bound"] = rank_bound(p.L, p.d_k)
    return out


def _P(p, n_P):
    """A wide first P grid (sequences) for locating the transition: [0.05, 20 max(1, d_k/L)] σ² V."""
    return np.geomspace(0.05 * p.sigma2 * p.V, 20 * p.sigma2 * p.V * max(1.0, p.d_k / p.L), 2 * n_P)


# the check's parameters: L = V = 16, d_k below, at and above L
SETTINGS = {"L": 16, "V": 16, "d_k": [4, 8, 16, 32, 64], "sigma2": 0.1, "t": [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0],
            "beta": [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0], "n_mc": 10000, "n_cov": 400, "seed": 0}
LINES = {"copy": lambda t: (t, t), "pool": lambda t: (t, 0 * t)}   # (x, mP) along m1 = 0 and along mP = 0


def compute_check(s=SETTINGS, log=print):
    """The prior check as an xarray Dataset: −ln p along the two lines (sampled, large-deviation,
    Gaussian, exact; each minus its value at the origin), KL of the formulas to the exact density, the
    in-plane fraction of draws at the copy point, and ``effects`` per d_k."""
    t0 = time.perf_counter()
    L, t = s["L"], np.asarray(s["t"], float)
    rng = np.random.default_rng(s["seed"])
    kinds = ("mc", "large_deviation", "gaussian", "exact")
    rate = {k: np.full((len(s["d_k"]), len(LINES), len(t)), np.nan) for k in kinds + ("mc_se",)}
    cov = np.full((len(s["d_k"]), len(s["beta"])), np.nan)
    eff = {}
    for i, dk in enumerate(s["d_k"]):
        origin = rates(np.zeros((1, 2)), L, dk)
        mc0, _ = projection_density(np.zeros((1, 2)), L, dk, s["n_mc"], rng)
        for j, fn in enumerate(LINES.values()):
            pts = np.stack(fn(t), axis=1)
            mc, se = projection_density(pts, L, dk, s["n_mc"], rng)
            rate["mc"][i, j], rate["mc_se"][i, j] = mc - mc0[0], se
            for k, v in rates(pts, L, dk).items():
                rate[k][i, j] = v - origin[k][0]
        for j, b in enumerate(s["beta"]):
            cov[i, j] = coverage(rank_samples(b, b, L, dk, s["n_cov"], rng)[0]).mean()
        p = ActionParams(V=s["V"], L=L, d_k=dk, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=s["sigma2"],
                         prior="large_deviation")
        for k, v in effects(p).items():
            eff.setdefault(k, []).append(v)
        log(f"prior check: d_k = {dk} done ({time.perf_counter() - t0:.0f} s)")
    dims = ("d_k", "line", "t")
    ds = xr.Dataset({f"rate_{k}": (dims, v, {"long_name": f"-ln p(x, mP) minus its value at the origin ({k})"
                                              if k != "mc_se" else "standard error of rate_mc", "units": "1"})
                     for k, v in rate.items()},
                    coords={"d_k": s["d_k"], "line": list(LINES), "t": t, "beta": np.asarray(s["beta"], float)})
    ds["coverage_M"] = (("d_k", "beta"), cov, {"long_name": "mean ||Pi M||^2/||M||^2 of draws of M at "
                                                             "(m1, mP) = (0, beta)", "units": "1"})
    for prior in ("large_deviation", "gaussian"):
        ds[f"KL_{prior}"] = ("d_k", [kl_to_exact(L, dk, prior) for dk in s["d_k"]],
                             {"long_name": f"KL(exact || {prior} formula) of the projection density", "units": "nat"})
    for k, v in eff.items():
        ds[k] = ("d_k", np.asarray(v, float), {"units": "sequences" if k.startswith("P_") else "1"})
    ds.attrs.update({"L": L, "V": s["V"], "sigma2": s["sigma2"], "compute_seconds": time.perf_counter() - t0})
    return ds
