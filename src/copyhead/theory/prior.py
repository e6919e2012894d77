"""Prior over the score matrix M = QᵀK/d_k from marginalising Q and K (docs/theory.md, Sec. 3).

Q, K ∈ R^{d_k×L} with i.i.d. N(0, g_Q), N(0, g_K) entries. The cumulant generating function of M is exact
(Eq. (6)); its Legendre transform at large d_k gives the large-deviation rate d_k Σ_i φ(σ_i(M)) (Eq. (7));
keeping only the leading cumulant gives the Gaussian prior d_k ||M||²_F/(2c) (Eq. (8)), c = g_Q g_K.
Both are returned as -ln p(M) up to an M-independent constant. Along M = m1 J + mP I (Eq. (9)) the
singular values are |L m1 + mP| (once) and |mP| (L-1 times). The exact cumulant generating function, the
rate's gradient at a general M and its next order (the saddle-point correction, Eq. (38)) are used by the
research package only: research.one_loop.prior.
"""
from __future__ import annotations

import numpy as np

PRIORS = ("large_deviation", "gaussian")


def phi(lam, c):
    """Per-singular-value large-deviation rate, Eq. (7): φ(λ) = ½[s - 1 - ln((1+s)/2)], s = √(1+4λ²/c)."""
    lam = np.asarray(lam, float)
    s = np.sqrt(1.0 + 4.0 * lam**2 / c)
    return 0.5 * (s - 1.0 - np.log1p((s - 1.0) / 2.0))


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
