"""The pooling sector as an order parameter of its own (docs/theory.md, Sec. 13, "The pooling sector",
Eq. (37)): the column modes M = 1wᵀ (w ⊥ 1: every query attends to the same key positions, the
query-independent feature that fits the uncentred targets' mean) integrated beyond Gaussian order, the other
transverse modes at Gaussian order (Eq. (31)).

At a plane point m = m1 J + mP I write the column part of M − m as x_c ∈ R^{L−1} on the column basis
(unit-Frobenius matrices 1nᵀ/√L, n over an orthonormal basis of 1⊥; :func:`column_basis`), ρ = |x_c|,
x_c = ρ n̂. Two exact symmetries make ρ an order parameter: the prior rate I(M) = Σ φ(σ_i(M)) and the
equivalent-kernel evidence E_EK (Eq. (11) moments in Eq. (4)) are invariant under M → R M Rᵀ for every
rotation R with R1 = 1 (R fixes m and turns 1nᵀ into 1(Rn)ᵀ), so both depend on x_c through ρ alone
(:meth:`PoolingSector.radial`; test). A dataset breaks the symmetry; its deviation from the equivalent kernel
is kept to first order, the linear tilt of its own column gradient g_c = (∂E_s/∂x_c at m). Then the
direction integral is exact (the von Mises–Fisher normaliser on S^{L−2}, ν = (L − 3)/2):

    ∫ dn̂ e^{−ρ g_c·n̂} / |S^{L−2}| = Γ(ν + 1) (2/κ)^ν I_ν(κ),   κ = ρ |g_c|,

and the column sector's correction of the plane action is a 1-D integral in ρ, done on a grid that is
widened until the integrand is negligible (no expansion in ρ):

    ΔS_pool(m) = −ln [∫dρ ρ^{L−2} Z_ν(ρ|g_c|) e^{−d_k ΔI(ρ) − ΔE(ρ)} / ∫dρ ρ^{L−2} e^{−d_k ΔI(ρ)}],    (37)

ΔI(ρ) = I(m + ρu) − I(m), ΔE(ρ) = E_EK(m + ρu) − E_EK(m) (u any unit column direction). The column mean
is x̄_c = −ĝ_c ⟨ρ A_ν(ρ|g_c|)⟩, A_ν = I_{ν+1}/I_ν. With d_k → ∞ (quadratic ΔI, ΔE) Eq. (37) is the column
block of Eq. (31) with the equivalent-kernel column curvature (test). The remaining L² − 2 − (L − 1)
transverse modes keep Eq. (31) with the dataset's own Hessian and gradient restricted to them (their prior
precision: Σ⁻¹ restricted, i.e. conditional on x_c = 0); the couplings between them and the column modes,
and the dataset's own (not the equivalent kernel's) column curvature, are left out.
"""
from __future__ import annotations

import functools

import numpy as np
from scipy.special import gammaln, ive, logsumexp

from copyhead.config import ActionParams

from ..prior import neg_log_prior_matrix
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
    """ln of the mean of e^{κ n̂·e} over the unit sphere S^{L−2} of 1⊥ (Γ(ν+1)(2/κ)^ν I_ν(κ), ν = (L−3)/2;
    0 at κ = 0), and A_ν(κ) = I_{ν+1}(κ)/I_ν(κ) (the mean of n̂·e under that tilt)."""
    nu = 0.5 * (L - 3)
    k = np.asarray(kappa, float)
    small = k < 1e-6
    ks = np.where(small, 1.0, k)
    lz = gammaln(nu + 1) + nu * np.log(2.0 / ks) + np.log(ive(nu, ks)) + ks
    A = ive(nu + 1, ks) / ive(nu, ks)
    return np.where(small, k**2 / (4 * (nu + 1)), lz), np.where(small, k / (2 * (nu + 1)), A)


class PoolingSector:
    """The column sector of Eq. (37) at P (linear attention): the equivalent-kernel evidence and the prior
    along a column ray, and the split of a dataset's transverse system into the column part (exact in ρ)
    and the rest (Eq. (31))."""

    def __init__(self, p: ActionParams, P, n_grid=401, tail=40.0, max_widen=6):
        self.p, self.P, self.n_grid, self.tail, self.max_widen = p, float(P), n_grid, tail, max_widen
        self.E = evidence_ek(p, P)
        L = p.L
        self.Cb, self.Ct, self.Rt = column_basis(L)
        self.u = self.Cb[:, 0].reshape(L, L)

    def _prior(self, M):
        p = self.p
        return neg_log_prior_matrix(M, p.d_k, p.g_Q, p.g_K, p.prior)

    def radial(self, m1, mP, gnorm):
        """The column sector at the plane point (m1, mP) for a column gradient of norm ``gnorm``: dict(dS =
        Eq. (37), mean = ⟨ρ A_ν(ρ gnorm)⟩ (x̄_c = −ĝ_c · mean), rho2 = ⟨ρ²⟩, rho2_prior (under the prior
        alone), rho_max (the grid's end)). The grid [0, ρ_max] is doubled until the integrand has fallen by
        e^{−tail} at its end; where it has not after ``max_widen`` doublings (the linear tilt outgrows the
        prior's growth — the large-deviation rate grows only linearly in ρ — so the first-order treatment of
        the dataset's deviation fails), every number is NaN, which the posterior treats like a failure of
        Eq. (33)."""
        p, L = self.p, self.p.L
        m = plane_point(m1, mP, L)
        E0, I0 = self.E(m), self._prior(m)
        hI = float(prior_rate_form(m, p.g_Q * p.g_K, self.u[None], p.prior)[0, 0]) * p.d_k
        sd = 1.0 / np.sqrt(hI)
        rmax = sd * (np.sqrt(L - 1) + 8.0) + 2.0 * gnorm / hI
        for _ in range(self.max_widen):
            rho = np.linspace(0.0, rmax, self.n_grid)[1:]
            dI = np.array([self._prior(m + r * self.u) for r in rho]) - I0
            dE = np.array([self.E(m + r * self.u) for r in rho]) - E0
            lvmf, A = log_vmf(rho * gnorm, L)
            base = (L - 2) * np.log(rho) - dI
            ell = base + lvmf - dE
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
        (``dataset.transverse_system``: H⊥, g⊥, Σ⁻¹ on ``blocks.transverse_basis``): dict(dS (NaN where the
        Gaussian modes are unstable), rel (their smallest eigenvalue of 1 + Σ^½H⊥Σ^½), column (ΔS_pool of
        Eq. (37)), rest (Eq. (31) on the rest), rho2 (⟨ρ²⟩), mean (L×L: the sector's mean off-plane score
        matrix, the column part x̄_c = −ĝ_c ⟨ρA_ν⟩ on the column basis plus the rest's Gaussian mean
        x̄_R = −(H_R + Σ⁻¹_R)⁻¹ g_R; NaN where the rest is unstable), second (E‖x‖²_F of the off-plane part:
        ⟨ρ²⟩ + tr (H_R + Σ⁻¹_R)⁻¹ + ‖x̄_R‖²))."""
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
