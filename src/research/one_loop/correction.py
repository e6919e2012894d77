"""The one-loop correction itself (docs/theory.md, Sec. 13): the Gaussian integral over the transverse
directions, Eq. (31), with its stability flag (Eq. (33)); its block form for the equivalent-kernel
evidence, Eq. (32) (five Hessian-vector products, the closed-form prior blocks); the softest transverse
mode; and a dataset's transverse-gradient term in block form, Eq. (34)."""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg as sla

from copyhead.config import ActionParams

from .blocks import BLOCK_SLICES, block_dirs, block_multiplicities, isotypic_bases, transverse_basis
from .evidence import evidence_ek
from .prior import prior_rate_form


@dataclasses.dataclass
class OneLoop:
    dS: float                 # Eq. (31); NaN where unstable
    logdet: float             # ½ ln det(1 + Σ H_E⊥)
    grad_term: float          # −½ g⊥ᵀ(H_E⊥ + Σ⁻¹)⁻¹ g⊥
    stable: bool              # d_k H_I⊥ + H_E⊥ positive definite (Eq. (33))
    min_eig: float            # smallest eigenvalue of d_k H_I⊥ + H_E⊥
    unstable_dirs: np.ndarray  # (L², k) the unstable directions in vec(M) coordinates (k = 0 if stable)
    min_rel_eig: float = np.nan  # smallest eigenvalue of 1 + Σ^½ H_E⊥ Σ^½ (< 0 unstable, → 0⁺ critical)


def gaussian_correction(H, g, Sinv, tol=1e-10, cov=False):
    """−ln E_{x∼N(0,Σ)} exp(−gᵀx − ½xᵀHx) = ½ ln det(1 + ΣH) − ½ gᵀ(H + Σ⁻¹)⁻¹g (Eq. (31)), with its
    parts: (ΔS, ln det part, gradient part, stable, λ_min(H + Σ⁻¹), unstable directions, smallest
    eigenvalue of 1 + Σ^½HΣ^½); ΔS = NaN, stable = False where H + Σ⁻¹ is not positive definite (the
    integral diverges). Near 0⁺ of the last number the mode is critical and ½ ln det → −∞: the Gaussian
    order is not reliable there (Sec. 13). ``cov``: append the posterior covariance (H + Σ⁻¹)⁻¹ from the same
    eigendecomposition (NaN where unstable)."""
    Sinv = 0.5 * (Sinv + Sinv.T)
    A = 0.5 * (H + H.T) + Sinv
    ev, evec = np.linalg.eigh(A)
    bad = ev <= tol * np.abs(ev).max()
    rel = float(sla.eigh(A, Sinv, eigvals_only=True)[0])
    if bad.any():
        out = (np.nan, np.nan, np.nan, False, float(ev[0]), evec[:, bad], rel)
        return out + (np.full_like(A, np.nan),) if cov else out
    ls = np.linalg.eigvalsh(Sinv)
    logdet = 0.5 * (np.sum(np.log(ev)) - np.sum(np.log(ls)))
    y = evec.T @ g
    grad = -0.5 * float(np.sum(y**2 / ev))
    out = (logdet + grad, logdet, grad, True, float(ev[0]), evec[:, :0], rel)
    return out + ((evec / ev) @ evec.T,) if cov else out


def one_loop(H_E, g_E, H_I, d_k, basis=None):
    """ΔS of Eq. (31) from full L²×L² Hessians H_E (evidence), H_I (prior rate per unit d_k) and the
    evidence gradient g_E (L²,), projected on the transverse basis (default: complement of span{I, J});
    unstable directions are returned in vec(M) coordinates."""
    L = int(round(np.sqrt(len(g_E))))
    T = transverse_basis(L) if basis is None else basis
    dS, ld, gr, ok, lmin, bad, rel = gaussian_correction(T.T @ H_E @ T, T.T @ g_E, d_k * (T.T @ H_I @ T))
    return OneLoop(dS, ld, gr, ok, lmin, T @ bad, rel)


def plane_point(m1, mP, L):
    """The score matrix m1 J + mP I of a plane point."""
    return m1 * np.ones((L, L)) + mP * np.eye(L)


def ek_blocks(p: ActionParams, P, m1, mP, attention="linear", E=None):
    """The transverse blocks of Eq. (32) at the plane point (m1, mP) at P: (D (5, L²) the block directions
    (block_dirs), H_E and d_k H_I on them (5×5; the BLOCK_SLICES sub-blocks are the 3×3 K and the two
    scalars), the multiplicities (5,)). ``E``: the equivalent-kernel evidence at P (default: made here)."""
    L = p.L
    E = evidence_ek(p, P, attention) if E is None else E
    M = plane_point(m1, mP, L)
    D = block_dirs(L)
    HE = D @ E.hvp(M, D.reshape(-1, L, L)).T
    HI = p.d_k * prior_rate_form(M, p.g_Q * p.g_K, D.reshape(-1, L, L), p.prior)
    return D, HE, HI, block_multiplicities(L)


def one_loop_blocks(D, HE, HI, mult, L):
    """Eq. (32) from the blocks of :func:`ek_blocks`: (L−1)× the 3×3 standard block, L(L−3)/2 × the sym22
    scalar, (L−1)(L−2)/2 × the anti211 scalar. Returns OneLoop (unstable_dirs: the unstable block
    directions, w = first basis vector of 1⊥)."""
    ld, lmin, ok, bad, rel = 0.0, np.inf, True, [], np.inf
    for sl in BLOCK_SLICES.values():
        n = mult[sl][0]
        if n == 0:
            continue
        _, l_, _, ok_, lm, bd, rl = gaussian_correction(HE[sl, sl], np.zeros(sl.stop - sl.start), HI[sl, sl])
        lmin, rel = min(lmin, lm), min(rel, rl)
        if not ok_:
            ok = False
            bad.append(D[sl].T @ bd)
        else:
            ld += n * l_
    if not ok:
        return OneLoop(np.nan, np.nan, np.nan, False, lmin, np.concatenate(bad, 1), rel)
    return OneLoop(ld, ld, 0.0, True, lmin, np.zeros((L * L, 0)), rel)


def one_loop_ek(p: ActionParams, P, m1, mP, attention="linear", E=None):
    """Eq. (32): ΔS for the equivalent-kernel evidence (g⊥ = 0 by symmetry) at the plane point (m1, mP) at
    P, from the blocks (five Hessian-vector products of E and the closed-form prior blocks)."""
    return one_loop_blocks(*ek_blocks(p, P, m1, mP, attention, E), p.L)


def softest_mode(p: ActionParams, P, m1, mP, attention="linear", E=None):
    """The softest transverse mode of the equivalent-kernel one-loop integral (Eqs. (32), (33)): (block
    name, the smallest eigenvalue of 1 + Σ^½H_E⊥Σ^½ (< 0 unstable, → 0⁺ critical), its direction (L×L,
    unit Frobenius norm; in the standard block with w = the first basis vector of 1⊥))."""
    L = p.L
    D, HE, HI, mult = ek_blocks(p, P, m1, mP, attention, E)
    best = (None, np.inf, None)
    for name, sl in BLOCK_SLICES.items():
        if mult[sl][0] == 0:
            continue
        mu, vec = sla.eigh(HE[sl, sl] + HI[sl, sl], HI[sl, sl])
        if mu[0] < best[1]:
            u = (D[sl].T @ vec[:, 0]).reshape(L, L)
            best = (name, float(mu[0]), u / np.linalg.norm(u))
    return best


def column_share(u):
    """‖1 ūᵀ‖²/‖u‖² (ū the column means): 1 for a pure column mode M = 1wᵀ (every query attends to the same
    key positions), 0 for a row mode w1ᵀ with w ⊥ 1."""
    u = np.asarray(u, float)
    col = np.ones((u.shape[0], 1)) * u.mean(0, keepdims=True)
    return float(np.sum(col**2) / np.sum(u**2))


def grad_term_blocks(g, HE, HI, L):
    """−½ g⊥ᵀ(H_E⊥ + d_k H_I⊥)⁻¹ g⊥, the gradient part of Eq. (31) (Eq. (34)), for a dataset's evidence
    gradient g (L², vec(M)) with the equivalent-kernel curvature of :func:`ek_blocks` (HE, d_k·HI on its
    five directions): g is projected on the isotypic bases (standard: a 3 × (L−1) coefficient matrix on
    which the 3×3 block acts as K ⊗ I; sym22, anti211: scalars); the trivial (in-plane) part is the 2-D
    action's own. NaN where a block of H_E⊥ + d_k H_I⊥ is not positive definite (Eq. (33))."""
    b = isotypic_bases(L)
    gv = np.asarray(g, float).reshape(-1)
    A = HE[:3, :3] + HI[:3, :3]
    if np.linalg.eigvalsh(0.5 * (A + A.T))[0] <= 0:
        return np.nan
    Gs = np.einsum("inw,n->iw", b["standard"], gv)                    # (3, L−1)
    total = float(np.sum(Gs * np.linalg.solve(0.5 * (A + A.T), Gs)))
    for name, i in (("sym22", 3), ("anti211", 4)):
        if b[name].shape[1] == 0:
            continue
        a = HE[i, i] + HI[i, i]
        if a <= 0:
            return np.nan
        gn = b[name].T @ gv
        total += float(gn @ gn) / a
    return -0.5 * total
