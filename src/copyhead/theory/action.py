"""The order-parameter action S = -ln p(Y|m) - ln p(m) (docs/theory.md, Sec. 4).

Coordinates: A = (m1 J + mP I)/L, with the unit-Frobenius projections c1 = m1 + mP/L and
cG = mP √(L-1)/L (Eq. (10)). Softmax with scores β δ_ab is the point (m1, mP)(β) of Eq. (14).
Two evaluations of the evidence term:
(a) closed form with population moments (equivalent kernel, Eqs. (11)-(13)), a function of N = P·L only;
(b) exact, averaged over sampled nested datasets (Eq. (17)), from the family statistics of Eq. (5).
"""
from __future__ import annotations

import numpy as np

from copyhead.config import ActionParams

from .data import copy_task_tokens
from .evidence import LOG2PI, family_nle_grid, family_statistics
from .prior import neg_log_prior_family, neg_log_prior_softmax


# ----------------------------------------------------------------------------- coordinates
def order_to_coeffs(c1, cG, L):
    """(c1, cG) -> (m1, mP), inverse of Eq. (10)."""
    mP = np.asarray(cG, float) * L / np.sqrt(L - 1.0)
    return np.asarray(c1, float) - mP / L, mP


def coeffs_to_order(m1, mP, L):
    """(m1, mP) -> (c1, cG), Eq. (10)."""
    mP = np.asarray(mP, float)
    return np.asarray(m1, float) + mP / L, mP * np.sqrt(L - 1.0) / L


def softmax_coeffs(beta, L):
    """softmax_b(β δ_ab) = (m1 J + mP I)/L with m1 = L/(e^β+L-1), mP = L(e^β-1)/(e^β+L-1), Eq. (14)."""
    beta = np.asarray(beta, float)
    # written with e^{-β} for large β: m1 = L e^{-β}/(1 + (L-1)e^{-β})
    em = np.exp(-np.clip(beta, -700, None))
    den = 1.0 + (L - 1.0) * em
    return L * em / den, L * (1.0 - em) / den


# ----------------------------------------------------------------------------- closed form (EK)
def population_moments(A, V, centred=False):
    """Population moments Ḡ = E_a E_t[z_a z_aᵀ], B̄ = E_a E_t[z_a y_aᵀ], ȳy = E|y_a|², Eq. (11).

    For any L×L attention matrix A (rows r_a = Σ_b A_ab): token block Σ_b A_ab²(I - J/V)/V + r_a² J/V²,
    token-position block (r_a/V) 1 A_a·ᵀ, position block A_a· A_a·ᵀ; B̄ token block A_aa(I - J/V)/V
    (+ r_a J/V² uncentred), position block A_a· 1ᵀ/V (uncentred only).
    """
    A = np.asarray(A, float)
    L = A.shape[0]
    D = V + L
    Gb = np.zeros((D, D))
    Bb = np.zeros((D, V))
    IV, JV = np.eye(V), np.ones((V, V))
    for a in range(L):
        row = A[a]
        r = row.sum()
        Gb[:V, :V] += (row @ row) * (IV - JV / V) / V + r**2 * JV / V**2
        Gb[:V, V:] += np.outer(np.full(V, r / V), row)
        Gb[V:, :V] += np.outer(row, np.full(V, r / V))
        Gb[V:, V:] += np.outer(row, row)
        Bb[:V] += A[a, a] * (IV - JV / V) / V
        if not centred:
            Bb[:V] += r * JV / V**2
            Bb[V:] += np.outer(row, np.ones(V)) / V
    yy = 1.0 - 1.0 / V if centred else 1.0
    return Gb / L, Bb / L, yy


def closed_form_invariants(m1, mP, V, L):
    """The four invariants of A = (m1 J + mP I)/L on which the closed form depends, Eq. (12):
    (a_t, f_t, a_p, μ²q) = ([(m1+mP)² + (L-1)m1²]/(V L²), (m1+mP)/(V L), mP²/L³, (m1 + mP/L)²(1/V + 1/L))."""
    m1 = np.asarray(m1, float)
    mP = np.asarray(mP, float)
    s = m1 + mP
    return ((s**2 + (L - 1) * m1**2) / (V * L**2), s / (V * L), mP**2 / L**3,
            (m1 + mP / L) ** 2 * (1.0 / V + 1.0 / L))


def closed_form_nle(m1, mP, P, V, L, g_O, sigma2, centred=False):
    """Equivalent-kernel -ln p(Y|m1, mP), Eq. (12) (uncentred) / Eq. (13) (centred); broadcasts.

    With g = g_O/σ², N = P L and the invariants a_t, f_t, a_p, μ²q of ``closed_form_invariants``:
    (NV/2) ln 2πσ² + (V/2)[(V-1) ln(1+gNa_t) + (L-1) ln(1+gNa_p) + ln(1+gNμ²q)]
    + [N - (V-1) g N² f_t²/(1+gNa_t) - g N² μ² q/V /(1+gNμ²q)]/(2σ²).
    """
    return closed_form_nle_of_invariants(closed_form_invariants(m1, mP, V, L), P * L, V, L, g_O, sigma2,
                                         centred)


def closed_form_nle_of_invariants(invariants, N, V, L, g_O, sigma2, centred=False):
    """``closed_form_nle`` from precomputed ``closed_form_invariants`` (a grid evaluated at many N)."""
    a_t, f_t, a_p, mu2q = invariants
    g = g_O / sigma2
    gN = g * N
    logdet = (V - 1) * np.log1p(gN * a_t) + (L - 1) * np.log1p(gN * a_p) + np.log1p(gN * mu2q)
    fit = (V - 1) * gN * N * f_t**2 / (1.0 + gN * a_t)
    if centred:
        yy = N * (1.0 - 1.0 / V)
    else:
        yy = N
        fit = fit + gN * N * mu2q / V / (1.0 + gN * mu2q)
    return 0.5 * N * V * (LOG2PI + np.log(sigma2)) + 0.5 * V * logdet + (yy - fit) / (2.0 * sigma2)


def _action_params(p) -> ActionParams:
    """ActionParams as they are, or built from a mapping of their fields (the dict of earlier versions)."""
    return p if isinstance(p, ActionParams) else ActionParams(**p)


def action_linear(c1, cG, P, p: ActionParams, centred=False):
    """Closed-form action S(c1, cG; P) for linear attention, Eq. (16) with Eqs. (12) and (9)."""
    p = _action_params(p)
    m1, mP = order_to_coeffs(c1, cG, p.L)
    return (closed_form_nle(m1, mP, P, p.V, p.L, p.g_O, p.sigma2, centred)
            + neg_log_prior_family(m1, mP, p.L, p.d_k, p.g_Q, p.g_K, p.prior))


def action_softmax(beta, P, p: ActionParams, centred=False):
    """Closed-form action S(β; P) for softmax attention, Eq. (16) with Eqs. (12), (14), (15)."""
    p = _action_params(p)
    m1, mP = softmax_coeffs(beta, p.L)
    return (closed_form_nle(m1, mP, P, p.V, p.L, p.g_O, p.sigma2, centred)
            + neg_log_prior_softmax(beta, p.L, p.d_k, p.g_Q, p.g_K, p.prior))


# ----------------------------------------------------------------------------- exact dataset average
class ExactAverage:
    """Exact -ln p(Y|m) for n_datasets nested datasets of the copy task (Eq. (17)).

    ``nle_grid(P, c1_axis, cG_axis)`` -> (n_datasets, n_cG, n_c1) for linear grids;
    ``nle_beta(P, beta)`` -> (n_datasets, n_beta). The action adds the prior (Eq. (16)).
    """

    def __init__(self, p: ActionParams, n_datasets: int, P_max: int, seed: int, centred=False):
        self._setup(p, copy_task_tokens(seed, p.V, p.L, int(P_max), n_datasets), centred)

    @classmethod
    def of_tokens(cls, p: ActionParams, tokens, centred=False) -> "ExactAverage":
        """The average over given nested datasets, tokens of shape (n_datasets, P_max, L) (e.g. the
        training sets of runs, ``theory.same_dataset``); dataset d at P is ``tokens[d, :P]``."""
        self = cls.__new__(cls)
        self._setup(p, np.asarray(tokens, np.int64), centred)
        return self

    def _setup(self, p, tokens, centred):
        if tokens.ndim != 3 or tokens.shape[2] != p.L:
            raise ValueError(f"tokens must have shape (n_datasets, P_max, L={p.L}), got {tokens.shape}")
        self.p = p
        self.tokens = tokens
        self.centred = centred
        self._stats = {}
        self._grid_cache = {}

    def stats(self, P: int):
        P = int(P)
        if P not in self._stats:
            self._stats[P] = [family_statistics(t[:P], self.p.V, self.centred) for t in self.tokens]
        return self._stats[P]

    def nle_grid(self, P, c1_axis, cG_axis):
        key = (int(P), c1_axis.tobytes(), cG_axis.tobytes())
        if key not in self._grid_cache:
            self._grid_cache[key] = self._nle_grid(P, c1_axis, cG_axis)
        return self._grid_cache[key]

    def _nle_grid(self, P, c1_axis, cG_axis):
        L = self.p.L
        C1, CG = np.meshgrid(c1_axis, cG_axis)
        m1, mP = order_to_coeffs(C1, CG, L)
        return np.stack([family_nle_grid(s, m1, mP[:, 0], self.p.g_O, self.p.sigma2)
                         for s in self.stats(P)])

    def nle_points(self, P, m1, mP, dataset=None):
        st = self.stats(P) if dataset is None else [self.stats(P)[dataset]]
        m1, mP = np.broadcast_arrays(np.asarray(m1, float), np.asarray(mP, float))
        # Eq. (22) with one point per "row": rank-(V+1) Woodbury instead of a D×D Cholesky per point
        out = np.stack([family_nle_grid(s, m1.reshape(-1, 1), mP.ravel(), self.p.g_O,
                                        self.p.sigma2).reshape(m1.shape) for s in st])
        return out if dataset is None else out[0]

    def nle_beta(self, P, beta, dataset=None):
        m1, mP = softmax_coeffs(beta, self.p.L)
        return self.nle_points(P, m1, mP, dataset)
