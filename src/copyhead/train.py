"""The batched chain engine (design file, section 3): full-batch Adam on U, and SGLD sampling of
exp(−U/T), for K chains advanced together.

The K chains of a batch share the recipe, attention type and P; each has its own data, initialisation
and noise stream (its seed), and one step of all of them is one tensor program with a leading chain axis
(:class:`copyhead.model.CopyAttention`). A chain's numbers do not depend on which chains share its batch:

- every per-chain operation (batched matmul, reduction over a chain's own axes, elementwise update) is
  the same whatever K is (tests/test_train.py checks a seed alone against the same seed among others);
- SGLD noise comes from one ``torch.Generator`` per chain, drawn ahead in blocks of ``block`` steps whose
  size depends only on the number of parameters (:class:`NoiseStreams`), so adding a chain changes no
  other chain's noise; numbers are drawn in float32 and widened to the run's dtype (five times cheaper
  than float64 draws; the noise of a step is a sum of many such numbers' effects, their 24-bit mantissa
  is not a precision limit of the sampler);
- a chain that diverges is frozen (its θ no longer moves, its later records stay NaN) and marked with
  the step at which it was seen; the others go on.

One loop serves both methods. Step ``s`` denotes the state after ``s`` updates (step 0 = the
initialisation); the loop evaluates ∇U at step s (:meth:`CopyAttention.energy_grad`; U and the sum of
squares only at record, check and progress steps, where they are used), records what is due at s from that
same evaluation, then updates:

- Adam:  bias-corrected Adam on ∇U (β = 0.9, 0.999, ε = 1e-8) with learning rate ``lr·schedule(s)``
  (:func:`copyhead.schedules.learning_rate`); the optional ``prior_warmup`` ramps the prior part of the
  gradient linearly from 0 (step 0) to its full weight (step ``prior_warmup``), so that the network first
  fits the data, then settles in the nearest minimum of U (the recorded ``energy`` is always the full U);
- SGLD:  ``θ ← θ − η ∇U + √(2 η T) ξ``, ξ ~ N(0, I) from the chain's own generator (Welling & Teh,
  full batch), η per chain (chains of different P in one batch may need different step sizes).

Recording is cheap and sync-free: the curves (energy, losses, order parameters; :data:`CURVES`) are
written into preallocated tensors at ``log_points`` log-spaced steps (always including 0 and ``steps``);
samples (SGLD: every ``thin`` steps after ``burn_in``; Adam: one sample, the final state) add their order
parameters and losses (:data:`SAMPLE_VARS`) and (sign-fixed) attention/score matrices.

Divergence (:func:`diverged`) is checked at record steps and every ``CHECK_EVERY`` steps: a chain diverges
when U or θ is non-finite, or when U or ||θ||² exceeds ``DIVERGE_FACTOR`` times its scale at the start
(|U₀| + n and ||θ₀||² + Σ prior variances): no sampler or optimiser of this posterior moves that far
legitimately. The loop can save its complete state (θ, Adam moments, noise-generator states, records)
every ``checkpoint_every`` steps and resume from it bit-identically; :func:`state_sha256` is the checksum a
checkpoint carries of that state.
"""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from . import order_params as op
from .model import CopyAttention
from .schedules import learning_rate, record_steps, sample_steps

CHECK_EVERY = 100
DIVERGE_FACTOR = 1e6
CURVES = ("energy", "train_loss", "test_loss", "c1", "cG", "m1", "mP")
SAMPLE_VARS = (*op.NAMES, "test_loss", "train_loss")
ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-8
NOISE_BLOCK_NUMBERS = 1 << 18   # noise drawn ahead per chain (numbers); the block length in steps
MAX_NOISE_BLOCK = 256           # depends on the parameter count only, never on the batch
DRAW_DTYPE = torch.float32      # noise is drawn in float32 (~5x cheaper than float64) and widened


class Interrupted(RuntimeError):
    """Raised by the loop after saving a checkpoint when asked to stop early (tests of resumption)."""


class NoiseStreams:
    """Per-chain Gaussian noise ξ_s (K, n) for step s, each chain from its own generator, drawn ahead in
    blocks of ``block`` steps (block boundaries at multiples of ``block`` from step 0, so a checkpoint
    only needs the generator states at the start of the current block)."""

    def __init__(self, gens: list[torch.Generator], n: int, dtype, device):
        self.gens, self.n, self.dtype, self.device = gens, n, dtype, torch.device(device)
        self.block = max(1, min(MAX_NOISE_BLOCK, NOISE_BLOCK_NUMBERS // n))
        self._block_index: int | None = None
        self._states: list[torch.Tensor] | None = None
        self._buf: torch.Tensor | None = None
        self._buf32: torch.Tensor | None = None

    def _draw(self, b: int):
        self._states = [g.get_state() for g in self.gens]
        if self._buf32 is None:
            self._buf32 = torch.empty((len(self.gens), self.block, self.n), dtype=DRAW_DTYPE, device=self.device)
        for g, row in zip(self.gens, self._buf32):  # each chain's block from its own generator
            torch.randn((self.block, self.n), generator=g, dtype=DRAW_DTYPE, device=self.device, out=row)
        self._buf = self._buf32.to(self.dtype)  # (K, block, n), widened once per block
        self._block_index = b

    def at(self, s: int) -> torch.Tensor:
        b = s // self.block
        if b != self._block_index:
            if self._block_index is not None and b != self._block_index + 1:
                raise RuntimeError(f"noise requested for step {s} out of order")
            self._draw(b)
        return self._buf[:, s % self.block]

    def state(self, s: int) -> dict:
        """What resumes the streams at step ``s`` (the generator states at the start of s's block)."""
        b = s // self.block
        if self._block_index == b:
            return {"block": b, "states": self._states}
        assert self._block_index is None or self._block_index == b - 1
        return {"block": b, "states": [g.get_state() for g in self.gens]}  # s starts a new block

    def restore(self, d: dict):
        for g, st in zip(self.gens, d["states"]):
            g.set_state(st)
        self._draw(int(d["block"]))


@dataclass
class BatchState:
    """Everything needed to continue a batch of chains exactly (what a checkpoint holds)."""
    step: int
    theta: torch.Tensor                    # (K, n)
    m: torch.Tensor | None                 # Adam moments (K, n)
    v: torch.Tensor | None
    curves: dict                           # name -> (K, n_rec), NaN where not recorded
    samples: dict                          # name -> (K, n_samp)
    A_sum: torch.Tensor                    # (K, L, L) Σ over samples of the (sign-fixed) attention
    M_sum: torch.Tensor                    # (K, L, L) Σ over samples of the (sign-fixed) scores
    diverged_step: list                    # per chain: step at which divergence was seen, or -1
    ref_energy: torch.Tensor               # (K,) divergence scales at the start
    ref_norm: torch.Tensor
    frozen_theta: torch.Tensor | None = None
    noise: dict | None = None              # NoiseStreams.state at ``step`` (SGLD)
    extra: dict = field(default_factory=dict)

    KEYS = ("step", "theta", "m", "v", "curves", "samples", "A_sum", "M_sum", "diverged_step",
            "ref_energy", "ref_norm", "frozen_theta", "noise")

    def to_dict(self) -> dict:
        cpu = lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x
        d = {k: cpu(getattr(self, k)) for k in self.KEYS}
        for k in ("curves", "samples"):
            d[k] = {n: cpu(t) for n, t in d[k].items()}
        d["extra"] = self.extra                    # a sampler's own state (HMC; already on the CPU)
        return d

    @classmethod
    def from_dict(cls, d: dict, device) -> "BatchState":
        mv = lambda x: x.to(device) if isinstance(x, torch.Tensor) else x
        kw = {k: mv(d[k]) for k in cls.KEYS}
        for k in ("curves", "samples"):
            kw[k] = {n: mv(t) for n, t in d[k].items()}
        kw["diverged_step"] = list(d["diverged_step"])
        kw["extra"] = d.get("extra", {})
        return cls(**kw)

    def live(self, device) -> torch.Tensor:
        """(K,) bool: the chains that have not diverged."""
        return torch.tensor([d < 0 for d in self.diverged_step], device=device)


def state_sha256(d) -> str:
    """sha256 over a checkpoint's content (:meth:`BatchState.to_dict` plus what the writer adds): every
    tensor's dtype, shape and bytes, every number, string and key, in a fixed order. A checkpoint carries
    it beside the state and the reader recomputes it, so a bit flipped in a tensor's data (which
    ``torch.load`` reads without complaint) is found before a run resumes from it."""
    h = hashlib.sha256()

    def walk(x):
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}:".encode())
            h.update(t.numpy().tobytes() if t.numel() else b"")
        elif isinstance(x, dict):
            h.update(f"D{len(x)}:".encode())
            for k in sorted(x, key=str):
                h.update(f"K{type(k).__name__}{k!r}:".encode())
                walk(x[k])
        elif isinstance(x, (list, tuple)):
            h.update(f"L{len(x)}:".encode())
            for v in x:
                walk(v)
        elif isinstance(x, np.ndarray):
            walk(torch.from_numpy(np.ascontiguousarray(x)))
        elif isinstance(x, np.generic):
            walk(x.item())
        elif x is None or isinstance(x, (bool, int, float, str)):
            h.update(f"S{type(x).__name__}{x!r};".encode())
        else:
            raise TypeError(f"a checkpoint holds a {type(x).__name__}, which state_sha256 cannot hash")

    walk(d)
    return h.hexdigest()


def new_state(model: CopyAttention, recipe, theta: torch.Tensor) -> BatchState:
    """The state at step 0 of chains started at ``theta`` (K, n)."""
    n_rec = len(record_steps(recipe.steps, recipe.log_points))
    n_samp = len(sample_steps(recipe))
    K, L = theta.shape[0], model.L
    kw = dict(dtype=model.dtype, device=model.device)
    nan = lambda n: torch.full((K, n), float("nan"), **kw)
    U0 = model.energy_grad(theta)[0]
    return BatchState(step=0, theta=theta.clone(), m=None if recipe.sgld else torch.zeros_like(theta),
                      v=None if recipe.sgld else torch.zeros_like(theta),
                      curves={k: nan(n_rec) for k in CURVES}, samples={k: nan(n_samp) for k in SAMPLE_VARS},
                      A_sum=torch.zeros(K, L, L, **kw), M_sum=torch.zeros(K, L, L, **kw),
                      diverged_step=[-1] * K,
                      ref_energy=U0.abs() + theta.shape[1],
                      ref_norm=(theta * theta).sum(1) + (model.prior_std() ** 2).sum())


def diverged(U: torch.Tensor, theta: torch.Tensor, state: BatchState) -> torch.Tensor:
    """(K,) bool: non-finite, or energy or ||θ||² beyond DIVERGE_FACTOR × its scale at the start."""
    norm = (theta * theta).sum(1)
    return ~torch.isfinite(U) | ~torch.isfinite(norm) | (U > DIVERGE_FACTOR * state.ref_energy) | (
        norm > DIVERGE_FACTOR * state.ref_norm)


class Recorder:
    """What is recorded when: the curves at ``record_steps`` and the samples at ``sample_steps`` of a
    recipe, written into a :class:`BatchState` from one evaluation at the step (shared by every method's
    loop: this one and :func:`copyhead.hmc.run_hmc`)."""

    def __init__(self, model: CopyAttention, recipe, state: BatchState):
        self.model = model
        self.rec, self.samp = record_steps(recipe.steps, recipe.log_points), sample_steps(recipe)
        self.ri, self.si = int(np.searchsorted(self.rec, state.step)), int(np.searchsorted(self.samp, state.step))
        self.sign_gauge = model.variant.sign_gauge
        self.pos_scores = model.scores_kind == "position"
        self.inv_tokens = 1.0 / model.n_tokens
        self.nan = torch.tensor(float("nan"), dtype=model.dtype, device=model.device)

    def _next(self, steps, i) -> int:
        return int(steps[i]) if i < len(steps) else -1

    def due(self, s: int) -> tuple[bool, bool]:
        """(a curve point, a sample) is due at step ``s``."""
        return s == self._next(self.rec, self.ri), s == self._next(self.samp, self.si)

    def record(self, state: BatchState, s: int, theta, U, sse, A, live, any_frozen: bool, on_sample=None):
        """Write what is due at step ``s`` from (U, SSE, A) at ``theta`` (frozen chains: NaN)."""
        model = self.model
        is_rec, is_samp = self.due(s)
        if not (is_rec or is_samp):
            return
        M = model.score_matrix(theta)
        if not self.pos_scores:
            M = M[:, model.V:, model.V:]
        test_loss = model.mean_loss(theta, model.T_test, A if self.pos_scores else None)
        if self.sign_gauge:  # the gauge acts on the reported pattern only (f is invariant under it)
            A, M = op.sign_fix(A, M)
        vals = {**op.order_parameters(A), "energy": U, "train_loss": sse * self.inv_tokens, "test_loss": test_loss}
        if any_frozen:
            vals = {k: torch.where(live, x, self.nan) for k, x in vals.items()}
        if is_rec:
            for k in CURVES:
                state.curves[k][:, self.ri] = vals[k]
            self.ri += 1
        if is_samp:
            for k in SAMPLE_VARS:
                state.samples[k][:, self.si] = vals[k]
            state.A_sum += A
            state.M_sum += M
            if on_sample is not None:
                on_sample(s, theta)
            self.si += 1


def run_chains(model: CopyAttention, recipe, state: BatchState, noise: NoiseStreams | None = None, *,
               eta=None, mask: torch.Tensor | None = None, on_sample=None, checkpoint=None,
               checkpoint_every: int = 0, stop_after: int | None = None,
               log: Callable[[str], None] | None = None) -> BatchState:
    """Advance ``state`` to ``recipe.steps`` (chains that diverge are frozen); returns the final state.

    ``noise`` (SGLD) holds the chains' generators; ``eta`` (SGLD) is the step size of each chain
    (a sequence of K numbers; default: ``recipe.eta`` for all); ``mask`` (0/1 per parameter) freezes parameters
    (tests); ``on_sample(step, theta)`` is called at every sample step; ``checkpoint(state_dict)`` every
    ``checkpoint_every`` steps; ``stop_after`` raises :class:`Interrupted` right after the first
    checkpoint at a step >= stop_after (tests); ``log(line)`` receives about ten progress lines (step,
    energy, order parameters, steps/s, ETA) and one line per divergence.
    """
    steps = recipe.steps
    sgld, sign_gauge = recipe.sgld, model.variant.sign_gauge
    if sgld:
        if noise is None:
            raise ValueError("SGLD needs the chains' noise streams")
        if state.noise is not None:
            noise.restore(state.noise)
        etas = [recipe.eta] * state.theta.shape[0] if eta is None else [float(e) for e in eta]
        neg_eta = torch.tensor(etas, dtype=model.dtype, device=model.device).neg_()[:, None]   # (K, 1)
        noise_scale = torch.tensor([math.sqrt(2.0 * e * recipe.temperature) for e in etas],
                                   dtype=model.dtype, device=model.device)[:, None]
    theta, m, v = state.theta, state.m, state.v
    K = theta.shape[0]
    b1, b2 = ADAM_BETAS
    prior_warmup = recipe.prior_warmup if not sgld else 0
    recorder = Recorder(model, recipe, state)
    live = state.live(model.device)
    any_frozen = not bool(live.all())
    progress_every = max(1, steps // 10)
    t_start, s_start = time.perf_counter(), state.step
    s = state.step
    while True:
        is_rec, is_samp = recorder.due(s)
        is_log = log is not None and s > s_start and (s % progress_every == 0 or s == steps)
        is_check = is_rec or is_samp or s % CHECK_EVERY == 0 or s == steps
        U, sse, A, g = model.energy_grad(theta, with_energy=is_check or is_log)   # U only where used
        if is_check:
            bad = (diverged(U, theta, state) & live).tolist()
            if any(bad):
                for k in (k for k in range(K) if bad[k]):
                    state.diverged_step[k] = s
                    if log:
                        log(f"chain {k} diverged at step {s} (energy {float(U[k]):.4g}); frozen")
                live = state.live(model.device)
                state.frozen_theta = theta.clone() if state.frozen_theta is None else torch.where(
                    live[:, None], state.frozen_theta, theta)
                any_frozen = True
                if not bool(live.any()):
                    break
        recorder.record(state, s, theta, U, sse, A, live, any_frozen, on_sample)
        if is_log:
            _progress(log, s, steps, s_start, t_start, U, A, live, sign_gauge)
        if s == steps:
            break
        if s < prior_warmup:  # ramp the prior (weight-decay) part of ∇U from 0 to its full weight
            g.addcmul_(theta, model._prec, value=-(1.0 - s / prior_warmup))
        if mask is not None:
            g = g * mask
        if sgld:
            xi = noise.at(s)
            if mask is not None:
                xi = xi * mask
            theta.addcmul_(g, neg_eta).addcmul_(xi, noise_scale)
        else:
            t = s + 1
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v / (1 - b2 ** t)).sqrt_().add_(ADAM_EPS)
            theta.addcdiv_(m, denom, value=-learning_rate(recipe, s) / (1 - b1 ** t))
        if any_frozen:
            theta.copy_(torch.where(live[:, None], theta, state.frozen_theta))
        s += 1
        if checkpoint is not None and checkpoint_every > 0 and s % checkpoint_every == 0 and s < steps:
            state.step = s
            state.noise = noise.state(s) if sgld else None
            checkpoint(state.to_dict())
            if stop_after is not None and s >= stop_after:
                raise Interrupted(f"stopped after checkpoint at step {s}")
    state.step = s
    state.noise = noise.state(s) if sgld else None
    return state


def _progress(log, s, steps, s_start, t_start, U, A, live, sign_gauge):
    """One progress line: step, energy and order parameters over the live chains, speed, ETA."""
    dt = time.perf_counter() - t_start
    rate = (s - s_start) / dt if dt > 0 else float("inf")
    eta_s = (steps - s) / rate if rate > 0 else float("nan")
    n_live = int(live.sum())
    if n_live:
        Al = A[live]
        if sign_gauge:
            Al = op.sign_fix(Al)
        c1, cG = op.pooling(Al), op.copy_overlap(Al)
        Ul = U[live]
        body = (f"energy median {float(Ul.median()):.5g} [{float(Ul.min()):.5g}, {float(Ul.max()):.5g}]  "
                f"c1 {float(c1.mean()):.4f}  cG {float(cG.mean()):.4f} (means over chains)")
    else:
        body = "no live chain"
    log(f"step {s}/{steps} ({100 * s / steps:.0f}%)  {body}  live {n_live}/{len(live)}  "
        f"{rate:.0f} steps/s  ETA {eta_s:.0f} s")
