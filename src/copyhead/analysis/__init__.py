"""Analysis of experiments against theory: pure functions, no file I/O.

- :mod:`.experiments` — statistics of an aggregate dataset for the figures: seed mean ± sem (one
  definition), L of a dataset, cosine of Ā to the theory's pattern, the grid-read experimental transition.
- :mod:`.transitions` — transition points from curves y(P): crossover, grid jump.
"""
from .experiments import (experimental_transition, mean_sem, ok_runs, seed_mean_sem, sequence_length,
                          theory_pattern_cosine)
from .transitions import crossover_point, largest_jump_midpoint, upward_crossings

__all__ = ["crossover_point", "experimental_transition", "largest_jump_midpoint", "mean_sem", "ok_runs",
           "seed_mean_sem", "sequence_length", "theory_pattern_cosine", "upward_crossings"]
