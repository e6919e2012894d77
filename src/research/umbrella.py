"""Umbrella sampling along the copy order parameter, with MBAR: the posterior at a first-order point.

Next to the softmax jump a training set's posterior can hold two branches (pooling and copy) that HMC
chains never cross: their log-likelihoods differ by hundreds of nats (docs/benchmarks/metastability.md), so
tempering in the likelihood would need hundreds of replicas. The branches differ in the copy order
parameter s (softmax âG = mP/L, linear ĉG after the sign gauge), so a bias along s itself bridges them:

- window k adds the harmonic bias b_k(s) = κ_k (s − c_k)²/2 to the collapsed energy U(Q, K)
  (:class:`copyhead.collapsed.CollapsedPosterior`), windows spaced over the range of s that both branches
  and the way between them cover (:func:`windows`); each window is an HMC chain (:class:`copyhead.hmc.HMC`,
  all windows of a training set in one batch, each with its own step size and stream);
- the windows' samples are combined by MBAR (Shirts & Chodera 2008; :func:`mbar`): the free energies
  f_k solve f_k = −log Σ_n exp(−b_k(s_n)) / Σ_j N_j exp(f_j − b_j(s_n)) over all samples n, and sample n
  of the unbiased posterior has weight w_n ∝ 1 / Σ_j N_j exp(f_j − b_j(s_n)). The posterior mean of any
  recorded quantity is Σ w_n x_n, and the weight of the copy branch is Σ_{s_n > s*} w_n.

MBAR needs neighbouring windows to overlap (:attr:`MBAR.overlap` is the smallest) and each
window to be equilibrated; running the windows twice, from the prior and from the copy solution
(:func:`run_windows`), and comparing the two estimates is the check that it is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from copyhead import order_params as op
from copyhead.attention import variant
from copyhead.collapsed import CollapsedPosterior
from copyhead.hmc import HMC

__all__ = ["copy_coordinate", "biased", "windows", "MBAR", "mbar", "sample", "run_windows"]


def copy_coordinate(post: CollapsedPosterior, q: torch.Tensor):
    """(s (K,), ∂s/∂q (K, n)): the paper's copy order parameter of each chain's attention (softmax âG =
    mP/L, linear ĉG with the Z2 gauge c1 ≥ 0), and its gradient by autograd through the attention."""
    v = variant(post.model.attention)
    with torch.enable_grad():
        x = q.detach().requires_grad_(True)
        A = post.attention(x)
        if v.sign_gauge:
            A = op.sign_fix(A)
        s = v.plotted(op.order_parameters(A), post.L)[1]
        (g,) = torch.autograd.grad(s.sum(), x)
    return s.detach(), g


def biased(post: CollapsedPosterior, centres: torch.Tensor, kappa: torch.Tensor):
    """``energy_grad(q) -> (U + b, ∇(U + b))`` of the windows (chain k: centre ``centres[k]``, stiffness
    ``kappa[k]``), for :class:`copyhead.hmc.HMC`."""
    def energy_grad(q):
        U, g = post.energy_grad(q)
        s, ds = copy_coordinate(post, q)
        d = s - centres
        return U + 0.5 * kappa * d * d, g + (kappa * d)[:, None] * ds
    return energy_grad


def windows(lo: float, hi: float, n: int, dense: tuple[float, float, int] | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """(centres, κ) of ``n`` windows evenly over [lo, hi], each of width (standard deviation of its bias
    alone) the spacing Δ, κ = 1/Δ², so that neighbours overlap wherever the posterior is flatter than the
    bias. ``dense = (lo2, hi2, n2)`` replaces the windows inside [lo2, hi2] by ``n2`` windows evenly over it,
    each with its own spacing's κ: stiffer where the free energy bends down more sharply than the coarse
    bias holds (between the branches, where a coarse window slides onto one branch or the other)."""
    if n < 2 or not hi > lo:
        raise ValueError(f"windows: need n >= 2 and hi > lo, got n={n}, [{lo}, {hi}]")
    c = np.linspace(lo, hi, n)
    k = np.full(n, 1.0 / (c[1] - c[0]) ** 2)
    if dense is None:
        return c, k
    lo2, hi2, n2 = dense
    if not lo <= lo2 < hi2 <= hi:
        raise ValueError(f"windows: the dense range [{lo2}, {hi2}] must lie inside [{lo}, {hi}]")
    cd, kd = windows(lo2, hi2, n2)
    keep = (c < lo2) | (c > hi2)
    c, k = np.concatenate([c[keep], cd]), np.concatenate([k[keep], kd])
    order = np.argsort(c, kind="stable")
    return c[order], k[order]


def _bias(s: np.ndarray, centres: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """b_k(s_n), shape (K windows, N samples)."""
    return 0.5 * kappa[:, None] * (s[None, :] - centres[:, None]) ** 2


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


@dataclass
class MBAR:
    """The MBAR solution of one set of windows: free energies ``f`` (f_0 = 0), the log weights ``logw``
    (summing to 1) of the pooled samples ``s`` under the unbiased posterior, and ``overlap``, the smallest
    overlap-matrix entry between neighbouring windows (O_{k,k+1} = N_{k+1} Σ_n W_nk W_n(k+1), 0 for
    disjoint windows; ≳ 0.03 is the usual rule for a trustworthy estimate)."""
    f: np.ndarray
    logw: np.ndarray
    s: np.ndarray
    overlap: float

    def mean(self, values: list[np.ndarray] | None = None) -> float:
        """The posterior mean of ``values`` (per window, aligned with the samples; default s itself)."""
        x = self.s if values is None else np.concatenate([np.asarray(v, float) for v in values])
        return float(np.sum(np.exp(self.logw) * x))

    def weight_above(self, threshold: float) -> float:
        """The posterior weight of s > ``threshold`` (the copy branch when it lies between the branches)."""
        return float(0.5 * (1.0 - np.tanh(0.5 * self.free_energy_above(threshold))))   # 1/(1 + e^ΔF), in [0, 1]

    def free_energy_above(self, threshold: float) -> float:
        """ΔF = F(s > threshold) − F(s ≤ threshold) = −log(weight above / weight below), in nats (kT): the
        free energy of the copy branch relative to the pooling branch; finite where one branch's weight
        rounds to 1 (−inf / +inf where a side holds no sample)."""
        above = self.s > threshold
        lse = lambda x: _logsumexp(x, 0) if x.size else -np.inf
        return float(lse(self.logw[~above]) - lse(self.logw[above]))


def _initial_f(samples: list[np.ndarray], centres: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """A start for Newton: free-energy perturbation between neighbouring windows in order of their
    centres (the mean of the forward and backward estimates), summed along the chain of windows."""
    order = np.argsort(centres, kind="stable")
    f = np.zeros(len(samples))
    for a, b in zip(order[:-1], order[1:]):
        xa, xb = np.asarray(samples[a], float), np.asarray(samples[b], float)
        ca, cb = centres[[a, b]], kappa[[a, b]]
        db_a = _bias(xa, ca, cb)                                             # (2, n_a)
        db_b = _bias(xb, ca, cb)
        fwd = -(_logsumexp(-(db_a[1] - db_a[0]), 0) - np.log(len(xa)))       # f_b − f_a from window a
        bwd = _logsumexp(-(db_b[0] - db_b[1]), 0) - np.log(len(xb))          # f_b − f_a from window b
        d = 0.5 * (fwd + bwd)
        f[b] = f[a] + (d if np.isfinite(d) else 0.0)
    return f - f[0]


def mbar(samples: list[np.ndarray], centres, kappa, tol: float = 1e-10, max_iter: int = 200) -> MBAR:
    """MBAR over harmonic windows along one coordinate (``samples[k]``: window k's values of s).

    The free energies minimise the convex function Σ_n log Σ_j N_j e^{f_j − b_j(s_n)} − Σ_k N_k f_k
    (Shirts & Chodera 2008, Eq. C6), solved by damped Newton steps on f_1..f_{K−1} (f_0 = 0) from the
    neighbours' free-energy perturbation estimate; its stationarity is the self-consistent equation of the
    module's docstring, met to ``tol`` in f."""
    centres, kappa = np.asarray(centres, float), np.asarray(kappa, float)
    s = np.concatenate([np.asarray(x, float) for x in samples])
    N = np.array([len(x) for x in samples], float)
    b = _bias(s, centres, kappa)                                             # (K, N)
    logN = np.log(N)[:, None]
    f = _initial_f(samples, centres, kappa)

    def terms(f):
        log_den = _logsumexp(logN + f[:, None] - b, axis=0)                  # log Σ_j N_j e^{f_j − b_j(s_n)}
        return log_den, float(np.sum(log_den) - N @ f)

    log_den, F = terms(f)
    for _ in range(max_iter):
        W = np.exp(f[:, None] - b - log_den[None, :])                        # W_kn, Σ_k N_k W_kn = 1
        grad = N * W.sum(1) - N
        NW = N[:, None] * W
        hess = np.diag(N * W.sum(1)) - NW @ NW.T
        step = np.zeros_like(f)
        step[1:] = np.linalg.solve(hess[1:, 1:] + 1e-12 * np.eye(len(f) - 1), -grad[1:])
        t = 1.0
        while True:                                                          # backtracking: the objective is convex
            new_den, F_new = terms(f + t * step)
            if F_new <= F + 1e-4 * t * (grad @ step) or t < 1e-8:
                break
            t /= 2
        f, log_den, F = f + t * step, new_den, F_new
        if np.max(np.abs(t * step)) < tol:
            break
    else:
        raise RuntimeError(f"MBAR did not converge in {max_iter} Newton steps (windows without overlap?)")
    W = np.exp(f[:, None] - b - log_den[None, :])
    # neighbours in order of centre (windows listed twice, e.g. two runs, pair with their twin)
    order = np.argsort(centres, kind="stable")
    ov = float(min(N[j] * np.sum(W[i] * W[j]) for i, j in zip(order[:-1], order[1:])))
    logw = -log_den
    logw -= _logsumexp(logw, axis=0)
    return MBAR(f=f, logw=logw, s=s, overlap=ov)


def sample(h: HMC, steps: int, burn_in: int, record, log=None) -> dict[str, list]:
    """Run the HMC chains ``h`` for ``steps`` iterations, the step size adapted during the first ``burn_in``
    (then fixed: ``end_warmup``), and after them record ``record(q) -> {name: (K,) tensor}`` at every
    iteration: {name: [tensor per recorded iteration]}."""
    rec: dict[str, list] = {}
    for it in range(steps):
        h.step(adapt=it < burn_in)
        if it + 1 == burn_in:
            h.end_warmup()
        if it + 1 > burn_in:
            for name, x in record(h.q).items():
                rec.setdefault(name, []).append(x)
        if log and (it + 1) % max(1, steps // 5) == 0:
            log(f"umbrella: iteration {it + 1}/{steps}")
    return rec


def run_windows(post: CollapsedPosterior, q0: torch.Tensor, centres, kappa, gens: list[torch.Generator], *,
                steps: int, burn_in: int, n_leapfrog: int = 16, step_size: float = 0.02,
                target_accept: float = 0.7, record=None, log=None) -> dict:
    """Run the windows of ``post``'s chains (chain k: window k, from ``q0[k]``) for ``steps`` HMC
    iterations, the step size adapted per window during the first ``burn_in``; after warm-up record s and,
    with ``record(q) -> {name: (K,) tensor}``, other quantities at every iteration. Returns {"s": (K, n),
    name: (K, n), "accept": (K,), "n_divergent": (K,)} as numpy arrays."""
    dev, dt = q0.device, q0.dtype
    c = torch.as_tensor(np.asarray(centres, float), dtype=dt, device=dev)
    k = torch.as_tensor(np.asarray(kappa, float), dtype=dt, device=dev)
    h = HMC(biased(post, c, k), q0, gens, n_leapfrog=n_leapfrog, step_size=step_size, target_accept=target_accept)
    rec = sample(h, steps, burn_in, lambda q: {"s": copy_coordinate(post, q)[0], **(record(q) if record else {})},
                 log=log)
    out = {name: torch.stack(v, 1).cpu().numpy() for name, v in rec.items()}
    out["accept"] = h.accept_rate().cpu().numpy()
    out["n_divergent"] = h.n_divergent.cpu().numpy()
    return out
