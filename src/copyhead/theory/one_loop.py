"""One-loop (Gaussian) correction from the L² − 2 transverse directions of the score matrix
(docs/theory.md, Sec. 13; issue 21).

The 2-D theory keeps M = m1 J + mP I. Around such a point the full score matrix fluctuates in the
orthogonal complement of span{I, J} (Frobenius). This module gives, as pure functions:
- the Hessian of the prior rate I(M) = Σ_i φ(σ_i(M)) (per unit d_k) at a symmetric M, in closed form
  (Eq. (28); the Gaussian rate ||M||²/(2c) gives I/c);
- the evidence E(M) = −ln p(Y|A(M)) (Eq. (4)) of one dataset, or in the equivalent-kernel form
  (population moments, Eq. (11)), as a torch function of the L×L matrix M, and its gradient and Hessian
  by autograd (linear A = M/L or softmax A = softmax_b M);
- the isotypic decomposition of R^{L×L} under simultaneous permutations (Eq. (29)) and the reduction of
  an invariant Hessian to its blocks;
- the one-loop correction ΔS = ½ ln det(1 + Σ H_E⊥) − ½ g⊥ᵀ(H_E⊥ + Σ⁻¹)⁻¹g⊥, Σ = (d_k H_I⊥)⁻¹
  (Eq. (31)), with a flag (no number) where d_k H_I⊥ + H_E⊥ is not positive definite (Eq. (33));
- its fast block form for the equivalent-kernel evidence (g⊥ = 0, five Hessian-vector products, Eq. (32)),
  the terms beyond it, a dataset's gradient term (Eq. (34)) and the softmax observable's (Eq. (35)), are in
  :mod:`copyhead.theory.one_loop_terms`;
- the prior's saddle-point prefactor on the plane, −½ ln det H_I∥ (Eq. (30); the transverse part of the
  prefactor of Eq. (27) cancels against the transverse Gaussian normalisation).
Vectorisation convention: vec(M) = M.reshape(-1) (row-major, index a·L + b).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import scipy.linalg as sla
import torch

from .evidence import LOG2PI

BLOCKS = ("trivial", "standard", "sym22", "anti211")


# ----------------------------------------------------------------------------- prior, Eq. (28)
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
        raise ValueError(f"prior {prior!r} is not allowed; allowed values: ['large_deviation', 'gaussian']")
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


# ----------------------------------------------------------------------------- evidence, Eqs. (4), (11)
def _attention(M, attention):
    L = M.shape[-1]
    if attention == "linear":
        return M / L
    if attention == "softmax":
        return torch.softmax(M, dim=-1)
    raise ValueError(f"attention {attention!r} is not allowed; allowed values: ['linear', 'softmax']")


def _nle_from_stats(G, B, yy, N, V, g_O, sigma2):
    """Eq. (4) in torch: (NV/2) ln 2πσ² + (V/2) ln det(I + gG) + [yy − g Tr Bᵀ(I + gG)⁻¹B]/(2σ²)."""
    g = g_O / sigma2
    K = torch.eye(G.shape[-1], dtype=G.dtype) + g * G
    Lc = torch.linalg.cholesky(K)
    logdet = 2.0 * torch.log(torch.diagonal(Lc)).sum()
    fit = (B * torch.cholesky_solve(B, Lc)).sum()
    return 0.5 * N * V * (LOG2PI + np.log(sigma2)) + 0.5 * V * logdet + (yy - g * fit) / (2.0 * sigma2)


def evidence_dataset(tokens, V, g_O, sigma2, attention="linear"):
    """E(M) = −ln p(Y|A(M)) of one dataset (tokens (P, L), uncentred one-hot targets), Eqs. (1), (4), as
    a torch function of the L×L score matrix M (float64)."""
    tokens = np.asarray(tokens)
    P, L = tokens.shape
    T = torch.as_tensor(np.eye(V)[tokens])
    X = torch.cat([T, torch.eye(L, dtype=T.dtype).expand(P, L, L)], dim=-1)        # (P, L, D)
    Xf = X.reshape(P * L, V + L)
    yy, N = float(P * L), P * L

    def E(M):
        Z = torch.einsum("ab,pbd->pad", _attention(M, attention), X).reshape(P * L, V + L)
        return _nle_from_stats(Z.T @ Z, Z.T @ T.reshape(P * L, V), yy, N, V, g_O, sigma2)
    E.Xf = Xf
    return E


def evidence_ek(N, V, L, g_O, sigma2, attention="linear"):
    """Equivalent-kernel E(M): Eq. (4) with the population moments of Eq. (11) (N Ḡ, N B̄, yy = N) of the
    attention A(M); a torch function of M. Exactly invariant under simultaneous permutations."""
    IV = torch.eye(V, dtype=torch.float64)
    JV = torch.ones(V, V, dtype=torch.float64)

    def E(M):
        A = _attention(M, attention)
        r = A.sum(1)
        Gtt = (A * A).sum() / L * (IV - JV / V) / V + (r @ r) / L * JV / V**2
        Gtp = torch.ones(V, 1, dtype=A.dtype) * (r @ A)[None, :] / (L * V)
        Gpp = A.T @ A / L
        G = torch.cat([torch.cat([Gtt, Gtp], 1), torch.cat([Gtp.T, Gpp], 1)], 0)
        Btt = torch.diagonal(A).sum() / L * (IV - JV / V) / V + r.sum() / L * JV / V**2
        Bp = A.sum(0)[:, None] * torch.ones(1, V, dtype=A.dtype) / (V * L)
        return _nle_from_stats(N * G, N * torch.cat([Btt, Bp], 0), float(N), N, V, g_O, sigma2)
    return E


def _grad_graph(E, M):
    M = torch.as_tensor(np.asarray(M, float)).clone().requires_grad_(True)
    g, = torch.autograd.grad(E(M), M, create_graph=True)
    return M, g


def grad_hessian(E, M):
    """(gradient (L²,), Hessian (L², L²)) of a torch scalar function E of the L×L matrix M, by autograd
    (double backward, one pass per row)."""
    M, g = _grad_graph(E, M)
    gf = g.reshape(-1)
    H = torch.stack([torch.autograd.grad(gf[i], M, retain_graph=True)[0].reshape(-1)
                     for i in range(gf.numel())])
    return gf.detach().numpy(), (0.5 * (H + H.T)).numpy()


def hvp(E, M, dirs):
    """Hessian of E at M applied to the directions dirs (k, L, L): (k, L²)."""
    M, g = _grad_graph(E, M)
    return np.stack([torch.autograd.grad((g * torch.as_tensor(d)).sum(), M, retain_graph=True)[0]
                     .reshape(-1).numpy() for d in np.asarray(dirs, float)])


# ----------------------------------------------------------------------------- isotypic blocks, Eq. (29)
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


# ----------------------------------------------------------------------------- the correction, Eq. (31)
@dataclasses.dataclass
class OneLoop:
    dS: float                 # Eq. (31); NaN where unstable
    logdet: float             # ½ ln det(1 + Σ H_E⊥)
    grad_term: float          # −½ g⊥ᵀ(H_E⊥ + Σ⁻¹)⁻¹ g⊥
    stable: bool              # d_k H_I⊥ + H_E⊥ positive definite (Eq. (33))
    min_eig: float            # smallest eigenvalue of d_k H_I⊥ + H_E⊥
    unstable_dirs: np.ndarray  # (L², k) the unstable directions in vec(M) coordinates (k = 0 if stable)
    min_rel_eig: float = np.nan  # smallest eigenvalue of 1 + Σ^½ H_E⊥ Σ^½ (< 0 unstable, → 0⁺ critical)


def gaussian_correction(H, g, Sinv, tol=1e-10):
    """−ln E_{x∼N(0,Σ)} exp(−gᵀx − ½xᵀHx) = ½ ln det(1 + ΣH) − ½ gᵀ(H + Σ⁻¹)⁻¹g (Eq. (31)), with its
    parts: (ΔS, ln det part, gradient part, stable, λ_min(H + Σ⁻¹), unstable directions, smallest
    eigenvalue of 1 + Σ^½HΣ^½); ΔS = NaN, stable = False where H + Σ⁻¹ is not positive definite (the
    integral diverges). Near 0⁺ of the last number the mode is critical and ½ ln det → −∞: the Gaussian
    order is not reliable there (Sec. 13)."""
    Sinv = 0.5 * (Sinv + Sinv.T)
    A = 0.5 * (H + H.T) + Sinv
    ev, evec = np.linalg.eigh(A)
    bad = ev <= tol * np.abs(ev).max()
    rel = float(sla.eigh(A, Sinv, eigvals_only=True)[0])
    if bad.any():
        return np.nan, np.nan, np.nan, False, float(ev[0]), evec[:, bad], rel
    ls = np.linalg.eigvalsh(Sinv)
    logdet = 0.5 * (np.sum(np.log(ev)) - np.sum(np.log(ls)))
    y = evec.T @ g
    grad = -0.5 * float(np.sum(y**2 / ev))
    return logdet + grad, logdet, grad, True, float(ev[0]), evec[:, :0], rel


def one_loop(H_E, g_E, H_I, d_k, basis=None):
    """ΔS of Eq. (31) from full L²×L² Hessians H_E (evidence), H_I (prior rate per unit d_k) and the
    evidence gradient g_E (L²,), projected on the transverse basis (default: complement of span{I, J});
    unstable directions are returned in vec(M) coordinates."""
    L = int(round(np.sqrt(len(g_E))))
    T = transverse_basis(L) if basis is None else basis
    dS, ld, gr, ok, lmin, bad, rel = gaussian_correction(T.T @ H_E @ T, T.T @ g_E, d_k * (T.T @ H_I @ T))
    return OneLoop(dS, ld, gr, ok, lmin, T @ bad, rel)


def _block_dirs(L):
    b = isotypic_bases(L)
    return np.array([b["standard"][i][:, 0] for i in range(3)] + [b["sym22"][:, 0], b["anti211"][:, 0]])


BLOCK_SLICES = {"standard": slice(0, 3), "sym22": slice(3, 4), "anti211": slice(4, 5)}


def ek_blocks(m1, mP, P, V, L, d_k, g_Q, g_K, g_O, sigma2, prior="large_deviation", attention="linear", E=None):
    """The transverse blocks of Eq. (32) at the plane point: (D (5, L²) the block directions (3 standard
    copies with w = the first basis vector of 1⊥, one sym22, one anti211 vector), H_E and d_k H_I on them
    (5×5; the BLOCK_SLICES sub-blocks are the 3×3 K and the two scalars), the multiplicities (5,))."""
    E = evidence_ek(P * L, V, L, g_O, sigma2, attention) if E is None else E
    M = m1 * np.ones((L, L)) + mP * np.eye(L)
    D = _block_dirs(L)
    HE = D @ hvp(E, M, D.reshape(-1, L, L)).T
    HI = d_k * prior_rate_form(M, g_Q * g_K, D.reshape(-1, L, L), prior)
    return D, HE, HI, np.array([L - 1] * 3 + [L * (L - 3) // 2, (L - 1) * (L - 2) // 2], float)


def softest_mode(m1, mP, P, V, L, d_k, g_Q, g_K, g_O, sigma2, prior="large_deviation", attention="linear",
                 E=None):
    """The softest transverse mode of the equivalent-kernel one-loop integral (Eqs. (32), (33)): (block
    name, the smallest eigenvalue of 1 + Σ^½H_E⊥Σ^½ (< 0 unstable, → 0⁺ critical), its direction (L×L,
    unit Frobenius norm; in the standard block with w = the first basis vector of 1⊥))."""
    D, HE, HI, mult = ek_blocks(m1, mP, P, V, L, d_k, g_Q, g_K, g_O, sigma2, prior, attention, E)
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


def one_loop_ek(m1, mP, P, V, L, d_k, g_Q, g_K, g_O, sigma2, prior="large_deviation", attention="linear",
                E=None):
    """Eq. (32): ΔS for the equivalent-kernel evidence (g⊥ = 0 by symmetry) from the blocks: (L−1)× the
    3×3 standard block, L(L−3)/2 × the sym22 scalar, (L−1)(L−2)/2 × the anti211 scalar; five
    Hessian-vector products of E and the closed-form prior blocks. Returns OneLoop (unstable_dirs: the
    unstable block directions, w = first basis vector of 1⊥)."""
    return one_loop_blocks(*ek_blocks(m1, mP, P, V, L, d_k, g_Q, g_K, g_O, sigma2, prior, attention, E), L)


def one_loop_blocks(D, HE, HI, mult, L):
    """Eq. (32) from the blocks of :func:`ek_blocks` (what one_loop_ek returns)."""
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


def prior_prefactor(m1, mP, L, c, prior="large_deviation"):
    """ΔS_pref = −½ ln det H_I∥(m), Eq. (30): the prefactor of the plane-projected prior density (Eq. (27))
    in the orthonormal plane coordinates (I/√L, (J−I)/√(L(L−1))), up to an m-independent constant."""
    T = isotypic_bases(L)["trivial"]
    H = prior_rate_form(m1 * np.ones((L, L)) + mP * np.eye(L), c, T.T.reshape(2, L, L), prior)
    return -0.5 * float(np.linalg.slogdet(H)[1])
