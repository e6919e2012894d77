"""Action models: one action S on its order-parameter grid (docs/theory.md, Sec. 4-5).

An action model bundles one action (linear or softmax attention; closed form, or exactly averaged over
sampled datasets) with its grid: ``grid(P)`` evaluates S on the whole grid, ``points(P, x)`` anywhere.
``ActionModel`` is the protocol the scan driver (``scan``) and the grid ranges (``ranges``) rely on;
``LinearModel`` and ``SoftmaxModel`` implement it.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from copyhead.config import ActionParams

from .action import (ExactAverage, closed_form_invariants, closed_form_nle_of_invariants, action_softmax,
                     coeffs_to_order, order_to_coeffs, softmax_coeffs)
from .prior import neg_log_prior_family, neg_log_prior_softmax


class ActionModel(Protocol):
    """S(x; P) on a grid of order parameters x (shape (..., dim)).

    ``symmetric`` models (S(-x) = S(x), 2-D) also give ``hess_origin``; models of the exact dataset
    average give ``prior_grid``, ``nle_per_dataset`` and ``points_dataset`` (for ``scan(per_dataset=True)``).
    """
    dim: int
    symmetric: bool
    axes: tuple[np.ndarray, ...]
    spacing: float                       # smallest grid step

    def grid(self, P) -> np.ndarray:
        """S on the whole grid (shape of the meshgrid of ``axes``)."""

    def points(self, P, x) -> np.ndarray:
        """S at points x (..., dim)."""

    def order_params(self, x) -> dict:
        """{"c1", "cG", "m1", "mP"[, "beta"]} at points x (..., dim)."""

    def canon(self, x) -> np.ndarray:
        """The canonical representative of x under the model's symmetry."""

    def weights_mask(self) -> np.ndarray:
        """Weights of the grid points in the posterior mean (Eq. (18)): the gauge half-plane if symmetric."""

    def hess_origin(self, P, h=None):
        """(eigenvalues, eigenvectors) of the Hessian of S at the origin (symmetric models)."""

    prior_grid: np.ndarray               # -ln p(m) on the grid (exact models)

    def nle_per_dataset(self, P) -> np.ndarray:
        """-ln p(Y|m) per dataset on the grid, shape (n_datasets, *grid) (exact models)."""

    def points_dataset(self, P, x, d) -> np.ndarray:
        """S at points x with the evidence of dataset d alone (exact models)."""


def canon_even(x):
    """Representative of {x, -x} with first component > 0 (or = 0 and last component >= 0)."""
    x = np.asarray(x, float)
    flip = (x[..., 0] < 0) | ((x[..., 0] == 0) & (x[..., -1] < 0))
    return np.where(flip[..., None], -x, x)


def _order_fields(m1, mP, L) -> dict:
    c1, cG = coeffs_to_order(m1, mP, L)
    return {"c1": c1, "cG": cG, "m1": m1, "mP": mP}


class LinearModel:
    """Linear attention on the square grid (c1, cG) ∈ [-R, R]² (grid_n points per axis)."""
    dim = 2
    symmetric = True

    def __init__(self, p: ActionParams, grid_n, R, exact: ExactAverage | None = None, centred=False):
        self.p, self.exact, self.centred = p, exact, centred
        self.axes = (np.linspace(-R, R, grid_n), np.linspace(-R, R, grid_n))
        self.spacing = 2 * R / (grid_n - 1)
        C1, CG = np.meshgrid(*self.axes, indexing="ij")
        self._m = order_to_coeffs(C1, CG, p.L)
        self.prior_grid = self.prior(*self._m)
        self._inv = closed_form_invariants(*self._m, p.V, p.L)

    def prior(self, m1, mP):
        p = self.p
        return neg_log_prior_family(m1, mP, p.L, p.d_k, p.g_Q, p.g_K, p.prior)

    def _closed_form(self, invariants, P):
        p = self.p
        return closed_form_nle_of_invariants(invariants, P * p.L, p.V, p.L, p.g_O, p.sigma2, self.centred)

    def coeffs(self, x):
        x = np.asarray(x, float)
        return order_to_coeffs(x[..., 0], x[..., 1], self.p.L)

    def order_params(self, x):
        return _order_fields(*self.coeffs(x), self.p.L)

    def order_params_sd(self, x, x_sd):
        """sd of the order parameters from the sd (n, 2) of per-dataset minimisers x (propagated linearly)."""
        L = self.p.L
        c1s, cGs = x_sd[:, 0], x_sd[:, 1]
        mPs = cGs * L / np.sqrt(L - 1.0)
        return {"c1": c1s, "cG": cGs, "mP": mPs, "m1": np.sqrt(c1s**2 + (mPs / L) ** 2)}

    def nle_per_dataset(self, P):
        return np.transpose(self.exact.nle_grid(P, self.axes[0], self.axes[1]), (0, 2, 1))

    def grid(self, P):
        if self.exact is None:
            return self._closed_form(self._inv, P) + self.prior_grid
        return self.nle_per_dataset(P).mean(0) + self.prior_grid

    def points(self, P, x):
        m1, mP = self.coeffs(x)
        if self.exact is None:
            nle = self._closed_form(closed_form_invariants(m1, mP, self.p.V, self.p.L), P)
        else:
            nle = self.exact.nle_points(P, m1, mP).mean(0)
        return nle + self.prior(m1, mP)

    def points_dataset(self, P, x, d):
        m1, mP = self.coeffs(x)
        return self.exact.nle_points(P, m1, mP, d) + self.prior(m1, mP)

    def canon(self, x):
        return canon_even(x)

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

    def __init__(self, p: ActionParams, grid_n, beta_lo, beta_hi, exact: ExactAverage | None = None,
                 centred=False):
        self.p, self.exact, self.centred = p, exact, centred
        self.axes = (np.linspace(beta_lo, beta_hi, grid_n),)
        self.spacing = (beta_hi - beta_lo) / (grid_n - 1)
        self.prior_grid = self.prior(self.axes[0])

    def prior(self, beta):
        p = self.p
        return neg_log_prior_softmax(beta, p.L, p.d_k, p.g_Q, p.g_K, p.prior)

    def coeffs(self, x):
        return softmax_coeffs(np.asarray(x, float)[..., 0], self.p.L)

    def order_params(self, x):
        return dict(_order_fields(*self.coeffs(x), self.p.L), beta=np.asarray(x)[..., 0])

    def order_params_sd(self, x, x_sd):
        """sd of the order parameters from the sd (n, 1) of per-dataset minimisers β (propagated linearly)."""
        L = self.p.L
        b, bs = np.asarray(x)[:, 0], x_sd[:, 0]
        h = 1e-5
        m1p, mPp = softmax_coeffs(b + h, L)
        m1m, mPm = softmax_coeffs(b - h, L)
        dm1, dmP = (m1p - m1m) / (2 * h), (mPp - mPm) / (2 * h)
        return {"beta": bs, "m1": np.abs(dm1) * bs, "mP": np.abs(dmP) * bs, "c1": 0 * bs,
                "cG": np.abs(dmP) * np.sqrt(L - 1.0) / L * bs}

    def nle_per_dataset(self, P):
        return self.exact.nle_beta(P, self.axes[0])

    def grid(self, P):
        if self.exact is None:
            return action_softmax(self.axes[0], P, self.p, self.centred)
        return self.nle_per_dataset(P).mean(0) + self.prior_grid

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


def hess_origin(model: ActionModel, P, h=None):
    """Eigen-decomposition of the 2×2 Hessian of S at the origin by central differences (Eq. (19))."""
    h = h or 1e-3 * max(model.spacing, 1e-3)
    e = np.array([[h, 0], [-h, 0], [0, h], [0, -h], [h, h], [h, -h], [-h, h], [-h, -h], [0, 0]])
    f = model.points(P, e)
    H11 = (f[0] - 2 * f[8] + f[1]) / h**2
    H22 = (f[2] - 2 * f[8] + f[3]) / h**2
    H12 = (f[4] - f[5] - f[6] + f[7]) / (4 * h * h)
    return np.linalg.eigh(np.array([[H11, H12], [H12, H22]]))
