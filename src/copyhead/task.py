"""The copy task (design file, section 1): i.i.d. uniform token sequences and their one-hot targets.

Data are a pure function of (seed, V, L, P) drawn with numpy's SeedSequence/Generator (never torch's
RNG, so they are identical on every machine and device). Training sequence ``i`` comes from its own
stream ``SeedSequence(seed, spawn_key=(0, i))``, so the P sequences of a smaller P are exactly the first
P of a larger P (nested datasets). Test sequence ``j`` comes from ``SeedSequence(seed, spawn_key=(1, j))``,
a stream independent of the training set. Stream 2 seeds the parameter initialisation
(:func:`torch_seed`) and, in sub-streams of its own per initialisation kind, the SGLD noise
(:func:`noise_seed`): a prior-started and a copy-started chain of the same seed never share noise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TRAIN_STREAM, TEST_STREAM, TORCH_STREAM = 0, 1, 2


def sequences(seed: int, V: int, L: int, n: int, stream: int = TRAIN_STREAM) -> np.ndarray:
    """(n, L) int64 tokens in 0..V-1; row i depends only on (seed, stream, i, V, L)."""
    out = np.empty((n, L), dtype=np.int64)
    for i in range(n):
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(stream, i))))
        out[i] = rng.integers(0, V, size=L)
    return out


@dataclass(frozen=True)
class CopyData:
    """Training and test token sequences of one run. Targets are the uncentred one-hots e_{t_a}."""
    V: int
    L: int
    train: np.ndarray  # (P, L) int64
    test: np.ndarray   # (n_test, L) int64

    @property
    def P(self) -> int:
        return self.train.shape[0]


def make_data(seed: int, V: int, L: int, P: int, n_test: int) -> CopyData:
    """The training set (P sequences) and the independent test set (n_test sequences) of one seed."""
    return CopyData(V=V, L=L, train=sequences(seed, V, L, P, TRAIN_STREAM),
                    test=sequences(seed, V, L, n_test, TEST_STREAM))


def run_training_tokens(p, seed: int, P: int) -> np.ndarray:
    """The training set of run (seed, P) as the theory reads it: ``make_data(seed, V, L, P, n_test).train``,
    tokens (P, L), with V and L taken from ``p`` (a ``config.ActionParams``, or anything with ``V`` and ``L``);
    the test set is drawn from another stream and does not enter."""
    return make_data(seed, p.V, p.L, P, 0).train


def one_hot(tokens: np.ndarray, V: int) -> np.ndarray:
    """(..., L) tokens -> (..., L, V) float64 one-hot (= the copy targets y_a = e_{t_a})."""
    return np.eye(V)[tokens]


def torch_seed(seed: int) -> int:
    """Seed of the torch Generator for initialisation and SGLD noise (stream 2 of the same seed)."""
    return int(np.random.SeedSequence(seed, spawn_key=(TORCH_STREAM,)).generate_state(1, np.uint64)[0]
               & 0x7FFF_FFFF_FFFF_FFFF)


INITS = ("prior", "copy")


def noise_seed(seed: int, init: str) -> int:
    """Seed of a chain's SGLD noise Generator: stream 2 of the seed, sub-stream 1 + index of its
    initialisation kind (so chains of one seed started from the prior and from the copy solution are
    driven by independent noise, and neither shares the initialisation's stream)."""
    return int(np.random.SeedSequence(seed, spawn_key=(TORCH_STREAM, 1 + INITS.index(init)))
               .generate_state(1, np.uint64)[0] & 0x7FFF_FFFF_FFFF_FFFF)


HMC_USES = ("sampler", "readout")


def hmc_seed(seed: int, init: str, use: str) -> int:
    """Seed of one of a chain's HMC Generators (``use``: the sampler's momenta and accept tests, or the
    readout draws at record steps): stream 2 of the seed, sub-streams after the SGLD noise ones, one per
    (initialisation kind, use), so none shares another's stream."""
    sub = 1 + len(INITS) + len(HMC_USES) * INITS.index(init) + HMC_USES.index(use)
    return int(np.random.SeedSequence(seed, spawn_key=(TORCH_STREAM, sub)).generate_state(1, np.uint64)[0]
               & 0x7FFF_FFFF_FFFF_FFFF)
