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

import time

import numpy as np
import scipy.linalg as sla

from copyhead.attention import variant
from copyhead.config import ActionParams
from copyhead.task import run_training_tokens
from copyhead.theory.action import ExactAverage, order_to_coeffs
from copyhead.theory.prior import neg_log_prior_family, neg_log_prior_softmax
from copyhead.theory.same_dataset import SUFFIX

from .blocks import BLOCK_SLICES, block_dirs, transverse_basis
from .correction import OneLoop, gaussian_correction, plane_point
from .evidence import _softmax, copy_weight, grad_hessian
from .posterior import CUT, SETTINGS, SOFT, posterior_means, softmax_posterior_means
from .pooling import PoolingSector
from .prior import prior_prefactor, prior_rate_form
from .softmax import softmax_point


# the variants this module adds to posterior.VARIANTS (per run's training set, averaged over the runs; the
# names of dataset_variants with the suffix _dataset)
DATASET_LABEL = {"none_dataset": "exp(−S_s), each run's own 2-D (softmax 1-D) action (Sec. 4.4), averaged over "
                                 "the runs",
                 "one_loop_dataset": "exp(−S_s − ΔS_s), ΔS_s Eq. (31) with the run's own H_E⊥ and g⊥ (linear: "
                                     "+ ΔS_pref, Eq. (30); softmax: and the observable's term with the run's own "
                                     "transverse mean and covariance), averaged over the runs (per-dataset one "
                                     "loop)",
                 "pooling_dataset": "exp(−S_s − ΔS_pool − ΔS_R − ΔS_pref): the column modes 1wᵀ integrated "
                                    "beyond Gaussian order (Eq. (37), their norm exactly, their direction under "
                                    "the run's own column gradient), the other transverse modes Eq. (31) with the "
                                    "run's own H_E⊥ and g⊥, averaged over the runs (linear only)"}


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


def transverse_system(p: ActionParams, moments: DatasetMoments, M, attention="linear", basis=None):
    """One dataset's transverse system at the plane point M: (H⊥, g⊥, Σ⁻¹, T) — its evidence Hessian and
    gradient projected on the transverse basis T (default ``blocks.transverse_basis``), and the prior's
    Σ⁻¹ = d_k H_I⊥ there in block form (:func:`prior_precision_transverse`)."""
    L = p.L
    T = transverse_basis(L) if basis is None else basis
    g, H = moments.grad_hessian_M(M, attention)
    HI = p.d_k * prior_rate_form(M, p.g_Q * p.g_K, block_dirs(L).reshape(-1, L, L), p.prior)
    return T.T @ H @ T, T.T @ g, prior_precision_transverse(HI, L), T


def dataset_one_loop(p: ActionParams, moments: DatasetMoments, m1, mP, attention="linear", basis=None) -> OneLoop:
    """Eq. (31) with one dataset's own transverse Hessian and gradient at the plane point (m1, mP) (softmax:
    the point of ``softmax.softmax_point``), the prior's Σ⁻¹ = d_k H_I⊥ in block form."""
    Ht, gt, Sinv, T = transverse_system(p, moments, plane_point(m1, mP, p.L), attention, basis)
    dS, ld, gr, ok, lmin, bad, rel = gaussian_correction(Ht, gt, Sinv)
    return OneLoop(dS, ld, gr, ok, lmin, T @ bad, rel)


def transverse_moments(p: ActionParams, moments: DatasetMoments, c1, cG):
    """The Gaussian-order posterior moments of the off-plane part x of the score matrix of one dataset (linear
    attention) at the plane point (c1, cG), the transverse Gaussian of Eq. (31): (its mean
    x̄ = −T (H⊥ + d_k H_I⊥)⁻¹ g⊥ (L×L), its second moment E‖x‖²_F = tr C + ‖x̄‖², C = (H⊥ + d_k H_I⊥)⁻¹); NaN
    where Eq. (33) fails. The column share of x̄ (``correction.column_share``) is the one-loop prediction of how
    much of the mean attention's off-plane part the column modes 1wᵀ carry."""
    L = p.L
    Ht, gt, Sinv, T = transverse_system(p, moments, plane_point(*map(float, order_to_coeffs(c1, cG, L)), L))
    C = gaussian_correction(Ht, gt, Sinv, cov=True)[-1]
    x = -(C @ gt)
    return (T @ x).reshape(L, L), float(np.trace(C) + x @ x)


def transverse_mean(p: ActionParams, moments: DatasetMoments, c1, cG) -> np.ndarray:
    """x̄ of :func:`transverse_moments` (L×L)."""
    return transverse_moments(p, moments, c1, cG)[0]


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


def dataset_correction(p: ActionParams, moments: DatasetMoments, pooling=None):
    """The per-dataset linear correction at a plane point, in the form :func:`posterior.posterior_means`
    takes: (c1, cG) -> dict(dS = Eq. (31) with the dataset's own H_E⊥ and g⊥ plus the plane prefactor
    ΔS_pref of Eq. (30) (the same order in 1/d_k; NaN where Eq. (33) fails), rel = the smallest eigenvalue of
    1 + Σ^½H_E⊥Σ^½, and the parts: logdet, grad (of Eq. (31)), pref). With ``pooling`` (a
    ``pooling.PoolingSector`` at the dataset's P) also the pooling-sector variant of Eq. (37): ``pooling``
    (its ΔS + ΔS_pref) and ``pooling_rel`` (the smallest eigenvalue of the modes it leaves Gaussian)."""
    T = transverse_basis(p.L)

    def corr(c1, cG):
        m1, mP = map(float, order_to_coeffs(c1, cG, p.L))
        system = transverse_system(p, moments, plane_point(m1, mP, p.L), "linear", T)
        dS, ld, gr, ok, lmin, bad, rel = gaussian_correction(*system[:3])
        pref = prior_prefactor(m1, mP, p.L, p.g_Q * p.g_K, p.prior)
        out = {"dS": dS + pref, "rel": rel, "logdet": ld, "grad": gr, "pref": pref}
        if pooling is not None:
            r = pooling.correction(m1, mP, *system[:3])
            out.update(pooling=r["dS"] + pref, pooling_rel=r["rel"])
        return out
    return corr


def dataset_softmax_correction(p: ActionParams, moments: DatasetMoments):
    """The per-dataset softmax correction at the copy logit β, in the form
    :func:`posterior.softmax_posterior_means` takes: β -> (OneLoop of Eq. (31) with the dataset's own H_E⊥
    and g⊥ at M = β(I − J/L), the observable's term). The observable's term is Eq. (35) with the dataset's
    transverse covariance C = (H_E⊥ + d_k H_I⊥)⁻¹ and its transverse mean x̄ = −C g⊥:
    ½ tr[∇²âG⊥ (C + x̄x̄ᵀ)] (∇âG has no transverse part at an invariant point)."""
    L = p.L
    T = transverse_basis(L)

    def corr(beta):
        M = plane_point(*softmax_point(beta, L), L)
        Ht, gt, Sinv, _ = transverse_system(p, moments, M, "softmax", T)
        dS, ld, gr, ok, lmin, bad, rel, C = gaussian_correction(Ht, gt, Sinv, cov=True)
        r = OneLoop(dS, ld, gr, ok, lmin, T @ bad, rel)
        if not ok:
            return r, np.nan
        Ho = T.T @ grad_hessian(copy_weight, M)[1] @ T
        xbar = -C @ gt
        return r, 0.5 * float(np.sum(C * Ho) + xbar @ Ho @ xbar)
    return corr


def dataset_means(p: ActionParams, P, tokens, moments=None, coarse=7, fine=161, cut=None, soft=None,
                  attention="linear", pooling=True):
    """One training set's posterior means at P (``tokens`` (P, L); ``moments`` its :class:`DatasetMoments`,
    made here if None): linear (c1, cG), :func:`posterior.posterior_means` on a ``coarse``² sub-grid; softmax
    âG, :func:`posterior.softmax_posterior_means` on ``coarse`` β points and ``fine`` β; under its own 2-D
    (1-D) action without (``none``: the same-dataset mean of Sec. 4.4) and with its own Eq. (31)
    (``one_loop``; linear with ΔS_pref, softmax with the observable's term) and, linear with ``pooling``, with
    the pooling sector of Eq. (37) (``pooling``, with its own weights ``pooling_*_weight``)."""
    cut = CUT if cut is None else cut
    soft = SOFT if soft is None else soft
    P = int(round(P))
    moments = DatasetMoments(tokens, p.V, p.g_O, p.sigma2) if moments is None else moments
    S = dataset_action(p, tokens, P, attention)
    if attention == "softmax":
        return softmax_posterior_means(p, P, coarse, fine, soft, cut, action=S,
                                       correction=dataset_softmax_correction(p, moments))
    sector = PoolingSector(p, P) if pooling else None
    return posterior_means(p, P, coarse, fine, correction=dataset_correction(p, moments, sector), soft=soft,
                           cut=cut, action=S, variants=("none", "one_loop") + (("pooling",) if pooling else ()))


def dataset_posterior_means(p: ActionParams, P, seeds, coarse=7, fine=161, cut=None, soft=None,
                            tokens=run_training_tokens, attention="linear", pooling=True):
    """The consistent per-dataset one loop at P for the training sets of runs ``seeds``: :func:`dataset_means`
    for each; returns {"per_seed": [...], the variants "none", "one_loop" (and linear with ``pooling``,
    "pooling") (means over the seeds), "soft_weight", "unstable_weight", "near_unstable_weight" (means; and
    "pooling_*_weight")}. ``tokens(p, seed, P)``: the dataset (default: the run's)."""
    per_seed = [dataset_means(p, P, tokens(p, int(s), int(round(P))), None, coarse, fine, cut, soft, attention,
                              pooling) for s in seeds]
    variants = dataset_variants(attention, pooling)
    out = {"per_seed": per_seed}
    for v in variants:
        out[v] = {k: float(np.mean([r[v][k] for r in per_seed])) for k in per_seed[0][v]}
    for v in variants[1:]:
        pre = "" if v == "one_loop" else f"{v}_"
        for k in ("soft_weight", "unstable_weight", "near_unstable_weight"):
            out[pre + k] = float(np.mean([r[pre + k] for r in per_seed]))
    return out


def dataset_variants(attention="linear", pooling=True):
    """The variants of :func:`dataset_means` (DATASET_LABEL's names without their suffix ``_dataset``)."""
    return ("none", "one_loop") + (("pooling",) if pooling and attention == "linear" else ())


def per_dataset_one_loop(ds, p: ActionParams, attention, pairs, tokens=run_training_tokens, log=print):
    """The per-dataset one loop on the same-dataset theory: each pair's posterior means without and
    with the per-dataset one loop (docs/theory.md Sec. 13, Eq. (36); :func:`dataset_posterior_means`) and
    the weight behind its flag, added to the same-dataset theory ``ds`` (pass it as
    ``copyhead.theory.same_dataset.same_dataset_theory``'s ``extend``) as ``<k>_mean_same_none`` / ``<k>_mean_same_one_loop`` (linear c1, cG; softmax aG = mP/L) and
    ``one_loop_soft_weight_same``; returns ``ds``. The pooling sector (Eq. (37)) is not computed here (it
    doubles the cost; docs/one_loop.md compares it)."""
    t0 = time.perf_counter()
    linear = variant(attention).theory == "linear"
    grid = (SETTINGS["coarse_dataset"], SETTINGS["fine"]) if linear else (SETTINGS["coarse_beta"], SETTINGS["fine_beta"])
    prms = ("c1", "cG") if linear else ("aG",)
    Ps, seeds = [float(P) for P in ds["P"].values], [int(s) for s in ds["seed"].values]
    shape = (len(Ps), len(seeds))
    vals = {f"{k}_{v}": np.full(shape, np.nan) for k in prms for v in ("none", "one_loop")}
    soft = np.full(shape, np.nan)
    for P, seed in pairs:
        r = dataset_posterior_means(p, P, [seed], *grid, SETTINGS["cut"], SETTINGS["soft"], tokens=tokens,
                                    attention="linear" if linear else "softmax", pooling=False)
        i, j = Ps.index(float(P)), seeds.index(int(seed))
        for k in prms:
            for v in ("none", "one_loop"):
                vals[f"{k}_{v}"][i, j] = r[v][k]
        soft[i, j] = r["soft_weight"]
    names = {"c1": "ĉ1", "cG": "ĉG", "aG": "âG = mP/L"}
    for k in prms:
        ds[f"{k}_mean{SUFFIX}_none"] = (("P", "seed"), vals[f"{k}_none"], {
            "long_name": f"{names[k]} posterior mean over the run's own action, on the per-dataset one loop's "
                         "grid (Eq. (18))", "units": "1"})
        ds[f"{k}_mean{SUFFIX}_one_loop"] = (("P", "seed"), vals[f"{k}_one_loop"], {
            "long_name": f"{names[k]} posterior mean with the per-dataset one loop (docs/theory.md Eq. (36)); "
                         f"flagged where one_loop_soft_weight{SUFFIX} > {SETTINGS['flag']}", "units": "1"})
    ds[f"one_loop_soft_weight{SUFFIX}"] = (("P", "seed"), soft, {
        "long_name": "share of the per-dataset one-loop posterior weight on near-critical transverse modes "
                     "(docs/theory.md Sec. 13)", "units": "1"})
    ds.attrs.update({f"one_loop_setting_{k}": v for k, v in SETTINGS.items()})
    log(f"same-dataset theory {attention}: per-dataset one loop for {len(pairs)} pairs in "
        f"{time.perf_counter() - t0:.1f} s")
    return ds
