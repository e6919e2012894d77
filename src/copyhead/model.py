"""Single-layer, single-head attention on the copy task (design file, section 2), in token space.

Parameters ``θ`` live in ONE flat tensor (so optimiser updates are single vector operations) with views
``Q, K`` (d_k × L; d_k × (V+L) for ``scores: token+position``) and the merged readout ``W`` (V × (V+L)) =
``[W_t | W_p]`` (token and position columns). With position-only scores the score matrix
``M = QᵀK/d_k`` (L×L) and the attention ``A`` (linear ``M/L``, softmax ``softmax_b M_ab``) are shared by
all sequences, and, with the value inputs ``X_α = [T_α | I]`` (T_α the L×V token one-hot),

    f_α = A X_α Wᵀ = A H_α,   H_α = T_α W_tᵀ + W_pᵀ  (L×V),

so one step costs O(P L² V): no d_model-sized embedding is ever built. The posterior energy is

    U(θ) = Σ_{α,a} ||f_αa − y_αa||²/(2σ²) + w (||Q||²/2g_Q + ||K||²/2g_K + ||W||²/2g_O),

with ``w`` the prior weight (1 = the posterior / MAP; Adam recipes may change it). :meth:`energy_grad`
computes U and ∇U by hand (checked against finite differences in tests/test_model.py);
:meth:`energy_autograd` is the plain autograd version (used by the tests and by ``token+position``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .task import CopyData, one_hot

ATTENTIONS = ("linear", "softmax")


@dataclass(frozen=True)
class Layout:
    d_k: int
    Lq: int   # columns of Q and K: L (position scores) or V+L (token+position)
    V: int
    D: int    # V + L, the value-input dimension

    @property
    def sizes(self):
        return (self.d_k * self.Lq, self.d_k * self.Lq, self.V * self.D)

    @property
    def n(self) -> int:
        return sum(self.sizes)

    def slices(self):
        a, b, _ = self.sizes
        return slice(0, a), slice(a, a + b), slice(a + b, self.n)


class CopyAttention:
    """The network, its data (precomputed one-hots on the device) and the energy U of one run."""

    def __init__(self, data: CopyData, attention: str, model_cfg: dict, dtype=torch.float64,
                 device="cpu", prior_weight: float = 1.0):
        if attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
        self.attention = attention
        self.scores_kind = model_cfg.get("scores", "position")
        self.V, self.L = data.V, data.L
        self.P = data.P
        self.d_k = int(model_cfg["d_k"])
        self.g_Q, self.g_K, self.g_O = (float(model_cfg[k]) for k in ("g_Q", "g_K", "g_O"))
        self.sigma2 = float(model_cfg["sigma2"])
        self.prior_weight = float(prior_weight)
        self.dtype, self.device = dtype, torch.device(device)
        Lq = self.L if self.scores_kind == "position" else self.V + self.L
        self.layout = Layout(self.d_k, Lq, self.V, self.V + self.L)
        self.sQ, self.sK, self.sW = self.layout.slices()
        # precomputed one-hots: T (P, L, V) is both the token part of X and the target Y
        self.T = self._t(one_hot(data.train, self.V))
        self.T_test = self._t(one_hot(data.test, self.V))
        self.n_tokens = self.P * self.L
        # position-major layout for the hand-written gradient: rows (a, α), so that A acts by one matmul
        self._T_lpv = self.T.permute(1, 0, 2).reshape(self.L, -1).contiguous()     # (L, P·V)
        self._T_rows = self._T_lpv.view(-1, self.V)                                 # (L·P, V)
        self._T_test_lpv = self.T_test.permute(1, 0, 2).reshape(self.L, -1).contiguous()
        self._T_test_rows = self._T_test_lpv.view(-1, self.V)
        self._prec = self.prior_weight / self.prior_std() ** 2                      # w/g per parameter
        self._grad = torch.zeros(self.layout.n, dtype=dtype, device=self.device)

    def _t(self, x) -> torch.Tensor:
        return torch.as_tensor(np.asarray(x), dtype=self.dtype, device=self.device)

    # ---- parameter views -----------------------------------------------------------------------
    def split(self, theta: torch.Tensor):
        lo = self.layout
        return (theta[self.sQ].view(lo.d_k, lo.Lq), theta[self.sK].view(lo.d_k, lo.Lq),
                theta[self.sW].view(lo.V, lo.D))

    def prior_std(self) -> torch.Tensor:
        """Per-parameter prior standard deviation (√g_Q, √g_K, √g_O), flat like θ."""
        s = torch.empty(self.layout.n, dtype=self.dtype, device=self.device)
        s[self.sQ], s[self.sK], s[self.sW] = math.sqrt(self.g_Q), math.sqrt(self.g_K), math.sqrt(self.g_O)
        return s

    # ---- forward -------------------------------------------------------------------------------
    def score_matrix(self, theta: torch.Tensor) -> torch.Tensor:
        """M = QᵀK/d_k (L×L; (V+L)×(V+L) for token+position)."""
        Q, K, _ = self.split(theta)
        return Q.T @ K / self.d_k

    def _attend(self, S: torch.Tensor) -> torch.Tensor:
        return S / self.L if self.attention == "linear" else torch.softmax(S, dim=-1)

    def _X(self, T: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(self.L, dtype=self.dtype, device=self.device).expand(T.shape[0], -1, -1)
        return torch.cat([T, eye], dim=-1)

    def attention_of(self, theta: torch.Tensor, T: torch.Tensor | None = None) -> torch.Tensor:
        """A: (L, L) for position scores; (n, L, L) per sequence for token+position (T needed)."""
        M = self.score_matrix(theta)
        if self.scores_kind == "position":
            return self._attend(M)
        X = self._X(T)
        return self._attend(X @ M @ X.transpose(-1, -2))

    def predict(self, theta: torch.Tensor, T: torch.Tensor, A: torch.Tensor | None = None) -> torch.Tensor:
        """f (n, L, V) for token one-hots T (n, L, V)."""
        _, _, W = self.split(theta)
        if A is None:
            A = self.attention_of(theta, T)
        H = T @ W[:, :self.V].T + W[:, self.V:].T
        return A @ H

    def mean_loss(self, theta: torch.Tensor, T: torch.Tensor, A: torch.Tensor | None = None) -> torch.Tensor:
        """Mean over sequences and positions of ||f_a − y_a||² (not divided by V)."""
        if T is self.T_test and self.scores_kind == "position":  # position-major fast path (one matmul)
            _, _, W = self.split(theta)
            if A is None:
                A = self.attention_of(theta)
            L, V = self.L, self.V
            H = (self._T_test_rows @ W[:, :V].T).view(L, -1, V).add_(W[:, V:].T.unsqueeze(1)).view(L, -1)
            R = (A @ H).sub_(self._T_test_lpv)
        else:
            R = self.predict(theta, T, A) - T
        return (R * R).sum() / (T.shape[0] * T.shape[1])

    def prior_energy(self, theta: torch.Tensor) -> torch.Tensor:
        Q, K, W = self.split(theta)
        return self.prior_weight * ((Q * Q).sum() / (2 * self.g_Q) + (K * K).sum() / (2 * self.g_K)
                                    + (W * W).sum() / (2 * self.g_O))

    def energy_autograd(self, theta: torch.Tensor) -> torch.Tensor:
        """U(θ) with plain torch ops (differentiable by autograd)."""
        R = self.predict(theta, self.T) - self.T
        return (R * R).sum() / (2 * self.sigma2) + self.prior_energy(theta)

    def energy_grad(self, theta: torch.Tensor):
        """(U, Σ||f−y||², A, ∇U) at θ. ∇U is written into an internal buffer (copy it to keep it)."""
        if self.scores_kind != "position":
            th = theta.detach().requires_grad_(True)
            with torch.enable_grad():
                R = self.predict(th, self.T) - self.T
                sse = (R * R).sum()
                U = sse / (2 * self.sigma2) + self.prior_energy(th)
                (g,) = torch.autograd.grad(U, th)
            self._grad.copy_(g)
            A = self.attention_of(theta, self.T_test).mean(0)
            return U.detach(), sse.detach(), A, self._grad
        V, L = self.V, self.L
        Q, K, W = self.split(theta)
        gQ, gK, gW = self.split(self._grad)
        T = self._T_lpv                                           # (L, P·V) view of the one-hots
        M = Q.T @ K / self.d_k
        A = self._attend(M)
        H = (self._T_rows @ W[:, :V].T).view(L, -1, V).add_(W[:, V:].T.unsqueeze(1)).view(L, -1)
        R = A @ H - T                                             # residual f − y, (L, P·V)
        sse = (R * R).sum()
        U = sse / (2 * self.sigma2) + 0.5 * (theta * theta * self._prec).sum()
        G = R.div_(self.sigma2)                                   # dU/df
        dA = G @ H.T                                              # Σ_α G_α H_αᵀ   (L, L)
        dH = A.T @ G                                              # (L, P·V)
        torch.mm(dH.view(-1, V).T, self._T_rows, out=gW[:, :V])   # dU/dW_t = Σ_α dH_αᵀ T_α
        gW[:, V:] = dH.view(L, -1, V).sum(1).T                    # dU/dW_p
        if self.attention == "linear":
            dM = dA.div_(self.L * self.d_k)
        else:
            dM = dA.sub_((dA * A).sum(1, keepdim=True)).mul_(A).div_(self.d_k)
        torch.mm(K, dM.T, out=gQ)
        torch.mm(Q, dM, out=gK)
        self._grad.addcmul_(theta, self._prec)                    # prior: w θ / g
        return U, sse, A, self._grad

    # ---- initialisation ------------------------------------------------------------------------
    def init_prior(self, gen: torch.Generator, scale: float = 1.0) -> torch.Tensor:
        """A draw from the prior with every std multiplied by ``scale`` (drawn on CPU, then moved)."""
        z = torch.randn(self.layout.n, generator=gen, dtype=torch.float64)
        return (z.to(self.dtype).to(self.device) * self.prior_std() * scale).contiguous()

    def init_copy(self, gen: torch.Generator, beta: float) -> torch.Tensor:
        """The copy solution: Q = K = √(β d_k)·E (E: d_k×L with random orthonormal columns) so that the
        positional score block is M = β I exactly, then W = the posterior mean of the readout given that
        attention (ridge regression, :meth:`readout_posterior`). Token columns of Q, K (token+position
        option) start at zero."""
        if self.d_k < self.L:
            raise ValueError(f"copy init needs d_k >= L (d_k={self.d_k}, L={self.L})")
        G = torch.randn(self.d_k, self.L, generator=gen, dtype=torch.float64)
        E, _ = torch.linalg.qr(G)
        theta = torch.zeros(self.layout.n, dtype=self.dtype, device=self.device)
        Q, K, W = self.split(theta)
        QK = (math.sqrt(beta * self.d_k) * E).to(self.dtype).to(self.device)
        Q[:, self.layout.Lq - self.L:] = QK
        K[:, self.layout.Lq - self.L:] = QK
        mean, _ = self.readout_posterior(theta)
        W.copy_(mean)
        return theta

    # ---- exact readout posterior given the attention (Bayesian linear regression) --------------
    def readout_posterior(self, theta: torch.Tensor, temperature: float = 1.0):
        """Posterior of W given Q, K (hence A): each output row W_v ~ N(mean_v, Σ), with
        Σ = T (ZᵀZ/σ² + I/g_O)⁻¹ (w scales the prior precision), mean = Σ Zᵀ Y /(T σ²),
        Z = the (P·L) × (V+L) features A X_α. Returns (mean (V × (V+L)), Σ ((V+L) × (V+L)))."""
        A = self.attention_of(theta, self.T)
        Z = (A @ self._X(self.T)).reshape(-1, self.layout.D)
        Y = self.T.reshape(-1, self.V)
        prec = Z.T @ Z / self.sigma2 + torch.eye(self.layout.D, dtype=self.dtype, device=self.device) * (
            self.prior_weight / self.g_O)
        cov = torch.linalg.inv(prec)
        mean = (cov @ (Z.T @ Y) / self.sigma2).T
        return mean, temperature * cov
