"""The pooling sector as an order parameter of its own (docs/theory.md, Sec. 13, "The pooling sector",
Eq. (37)): the column modes M = 1wᵀ (w ⊥ 1: every query attends to the same key positions, the
query-independent feature that fits the uncentred targets' mean) integrated beyond Gaussian order, the other
transverse modes at Gaussian order (Eq. (31)).

At a plane point m = m1 J + mP I write the column part of M − m as x_c ∈ R^{L−1} on the column basis
(unit-Frobenius matrices 1̂nᵀ, 1̂ = 1/√L, n over an orthonormal basis of 1⊥; :func:`column_basis`),
ρ = |x_c|, x_c = ρ n̂. Together with the plane's pooling eigenvalue x = 1̂ᵀM1̂ = L m1 + mP they form the
*pooling vector* v = Mᵀ1̂ = (x, x_c) ∈ R^L, whose prior is exact and spherical: v = Σ_i (1̂·q_i) k_i/d_k is a
Gaussian scale mixture with density ∝ R^ν K_ν(d_k R/√c), R = |v|, ν = (d_k − L)/2, at every d_k
(:func:`pooling_vector_nlp`). The column's prior given the plane is that density at R = √(x² + ρ²) (its
coupling to mP, which shares the k_i⊥, is left out: exact at mP = 0). The large-deviation rate of the full
matrix along the ray is not used: at d_k ≈ L it misses the Cramér prefactor of the L − 1 column directions
and makes the prior column modes twice as wide as the prior's exact E‖x_c‖² = (L − 1)c/d_k. The
equivalent-kernel evidence E_EK (Eq. (11) moments in Eq. (4)) is invariant under M → R M Rᵀ for every
rotation R with R1 = 1 (R fixes m and turns 1nᵀ into 1(Rn)ᵀ), so it depends on x_c through ρ alone (test).
A dataset breaks the symmetry; its deviation from the equivalent kernel is kept to first order, the linear
tilt of its own column gradient g_c = (∂E_s/∂x_c at m). Then the direction integral is exact (the von
Mises–Fisher normaliser on S^{L−2}, ν_c = (L − 3)/2):

    ∫ dn̂ e^{−ρ g_c·n̂} / |S^{L−2}| = Γ(ν_c + 1) (2/κ)^{ν_c} I_{ν_c}(κ) = ₀F₁(; ν_c + 1; κ²/4),   κ = ρ |g_c|,

and the column sector's correction of the plane action is a 1-D integral in ρ, done on a grid that is
widened until the integrand is negligible (no expansion in ρ):

    ΔS_pool(m) = −ln [∫dρ ρ^{L−2} Z(ρ|g_c|) p_v(x, ρ) e^{−ΔE(ρ)} / ∫dρ ρ^{L−2} p_v(x, ρ)],            (37)

p_v(x, ρ) the pooling vector's density at R = √(x² + ρ²), ΔE(ρ) = E_EK(m + ρu) − E_EK(m) (u any unit column
direction). The column mean is x̄_c = −ĝ_c ⟨ρ A(ρ|g_c|)⟩, A = I_{ν_c+1}/I_{ν_c}. With d_k → ∞ (quadratic
−ln p_v, ΔE) Eq. (37) is the column block of Eq. (31) with the equivalent-kernel column curvature (test). The
remaining L² − 2 − (L − 1)
transverse modes keep Eq. (31) with the dataset's own Hessian and gradient restricted to them (their prior
precision: Σ⁻¹ restricted, i.e. conditional on x_c = 0); the couplings between them and the column modes,
and the dataset's own (not the equivalent kernel's) column curvature, are left out.
"""
from __future__ import annotations

import functools

import numpy as np
from scipy.special import gammaln, hyp0f1, ive, kve, logsumexp

from copyhead.config import ActionParams

from .blocks import isotypic_bases, transverse_basis
from .correction import gaussian_correction, plane_point
from .evidence import evidence_ek
from .prior import prior_rate_form


@functools.lru_cache(maxsize=16)
def column_basis(L):
    """((L², L−1) the column basis vec(1nᵀ)/√L in vec(M) coordinates, (L²−2, L−1) the same on
    ``blocks.transverse_basis``, (L²−2, L²−2−(L−1)) an orthonormal basis of the other transverse modes there).
    The column direction lies in the standard component (Eq. (29)): with the same n in the three copies
    diag(n), S_n, A_n its coefficients are (1/√L, √((L−2)/(2L)), −1/√2). Cached: read-only arrays."""
    std = isotypic_bases(L)["standard"]                                   # (3, L², L−1)
    n = L - 1
    w0 = std[0, :, 0].reshape(L, L).diagonal()                           # the first basis vector of 1⊥
    col0 = (np.outer(np.ones(L), w0) / np.sqrt(L)).ravel()
    v = std[:, :, 0] @ col0                                              # the column combination of the copies
    v = v / np.linalg.norm(v)
    Vp = np.linalg.svd(np.eye(3) - np.outer(v, v))[0][:, :2]             # its complement in the 3 copies
    T = transverse_basis(L)
    Ct = np.zeros((T.shape[1], n))
    Ct[:3 * n] = np.kron(v[:, None], np.eye(n))
    Rt = np.zeros((T.shape[1], T.shape[1] - n))
    Rt[:3 * n, :2 * n] = np.kron(Vp, np.eye(n))
    Rt[3 * n:, 2 * n:] = np.eye(T.shape[1] - 3 * n)
    return T @ Ct, Ct, Rt


def log_vmf(kappa, L):
    """ln of the mean of e^{κ n̂·e} over the unit sphere S^{L−2} of 1⊥ (Γ(ν+1)(2/κ)^ν I_ν(κ) = ₀F₁(; ν+1; κ²/4),
    ν = (L−3)/2; 0 at κ = 0), and A_ν(κ) = I_{ν+1}(κ)/I_ν(κ) (the mean of n̂·e under that tilt). Below
    κ = max(1, ν) through ₀F₁ (no underflow of I_ν at large ν), above through the scaled Bessel functions."""
    nu = 0.5 * (L - 3)
    k = np.asarray(kappa, float)
    small = k < max(1.0, nu)
    ks, kl = np.where(small, k, 0.0), np.where(small, max(1.0, nu), k)
    x, b = ks**2 / 4, nu + 1
    f0, f1 = hyp0f1(b, x), hyp0f1(b + 1, x)
    # ln ₀F₁ by its series where ₀F₁ − 1 is below rounding
    lz_s, A_s = np.where(x < 1e-4, x / b - x**2 / (2 * b**2 * (b + 1)), np.log(f0)), ks / (2 * b) * f1 / f0
    lz_l = gammaln(nu + 1) + nu * np.log(2.0 / kl) + np.log(ive(nu, kl)) + kl
    A_l = ive(nu + 1, kl) / ive(nu, kl)
    return np.where(small, lz_s, lz_l), np.where(small, A_s, A_l)


def pooling_vector_nlp(R, L, d_k, c, prior="large_deviation"):
    """−ln p(v) + const of the pooling vector v = Mᵀ1̂ ∈ R^L (1̂ = 1/√L) at |v| = R. Its component along 1̂ is
    the plane's pooling eigenvalue x = 1̂ᵀM1̂ = L m1 + mP, the rest are the column coordinates x_c. With
    M = Σ_i q_i k_iᵀ/d_k, v = Σ_i a_i k_i/d_k, a_i = 1̂·q_i: given a, v ∼ N(0, g_K|a|²/d_k² I_L), and
    |a|²/g_Q ∼ χ²_{d_k}, so v is an exact Gaussian scale mixture, spherical in R^L, with the density
    ∝ R^ν K_ν(d_k R/√c), ν = (d_k − L)/2 — at every d_k (the multivariate form of Eq. (25)). ``prior``
    "gaussian" (the leading cumulant, Eq. (8)) gives d_k R²/(2c)."""
    R = np.asarray(R, float)
    if prior == "gaussian":
        return d_k * R**2 / (2.0 * c)
    if prior != "large_deviation":
        raise ValueError(f"prior {prior!r} is not allowed; allowed values: ['large_deviation', 'gaussian']")
    nu = 0.5 * (d_k - L)
    z = np.maximum(d_k * R / np.sqrt(c), 1e-300)
    return -(nu * np.log(z) + log_kv(nu, z))


def log_kv(nu, z):
    """ln K_ν(z) for z > 0: scipy's scaled K_ν for |ν| ≤ 30, above it the uniform (Debye) expansion
    K_ν(νw) ≈ √(π/(2ν)) e^{−νη} (1 + w²)^{−1/4} (1 − u₁(t)/ν + u₂(t)/ν²), η = √(1+w²) + ln(w/(1 + √(1+w²))),
    t = 1/√(1+w²) (relative error O(ν⁻³); scipy's form over- or underflows there)."""
    nu = abs(float(nu))
    z = np.asarray(z, float)
    if nu <= 30.0:
        return np.log(kve(nu, z)) - z
    w = z / nu
    sq = np.sqrt(1.0 + w**2)
    t = 1.0 / sq
    eta = sq + np.log(w / (1.0 + sq))
    u1 = (3 * t - 5 * t**3) / 24
    u2 = (81 * t**2 - 462 * t**4 + 385 * t**6) / 1152
    return 0.5 * np.log(np.pi / (2 * nu)) - nu * eta - 0.5 * np.log(sq) + np.log1p(-u1 / nu + u2 / nu**2)


class PoolingSector:
    """The column sector of Eq. (37) at P (linear attention): the equivalent-kernel evidence and the prior
    along a column ray, and the split of a dataset's transverse system into the column part (exact in ρ)
    and the rest (Eq. (31))."""

    def __init__(self, p: ActionParams, P, n_grid=400, tail=40.0, max_widen=6, max_grid=20000):
        self.p, self.P, self.n_grid, self.tail, self.max_widen = p, float(P), n_grid, tail, max_widen
        self.max_grid = max_grid
        self.E = evidence_ek(p, P)
        L = p.L
        self.Cb, self.Ct, self.Rt = column_basis(L)
        self.u = self.Cb[:, 0].reshape(L, L)

    def _prior(self, x, rho):
        """−ln of the prior density of the pooling vector v = Mᵀ1̂ at (x, ρ) (:func:`pooling_vector_nlp`)."""
        p = self.p
        return pooling_vector_nlp(np.hypot(x, rho), p.L, p.d_k, p.g_Q * p.g_K, p.prior)

    def radial(self, m1, mP, gnorm):
        """The column sector at the plane point (m1, mP) for a column tilt of norm ``gnorm``: dict(dS = Eq.
        (37), mean = ⟨ρ A_ν(ρ gnorm)⟩ (x̄_c = −ĝ · mean), rho2 = ⟨ρ²⟩, rho2_prior (under the prior alone),
        rho_max (the grid's end)). The grid [0, ρ_max] has a step of a quarter of the narrowest Gaussian scale
        1/√(h_I + |h_E|) (h_E the EK column curvature, h_I the prior's); it is doubled until the integrand has
        fallen by e^{−tail} at its end; where it has not after ``max_widen`` doublings (the tilt outgrows the
        prior's growth — the large-deviation rate grows only linearly in ρ — so the first-order treatment of
        the dataset's deviation fails), every number is NaN, which the posterior treats like a failure of
        Eq. (33)."""
        p, L = self.p, self.p.L
        m = plane_point(m1, mP, L)
        x = L * m1 + mP                                                   # the pooling eigenvalue 1̂ᵀM1̂
        E0, I0 = self.E(m), self._prior(x, 0.0)
        hI = float(prior_rate_form(m, p.g_Q * p.g_K, self.u[None], p.prior)[0, 0]) * p.d_k
        hE = float(self.u.ravel() @ np.ravel(self.E.hvp(m, self.u[None])[0]))
        step = 0.25 / np.sqrt(hI + abs(hE))
        sd = 1.0 / np.sqrt(hI)
        rmax = sd * (np.sqrt(L - 1) + 8.0) + 2.0 * gnorm / hI
        for _ in range(self.max_widen):
            n = int(np.clip(np.ceil(rmax / step), self.n_grid, self.max_grid))
            rho = np.linspace(0.0, rmax, n + 1)[1:]
            dI = self._prior(x, rho) - I0
            dE = np.array([self.E(m + r * self.u) for r in rho]) - E0
            lvmf, A = log_vmf(rho * gnorm, L)
            base = (L - 2) * np.log(rho) - dI
            ell = base - dE + lvmf
            if ell[-1] < ell.max() - self.tail and base[-1] < base.max() - self.tail:
                break
            rmax *= 2.0
        else:       # the tilt outgrows the prior: the first-order treatment of the dataset fails (a flag)
            return {"dS": np.nan, "mean": np.nan, "rho2": np.nan, "rho2_prior": np.nan, "rho_max": rmax}
        q, q0 = np.exp(ell - ell.max()), np.exp(base - base.max())
        return {"dS": -float(logsumexp(ell) - logsumexp(base)), "mean": float(q @ (rho * A) / q.sum()),
                "rho2": float(q @ rho**2 / q.sum()), "rho2_prior": float(q0 @ rho**2 / q0.sum()), "rho_max": rmax}

    def correction(self, m1, mP, Ht, gt, Sinv):
        """Eq. (37) plus Eq. (31) on the non-column transverse modes, from one dataset's transverse system
        (``dataset.transverse_system``: H⊥, g⊥, Σ⁻¹ on ``blocks.transverse_basis``), the couplings between the
        two left out: dict(dS (NaN where the Gaussian modes are unstable), rel (their smallest eigenvalue of
        1 + Σ^½H⊥Σ^½), column (ΔS_pool of Eq. (37)), rest (Eq. (31) on the rest), rho2 (⟨ρ²⟩), mean (L×L: the
        sector's mean off-plane score matrix, the column part x̄_c = −ĝ_c ⟨ρA_ν⟩ on the column basis plus the
        rest's Gaussian mean x̄_R = −(H_R + Σ⁻¹_R)⁻¹ g_R; NaN where the rest is unstable), second (E‖x‖²_F of
        the off-plane part: ⟨ρ²⟩ + tr (H_R + Σ⁻¹_R)⁻¹ + ‖x̄_R‖²)).

        The couplings left out: with the large-deviation prior Σ⁻¹ couples each column mode 1nᵀ to the row
        mode n1ᵀ at O(d_k) (Eq. (28)'s h¹ term), and the dataset's Hessian couples the column modes to the rest;
        in the Gaussian limit the result differs from Eq. (31) whole by about 3 % of its size at any d_k
        (L = 5, test). Integrating the rest at Gaussian order given x_c would keep them, but leaves a gain
        ½kρ² on the column modes that the linearly growing rate cannot bound at large ρ."""
        Rt, Ct, L = self.Rt, self.Ct, self.p.L
        gR = Rt.T @ gt
        rest = gaussian_correction(Rt.T @ Ht @ Rt, gR, Rt.T @ Sinv @ Rt, cov=True)
        gc = Ct.T @ gt
        gn = float(np.linalg.norm(gc))
        col = self.radial(m1, mP, gn)
        xc = -gc / gn * col["mean"] if gn > 0 else 0.0 * gc
        xR = -(rest[-1] @ gR)
        mean = transverse_basis(L) @ (Ct @ xc + Rt @ xR)
        return {"dS": rest[0] + col["dS"], "rel": rest[6], "column": col["dS"], "rest": rest[0],
                "rho2": col["rho2"], "mean": mean.reshape(L, L),
                "second": col["rho2"] + float(np.trace(rest[-1]) + xR @ xR)}
