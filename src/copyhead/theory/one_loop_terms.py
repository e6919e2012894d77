"""The terms of the one-loop correction beyond the equivalent-kernel block form of Eq. (32) (docs/theory.md,
Sec. 13; issue 21), with the equivalent-kernel curvature of :func:`copyhead.theory.one_loop.ek_blocks`:
- a dataset's transverse evidence gradient, −½ g⊥ᵀ(H_E⊥ + d_k H_I⊥)⁻¹ g⊥ in block form (Eq. (34));
- for softmax attention, the expansion point M = β(I − J/L) and the second-order shift of the observable
  âG under the transverse fluctuations (Eq. (35)).
"""
from __future__ import annotations

import numpy as np
import torch

from .one_loop import BLOCK_SLICES, ek_blocks, evidence_ek, hvp, isotypic_bases, one_loop_blocks


def evidence_grad(E, M):
    """∇E at the L×L matrix M (L²,), by autograd (one backward pass)."""
    M = torch.as_tensor(np.asarray(M, float)).clone().requires_grad_(True)
    g, = torch.autograd.grad(E(M), M)
    return g.reshape(-1).numpy()


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


def copy_weight(M):
    """âG = mP/L of the softmax attention A = softmax_b M, i.e. (Tr A − 1ᵀA1/L)/(L − 1) (the least-squares copy
    weight of A ≈ (m1 J + mP I)/L, in [0, 1]; the studies' âG), as a torch function of M."""
    L = M.shape[-1]
    A = torch.softmax(M, dim=-1)
    return (torch.diagonal(A).sum() - A.sum() / L) / (L - 1.0)


def softmax_point(beta, L):
    """The transverse expansion point of the softmax plane: M = β(I − J/L), the copy logit β with the gauge
    u of u J + β I at the prior's mode (the J eigenvalue Lu + β = 0; the evidence does not see u).
    Returns (m1, mP) = (−β/L, β)."""
    return -beta / L, beta


def observable_term(D, HE, HI, mult, H_obs):
    """½ tr[(H_E⊥ + d_k H_I⊥)⁻¹ ∇²O] over the transverse blocks (Eq. (35)): the second-order shift of a
    permutation-invariant observable O under the transverse posterior fluctuations, from its Hessian on the
    block directions D (5×5, like HE and d_k·HI); NaN where a block is not positive definite."""
    total = 0.0
    for sl in BLOCK_SLICES.values():
        n = mult[sl][0]
        if n == 0:
            continue
        A = HE[sl, sl] + HI[sl, sl]
        A = 0.5 * (A + A.T)
        if np.linalg.eigvalsh(A)[0] <= 0:
            return np.nan
        total += 0.5 * n * float(np.trace(np.linalg.solve(A, H_obs[sl, sl])))
    return total


def one_loop_softmax(beta, P, V, L, d_k, g_Q, g_K, g_O, sigma2, prior="large_deviation", E=None):
    """(OneLoop of Eq. (32) for the softmax equivalent-kernel evidence at M = β(I − J/L), the observable's
    term of Eq. (35) for O = âG): five Hessian-vector products of E and five of âG."""
    E = evidence_ek(P * L, V, L, g_O, sigma2, "softmax") if E is None else E
    m1, mP = softmax_point(beta, L)
    D, HE, HI, mult = ek_blocks(m1, mP, P, V, L, d_k, g_Q, g_K, g_O, sigma2, prior, "softmax", E)
    M = m1 * np.ones((L, L)) + mP * np.eye(L)
    H_obs = D @ hvp(copy_weight, M, D.reshape(-1, L, L)).T
    return one_loop_blocks(D, HE, HI, mult, L), observable_term(D, HE, HI, mult, H_obs)
