"""Single-layer, single-head attention on the copy task (design file, section 2), for K chains at once.

One :class:`CopyAttention` holds K chains that share the architecture, attention type and P but each has
its own training and test set (its seed): every tensor has a leading chain axis and one step of all K
chains is one batched tensor program (batched matrix products, no Python loop over chains). The
single-chain form is K = 1; every method also accepts an unbatched θ of shape (n,) and then returns
unbatched results (what the tests and the theory's checks use).

Parameters ``θ`` of a chain live in ONE flat vector (so optimiser updates are single vector operations)
with views ``Q, K`` (d_k × L; d_k × (V+L) for ``scores: token+position``) and the merged readout ``W``
(V × (V+L)) = ``[W_t | W_p]`` (token and position columns). With position-only scores the score matrix
``M = QᵀK/d_k`` (L×L) and the attention ``A`` (linear ``M/L``, softmax ``softmax_b M_ab``) are shared by
all sequences of a chain, and, with the value inputs ``X_α = [T_α | I]`` (T_α the L×V token one-hot),

    f_α = A X_α Wᵀ = A H_α,   H_α = T_α W_tᵀ + W_pᵀ  (L×V),

so one step costs O(P L² V) per chain: no d_model-sized embedding is ever built. The posterior energy is

    U(θ) = Σ_{α,a} ||f_αa − y_αa||²/(2σ²) + w (||Q||²/2g_Q + ||K||²/2g_K + ||W||²/2g_O),

with ``w`` the prior weight (1 = the posterior / MAP; Adam recipes may change it). :meth:`energy_grad`
computes U and ∇U by hand for position scores (checked against finite differences in
tests/test_model.py) and by autograd for ``token+position``; :meth:`energy_autograd` is the plain
autograd version.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from .attention import variant
from .config import ModelParams
from .schedules import cheapest_energy
from .suffstats import Cooccurrence
from .task import CopyData, one_hot


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


def _batched(fn):
    """Let a method taking θ (K, n) also take an unbatched θ (n,): results lose their chain axis."""
    def wrapper(self, theta, *args, **kw):
        if theta.dim() == 1:
            out = fn(self, theta.unsqueeze(0), *args, **kw)
            return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]
        return fn(self, theta, *args, **kw)
    wrapper.__doc__, wrapper.__name__ = fn.__doc__, fn.__name__
    return wrapper


def energy_kind(V: int, L: int, P: int, scores: str = "position", device: str = "cpu",
                requested: str = "auto") -> str:
    """How U and ∇U of a chain with P sequences are computed: ``direct`` (products over the sequences;
    always for token+position scores) or ``dense`` / ``sparse`` co-occurrence counts
    (:func:`copyhead.schedules.cheapest_energy`, a function of the chain's own sizes only, so a chain's numbers do
    not depend on its batch)."""
    if scores != "position":
        return "direct"
    return cheapest_energy(V, L, P, device) if requested == "auto" else requested


class CopyAttention:
    """The network, its data (precomputed one-hots on the device) and the energy U of K chains."""

    def __init__(self, data: CopyData | Sequence[CopyData], attention: str, model_cfg: ModelParams | dict,
                 dtype=torch.float64, device="cpu", prior_weight: float = 1.0, energy: str = "auto"):
        self.variant = variant(attention)      # the attention's map M -> A and its pullback (copyhead.attention)
        if isinstance(model_cfg, dict):
            model_cfg = ModelParams(**{k: model_cfg.get(k, "position") if k == "scores" else model_cfg[k]
                                       for k in ModelParams.__dataclass_fields__})
        datas = [data] if isinstance(data, CopyData) else list(data)
        if len({(d.V, d.L, d.test.shape[0]) for d in datas}) != 1:
            raise ValueError("the chains of one batch must share V, L and n_test")
        self.attention = attention
        self.params = model_cfg
        self.scores_kind = model_cfg.scores
        self.V, self.L = datas[0].V, datas[0].L
        self.Ps = [d.P for d in datas]
        self.P = self.Ps[0] if len(set(self.Ps)) == 1 else None   # None: chains of different P (counts only)
        self.n_chains = len(datas)
        self.d_k = int(model_cfg.d_k)
        self.g_Q, self.g_K, self.g_O = float(model_cfg.g_Q), float(model_cfg.g_K), float(model_cfg.g_O)
        self.sigma2 = float(model_cfg.sigma2)
        self.prior_weight = float(prior_weight)
        self.dtype, self.device = dtype, torch.device(device)
        Lq = self.L if self.scores_kind == "position" else self.V + self.L
        self.layout = Layout(self.d_k, Lq, self.V, self.V + self.L)
        self.sQ, self.sK, self.sW = self.layout.slices()
        # energy path (position scores): direct products or co-occurrence counts (copyhead.suffstats)
        kinds = {energy_kind(self.V, self.L, P, self.scores_kind, self.device.type, energy) for P in self.Ps}
        if len(kinds) != 1 or (self.P is None and "direct" in kinds):
            raise ValueError(f"chains of different P need one counts kind for all, got {sorted(kinds)}")
        self.energy_kind = kinds.pop()
        self.test_kind = energy_kind(self.V, self.L, datas[0].test.shape[0], self.scores_kind,
                                     self.device.type, energy)
        count = lambda kind, toks: (None if kind == "direct" else
                                    Cooccurrence(toks, self.V, kind, dtype, self.device))
        self.counts = count(self.energy_kind, [d.train for d in datas])
        self.counts_test = count(self.test_kind, [d.test for d in datas])
        # precomputed one-hots: T (K, P, L, V) is both the token part of X and the target Y (a list of
        # (P_k, L, V) for chains of different P)
        Ts = [self._t(one_hot(d.train, self.V)) for d in datas]
        self.T = torch.stack(Ts) if self.P is not None else Ts
        self.T_test = self._t(np.stack([one_hot(d.test, self.V) for d in datas]))
        self.n_tokens = self.P * self.L if self.P is not None else self._t(self.Ps) * self.L
        if self.energy_kind == "direct":  # position-major layout: rows (a, α), so that A acts by one matmul
            self._T_lpv, self._T_rows = self._position_major(self.T)          # (K, L, P·V), (K, L·P, V)
        self._T_test_lpv, self._T_test_rows = self._position_major(self.T_test)
        self._prec = self.prior_weight / self.prior_std() ** 2                # w/g per parameter (n,)

    def _t(self, x) -> torch.Tensor:
        return torch.as_tensor(np.asarray(x), dtype=self.dtype, device=self.device)

    def _position_major(self, T: torch.Tensor):
        K, n, L, V = T.shape
        lpv = T.permute(0, 2, 1, 3).reshape(K, L, n * V).contiguous()
        return lpv, lpv.view(K, L * n, V)

    # ---- parameter views -----------------------------------------------------------------------
    def split(self, theta: torch.Tensor):
        """Views (Q, K, W) of θ ((n,) or (K, n)): (…, d_k, Lq), (…, d_k, Lq), (…, V, V+L)."""
        lo = self.layout
        return (theta[..., self.sQ].unflatten(-1, (lo.d_k, lo.Lq)),
                theta[..., self.sK].unflatten(-1, (lo.d_k, lo.Lq)),
                theta[..., self.sW].unflatten(-1, (lo.V, lo.D)))

    def prior_std(self) -> torch.Tensor:
        """Per-parameter prior standard deviation (√g_Q, √g_K, √g_O), flat like one chain's θ."""
        s = torch.empty(self.layout.n, dtype=self.dtype, device=self.device)
        s[self.sQ], s[self.sK], s[self.sW] = math.sqrt(self.g_Q), math.sqrt(self.g_K), math.sqrt(self.g_O)
        return s

    # ---- forward -------------------------------------------------------------------------------
    def score_matrix(self, theta: torch.Tensor) -> torch.Tensor:
        """M = QᵀK/d_k ((…, L, L); (…, V+L, V+L) for token+position)."""
        Q, K, _ = self.split(theta)
        return Q.transpose(-1, -2) @ K / self.d_k

    def _attend(self, S: torch.Tensor) -> torch.Tensor:
        return self.variant.attend(S, self.L)

    def _X(self, T: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(self.L, dtype=self.dtype, device=self.device).expand(*T.shape[:-1], self.L)
        return torch.cat([T, eye], dim=-1)

    @staticmethod
    def _tokens(T: torch.Tensor) -> torch.Tensor:
        """Token one-hots with a chain axis: (K, n, L, V) as given, or (n, L, V) shared by all chains."""
        return T if T.dim() == 4 else T.unsqueeze(0)

    @_batched
    def attention_of(self, theta: torch.Tensor, T: torch.Tensor | None = None) -> torch.Tensor:
        """A: (…, L, L) for position scores; (…, n, L, L) per sequence for token+position (T needed)."""
        M = self.score_matrix(theta)
        if self.scores_kind == "position":
            return self._attend(M)
        X = self._X(self._tokens(T))
        return self._attend(X @ M.unsqueeze(1) @ X.transpose(-1, -2))

    def _values(self, W: torch.Tensor, T: torch.Tensor) -> torch.Tensor:
        """H = T W_tᵀ + W_pᵀ: (K, n, L, V)."""
        V = self.V
        return T @ W[:, :, :V].transpose(-1, -2).unsqueeze(1) + W[:, :, V:].transpose(-1, -2).unsqueeze(1)

    @_batched
    def predict(self, theta: torch.Tensor, T: torch.Tensor, A: torch.Tensor | None = None) -> torch.Tensor:
        """f (…, n, L, V) for token one-hots T (…, n, L, V)."""
        T = self._tokens(T)
        _, _, W = self.split(theta)
        if A is None:
            A = self.attention_of(theta, T)
        if A.dim() == 3:
            A = A.unsqueeze(1)
        return A @ self._values(W, T)

    @_batched
    def mean_loss(self, theta: torch.Tensor, T: torch.Tensor, A: torch.Tensor | None = None) -> torch.Tensor:
        """Mean over sequences and positions of ||f_a − y_a||² (not divided by V), per chain."""
        if T is self.T_test and self.counts_test is not None:
            A = self.attention_of(theta) if A is None else A
            return self.counts_test.sse(A, self.split(theta)[2]) / (self.T_test.shape[1] * self.L)
        if T is self.T_test and self.scores_kind == "position":  # position-major fast path (batched matmul)
            if A is None:
                A = self.attention_of(theta)
            R = (A @ self._H(theta, self._T_test_rows)).sub_(self._T_test_lpv)
            n = self.T_test.shape[1] * self.L
        else:
            T = self._tokens(T)
            R = self.predict(theta, T, A) - T
            n = T.shape[1] * T.shape[2]
        return (R * R).flatten(1).sum(1) / n

    def _H(self, theta: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Position-major values H (K, L, n·V) from one-hot rows (K, L·n, V)."""
        V, L = self.V, self.L
        _, _, W = self.split(theta)
        H = torch.bmm(rows, W[:, :, :V].transpose(1, 2))
        K = H.shape[0]
        return H.view(K, L, -1, V).add_(W[:, :, V:].transpose(1, 2).unsqueeze(2)).view(K, L, -1)

    def prior_energy(self, theta: torch.Tensor) -> torch.Tensor:
        return 0.5 * (theta * theta * self._prec).sum(-1)

    @_batched
    def energy_autograd(self, theta: torch.Tensor) -> torch.Tensor:
        """U(θ) per chain with plain torch ops (differentiable by autograd)."""
        R = self.predict(theta, self.T) - self.T
        return (R * R).sum((1, 2, 3)) / (2 * self.sigma2) + self.prior_energy(theta)

    @_batched
    def energy_grad(self, theta: torch.Tensor, with_energy: bool = True):
        """(U, Σ||f−y||², A, ∇U) at θ, each with a leading chain axis (A is the test-set average for
        token+position scores). ``with_energy=False`` skips U and the sum of squares (returned as None;
        ∇U and A are the same numbers): the loop needs them at record and check steps only."""
        if self.scores_kind != "position":
            th = theta.detach().requires_grad_(True)
            with torch.enable_grad():
                R = self.predict(th, self.T) - self.T
                sse = (R * R).sum((1, 2, 3))
                U = sse / (2 * self.sigma2) + self.prior_energy(th)
                (g,) = torch.autograd.grad(U.sum(), th)
            A = self.attention_of(theta, self.T_test).mean(1)
            return U.detach(), sse.detach(), A, g
        V, L, Kc = self.V, self.L, theta.shape[0]
        Q, K, W = self.split(theta)
        M = torch.bmm(Q.transpose(1, 2), K) / self.d_k
        A = self._attend(M)
        g = torch.empty_like(theta)                                    # ∇U, written in place by blocks
        gQ, gK, gW = self.split(g)
        if self.counts is not None:                                    # from the co-occurrence counts
            sse, dA = self.counts.sse_grad(A, W, gW, with_energy)
            dA.div_(self.sigma2)
            gW.div_(2 * self.sigma2)
        else:
            H = self._H(theta, self._T_rows)                           # (K, L, P·V)
            R = torch.bmm(A, H).sub_(self._T_lpv)                      # residual f − y
            sse = (R * R).sum((1, 2)) if with_energy else None
            G = R.div_(self.sigma2)                                    # dU/df
            dA = torch.bmm(G, H.transpose(1, 2))                       # Σ_α G_α H_αᵀ   (K, L, L)
            dH = torch.bmm(A.transpose(1, 2), G)                       # (K, L, P·V)
            gW[:, :, :V] = torch.bmm(dH.view(Kc, -1, V).transpose(1, 2), self._T_rows)  # Σ_α dH_αᵀ T_α
            gW[:, :, V:] = dH.view(Kc, L, -1, V).sum(2).transpose(1, 2)                  # dU/dW_p
        U = sse / (2 * self.sigma2) + self.prior_energy(theta) if with_energy else None
        dM = self.variant.score_grad(dA, A, self.L, self.d_k)
        gQ.copy_(torch.bmm(K, dM.transpose(1, 2)))                    # (bmm's out= into a strided view
        gK.copy_(torch.bmm(Q, dM))                                     #  is slower than this copy)
        g.addcmul_(theta, self._prec)                                  # prior: w θ / g
        return U, sse, A, g

    # ---- initialisation (per chain, with each chain's own generator) ---------------------------
    def init_prior(self, gen: torch.Generator, scale: float = 1.0) -> torch.Tensor:
        """One chain's draw from the prior with every std multiplied by ``scale`` (drawn on CPU in
        float64, then moved), shape (n,)."""
        z = torch.randn(self.layout.n, generator=gen, dtype=torch.float64)
        return (z.to(self.dtype).to(self.device) * self.prior_std() * scale).contiguous()

    def init_copy(self, gen: torch.Generator, beta: float, chain: int = 0) -> torch.Tensor:
        """One chain's copy solution, shape (n,): Q = K = √(β d_k)·E (E: d_k×L with random orthonormal
        columns) so that the positional score block is M = β I exactly, then W = the posterior mean of the
        readout of chain ``chain``'s data given that attention (ridge regression,
        :meth:`readout_posterior`). Token columns of Q, K (token+position option) start at zero."""
        if self.d_k < self.L:
            raise ValueError(f"copy init needs d_k >= L (d_k={self.d_k}, L={self.L})")
        G = torch.randn(self.d_k, self.L, generator=gen, dtype=torch.float64)
        E, _ = torch.linalg.qr(G)
        theta = torch.zeros(self.layout.n, dtype=self.dtype, device=self.device)
        Q, K, W = self.split(theta)
        QK = (math.sqrt(beta * self.d_k) * E).to(self.dtype).to(self.device)
        Q[:, self.layout.Lq - self.L:] = QK
        K[:, self.layout.Lq - self.L:] = QK
        mean, _ = self.readout_posterior(theta, chain=chain)
        W.copy_(mean)
        return theta

    # ---- exact readout posterior given the attention (Bayesian linear regression) --------------
    def readout_posterior(self, theta: torch.Tensor, temperature: float = 1.0, chain: int = 0):
        """Posterior of W given Q, K (hence A) of one chain (θ of shape (n,), data of chain ``chain``):
        each output row W_v ~ N(mean_v, Σ), with Σ = T (ZᵀZ/σ² + I/g_O)⁻¹ (w scales the prior
        precision), mean = Σ Zᵀ Y /(T σ²), Z = the (P·L) × (V+L) features A X_α.
        Returns (mean (V × (V+L)), Σ ((V+L) × (V+L)))."""
        T = self.T[chain]
        A = self.attention_of(theta, T)
        Z = (A @ self._X(T)).reshape(-1, self.layout.D)
        Y = T.reshape(-1, self.V)
        prec = Z.T @ Z / self.sigma2 + torch.eye(self.layout.D, dtype=self.dtype, device=self.device) * (
            self.prior_weight / self.g_O)
        cov = torch.linalg.inv(prec)
        mean = (cov @ (Z.T @ Y) / self.sigma2).T
        return mean, temperature * cov
