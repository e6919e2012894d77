"""The prior's side of the one-loop correction (docs/theory.md, Sec. 13): the Hessian of the prior rate
I(M) = Σ_i φ(σ_i(M)) at a plane point, Eq. (28), and the prior's saddle-point prefactor on the plane,
Eq. (30)."""
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
