"""Analysis of experiments against theory: pure functions of arrays (and of aggregate datasets), no I/O.

- :mod:`.stats` — mean ± standard error over seeds/chains (the one definition; NaN error with one seed)
  and the error of an SGLD point from its chains (:func:`~.stats.point_estimate`).
- :mod:`.convergence` — split-R̂ (rank-normalised, Vehtari et al. 2021, or classic), bulk ESS, the ESS
  and Monte Carlo standard error of a mean: ArviZ (arviz-stats) with the project's NaN conventions.
- :mod:`.agreement` — z = (experiment − theory)/error and summaries (RMS z, χ²/dof, worst point).
- :mod:`.transitions` — transition points from data: linear crossover and onset, softmax logistic jump,
  hysteresis window; bootstrap confidence intervals over chains/seeds.
- :mod:`.experiments` — statistics of an aggregate dataset for the figures (L, cosine of Ā to the
  theory pattern) and :func:`~.experiments.posterior`, an SGLD recipe's samples as ``chain × draw``
  (what ``arviz_stats.summary`` opens).
- :mod:`.summary` — the results model's summary: one estimator per transition kind with the natural
  theory curve of each method, agreement and convergence verdicts as data (what pages and figures read).
Importing this package loads numpy only (scipy, xarray and torch when a function needs them).
"""
from .agreement import Agreement, agreement_summary, away_from, interp_log_P, z_scores
from .convergence import as_chains, chain_ess, chain_mcse, ess_bulk, ess_mean, mcse_mean, split_rhat
from .experiments import ok_runs, posterior, sequence_length, theory_pattern_cosine
from .stats import mean_sem, point_estimate, seed_mean_sem
from .transitions import (BootstrapCI, HysteresisWindow, LogisticJump, bootstrap, chain_mean_sem,
                          crossover_of_chains, crossover_point, fit_logistic_jump, hysteresis_of_chains,
                          hysteresis_window, jump_of_chains, largest_jump_midpoint, logistic, onset_of_chains,
                          onset_point, upward_crossings)

__all__ = ["Agreement", "BootstrapCI", "HysteresisWindow", "LogisticJump", "agreement_summary", "as_chains",
           "away_from", "bootstrap", "chain_ess", "chain_mcse", "chain_mean_sem", "crossover_of_chains",
           "crossover_point", "ess_bulk", "ess_mean", "fit_logistic_jump", "hysteresis_of_chains",
           "hysteresis_window", "interp_log_P", "jump_of_chains", "largest_jump_midpoint", "logistic",
           "mcse_mean", "mean_sem", "ok_runs", "onset_of_chains", "onset_point", "point_estimate",
           "posterior", "seed_mean_sem", "sequence_length", "split_rhat", "theory_pattern_cosine",
           "upward_crossings", "z_scores"]
