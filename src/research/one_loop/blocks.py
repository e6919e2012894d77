"""The isotypic decomposition of R^{L×L} under simultaneous permutations M → ΠMΠᵀ (docs/theory.md,
Sec. 13, Eq. (29)): the bases of its components, the transverse basis (the complement of span{I, J}), the
reduction of an invariant Hessian to its blocks and the five block directions the block form of Eq. (32)
needs. Vectorisation convention: vec(M) = M.reshape(-1) (row-major, index a·L + b)."""
from __future__ import annotations

import functools

import numpy as np

BLOCKS = ("trivial", "standard", "sym22", "anti211")
# the sub-blocks of the five block directions (block_dirs): the 3×3 standard block and two scalars
BLOCK_SLICES = {"standard": slice(0, 3), "sym22": slice(3, 4), "anti211": slice(4, 5)}


def _orth(vecs, tol=1e-10):
    u, s, _ = np.linalg.svd(np.asarray(vecs, float).T, full_matrices=False)
    return u[:, s > tol * max(s.max(), 1.0)]


@functools.lru_cache(maxsize=16)
def isotypic_bases(L):
    """Orthonormal bases (columns, in vec(M) coordinates) of the isotypic components of R^{L×L} under
    M → ΠMΠᵀ, Eq. (29): "trivial" (L², 2): I/√L, (J − I)/√(L(L−1)); "standard" (3, L², L−1): the three
    copies diag(w), S_w = (w1ᵀ + 1wᵀ)|off-diag /√(2(L−2)), A_w = (w1ᵀ − 1wᵀ)/√(2L), w over one orthonormal
    basis of 1⊥ (the same w in each copy, so an invariant H acts as K ⊗ I_{L−1}); "sym22" (L², L(L−3)/2):
    symmetric, zero diagonal, zero row sums; "anti211" (L², (L−1)(L−2)/2): antisymmetric, zero row sums.
    Cached: treat the arrays as read-only."""
    I, J, one = np.eye(L), np.ones((L, L)), np.ones(L)
    triv = np.stack([I.ravel() / np.sqrt(L), (J - I).ravel() / np.sqrt(L * (L - 1))], 1)
    w = np.linalg.svd(np.eye(L) - J / L)[0][:, :L - 1]                # orthonormal basis of 1⊥
    std = []
    for k in range(L - 1):
        wk = w[:, k]
        Sw = (np.outer(wk, one) + np.outer(one, wk)) * (1 - I) / np.sqrt(2 * (L - 2)) if L > 2 else 0 * I
        Aw = (np.outer(wk, one) - np.outer(one, wk)) / np.sqrt(2 * L)
        std.append([np.diag(wk).ravel(), Sw.ravel(), Aw.ravel()])
    std = np.transpose(np.array(std), (1, 2, 0))                      # (3, L², L−1)
    taken = np.concatenate([triv, std.transpose(1, 0, 2).reshape(L * L, -1)], 1)

    def rest(gen):
        v = _orth(gen)
        v = v - taken @ (taken.T @ v)
        return _orth(v.T)
    iu = np.triu_indices(L, 1)
    e = np.eye(L * L)
    sym = e[iu[0] * L + iu[1]] + e[iu[1] * L + iu[0]]
    anti = e[iu[0] * L + iu[1]] - e[iu[1] * L + iu[0]]
    return {"trivial": triv, "standard": std, "sym22": rest(sym), "anti211": rest(anti)}


def transverse_basis(L):
    """Orthonormal basis (L², L² − 2) of the complement of span{I, J}: standard, sym22, anti211."""
    b = isotypic_bases(L)
    return np.concatenate([b["standard"].transpose(1, 0, 2).reshape(L * L, -1), b["sym22"], b["anti211"]], 1)


def block_decompose(H, L):
    """Reduce an L²×L² matrix H to the blocks of Eq. (29): dict(trivial 2×2, standard 3×3 (K of
    H|std = K ⊗ I_{L−1}, averaged over w), sym22, anti211 (scalars: mean diagonal), off_block (largest
    |entry| coupling different components, or coupling different w inside "standard", or off the scalar
    in the multiplicity-one blocks, relative to max |H|))."""
    b = isotypic_bases(L)
    std = b["standard"].transpose(1, 0, 2).reshape(L * L, -1)          # columns ordered (copy, w)
    full = np.concatenate([b["trivial"], std, b["sym22"], b["anti211"]], 1)
    Hb = full.T @ H @ full
    n = [2, 3 * (L - 1), b["sym22"].shape[1], b["anti211"].shape[1]]
    edges = np.cumsum([0] + n)
    Kst = Hb[2:2 + 3 * (L - 1), 2:2 + 3 * (L - 1)].reshape(3, L - 1, 3, L - 1)
    K = np.einsum("ikjk->ij", Kst) / (L - 1)
    model = np.zeros_like(Hb)
    model[:2, :2] = Hb[:2, :2]
    model[2:edges[2], 2:edges[2]] = np.kron(K, np.eye(L - 1))
    scal = {}
    for name, lo, hi in (("sym22", edges[2], edges[3]), ("anti211", edges[3], edges[4])):
        scal[name] = float(np.trace(Hb[lo:hi, lo:hi]) / max(hi - lo, 1))
        model[lo:hi, lo:hi] = scal[name] * np.eye(hi - lo)
    off = np.abs(Hb - model).max() / max(np.abs(H).max(), 1e-300)
    return {"trivial": Hb[:2, :2], "standard": K, **scal, "off_block": float(off), "dims": n}


def block_dirs(L):
    """The five block directions (5, L²): the three standard copies with w = the first basis vector of 1⊥,
    one sym22 and one anti211 vector (the sub-blocks are BLOCK_SLICES)."""
    b = isotypic_bases(L)
    return np.array([b["standard"][i][:, 0] for i in range(3)] + [b["sym22"][:, 0], b["anti211"][:, 0]])


def block_multiplicities(L):
    """How often each of the five block directions' sub-blocks occurs: L−1 (standard ×3), L(L−3)/2 (sym22),
    (L−1)(L−2)/2 (anti211)."""
    return np.array([L - 1] * 3 + [L * (L - 3) // 2, (L - 1) * (L - 2) // 2], float)
