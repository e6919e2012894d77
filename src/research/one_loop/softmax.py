"""The softmax side of the one-loop correction (docs/theory.md, Sec. 13): the transverse expansion point of
the softmax plane, M = β(I − J/L), and the second-order shift of the observable âG under the transverse
fluctuations, Eq. (35), in block form."""
from __future__ import annotations

import numpy as np

from copyhead.config import ActionParams

from .blocks import BLOCK_SLICES
from .correction import ek_blocks, one_loop_blocks, plane_point
from .evidence import copy_weight, evidence_ek


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


def one_loop_softmax(p: ActionParams, P, beta, E=None):
    """(OneLoop of Eq. (32) for the softmax equivalent-kernel evidence at M = β(I − J/L), the observable's
    term of Eq. (35) for O = âG): five Hessian-vector products of E and five of âG."""
    L = p.L
    E = evidence_ek(p, P, "softmax") if E is None else E
    m1, mP = softmax_point(beta, L)
    D, HE, HI, mult = ek_blocks(p, P, m1, mP, "softmax", E)
    H_obs = D @ copy_weight.hvp(plane_point(m1, mP, L), D.reshape(-1, L, L)).T
    return one_loop_blocks(D, HE, HI, mult, L), observable_term(D, HE, HI, mult, H_obs)
