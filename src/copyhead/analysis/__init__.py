"""Analysis of experiments against theory: pure functions of arrays (and of aggregate datasets), no I/O.

- :mod:`.stats` — mean ± standard error over seeds/chains (the one definition; NaN error with one seed).
- :mod:`.transitions` — transition points from data: linear crossover and onset, softmax logistic jump,
  hysteresis window; bootstrap confidence intervals over chains/seeds.
- :mod:`.experiments` — statistics of an aggregate dataset for the figures (L, cosine of Ā to the
  theory pattern, the grid-read experimental transition).
Importing this package loads numpy only (scipy, xarray and torch when a function needs them).
"""
from .experiments import experimental_transition, ok_runs, sequence_length, theory_pattern_cosine
from .stats import mean_sem, seed_mean_sem
from .transitions import (BootstrapCI, HysteresisWindow, LogisticJump, bootstrap, chain_mean_sem,
                          crossover_of_chains, crossover_point, fit_logistic_jump, hysteresis_of_chains,
                          hysteresis_window, jump_of_chains, largest_jump_midpoint, logistic, onset_of_chains,
                          onset_point, upward_crossings)

__all__ = ["BootstrapCI", "HysteresisWindow", "LogisticJump", "bootstrap", "chain_mean_sem", "crossover_of_chains",
           "crossover_point", "experimental_transition", "fit_logistic_jump", "hysteresis_of_chains",
           "hysteresis_window", "jump_of_chains", "largest_jump_midpoint", "logistic", "mean_sem",
           "ok_runs", "onset_of_chains", "onset_point", "seed_mean_sem", "sequence_length",
           "theory_pattern_cosine", "upward_crossings"]
