"""The posterior of the scores (Q, K) with the readout W integrated out exactly (docs/engine.md, "HMC").

W enters the network linearly with a Gaussian prior, so given the attention A each of the V output
columns is Bayesian linear regression on the features z_αa = X_αᵀ A[a, :]ᵀ ∈ R^(V+L). With Z the stacked
features (N = P·L rows), Y the one-hot targets, Σ = ZᵀZ/σ² + I/g_O and B = ZᵀY,

    −log p(Y | Q, K) = (N V/2) log 2πσ² + (V D/2) log g_O + (V/2) log det Σ + ‖Y‖²/(2σ²)
                       − tr(Bᵀ Σ⁻¹ B)/(2σ⁴),                                          D = V + L,

and W | Q, K, Y has rows W_v ~ N(Σ⁻¹ B_v/σ², Σ⁻¹) (what ``CopyAttention.readout_posterior`` computes for
one chain). With X_α = [T_α | I] and S = AᵀA, the (V+L)×(V+L) statistics are

    ZᵀZ = [[Σ_α T_αᵀ S T_α, nᵀ S], [S n, P S]],      ZᵀY = [[Σ_α T_αᵀ Aᵀ T_α], [Aᵀ n]]

(n = Σ_α T_α, L×V), linear in S and A through the token co-occurrence counts the engine already builds
(:class:`copyhead.suffstats.Cooccurrence`, N[b, c] for b < c): Σ_α T_αᵀ S T_α = Σ_{b<c} S_bc (N_bc + N_bcᵀ)
+ diag(Σ_b S_bb n_b) and Σ_α T_αᵀ Aᵀ T_α = Σ_{b<c} (A_cb N_bc + A_bc N_bcᵀ) + diag(Σ_b A_bb n_b). A
gradient therefore costs about one SGLD step's energy, and Σ is only D×D. The energy
U(Q, K) = −log p(Y | Q, K) + ‖Q‖²/(2g_Q) + ‖K‖²/(2g_K) targets the same posterior of every function of
A as the joint (Q, K, W) posterior, without its stiff readout directions; its gradient is by autograd
through A (tests/test_collapsed.py checks it, the statistics and the likelihood against brute force); the
gradient by hand (:meth:`CollapsedPosterior.energy_grad`) costs about 1.5× an SGLD step's.
"""
from __future__ import annotations

import math

import torch

from .model import CopyAttention
from .suffstats import Cooccurrence


class CollapsedPosterior:
    """U(Q, K) and ∇U of the K chains of ``model`` (position scores), and exact draws of W given (Q, K).

    The state ``q`` of a chain is the (Q, K) part of the model's flat θ (``model.sQ``, ``model.sK``: the
    first ``n_qk`` entries), shape (K, n_qk)."""

    def __init__(self, model: CopyAttention):
        if model.scores_kind != "position":
            raise ValueError("the collapsed posterior needs position-only scores (scores: position)")
        if model.prior_weight != 1.0:
            raise ValueError("the collapsed posterior is the posterior: prior_weight must be 1")
        self.model = m = model
        self.V, self.L, self.D, self.K = m.V, m.L, m.layout.D, m.n_chains
        self.n_qk = m.sK.stop
        if self.n_qk != m.sW.start:
            raise ValueError("expected θ = [Q, K, W]")
        self.prec_qk = m._prec[: self.n_qk]                        # 1/g per entry of (Q, K)
        self.sigma2, self.g_O = m.sigma2, m.g_O
        # the counts: the model's own, or (a model on the direct path) sparse ones built here, which are
        # cheaper for these statistics than products over the sequences at every size tried
        self.counts = m.counts if m.counts is not None else Cooccurrence(
            [T.argmax(-1).cpu().numpy() for T in m.T], m.V, "sparse", m.dtype, m.device)
        self.P = self.counts.P                                       # P per chain (chains may differ)
        N = self.P * m.L
        self.const = (0.5 * N * self.V * math.log(2 * math.pi * self.sigma2)
                      + 0.5 * self.V * self.D * math.log(self.g_O) + N / (2 * self.sigma2))     # ‖Y‖² = N
        self.n = self.counts.n                                                    # (K, L, V)
        iu = torch.triu_indices(m.L, m.L, 1, device=m.device)
        self._upper = iu[0] * m.L + iu[1]                                         # flat (b, c), b < c
        self._lower = iu[1] * m.L + iu[0]                                         # flat (c, b)
        self._eye = torch.eye(self.D, dtype=m.dtype, device=m.device)

    # ---- the statistics ------------------------------------------------------------------------
    def attention(self, q: torch.Tensor) -> torch.Tensor:
        m = self.model
        Q = q[:, m.sQ].unflatten(-1, (m.d_k, m.L))
        Kq = q[:, m.sK].unflatten(-1, (m.d_k, m.L))
        return m._attend(torch.bmm(Q.transpose(1, 2), Kq) / m.d_k)

    def _token_blocks(self, S: torch.Tensor, A: torch.Tensor):
        """(Σ_α T_αᵀ S T_α, Σ_α T_αᵀ Aᵀ T_α), each (K, V, V)."""
        K, V = self.K, self.V
        Sf, Af = S.reshape(K, -1), A.reshape(K, -1)
        cols = torch.stack([Sf[:, self._upper], Af[:, self._lower], Af[:, self._upper]], -1)   # (K, pairs, 3)
        Z = self.counts.token_side(cols).view(K, V, V, 3)          # Σ_{b<c} coef_bc N_bc[u, v]
        dS = torch.diag_embed((S.diagonal(0, 1, 2).unsqueeze(-1) * self.n).sum(1))
        dA = torch.diag_embed((A.diagonal(0, 1, 2).unsqueeze(-1) * self.n).sum(1))
        return (Z[..., 0] + Z[..., 0].transpose(1, 2) + dS,
                Z[..., 1] + Z[..., 2].transpose(1, 2) + dA)

    def stats(self, A: torch.Tensor):
        """(ZᵀZ (K, D, D), ZᵀY (K, D, V)) at the attention A (K, L, L)."""
        S = torch.bmm(A.transpose(1, 2), A)
        tt, ty = self._token_blocks(S, A)
        nS = torch.bmm(self.n.transpose(1, 2), S)                  # (K, V, L)
        PS = self.P[:, None, None] * S
        ZZ = torch.cat([torch.cat([tt, nS], 2), torch.cat([nS.transpose(1, 2), PS], 2)], 1)
        ZY = torch.cat([ty, torch.bmm(A.transpose(1, 2), self.n)], 1)
        return ZZ, ZY

    def _factor(self, A: torch.Tensor):
        """(C, ZᵀY, ok): the Cholesky factor of Σ = ZᵀZ/σ² + I/g_O per chain, and whether it exists (Σ is
        positive definite for every finite A; a chain whose A is not finite gets ok = False instead of
        stopping the batch)."""
        ZZ, ZY = self.stats(A)
        C, info = torch.linalg.cholesky_ex(ZZ / self.sigma2 + self._eye / self.g_O)
        return C, ZY, info == 0

    # ---- energy, gradient, readout draws ---------------------------------------------------------
    def neg_log_lik(self, q: torch.Tensor) -> torch.Tensor:
        """−log p(Y | Q, K) per chain (K,)."""
        C, B, ok = self._factor(self.attention(q))
        logdet = 2 * torch.log(torch.diagonal(C, 0, 1, 2)).sum(1)
        Y = torch.linalg.solve_triangular(C, B, upper=False)          # C⁻¹ B: tr(Bᵀ Σ⁻¹ B) = ‖C⁻¹B‖²
        nll = self.const + 0.5 * self.V * logdet - (Y * Y).sum((1, 2)) / (2 * self.sigma2 ** 2)
        return torch.where(ok, nll, torch.full_like(nll, float("inf")))

    def energy(self, q: torch.Tensor) -> torch.Tensor:
        """U(Q, K) per chain (K,): −log p(Y | Q, K) − log prior(Q, K) (the prior up to its constant)."""
        return self.neg_log_lik(q) + 0.5 * (q * q * self.prec_qk).sum(1)

    def energy_grad_autograd(self, q: torch.Tensor):
        """(U (K,), ∇U (K, n_qk)) by autograd through :meth:`energy` (the reference of the hand gradient)."""
        with torch.enable_grad():
            x = q.detach().requires_grad_(True)
            U = self.energy(x)
            (g,) = torch.autograd.grad(U.sum(), x)
        return U.detach(), g

    def energy_grad(self, q: torch.Tensor):
        """(U (K,), ∇U (K, n_qk)) by hand: with X = Σ⁻¹B, ∂U/∂(ZᵀZ) = [(V/2)Σ⁻¹ + XXᵀ/(2σ⁴)]/σ² and
        ∂U/∂B = −X/σ⁴, carried to S = AᵀA and A by the adjoints of the statistics (the counts read the
        other way, ``Cooccurrence.pair_side``), then to (Q, K) through the attention."""
        m, V, L, K = self.model, self.V, self.L, self.K
        Q = q[:, m.sQ].unflatten(-1, (m.d_k, L))
        Kq = q[:, m.sK].unflatten(-1, (m.d_k, L))
        A = m._attend(torch.bmm(Q.transpose(1, 2), Kq) / m.d_k)
        C, B, ok = self._factor(A)
        if not bool(ok.all()):                      # such a chain's U is infinite (rejected); keep the rest
            C = torch.where(ok[:, None, None], C, self._eye)
        X = torch.cholesky_solve(B, C)                               # Σ⁻¹ B   (K, D, V)
        logdet = 2 * torch.log(torch.diagonal(C, 0, 1, 2)).sum(1)
        s2 = self.sigma2
        U = self.const + 0.5 * V * logdet - (B * X).sum((1, 2)) / (2 * s2 ** 2) + 0.5 * (q * q * self.prec_qk).sum(1)
        U = torch.where(ok, U, torch.full_like(U, float("inf")))
        G = (0.5 * V * torch.cholesky_inverse(C) + torch.bmm(X, X.transpose(1, 2)) / (2 * s2 ** 2)) / s2
        GB = X / -(s2 ** 2)
        Gtt, Gtp, Gpp = G[:, :V, :V], G[:, :V, V:], G[:, V:, V:]
        GBt, GBp = GB[:, :V], GB[:, V:]
        n = self.n                                                   # (K, L, V)
        dS = 2 * torch.bmm(n, Gtp) + self.P[:, None, None] * Gpp     # tp, pt and pp blocks
        dA = torch.bmm(n, GBp.transpose(1, 2))                       # ZᵀY's position rows Aᵀn
        cols = torch.stack([(Gtt + Gtt.transpose(1, 2)).reshape(K, -1), GBt.reshape(K, -1),
                            GBt.transpose(1, 2).reshape(K, -1)], -1)                        # (K, V², 3)
        Y = self.counts.pair_side(cols)                                                      # (K, pairs, 3)
        dSf, dAf = dS.reshape(K, -1), dA.reshape(K, -1)
        dSf[:, self._upper] += Y[..., 0]
        dAf[:, self._lower] += Y[..., 1]
        dAf[:, self._upper] += Y[..., 2]
        dS = dSf.view(K, L, L) + torch.diag_embed((torch.diagonal(Gtt, 0, 1, 2)[:, None] * n).sum(-1))
        dA = dAf.view(K, L, L) + torch.diag_embed((torch.diagonal(GBt, 0, 1, 2)[:, None] * n).sum(-1))
        dA = dA + torch.bmm(A, dS + dS.transpose(1, 2))              # S = AᵀA
        dM = m.variant.score_grad(dA, A, L, m.d_k)                  # dA is a fresh tensor: overwritten
        g = torch.cat([torch.bmm(Kq, dM.transpose(1, 2)).reshape(K, -1), torch.bmm(Q, dM).reshape(K, -1)], 1)
        return U, g + q * self.prec_qk

    def readout(self, q: torch.Tensor, xi: torch.Tensor | None = None) -> torch.Tensor:
        """W (K, V, D) given (Q, K): a draw from its exact conditional with standard normal ``xi``
        (K, D, V), or its conditional mean when ``xi`` is None; ``xi`` of shape (K, S, D, V) gives S draws
        per chain (K, S, V, D)."""
        C, B, _ = self._factor(self.attention(q))
        mean = torch.cholesky_solve(B, C) / self.sigma2               # Σ⁻¹ B / σ²   (K, D, V)
        if xi is not None:                                           # + C⁻ᵀ ξ: covariance C⁻ᵀC⁻¹ = Σ⁻¹
            if xi.dim() == 4:
                C, mean = C.unsqueeze(1), mean.unsqueeze(1)
            mean = mean + torch.linalg.solve_triangular(C.transpose(-1, -2), xi, upper=True)
        return mean.transpose(-1, -2)

    def full_theta(self, q: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
        """The model's flat θ (K, n) from (Q, K) and W."""
        return torch.cat([q, W.reshape(q.shape[0], -1)], 1)
