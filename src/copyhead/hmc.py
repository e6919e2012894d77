"""Hamiltonian Monte Carlo on the collapsed posterior of (Q, K), K chains batched (docs/engine.md, "HMC").

One iteration of every chain: a fresh momentum p ~ N(0, I) (identity mass: the prior of Q and K is
isotropic per block, and the collapsed posterior has no stiff readout directions), ``n_leapfrog``
leapfrog steps of size ε·u (u ~ U[0.8, 1.2] per chain and iteration: a jittered step breaks the
periodic orbits a fixed trajectory length can lock into), then the Metropolis test on the change of the
Hamiltonian H = U(q) + ‖p‖²/2 (:mod:`copyhead.collapsed` gives U and ∇U). Being adjusted, the chain has no
step-size bias; ε only sets the speed.

The step size is adapted per chain during warm-up only (the first ``burn_in`` iterations) by the dual
averaging of Hoffman & Gelman (2014, Alg. 5; γ = 0.05, t0 = 10, κ = 0.75, μ = log 10ε₀) towards the
target acceptance probability; from the end of warm-up on each chain uses its averaged ε̄ and the chain
is a fixed, reversible Markov kernel. A trajectory whose energy error exceeds ``DIVERGENCE`` (or is not
finite) is *divergent*: rejected and counted per chain (after warm-up; those of warm-up apart, where
the search for ε tries too large steps on purpose). Every random number of chain k comes
from chain k's own generator (momenta, jitter, accept test, in that order per iteration, drawn on the CPU
in float64), so a chain's numbers do not depend on its batch or device; :meth:`HMC.state_dict` and
:meth:`HMC.load_state_dict` resume it bit-identically.
"""
from __future__ import annotations

import math
import time

import torch

from .collapsed import CollapsedPosterior
from .train import Interrupted, Recorder, _progress

DIVERGENCE = 1000.0          # energy error of a trajectory beyond which it is called divergent
DA_GAMMA, DA_T0, DA_KAPPA = 0.05, 10.0, 0.75
JITTER = 0.2                 # ε·U[1 − JITTER, 1 + JITTER]


class HMC:
    """K chains of HMC on ``energy_grad(q) -> (U (K,), ∇U (K, n))`` from ``q`` (K, n)."""

    def __init__(self, energy_grad, q: torch.Tensor, gens: list[torch.Generator], *, n_leapfrog: int,
                 step_size: float, target_accept: float):
        self.energy_grad, self.gens = energy_grad, gens
        self.n_leapfrog, self.target = int(n_leapfrog), float(target_accept)
        self.q = q.clone()
        self.U, self.g = energy_grad(self.q)
        K = q.shape[0]
        kw = dict(dtype=torch.float64)
        self.eps = torch.full((K,), float(step_size), **kw)            # the step size in use
        self.mu = torch.full((K,), math.log(10 * step_size), **kw)
        self.h_bar = torch.zeros(K, **kw)
        self.log_eps_bar = torch.zeros(K, **kw)
        self.n_adapt = 0                                                # dual-averaging iterations done
        self.n_iter = 0
        self.accept_sum = torch.zeros(K, **kw)                          # after warm-up
        self.n_after = 0
        self.n_divergent = torch.zeros(K, dtype=torch.int64)            # after warm-up (what counts)
        self.n_divergent_warmup = torch.zeros(K, dtype=torch.int64)     # while ε is still searched for
        self.last_accept = torch.zeros(K, **kw)

    def _draws(self, n: int):
        """Momenta (K, n), jitter (K,) and accept uniforms (K,) of this iteration, per chain."""
        p, jit, u = [], [], []
        for gen in self.gens:
            p.append(torch.randn(n, generator=gen, dtype=torch.float64))
            r = torch.rand(2, generator=gen, dtype=torch.float64)
            jit.append(r[0]), u.append(r[1])
        return torch.stack(p), torch.stack(jit), torch.stack(u)

    def step(self, adapt: bool) -> torch.Tensor:
        """One iteration of every chain (the step size adapted when ``adapt``); returns the accepted (K,)
        bool. ``live`` chains only move when their own proposal is accepted (the others stay put)."""
        q0, U0, g0 = self.q, self.U, self.g
        dev, dt = q0.device, q0.dtype
        p0, jit, u = self._draws(q0.shape[1])
        p = p0.to(device=dev, dtype=dt)
        eps = (self.eps * (1 + JITTER * (2 * jit - 1))).to(device=dev, dtype=dt)[:, None]
        q, g = q0.clone(), g0
        p = p - 0.5 * eps * g
        for i in range(self.n_leapfrog):
            q = q + eps * p
            U, g = self.energy_grad(q)
            if i < self.n_leapfrog - 1:
                p = p - eps * g
        p = p - 0.5 * eps * g
        H0 = U0.cpu().double() + 0.5 * (p0 * p0).sum(1)
        H1 = U.cpu().double() + 0.5 * (p.cpu().double() ** 2).sum(1)
        dH = H1 - H0
        bad = ~torch.isfinite(dH) | (dH > DIVERGENCE)
        alpha = torch.where(bad, torch.zeros_like(dH), torch.exp(torch.clamp(-dH, max=0.0)))
        accept = (u < alpha) & ~bad
        if adapt:
            self.n_divergent_warmup += bad.long()
        else:
            self.n_divergent += bad.long()
        acc = accept.to(dev)
        self.q = torch.where(acc[:, None], q, q0)
        self.U = torch.where(acc, U, U0)
        self.g = torch.where(acc[:, None], g, g0)
        self.last_accept = alpha
        self.n_iter += 1
        if adapt:
            self._adapt(alpha)
        else:
            self.accept_sum += alpha
            self.n_after += 1
        return accept

    def _adapt(self, alpha: torch.Tensor):
        self.n_adapt += 1
        m = self.n_adapt
        w = 1.0 / (m + DA_T0)
        self.h_bar = (1 - w) * self.h_bar + w * (self.target - alpha)
        log_eps = self.mu - math.sqrt(m) / DA_GAMMA * self.h_bar
        eta = m ** -DA_KAPPA
        self.log_eps_bar = eta * log_eps + (1 - eta) * self.log_eps_bar
        self.eps = torch.exp(log_eps)

    def end_warmup(self):
        """Fix every chain's step size at its dual-averaged value (call once, when warm-up ends)."""
        if self.n_adapt:
            self.eps = torch.exp(self.log_eps_bar)

    def accept_rate(self) -> torch.Tensor:
        """Mean acceptance probability per chain after warm-up (NaN before)."""
        return self.accept_sum / self.n_after if self.n_after else torch.full_like(self.accept_sum, float("nan"))

    STATE = ("q", "U", "g", "eps", "mu", "h_bar", "log_eps_bar", "n_adapt", "n_iter", "accept_sum",
             "n_after", "n_divergent", "n_divergent_warmup", "last_accept")

    def state_dict(self) -> dict:
        cpu = lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x
        return {**{k: cpu(getattr(self, k)) for k in self.STATE}, "gens": [g.get_state() for g in self.gens]}

    def load_state_dict(self, d: dict, device):
        for k in self.STATE:
            v = d[k]
            setattr(self, k, v.to(device) if k in ("q", "U", "g") else v)
        for g, st in zip(self.gens, d["gens"]):
            g.set_state(st)


# ---------------------------------------------------------------- the run loop (recipe method: hmc)

def run_hmc(model, recipe, state, gens, wgens, *, checkpoint=None, checkpoint_every: int = 0,
            stop_after: int | None = None, log=None):
    """Advance ``state`` (a :class:`copyhead.train.BatchState`; its ``step`` counts HMC iterations) to
    ``recipe.steps`` iterations on the collapsed posterior of ``model``'s chains, warm-up (step-size
    adaptation) during the first ``recipe.burn_in``; record the curves and samples of the recipe's
    schedules exactly as the SGLD loop does, each from a draw of W from its exact conditional given the
    iteration's (Q, K) (``wgens``: one generator per chain, used at record steps only, so the HMC stream
    does not depend on what is recorded). Returns the state; ``state.extra`` holds the sampler's summary
    (acceptance, divergences, step size) and, at checkpoints, its complete state."""
    post = CollapsedPosterior(model)
    steps, warm = recipe.steps, recipe.burn_in
    h = HMC(post.energy_grad, state.theta[:, :post.n_qk], gens, n_leapfrog=recipe.n_leapfrog,
            step_size=recipe.step_size, target_accept=recipe.target_accept)
    if "hmc" in state.extra:
        h.load_state_dict(state.extra["hmc"], model.device)
        for g, st in zip(wgens, state.extra["wgens"]):
            g.set_state(st)
    recorder = Recorder(model, recipe, state)
    live = state.live(model.device)
    D, V = model.layout.D, model.V
    progress_every = max(1, steps // 10)
    t_start, s_start = time.perf_counter(), state.step
    s = state.step
    theta = state.theta
    while True:
        if any(recorder.due(s)):
            xi = torch.stack([torch.randn(D, V, generator=g, dtype=torch.float64) for g in wgens])
            theta = post.full_theta(h.q, post.readout(h.q, xi.to(device=model.device, dtype=model.dtype)))
            U, sse, A, _ = model.energy_grad(theta)
            recorder.record(state, s, theta, U, sse, A, live, False)
        if log is not None and s > s_start and (s % progress_every == 0 or s == steps):
            _progress(log, s, steps, s_start, t_start, h.U, post.attention(h.q), live,
                      model.variant.sign_gauge)
            log(f"  hmc: step size {_fmt(h.eps)}, acceptance {_fmt(h.accept_rate() if s > warm else h.last_accept)}, "
                f"divergent {h.n_divergent.tolist()} (warm-up {h.n_divergent_warmup.tolist()})")
        if s == steps:
            break
        h.step(adapt=s < warm)
        s += 1
        if s == warm:
            h.end_warmup()
        if checkpoint is not None and checkpoint_every > 0 and s % checkpoint_every == 0 and s < steps:
            state.step, state.theta = s, theta
            state.extra = {"hmc": h.state_dict(), "wgens": [g.get_state() for g in wgens]}
            checkpoint(state.to_dict())
            if stop_after is not None and s >= stop_after:
                raise Interrupted(f"stopped after checkpoint at step {s}")
    state.step, state.theta = s, theta
    state.extra = {"accept_rate": h.accept_rate().tolist(), "n_divergent": h.n_divergent.tolist(),
                   "n_divergent_warmup": h.n_divergent_warmup.tolist(), "step_size": h.eps.tolist()}
    return state


def _fmt(x: torch.Tensor) -> str:
    x = x.double()
    return f"median {float(x.median()):.3g} [{float(x.min()):.3g}, {float(x.max()):.3g}]"
