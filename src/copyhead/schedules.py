"""Step schedules of a training recipe and the energy's cost rule (torch-free, shared by the engine and
the resource estimate).

- :func:`record_steps`: the log-spaced steps at which curves (energy, losses, order parameters) are
  recorded, always including 0 and ``steps``;
- :func:`sample_steps`: the steps at which samples are recorded (SGLD: every ``thin`` steps after
  ``burn_in``; Adam: the final state only);
- :func:`learning_rate`: Adam's learning rate at step s (linear warm-up, then cosine decay or constant).
- :func:`step_size`: the SGLD step size of a chain of P sequences;
- :func:`energy_costs`, :func:`cheapest_energy`: how U and ∇U of a chain are computed (the direct
  products over sequences, or dense or sparse co-occurrence counts, :mod:`copyhead.suffstats`).

Step ``s`` is the state after ``s`` updates (step 0 = the initialisation).
"""
from __future__ import annotations

import math

import numpy as np


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


def sample_steps(recipe) -> np.ndarray:
    """Steps at which samples are recorded: SGLD (steps) and HMC (iterations) every ``thin`` after
    ``burn_in``; Adam the last. ``recipe`` is a :class:`copyhead.config.Recipe`."""
    if recipe.method in ("sgld", "hmc"):
        return np.arange(recipe.burn_in + recipe.thin, recipe.steps + 1, recipe.thin, dtype=np.int64)
    return np.array([recipe.steps], dtype=np.int64)


def n_samples(recipe) -> int:
    """Number of recorded samples (the length of :func:`sample_steps`)."""
    return len(sample_steps(recipe))


def learning_rate(recipe, s: int) -> float:
    """Adam's learning rate at step ``s``: linear warm-up over ``warmup`` steps, then cosine decay to 0
    at ``steps`` (or constant)."""
    lr, steps, warm = recipe.lr, recipe.steps, recipe.warmup
    if s < warm:
        return lr * (s + 1) / warm
    if recipe.schedule == "constant":
        return lr
    return lr * 0.5 * (1.0 + math.cos(math.pi * (s - warm) / max(1, steps - warm)))


def step_size(recipe, P: int) -> float:
    """SGLD step size η of a chain with ``P`` training sequences. Every recipe today uses one η for all P
    (``recipe.eta``); the engine takes one η per chain (:func:`copyhead.train.run_chains`), so a recipe key
    that scales η with P (the energy's curvature grows with P: η = 1e-3 diverges at L = 16, d_k = 256,
    P = 128) changes this function only."""
    return recipe.eta


ENERGY_KINDS = ("direct", "dense", "sparse")
# Cost rule: seconds per chain and call on one CPU thread (float64), fitted to ``benchmarks/bench_train.py
# --energy`` (K = 8 chains, the AMD EPYC machine of docs/engine.md). Direct: per multiply-add of its
# matrix products. Dense counts: per count entry read (two passes over N); sparse counts: per stored
# non-zero (two CSR products; ~1.4x a dense entry, for the column indices). Both counts kinds add the
# L×L products (A G, AᵀA: COUNTS_L3_S per L³) and a fixed share of their extra small operations
# (COUNTS_FIXED_S, at a batch of ~8 chains). Per chain, so the choice never depends on the batch.
COST_S = {"direct": 3.0e-10, "dense": 2.5e-9, "sparse": 3.5e-9}
COUNTS_L3_S, COUNTS_FIXED_S = 3.0e-9, 2.0e-4


def direct_work(V: int, L: int, P: int) -> float:
    """Multiply-adds of the direct path per chain and call: 3 P L² V (A H, G Hᵀ, Aᵀ G) + 2 P L V² (H, ∂W_t)."""
    return 3.0 * P * L * L * V + 2.0 * P * L * V * V


def expected_nnz(V: int, L: int, P: int) -> float:
    """Expected non-zero pair counts of one chain: pairs × V² × P(a cell is hit by one of P sequences)."""
    pairs = L * (L - 1) // 2
    return pairs * V * V * -math.expm1(P * math.log1p(-1.0 / (V * V)))


def energy_costs(V: int, L: int, P: int) -> dict:
    """Predicted seconds per chain of one energy-and-gradient call by each kind (the cost rule; the
    per-call costs shared by the batch are left out, so the choice depends on the chain alone)."""
    pairs = L * (L - 1) // 2
    work = {"direct": direct_work(V, L, P), "dense": 2.0 * pairs * V * V, "sparse": 2.0 * expected_nnz(V, L, P)}
    extra = {"direct": 0.0, "dense": COUNTS_FIXED_S + COUNTS_L3_S * L ** 3}
    extra["sparse"] = extra["dense"]
    return {k: extra[k] + COST_S[k] * work[k] for k in ENERGY_KINDS}


def cheapest_energy(V: int, L: int, P: int, device: str = "cpu") -> str:
    """The cheapest kind by :func:`energy_costs` (on CUDA: dense counts whenever they need fewer multiply-adds
    than the direct path; the device is launch-bound at these sizes and sparse products are not worth it)."""
    if str(device).startswith("cuda"):
        return "dense" if L * (L - 1) * V * V < direct_work(V, L, P) else "direct"
    c = energy_costs(V, L, P)
    return min(c, key=c.get)
