"""Prior over the score matrix M = QᵀK/d_k from marginalising Q and K (docs/theory.md, Sec. 3).

Q, K ∈ R^{d_k×L} with i.i.d. N(0, g_Q), N(0, g_K) entries. The cumulant generating function of M is exact
(Eq. (6)); its Legendre transform at large d_k gives the large-deviation rate d_k Σ_i φ(σ_i(M)) (Eq. (7));
keeping only the leading cumulant gives the Gaussian prior d_k ||M||²_F/(2c) (Eq. (8)), c = g_Q g_K.
Both are returned as -ln p(M) up to an M-independent constant. Along M = m1 J + mP I (Eq. (9)) the
singular values are |L m1 + mP| (once) and |mP| (L-1 times). The rate's next order, the saddle-point
correction ΔR(M) = ½ ln det ∇²Λ(G*) (Eq. (38)), is :func:`saddle_correction`; it is not part of either prior
(src/research/benchmarks/prior_force.py measures what it does on exact posterior draws).
"""
from __future__ import annotations

import numpy as np

PRIORS = ("large_deviation", "gaussian")


def phi(lam, c):
    """Per-singular-value large-deviation rate, Eq. (7): φ(λ) = ½[s - 1 - ln((1+s)/2)], s = √(1+4λ²/c)."""
    lam = np.asarray(lam, float)
    s = np.sqrt(1.0 + 4.0 * lam**2 / c)
    return 0.5 * (s - 1.0 - np.log1p((s - 1.0) / 2.0))


def cgf(Gm, d_k, c):
    """Exact cumulant generating function ln E exp Tr(GᵀM), Eq. (6): -(d_k/2) ln det(I - c GᵀG/d_k²)."""
    Gm = np.asarray(Gm, float)
    sign, ld = np.linalg.slogdet(np.eye(Gm.shape[-1]) - c * Gm.T @ Gm / d_k**2)
    return np.where(sign > 0, -0.5 * d_k * ld, np.inf)


def _rate(sv, d_k, c, prior):
    if prior == "large_deviation":
        return d_k * phi(sv, c)
    if prior == "gaussian":
        return d_k * np.asarray(sv, float) ** 2 / (2.0 * c)
    raise ValueError(f"prior {prior!r} is not allowed; allowed values: {list(PRIORS)}")


def neg_log_prior_matrix(M, d_k, g_Q, g_K, prior="large_deviation"):
    """-ln p(M) + const for a general L×L score matrix: Eq. (7) or (8) through the singular values of M."""
    sv = np.linalg.svd(np.asarray(M, float), compute_uv=False)
    return float(np.sum(_rate(sv, d_k, g_Q * g_K, prior)))


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


def neg_log_prior_family(m1, mP, L, d_k, g_Q, g_K, prior="large_deviation"):
    """-ln p(M) + const along M = m1 J + mP I, Eq. (9) (broadcasts over m1, mP)."""
    c = g_Q * g_K
    return _rate(L * np.asarray(m1, float) + mP, d_k, c, prior) + (L - 1) * _rate(mP, d_k, c, prior)


def neg_log_prior_softmax(beta, L, d_k, g_Q, g_K, prior="large_deviation"):
    """Prior along the softmax copy logit, Eq. (15): scores u J + β I with the gauge u integrated out.

    The eigenvalue L u + β ranges over R as u does, so ∫du e^{-rate} is β-independent and the prior of β
    is (L-1) times the single-eigenvalue rate of β.
    """
    return (L - 1) * _rate(beta, d_k, g_Q * g_K, prior)
