"""The evidence E(M) = −ln p(Y|A(M)) as a function of the full L×L score matrix M (docs/theory.md, Sec. 13),
with its exact gradient and Hessian-vector products, in numpy.

Two forms: one dataset's (:func:`evidence_dataset`, Eqs. (1), (4)) and the equivalent kernel's
(:func:`evidence_ek`, Eq. (4) with the population moments of Eq. (11)), for linear (A = M/L) or softmax
(A = softmax_b M) attention; and the softmax observable âG(M) (:data:`copy_weight`, Eq. (35)). Each is an
object that is called for the value and has ``grad(M)`` (L²,) and ``hvp(M, dirs)`` (k, L²).

The derivatives are written out by the chain rule through the statistics of Eq. (4), not approximated:
with K = I + gG, W = K⁻¹B and g = g_O/σ², ∂E/∂G = (Vg/2) K⁻¹ + (g²/2σ²) WWᵀ and ∂E/∂B = −(g/σ²) W; the
Hessian-vector product is the directional derivative of that gradient (forward over reverse, by hand).
Vectorisation convention: vec(M) = M.reshape(-1) (row-major, index a·L + b).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from copyhead.attention import variant
from copyhead.config import ActionParams
from copyhead.theory.evidence import LOG2PI


def _softmax(M):
    e = np.exp(M - M.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


class LinearMap:
    """A = M/L and its derivatives."""

    @staticmethod
    def attend(M):
        return M / M.shape[-1]

    @staticmethod
    def dA(M, A, D):
        return D / M.shape[-1]

    @staticmethod
    def grad_M(A, GA):
        return GA / A.shape[-1]

    @staticmethod
    def hvp_M(M, A, GA, dA, dGA):
        return dGA / M.shape[-1]


class SoftmaxMap:
    """A = softmax_b M and its derivatives."""

    @staticmethod
    def attend(M):
        return _softmax(M)

    @staticmethod
    def dA(M, A, D):
        return A * (D - (A * D).sum(-1, keepdims=True))

    @staticmethod
    def grad_M(A, GA):
        return A * (GA - (A * GA).sum(-1, keepdims=True))

    @staticmethod
    def hvp_M(M, A, GA, dA, dGA):
        s = (A * GA).sum(-1, keepdims=True)
        ds = (dA * GA + A * dGA).sum(-1, keepdims=True)
        return dA * (GA - s) + A * (dGA - ds)


# the map M -> A of each theory family (copyhead.attention: a variant's ``theory``), with its first and
# second derivatives: attend(M), dA(M, A, D) along directions D, grad_M(A, ∂f/∂A), and the directional
# derivative of grad_M, hvp_M(M, A, ∂f/∂A, dA, d(∂f/∂A))
MAPS = {"linear": LinearMap, "softmax": SoftmaxMap}


def _map(attention):
    return MAPS[variant(attention).theory]


class _ScoreFunction:
    """A scalar function f(A(M)) of the score matrix through the attention A: the value, ∂f/∂M and the
    Hessian-vector products from a subclass's ``_value_grad_A(A)`` (value, ∂f/∂A, state) and
    ``_dgrad_A(A, dA, state)`` (the directional derivative of ∂f/∂A along dA)."""

    attention = "linear"

    def _attend(self, M):
        return _map(self.attention).attend(np.asarray(M, float))

    def _dA(self, M, A, D):
        """dA along the directions D (k, L, L)."""
        return _map(self.attention).dA(M, A, D)

    def __call__(self, M) -> float:
        return float(self._value_grad_A(self._attend(M), need_grad=False)[0])

    def _grad_M(self, A, GA):
        return _map(self.attention).grad_M(A, GA)

    def grad(self, M) -> np.ndarray:
        """∇f at the L×L matrix M (L²,)."""
        A = self._attend(M)
        _, GA, _ = self._value_grad_A(A)
        return self._grad_M(A, GA).reshape(-1)

    def hvp(self, M, dirs) -> np.ndarray:
        """Hessian of f at M applied to the directions dirs (k, L, L): (k, L²)."""
        M = np.asarray(M, float)
        D = np.asarray(dirs, float)
        A = self._attend(M)
        _, GA, state = self._value_grad_A(A)
        dA = self._dA(M, A, D)
        dGA = self._dgrad_A(A, dA, state)
        return _map(self.attention).hvp_M(M, A, GA, dA, dGA).reshape(len(D), -1)


class _Evidence(_ScoreFunction):
    """Eq. (4) through the statistics G (D×D) and B (D×V) of the attention A: subclasses give
    ``_stats(A)`` -> (G, B), ``_dstats(A, dA)`` -> (dG, dB) for directions dA (k, L, L), and
    ``_grad_stats(A, Gam, Bet, const)`` -> ∂E/∂A for ∂E/∂G = Gam, ∂E/∂B = Bet (the part constant in A
    only with ``const``; the map is linear in A and in (Gam, Bet) jointly otherwise)."""

    def __init__(self, V, g_O, sigma2, yy, N, attention):
        _map(attention)              # ValueError for a name that is not an attention variant
        self.V, self.g, self.sigma2, self.yy, self.N, self.attention = V, g_O / sigma2, sigma2, yy, N, attention

    def _value_grad_A(self, A, need_grad=True):
        G, B = self._stats(A)
        g, s2, V = self.g, self.sigma2, self.V
        K = np.eye(G.shape[-1]) + g * G
        cho = sla.cho_factor(K, lower=True)
        logdet = 2.0 * np.log(np.diagonal(cho[0])).sum()
        W = sla.cho_solve(cho, B)
        fit = (B * W).sum()
        value = 0.5 * self.N * V * (LOG2PI + np.log(s2)) + 0.5 * V * logdet + (self.yy - g * fit) / (2.0 * s2)
        if not need_grad:
            return value, None, None
        Kinv = sla.cho_solve(cho, np.eye(K.shape[0]))
        Gam = 0.5 * V * g * Kinv + g * g / (2.0 * s2) * W @ W.T
        Bet = -(g / s2) * W
        return value, self._grad_stats(A, Gam, Bet, True), (Kinv, W, Gam, Bet)

    def _dgrad_A(self, A, dA, state):
        Kinv, W, Gam, Bet = state
        g, s2, V = self.g, self.sigma2, self.V
        dG, dB = self._dstats(A, dA)
        dKinv = -g * Kinv @ dG @ Kinv
        dW = Kinv @ (dB - g * dG @ W)
        dWWt = dW @ W.T
        dGam = 0.5 * V * g * dKinv + g * g / (2.0 * s2) * (dWWt + np.swapaxes(dWWt, -1, -2))
        dBet = -(g / s2) * dW
        return self._grad_stats(dA, Gam, Bet, False) + self._grad_stats(A, dGam, dBet, True)


class DatasetEvidence(_Evidence):
    """E(M) of one dataset (tokens (P, L), uncentred one-hot targets), Eqs. (1), (4): G = ZᵀZ, B = ZᵀT with
    Z_p = A X_p, X_p = [one-hot tokens, I_L]."""

    def __init__(self, tokens, V, g_O, sigma2, attention="linear"):
        tokens = np.asarray(tokens)
        P, L = tokens.shape
        super().__init__(V, g_O, sigma2, float(P * L), P * L, attention)
        self.T = np.eye(V)[tokens]                                                   # (P, L, V)
        self.X = np.concatenate([self.T, np.broadcast_to(np.eye(L), (P, L, L))], -1)  # (P, L, D)
        self.Xf = self.X.reshape(P * L, V + L)

    def _Z(self, A):
        return np.einsum("...ab,pbd->...pad", A, self.X)

    def _stats(self, A):
        Z = self._Z(A)
        Zf, Tf = Z.reshape(-1, Z.shape[-1]), self.T.reshape(-1, self.V)
        return Zf.T @ Zf, Zf.T @ Tf

    def _dstats(self, A, dA):
        Z, dZ = self._Z(A), self._Z(dA)
        D = Z.shape[-1]
        Zf, dZf, Tf = Z.reshape(-1, D), dZ.reshape(len(dA), -1, D), self.T.reshape(-1, self.V)
        dG = np.swapaxes(dZf, -1, -2) @ Zf
        return dG + np.swapaxes(dG, -1, -2), np.swapaxes(dZf, -1, -2) @ Tf

    def _grad_stats(self, A, Gam, Bet, const):
        Z = self._Z(A)
        Zbar = 2.0 * Z @ Gam[..., None, :, :] if Gam.ndim == 3 else 2.0 * Z @ Gam
        if const:
            TB = self.T @ np.swapaxes(Bet, -1, -2)[..., None, :, :] if Bet.ndim == 3 else self.T @ Bet.T
            Zbar = Zbar + TB
        return np.einsum("...pad,pbd->...ab", Zbar, self.X)


class EKEvidence(_Evidence):
    """Equivalent-kernel E(M): Eq. (4) with the population moments of Eq. (11) (N Ḡ, N B̄, yy = N) of the
    attention A(M); exactly invariant under simultaneous permutations."""

    def __init__(self, N, V, L, g_O, sigma2, attention="linear"):
        super().__init__(V, g_O, sigma2, float(N), N, attention)
        self.L = L
        self.P0 = (np.eye(V) - np.ones((V, V)) / V) / V          # the centred token block, (I − J/V)/V
        self.J0 = np.ones((V, V)) / V**2

    def _stats(self, A):
        V, L, N = self.V, self.L, self.N
        r = A.sum(-1)
        Gtt = (A * A).sum() / L * self.P0 + (r @ r) / L * self.J0
        Gtp = np.broadcast_to((r @ A)[None, :] / (L * V), (V, L))
        G = np.block([[Gtt, Gtp], [Gtp.T, A.T @ A / L]])
        B = np.concatenate([np.trace(A) / L * self.P0 + r.sum() / L * self.J0,
                            np.broadcast_to(A.sum(0)[:, None] / (V * L), (L, V))], 0)
        return N * G, N * B

    def _dstats(self, A, dA):
        V, L, N = self.V, self.L, self.N
        k = len(dA)
        r, dr = A.sum(-1), dA.sum(-1)                                                  # (L,), (k, L)
        dGtt = (2.0 * (A * dA).sum((-2, -1)) / L)[:, None, None] * self.P0 \
            + (2.0 * dr @ r / L)[:, None, None] * self.J0
        du = dr @ A + np.einsum("a,kal->kl", r, dA)                                    # d(rᵀA)
        dGtp = np.broadcast_to(du[:, None, :] / (L * V), (k, V, L))
        dGpp = np.swapaxes(dA, -1, -2) @ A
        dGpp = (dGpp + np.swapaxes(dGpp, -1, -2)) / L
        dG = np.concatenate([np.concatenate([dGtt, dGtp], -1),
                             np.concatenate([np.swapaxes(dGtp, -1, -2), dGpp], -1)], -2)
        dBtt = (np.trace(dA, axis1=-2, axis2=-1) / L)[:, None, None] * self.P0 \
            + (dr.sum(-1) / L)[:, None, None] * self.J0
        dBp = np.broadcast_to(dA.sum(-2)[:, :, None] / (V * L), (k, L, V))
        return N * dG, N * np.concatenate([dBtt, dBp], -2)

    def _grad_stats(self, A, Gam, Bet, const):
        """∂E/∂A from Gam = ∂E/∂G, Bet = ∂E/∂B (Gam symmetric); A and (Gam, Bet) may carry a leading
        direction axis (not both)."""
        V, L, N = self.V, self.L, self.N
        Gtt, Gtp, Gpp = Gam[..., :V, :V], Gam[..., :V, V:], Gam[..., V:, V:]
        a1 = (Gtt * self.P0).sum((-2, -1))[..., None, None]
        a2 = (Gtt * self.J0).sum((-2, -1))[..., None, None]
        c = Gtp.sum(-2)                                                                # (…, L)
        r = A.sum(-1)
        one = np.ones(L)
        out = 2.0 * A * a1 / L + 2.0 * (r[..., :, None] * one) * a2 / L \
            + 2.0 / (L * V) * (r[..., :, None] * c[..., None, :] + (A @ c[..., :, None]) * one) \
            + 2.0 * A @ Gpp / L
        if const:
            Bt, Bp = Bet[..., :V, :], Bet[..., V:, :]
            b1 = (Bt * self.P0).sum((-2, -1))[..., None, None]
            b2 = (Bt * self.J0).sum((-2, -1))[..., None, None]
            e = Bp.sum(-1)                                                             # (…, L)
            out = out + np.eye(L) * b1 / L + np.ones((L, L)) * b2 / L + one[:, None] * e[..., None, :] / (V * L)
        return N * out


class CopyWeight(_ScoreFunction):
    """âG = mP/L of the softmax attention A = softmax_b M, i.e. (Tr A − 1ᵀA1/L)/(L − 1) (the least-squares
    copy weight of A ≈ (m1 J + mP I)/L, in [0, 1]; the studies' âG), as a function of M (Eq. (35))."""

    attention = "softmax"

    def _value_grad_A(self, A, need_grad=True):
        L = A.shape[-1]
        C = (np.eye(L) - np.ones((L, L)) / L) / (L - 1.0)
        return (np.trace(A) - A.sum() / L) / (L - 1.0), C, None

    def _dgrad_A(self, A, dA, state):
        return np.zeros_like(dA)


copy_weight = CopyWeight()


def evidence_dataset(tokens, p: ActionParams, attention="linear") -> DatasetEvidence:
    """E(M) = −ln p(Y|A(M)) of one dataset (tokens (P, L)) at the model of ``p`` (V, g_O, σ²), Eqs. (1), (4)."""
    return DatasetEvidence(tokens, p.V, p.g_O, p.sigma2, attention)


def evidence_ek(p: ActionParams, P, attention="linear") -> EKEvidence:
    """Equivalent-kernel E(M) at P sequences (N = P·L), Eq. (4) with the population moments of Eq. (11)."""
    return EKEvidence(P * p.L, p.V, p.L, p.g_O, p.sigma2, attention)


def grad_hessian(f, M):
    """(gradient (L²,), Hessian (L², L²), symmetrised) of a score function (an evidence or copy_weight)."""
    M = np.asarray(M, float)
    n = M.size
    H = f.hvp(M, np.eye(n).reshape(n, *M.shape))
    return f.grad(M), 0.5 * (H + H.T)


def hvp(f, M, dirs):
    """Hessian of the score function f at M applied to the directions dirs (k, L, L): (k, L²)."""
    return f.hvp(M, dirs)
