"""Step schedules of a training recipe (torch-free, shared by the engine and the resource estimate).

- :func:`record_steps`: the log-spaced steps at which curves (energy, losses, order parameters) are
  recorded, always including 0 and ``steps``;
- :func:`sample_steps`: the steps at which samples are recorded (SGLD: every ``thin`` steps after
  ``burn_in``; Adam: the final state only);
- :func:`learning_rate`: Adam's learning rate at step s (linear warm-up, then cosine decay or constant).

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
    """Steps at which samples are recorded: SGLD every ``thin`` steps after ``burn_in``; Adam the last.
    ``recipe`` is a :class:`copyhead.config.Recipe`."""
    if recipe.method == "sgld":
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
