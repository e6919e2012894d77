"""Training loops (design file, section 3): full-batch Adam on U, and SGLD sampling of exp(−U/T).

One loop serves both methods. Step ``s`` denotes the state after ``s`` updates (step 0 = the
initialisation); the loop evaluates U and ∇U at step s (:meth:`CopyAttention.energy_grad`), records what
is due at s from that same evaluation, then updates:

- Adam:  bias-corrected Adam on ∇U (β = 0.9, 0.999, ε = 1e-8) with learning rate ``lr·schedule(s)``
  (linear warm-up over ``warmup`` steps, then ``cosine`` decay to 0 at ``steps`` or ``constant``); the
  optional ``prior_warmup`` ramps the prior part of the gradient linearly from 0 (step 0) to its full
  weight (step ``prior_warmup``), so that the network first fits the data, then settles in the nearest
  minimum of U (the recorded ``energy`` is always the full U);
- SGLD:  ``θ ← θ − η ∇U + √(2 η T) ξ``, ξ ~ N(0, I) from a torch Generator (Welling & Teh, full batch).

Recording is cheap and sync-free: the curves (energy, losses, order parameters) are written into
preallocated tensors at ``log_points`` log-spaced steps (always including 0 and ``steps``); samples
(SGLD: every ``thin`` steps after ``burn_in``; Adam: one sample, the final state) add their order
parameters, losses and (sign-fixed) attention/score matrices. Divergence (non-finite U) is checked at
record steps and every ``CHECK_EVERY`` steps; the chain then stops and reports the step at which it was
seen (everything not yet recorded stays NaN). The loop can save its complete state (θ, Adam moments, RNG
state, records) every ``checkpoint_every`` steps and resume from it bit-identically.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from . import order_params as op
from .model import CopyAttention

CHECK_EVERY = 100
CURVES = ("energy", "train_loss", "test_loss", "c1", "cG", "m1", "mP")
SAMPLE_VARS = (*op.NAMES, "test_loss", "train_loss")
ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-8


class Interrupted(RuntimeError):
    """Raised by the loop after saving a checkpoint when asked to stop early (tests of resumption)."""


def record_steps(steps: int, n: int) -> np.ndarray:
    """``n`` distinct log-spaced integer steps in [0, steps], including 0 and ``steps``
    (all of 0..steps when steps+1 <= n)."""
    if steps + 1 <= n:
        return np.arange(steps + 1)
    k = n - 1
    while True:
        pts = np.unique(np.round(np.geomspace(1, steps, k)).astype(np.int64))
        if len(pts) >= n - 1:
            break
        k += 1
    if len(pts) > n - 1:  # drop duplicates' excess from the dense low end, keep 1 and steps
        keep = np.round(np.linspace(0, len(pts) - 1, n - 1)).astype(int)
        pts = pts[np.unique(keep)]
    return np.concatenate([[0], pts])


def sample_steps(recipe: dict) -> np.ndarray:
    """Steps at which samples are recorded: SGLD every ``thin`` steps after ``burn_in``; Adam the last."""
    steps = int(recipe["steps"])
    if recipe["method"] == "sgld":
        b, t = int(recipe["burn_in"]), int(recipe["thin"])
        return np.arange(b + t, steps + 1, t, dtype=np.int64)
    return np.array([steps], dtype=np.int64)


def learning_rate(recipe: dict, s: int) -> float:
    lr, steps, warm = float(recipe["lr"]), int(recipe["steps"]), int(recipe.get("warmup", 0))
    if s < warm:
        return lr * (s + 1) / warm
    if recipe.get("schedule", "cosine") == "constant":
        return lr
    return lr * 0.5 * (1.0 + math.cos(math.pi * (s - warm) / max(1, steps - warm)))


@dataclass
class ChainState:
    """Everything needed to continue a chain exactly (what a checkpoint holds)."""
    step: int
    theta: torch.Tensor
    m: torch.Tensor | None
    v: torch.Tensor | None
    rng: torch.Tensor                # state of the noise Generator
    curves: torch.Tensor             # (n_rec, len(CURVES)), NaN where not recorded
    samples: torch.Tensor            # (n_samp, len(SAMPLE_VARS))
    A_sum: torch.Tensor              # Σ over samples of the (sign-fixed) attention matrix
    M_sum: torch.Tensor              # Σ over samples of the (sign-fixed) score matrix
    diverged_step: int = -1
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("step", "theta", "m", "v", "rng", "curves", "samples",
                                               "A_sum", "M_sum", "diverged_step")}

    @classmethod
    def from_dict(cls, d: dict, device) -> "ChainState":
        mv = lambda x: None if x is None else x.to(device)
        return cls(step=int(d["step"]), theta=mv(d["theta"]), m=mv(d["m"]), v=mv(d["v"]), rng=d["rng"],
                   curves=mv(d["curves"]), samples=mv(d["samples"]), A_sum=mv(d["A_sum"]),
                   M_sum=mv(d["M_sum"]), diverged_step=int(d["diverged_step"]))


def new_state(model: CopyAttention, recipe: dict, theta: torch.Tensor, gen: torch.Generator) -> ChainState:
    n_rec = len(record_steps(int(recipe["steps"]), int(recipe["log_points"])))
    n_samp = len(sample_steps(recipe))
    kw = dict(dtype=model.dtype, device=model.device)
    adam = recipe["method"] == "adam"
    L = model.L
    return ChainState(step=0, theta=theta.clone(), m=torch.zeros_like(theta) if adam else None,
                      v=torch.zeros_like(theta) if adam else None, rng=gen.get_state(),
                      curves=torch.full((n_rec, len(CURVES)), float("nan"), **kw),
                      samples=torch.full((n_samp, len(SAMPLE_VARS)), float("nan"), **kw),
                      A_sum=torch.zeros(L, L, **kw), M_sum=torch.zeros(L, L, **kw))


def run_chain(model: CopyAttention, recipe: dict, state: ChainState, gen: torch.Generator, *,
              mask: torch.Tensor | None = None, on_sample=None, checkpoint=None,
              checkpoint_every: int = 0, stop_after: int | None = None) -> ChainState:
    """Advance ``state`` to ``recipe['steps']`` (or to divergence); returns the final state.

    ``mask`` (0/1 per parameter) freezes parameters (tests); ``on_sample(step, theta)`` is called at every
    sample step; ``checkpoint(state_dict)`` is called every ``checkpoint_every`` steps; ``stop_after``
    raises :class:`Interrupted` right after the first checkpoint at a step >= stop_after (tests).
    """
    steps = int(recipe["steps"])
    rec = record_steps(steps, int(recipe["log_points"]))
    samp = sample_steps(recipe)
    sgld = recipe["method"] == "sgld"
    linear = model.attention == "linear"
    pos_scores = model.scores_kind == "position"
    gen.set_state(state.rng)
    theta, m, v = state.theta, state.m, state.v
    curves, samples = state.curves, state.samples
    if sgld:
        eta = float(recipe["eta"])
        noise_scale = math.sqrt(2.0 * eta * float(recipe.get("temperature", 1.0)))
    b1, b2 = ADAM_BETAS
    prior_warmup = int(recipe.get("prior_warmup", 0)) if not sgld else 0
    ri = int(np.searchsorted(rec, state.step))     # next record index
    si = int(np.searchsorted(samp, state.step))    # next sample index
    next_rec = int(rec[ri]) if ri < len(rec) else -1
    next_samp = int(samp[si]) if si < len(samp) else -1
    inv_tokens = 1.0 / model.n_tokens
    s = state.step
    while True:
        U, sse, A, g = model.energy_grad(theta)
        is_rec, is_samp = s == next_rec, s == next_samp
        if is_rec or is_samp or s % CHECK_EVERY == 0 or s == steps:
            if not bool(torch.isfinite(U)):
                state.diverged_step = s
                break
        if is_rec or is_samp:
            M = model.score_matrix(theta)
            if not pos_scores:
                M = M[model.V:, model.V:]
            test_loss = model.mean_loss(theta, model.T_test, A if pos_scores else None)
            if linear:  # the gauge acts on the reported pattern only (f is invariant under it)
                A, M = op.sign_fix(A, M)
            ops = op.order_parameter_vector(A)
            train_loss = sse * inv_tokens
            if is_rec:
                curves[ri, 0], curves[ri, 1], curves[ri, 2] = U, train_loss, test_loss
                curves[ri, 3:7] = ops[:4]
                ri += 1
                next_rec = int(rec[ri]) if ri < len(rec) else -1
            if is_samp:
                samples[si, :6] = ops
                samples[si, 6], samples[si, 7] = test_loss, train_loss
                state.A_sum += A
                state.M_sum += M
                if on_sample is not None:
                    on_sample(s, theta)
                si += 1
                next_samp = int(samp[si]) if si < len(samp) else -1
        if s == steps:
            break
        if s < prior_warmup:  # ramp the prior (weight-decay) part of ∇U from 0 to its full weight
            g.addcmul_(theta, model._prec, value=-(1.0 - s / prior_warmup))
        if mask is not None:
            g = g * mask
        if sgld:
            xi = torch.randn(theta.shape, generator=gen, dtype=theta.dtype, device=theta.device)
            if mask is not None:
                xi *= mask
            theta.add_(g, alpha=-eta).add_(xi, alpha=noise_scale)
        else:
            t = s + 1
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v / (1 - b2 ** t)).sqrt_().add_(ADAM_EPS)
            theta.addcdiv_(m, denom, value=-learning_rate(recipe, s) / (1 - b1 ** t))
        s += 1
        if checkpoint is not None and checkpoint_every > 0 and s % checkpoint_every == 0 and s < steps:
            state.step, state.rng = s, gen.get_state()
            checkpoint(state.to_dict())
            if stop_after is not None and s >= stop_after:
                raise Interrupted(f"stopped after checkpoint at step {s}")
    state.step, state.rng = s, gen.get_state()
    return state
