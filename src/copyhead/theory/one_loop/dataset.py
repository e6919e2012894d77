"""The consistent per-dataset one loop (docs/theory.md, Sec. 13, "Per-dataset one loop"): each training set's
own evidence gradient and Hessian in Eq. (31), around its own plane action, weighted by its own 2-D posterior.

The equivalent-kernel correction (Eq. (32)) takes the curvature of the dataset average and the variant
``one_loop_g`` adds one dataset's gradient to it; here both come from the same dataset, and the weight they
correct is that dataset's exact 2-D action (Sec. 4.4, the curve the measured gaps are taken against), so the
predicted shift is ⟨O⟩_{S_s + ΔS_s} − ⟨O⟩_{S_s} of one expansion.

The full L²×L² Hessian of one dataset's evidence costs L² Hessian-vector products through
``evidence.DatasetEvidence`` (≈ 3–7 s at L = 32); :class:`DatasetMoments` forms it in closed form from the
dataset's second moments instead, through the statistics G = Σ_a Σ_bc A_ab A_ac C_bc, B = Σ_ab A_ab C^B_ab of
Eq. (4) (C_bc = Σ_p x_pb x_pcᵀ, C^B_ab = Σ_p x_pb t_paᵀ, x_pb = [one-hot token, e_b]): with K = I + gG,
W = K⁻¹B, Γ = ∂E/∂G and the Jacobians ∂G/∂A_i, ∂B/∂A_i,

    ∂²E/∂A_i∂A_j = 2 δ_aa' (Σ_p X_p Γ X_pᵀ)_bb' − (V g²/2) tr(K⁻¹ ∂_iG K⁻¹ ∂_jG)
                   − (g/σ²)[tr(∂_iBᵀK⁻¹∂_jB) − g tr(∂_iBᵀK⁻¹∂_jG W) − g tr(∂_jBᵀK⁻¹∂_iG W)
                            + g² tr(Wᵀ∂_iG K⁻¹ ∂_jG W)]                       (i = (a, b), j = (a', b'))

(equal to the Hessian-vector products of ``evidence.DatasetEvidence`` to rounding, test), then chains it
through the attention map (linear A = M/L; softmax row by row). Pure numpy/scipy.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from copyhead.config import ActionParams

from ..action import ExactAverage, order_to_coeffs
from ..prior import neg_log_prior_family, neg_log_prior_softmax
from ..same_dataset import run_training_tokens
from .blocks import BLOCK_SLICES, block_dirs, transverse_basis
from .correction import OneLoop, gaussian_correction, plane_point
from .evidence import _softmax, copy_weight, grad_hessian
from .posterior import CUT, SOFT, posterior_means, softmax_posterior_means
from .prior import prior_prefactor, prior_rate_form
from .softmax import softmax_point


# the variants this module adds to posterior.VARIANTS (per run's training set, averaged over the runs)
DATASET_VARIANTS = ("none_dataset", "one_loop_dataset")
DATASET_LABEL = {"none_dataset": "exp(−S_s), each run's own 2-D (softmax 1-D) action (Sec. 4.4), averaged over "
                                 "the runs",
                 "one_loop_dataset": "exp(−S_s − ΔS_s), ΔS_s Eq. (31) with the run's own H_E⊥ and g⊥ (linear: "
                                     "+ ΔS_pref, Eq. (30); softmax: and the observable's term with the run's own "
                                     "transverse mean and covariance), averaged over the runs (per-dataset one "
                                     "loop)"}


class DatasetMoments:
    """One dataset's evidence E(A) (Eq. (4), uncentred one-hot targets) with its gradient and full Hessian
    in the attention A (:meth:`grad_hessian_A`) and in the score matrix M (:meth:`grad_hessian_M`), in closed
    form from the dataset's second moments (module docstring). ``tokens`` (P, L)."""

    def __init__(self, tokens, V, g_O, sigma2):
        tokens = np.asarray(tokens)
        P, L = tokens.shape
        self.V, self.L, self.g, self.sigma2 = V, L, g_O / sigma2, sigma2
        T = np.eye(V)[tokens]                                                   # (P, L, V)
        X = np.concatenate([T, np.broadcast_to(np.eye(L), (P, L, L))], -1)     # (P, L, D)
        self.X = X
        self.C = np.einsum("pbd,pce->bcde", X, X)                               # (L, L, D, D)
        self.CB = np.einsum("pbd,pav->abdv", X, T)                              # (L, L, D, V)

    def _jacobians(self, A):
        L, D = self.L, self.C.shape[-1]
        N = np.einsum("ac,bcde->abde", A, self.C)                               # Σ_c A_ac C_bc
        JG = (N + np.swapaxes(N, -1, -2)).reshape(L * L, D, D)                  # ∂G/∂A_ab
        G = np.einsum("ab,abde->de", A, N)
        JB = self.CB.reshape(L * L, D, self.V)                                  # ∂B/∂A_ab
        B = np.einsum("ab,abdv->dv", A, self.CB)
        return G, B, JG, JB

    def grad_hessian_A(self, A):
        """(∂E/∂A (L²,), ∂²E/∂A² (L², L²)) at the attention A, vec row-major (index a·L + b)."""
        A = np.asarray(A, float)
        L, g, s2, V = self.L, self.g, self.sigma2, self.V
        G, B, JG, JB = self._jacobians(A)
        D = G.shape[0]
        Lc = np.linalg.cholesky(np.eye(D) + g * G)
        R = sla.solve_triangular(Lc, np.eye(D), lower=True)                    # K⁻¹ = RᵀR
        Kinv = R.T @ R
        W = Kinv @ B
        Gam = 0.5 * V * g * Kinv + g * g / (2.0 * s2) * W @ W.T
        Bet = -(g / s2) * W
        grad = np.einsum("de,nde->n", Gam, JG) + np.einsum("dv,ndv->n", Bet, JB)
        Cg = np.einsum("pbd,de,pce->bc", self.X, Gam, self.X)
        H = np.kron(np.eye(L), 2.0 * Cg)
        Y = (R @ JG @ R.T).reshape(L * L, -1)                                   # tr(K⁻¹∂_iG K⁻¹∂_jG) = Y_i·Y_j
        U = (R @ JG @ W).reshape(L * L, -1)                                     # R ∂_iG W
        Bt = (R @ JB).reshape(L * L, -1)                                        # R ∂_iB
        cross = Bt @ U.T
        H += -0.5 * V * g * g * (Y @ Y.T) - (g / s2) * (Bt @ Bt.T - g * (cross + cross.T) + g * g * (U @ U.T))
        return grad, 0.5 * (H + H.T)

    def grad_hessian_M(self, M, attention="linear"):
        """(∇E (L²,), ∇²E (L², L²)) in the score matrix M: linear A = M/L, softmax A = softmax_b M (the
        chain rule row by row: J_a = diag(s_a) − s_a s_aᵀ and the second derivative of s_a)."""
        M = np.asarray(M, float)
        L = self.L
        if attention == "linear":
            g, H = self.grad_hessian_A(M / L)
            return g / L, H / L**2
        if attention != "softmax":
            raise ValueError(f"attention {attention!r} is not allowed; allowed values: ['linear', 'softmax']")
        S = _softmax(M)
        gA, HA = self.grad_hessian_A(S)
        Jac = np.zeros((L * L, L * L))
        extra = np.zeros((L * L, L * L))
        GA = gA.reshape(L, L)
        for a in range(L):
            s = S[a]
            Ja = np.diag(s) - np.outer(s, s)
            Jac[a * L:(a + 1) * L, a * L:(a + 1) * L] = Ja
            # ∂²s_b/∂m_c∂m_d contracted with ∂E/∂s_b: the Hessian of f(s(m)) = Σ_b GA_b s_b(m)
            u = GA[a] - s @ GA[a]
            ext = np.diag(s * u) - np.outer(s * u, s) - np.outer(s, s * u)
            extra[a * L:(a + 1) * L, a * L:(a + 1) * L] = ext
        grad = Jac.T @ gA
        H = Jac.T @ HA @ Jac + extra
        return grad, 0.5 * (H + H.T)


def prior_precision_transverse(HI, L):
    """Σ⁻¹ = d_k H_I⊥ on ``blocks.transverse_basis(L)`` (columns: the three standard copies × (L−1) w, then
    sym22, anti211) from its five block values ``HI`` (5×5, :func:`correction.ek_blocks`): K ⊗ 1_{L−1} and
    two scalars (Eq. (29); the prior Hessian at a plane point is invariant)."""
    n22 = L * (L - 3) // 2
    n211 = (L - 1) * (L - 2) // 2
    st = BLOCK_SLICES["standard"]
    return sla.block_diag(np.kron(HI[st, st], np.eye(L - 1)), HI[3, 3] * np.eye(n22), HI[4, 4] * np.eye(n211))


def dataset_one_loop(p: ActionParams, moments: DatasetMoments, m1, mP, attention="linear", basis=None) -> OneLoop:
    """Eq. (31) with one dataset's own transverse Hessian and gradient at the plane point (m1, mP) (softmax:
    the point of ``softmax.softmax_point``), the prior's Σ⁻¹ = d_k H_I⊥ in block form."""
    L = p.L
    M = plane_point(m1, mP, L)
    T = transverse_basis(L) if basis is None else basis
    g, H = moments.grad_hessian_M(M, attention)
    HI = p.d_k * prior_rate_form(M, p.g_Q * p.g_K, block_dirs(L).reshape(-1, L, L), p.prior)
    dS, ld, gr, ok, lmin, bad, rel = gaussian_correction(T.T @ H @ T, T.T @ g, prior_precision_transverse(HI, L))
    return OneLoop(dS, ld, gr, ok, lmin, T @ bad, rel)


def transverse_mean(p: ActionParams, tokens, c1, cG) -> np.ndarray:
    """The Gaussian-order posterior mean of the off-plane part of the score matrix of one dataset (linear
    attention) at the plane point (c1, cG): x̄ = −T (H⊥ + d_k H_I⊥)⁻¹ g⊥ (L×L; the mean of the transverse
    Gaussian of Eq. (31)); NaN where Eq. (33) fails. Its column share (``correction.column_share``) is the
    one-loop prediction of how much of the mean attention's off-plane part the column modes 1wᵀ carry."""
    L = p.L
    m1, mP = map(float, order_to_coeffs(c1, cG, L))
    M = plane_point(m1, mP, L)
    T = transverse_basis(L)
    g, H = DatasetMoments(tokens, p.V, p.g_O, p.sigma2).grad_hessian_M(M)
    HI = p.d_k * prior_rate_form(M, p.g_Q * p.g_K, block_dirs(L).reshape(-1, L, L), p.prior)
    A = T.T @ H @ T + prior_precision_transverse(HI, L)
    A = 0.5 * (A + A.T)
    if np.linalg.eigvalsh(A)[0] <= 0:
        return np.full((L, L), np.nan)
    return -(T @ np.linalg.solve(A, T.T @ g)).reshape(L, L)


def dataset_action(p: ActionParams, tokens, P, attention="linear"):
    """S_s of one dataset at P (Eq. (16) with that dataset's exact evidence, Eq. (4); Sec. 4.4): linear, a
    function of broadcastable (C1, CG) arrays; softmax, of β (the 1-D action with the gauge integrated out,
    Eq. (15))."""
    ex = ExactAverage.of_tokens(p, np.asarray(tokens)[None])
    P = int(P)
    if attention == "softmax":
        return lambda beta: ex.nle_beta(P, beta, 0) + neg_log_prior_softmax(beta, p.L, p.d_k, p.g_Q, p.g_K, p.prior)

    def S(C1, CG):
        m1, mP = order_to_coeffs(C1, CG, p.L)
        return ex.nle_points(P, m1, mP, 0) + neg_log_prior_family(m1, mP, p.L, p.d_k, p.g_Q, p.g_K, p.prior)
    return S


def dataset_correction(p: ActionParams, tokens):
    """The per-dataset linear correction at a plane point, in the form :func:`posterior.posterior_means`
    takes: (c1, cG) -> dict(dS = Eq. (31) with the dataset's own H_E⊥ and g⊥ plus the plane prefactor
    ΔS_pref of Eq. (30) (the same order in 1/d_k; NaN where Eq. (33) fails), rel = the smallest eigenvalue of
    1 + Σ^½H_E⊥Σ^½, and the parts: logdet, grad (of Eq. (31)), pref)."""
    mom = DatasetMoments(tokens, p.V, p.g_O, p.sigma2)
    T = transverse_basis(p.L)

    def corr(c1, cG):
        m1, mP = map(float, order_to_coeffs(c1, cG, p.L))
        r = dataset_one_loop(p, mom, m1, mP, "linear", T)
        pref = prior_prefactor(m1, mP, p.L, p.g_Q * p.g_K, p.prior)
        return {"dS": r.dS + pref, "rel": r.min_rel_eig, "logdet": r.logdet, "grad": r.grad_term, "pref": pref}
    return corr


def dataset_softmax_correction(p: ActionParams, tokens):
    """The per-dataset softmax correction at the copy logit β, in the form
    :func:`posterior.softmax_posterior_means` takes: β -> (OneLoop of Eq. (31) with the dataset's own H_E⊥
    and g⊥ at M = β(I − J/L), the observable's term). The observable's term is Eq. (35) with the dataset's
    transverse covariance C = (H_E⊥ + d_k H_I⊥)⁻¹ and its transverse mean x̄ = −C g⊥:
    ½ tr[∇²âG⊥ (C + x̄x̄ᵀ)] (∇âG has no transverse part at an invariant point)."""
    mom = DatasetMoments(tokens, p.V, p.g_O, p.sigma2)
    L = p.L
    T = transverse_basis(L)

    def corr(beta):
        m1, mP = softmax_point(beta, L)
        M = plane_point(m1, mP, L)
        g, H = mom.grad_hessian_M(M, "softmax")
        HI = p.d_k * prior_rate_form(M, p.g_Q * p.g_K, block_dirs(L).reshape(-1, L, L), p.prior)
        Sinv = prior_precision_transverse(HI, L)
        Ht, gt = T.T @ H @ T, T.T @ g
        dS, ld, gr, ok, lmin, bad, rel = gaussian_correction(Ht, gt, Sinv)
        r = OneLoop(dS, ld, gr, ok, lmin, T @ bad, rel)
        if not ok:
            return r, np.nan
        Ho = T.T @ grad_hessian(copy_weight, M)[1] @ T
        C = np.linalg.inv(0.5 * (Ht + Ht.T) + Sinv)
        xbar = -C @ gt
        return r, 0.5 * float(np.sum(C * Ho) + xbar @ Ho @ xbar)
    return corr


def dataset_posterior_means(p: ActionParams, P, seeds, coarse=7, fine=161, cut=None, soft=None,
                            tokens=run_training_tokens, attention="linear"):
    """The consistent per-dataset one loop at P for the training sets of runs ``seeds``: for each, the
    posterior means (linear (c1, cG), :func:`posterior.posterior_means` on a ``coarse``² sub-grid; softmax âG,
    :func:`posterior.softmax_posterior_means` on ``coarse`` β points and ``fine`` β) under that dataset's own
    2-D (1-D) action without (``none``: the same-dataset mean of Sec. 4.4) and with its own Eq. (31)
    (``one_loop``; linear with ΔS_pref, softmax with the observable's term); returns {"per_seed": [...], "none", "one_loop"
    (means over the seeds), "soft_weight", "unstable_weight", "near_unstable_weight" (means)}.
    ``tokens(p, seed, P)``: the dataset (default: the run's)."""
    cut = CUT if cut is None else cut
    soft = SOFT if soft is None else soft
    per_seed = []
    for s in seeds:
        tok = tokens(p, int(s), int(round(P)))
        S = dataset_action(p, tok, int(round(P)), attention)
        if attention == "softmax":
            r = softmax_posterior_means(p, P, coarse, fine, soft, cut, action=S,
                                        correction=dataset_softmax_correction(p, tok))
        else:
            r = posterior_means(p, P, coarse, fine, correction=dataset_correction(p, tok), soft=soft, cut=cut,
                                action=S, variants=("none", "one_loop"))
        per_seed.append(r)
    out = {"per_seed": per_seed}
    for v in ("none", "one_loop"):
        out[v] = {k: float(np.mean([r[v][k] for r in per_seed])) for k in per_seed[0][v]}
    for k in ("soft_weight", "unstable_weight", "near_unstable_weight"):
        out[k] = float(np.mean([r[k] for r in per_seed]))
    return out
