"""The prior's side of the one-loop correction (docs/theory.md, Sec. 13): the Hessian of the prior rate
I(M) = Σ_i φ(σ_i(M)) at a plane point, Eq. (28), and the prior's saddle-point prefactor on the plane,
Eq. (30); the exact cumulant generating function (Eq. (6)), the rate's gradient at a general M and its
saddle-point correction ΔR(M) = ½ ln det ∇²Λ(G*) (Eq. (38); not part of either prior of copyhead.theory.prior,
src/research/benchmarks/prior_force.py measures what it does on exact posterior draws)."""
from __future__ import annotations

import numpy as np

from copyhead.theory.prior import PRIORS

from .blocks import isotypic_bases


def prior_rate_form(M, c, dirs, prior="large_deviation"):
    """The Hessian of I(M) = Σ_i φ(σ_i(M)) (Eq. (7)) or ||M||²_F/(2c) (Eq. (8)) at a symmetric M as a
    bilinear form on the directions dirs (k, L, L): the k×k matrix dᵀ H_I d', Eq. (28). With I = Tr h(MᵀM),
    h(x) = φ(√x), h'(x) = 1/(c(1+s)), s = √(1+4x/c), M = U diag(λ) Uᵀ and X = Uᵀ dM U:
      dMᵀ H_I dM = Σ_ij [2 h'(λ_j²) X_ij² + h¹_ij (λ_i X_ij + λ_j X_ji)²],
      h¹_ij = (h'(λ_i²) − h'(λ_j²))/(λ_i² − λ_j²) = −4/(c²(1+s_i)(1+s_j)(s_i+s_j)),
    smooth through degenerate and zero eigenvalues. O(k L³ + k² L²): no L²×L² matrix."""
    M = np.asarray(M, float)
    d = np.asarray(dirs, float)
    if not np.allclose(M, M.T, atol=1e-12 * max(1.0, np.abs(M).max())):
        raise ValueError("prior_rate_form needs a symmetric M (the plane points m1 J + mP I are)")
    if prior == "gaussian":
        f = d.reshape(len(d), -1)
        return f @ f.T / c
    if prior != "large_deviation":
        raise ValueError(f"prior {prior!r} is not allowed; allowed values: {list(PRIORS)}")
    lam, U = np.linalg.eigh(M)
    s = np.sqrt(1.0 + 4.0 * lam**2 / c)
    hp = 1.0 / (c * (1.0 + s))
    h1 = -4.0 / (c**2 * np.outer(1 + s, 1 + s) * (s[:, None] + s[None, :]))
    X = np.einsum("ai,kab,bj->kij", U, d, U)
    Y = lam[None, :, None] * X + lam[None, None, :] * np.transpose(X, (0, 2, 1))
    Xf, Yf = X.reshape(len(d), -1), Y.reshape(len(d), -1)
    return (Xf * np.tile(2.0 * hp, len(lam))) @ Xf.T + (Yf * h1.ravel()) @ Yf.T


def prior_rate_hessian(M, c, prior="large_deviation"):
    """Hessian (L²×L², per unit d_k) of the prior rate at a symmetric M in vec(M) coordinates, Eq. (28)
    (prior_rate_form on the unit directions; the Gaussian rate ||M||²/(2c) gives I/c)."""
    L = np.asarray(M).shape[0]
    return prior_rate_form(M, c, np.eye(L * L).reshape(L * L, L, L), prior)


def prior_prefactor(m1, mP, L, c, prior="large_deviation"):
    """ΔS_pref = −½ ln det H_I∥(m), Eq. (30): the prefactor of the plane-projected prior density (Eq. (27))
    in the orthonormal plane coordinates (I/√L, (J−I)/√(L(L−1))), up to an m-independent constant."""
    T = isotypic_bases(L)["trivial"]
    H = prior_rate_form(m1 * np.ones((L, L)) + mP * np.eye(L), c, T.T.reshape(2, L, L), prior)
    return -0.5 * float(np.linalg.slogdet(H)[1])


def cgf(Gm, d_k, c):
    """Exact cumulant generating function ln E exp Tr(GᵀM), Eq. (6): -(d_k/2) ln det(I - c GᵀG/d_k²)."""
    Gm = np.asarray(Gm, float)
    sign, ld = np.linalg.slogdet(np.eye(Gm.shape[-1]) - c * Gm.T @ Gm / d_k**2)
    return np.where(sign > 0, -0.5 * d_k * ld, np.inf)


def neg_log_prior_matrix_grad(M, d_k, g_Q, g_K, prior="large_deviation"):
    """∂/∂M of :func:`neg_log_prior_matrix` at a general L×L M: U diag(d_k φ'(σ)) Vᵀ with
    φ'(σ) = 2σ/(c(1 + s)), s = √(1 + 4σ²/c) (Eq. (7)); d_k M/c for the Gaussian prior (Eq. (8))."""
    M, c = np.asarray(M, float), g_Q * g_K
    if prior == "gaussian":
        return d_k * M / c
    if prior != "large_deviation":
        raise ValueError(f"prior {prior!r} is not allowed; allowed values: {list(PRIORS)}")
    U, sv, Vt = np.linalg.svd(M)
    return (U * (d_k * 2.0 * sv / (c * (1.0 + np.sqrt(1.0 + 4.0 * sv**2 / c))))) @ Vt


def _s_t(sv, c):
    s = np.sqrt(1.0 + 4.0 * np.asarray(sv, float) ** 2 / c)
    return s, (s - 1.0) / (s + 1.0)


def saddle_correction(M, g_Q, g_K):
    """The saddle-point correction of the large-deviation rate, Eq. (38): -ln p(M) = d_k Σφ(σ_i) + ΔR(M) + const
    with ΔR = ½ ln det ∇²Λ(G*) of the exact cumulant generating function Λ (Eq. (6), :func:`cgf`) at the
    Legendre point G*(M), in closed form through the singular values σ_i of the L×L M
    (s = √(1 + 4σ²/c), t = (s − 1)/(s + 1)):

        ΔR = Σ_i [½ ln s_i + (L − ½) ln((1 + s_i)/2)] + ½ Σ_{i<j} ln(1 − t_i t_j)

    (the Hessian of a singular-value function: f″(γ_i) on the diagonal, (f′_i ∓ f′_j)/(γ_i ∓ γ_j) on each
    pair), up to the M-independent ½ L² ln(c/d_k); ΔR does not depend on d_k. Near M = 0 it adds
    (2L + 1)‖M‖²/(2c) to the rate's d_k‖M‖²/(2c)."""
    M = np.asarray(M, float)
    L = M.shape[-1]
    s, t = _s_t(np.linalg.svd(M, compute_uv=False), g_Q * g_K)
    tt = np.outer(t, t)[np.triu_indices(L, 1)]
    return float(np.sum(0.5 * np.log(s) + (L - 0.5) * np.log((1.0 + s) / 2.0)) + 0.5 * np.sum(np.log1p(-tt)))


def saddle_correction_grad(M, g_Q, g_K):
    """∂ΔR/∂M (:func:`saddle_correction`) at a general L×L M: U diag(∂ΔR/∂σ_i) Vᵀ (a function of the singular
    values), with ds/dσ = 4σ/(cs) and dt/dσ = 2/(1 + s)² ds/dσ."""
    M, c = np.asarray(M, float), g_Q * g_K
    L = M.shape[-1]
    U, sv, Vt = np.linalg.svd(M)
    s, t = _s_t(sv, c)
    ds = 4.0 * sv / (c * s)
    dt = 2.0 / (s + 1.0) ** 2 * ds
    cross = t[None, :] / (1.0 - np.outer(t, t))
    np.fill_diagonal(cross, 0.0)
    return (U * ((0.5 / s + (L - 0.5) / (1.0 + s)) * ds - 0.5 * cross.sum(1) * dt)) @ Vt
