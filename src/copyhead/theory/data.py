"""Copy-task data for the theory's exact dataset average (docs/theory.md, Sec. 1 and Eq. (17)).

Tokens are i.i.d. uniform on {0..V-1}; the datasets of one seed are nested (the P sequences of a smaller
P are a prefix of a larger P's), and independent draws come from ``numpy.random.SeedSequence(seed).spawn``.
Pure numpy, no dependence on the training engine.
"""
from __future__ import annotations

import numpy as np


def copy_task_tokens(seed: int, V: int, L: int, P: int, n_datasets: int = 1) -> np.ndarray:
    """Token array of shape (n_datasets, P, L), draw k from child k of SeedSequence(seed).

    Nested: the first P' < P rows of a draw are the draw for P' (rows are generated one at a time).
    """
    children = np.random.SeedSequence(seed).spawn(n_datasets)
    out = np.empty((n_datasets, P, L), dtype=np.int64)
    for k, ss in enumerate(children):
        rng = np.random.default_rng(ss)
        for alpha in range(P):
            out[k, alpha] = rng.integers(0, V, size=L)
    return out


def one_hot_targets(tokens: np.ndarray, V: int, centred: bool = False) -> np.ndarray:
    """Targets y_a = e_{t_a} (uncentred, the copy task) or e_{t_a} - 1/V (centred); shape (..., L, V)."""
    y = np.eye(V)[tokens]
    return y - 1.0 / V if centred else y
