"""Analysis of experiments against theory: every mean, error, z-score, diagnostic and fit of the project,
as pure functions of arrays and of open datasets (no file is read or written here).

Arrays in, numbers out:

- :mod:`.stats` — mean ± standard error over seeds/chains (the one definition; NaN error with one seed),
  the error of an SGLD point from its chains (:func:`~.stats.point_estimate`).
- :mod:`.convergence` — split-R̂ (rank-normalised, Vehtari et al. 2021, or classic), bulk ESS, the ESS
  and Monte Carlo standard error of a mean: ArviZ (arviz-stats) with the project's NaN conventions; the
  convergence table of a sweep.
- :mod:`.agreement` — z = (experiment − theory)/error and summaries (RMS z, χ²/dof, worst point); the
  agreement table of a sweep and the natural theory curve of each method.
- :mod:`.transition_estimators` — transition points from data: linear crossover and onset, softmax logistic jump,
  hysteresis window; bootstrap confidence intervals over chains/seeds.
- :mod:`.fits` — weighted fits of the cross-study comparisons.

Datasets in, tables out (the results model, what results.json holds):

- :mod:`.experiments` — what an aggregate holds: recipes, per-run values and per-chain series of the
  plotted order parameters, the sweep; statistics of an aggregate for the figures and
  :func:`~.experiments.posterior` (an SGLD recipe's samples as ``chain × draw`` for ArviZ).
- :mod:`.curves` — the theory curves at the runs' P with their errors, the theory's transition points.
- :mod:`.transition_table` — each recipe's transitions with bootstrap CIs against the theory's values.
- :mod:`.samplers` — SGLD against the HMC reference posterior on the same training sets.
- :mod:`.adam` — Adam (a MAP estimate) against the theory's landscape.
- :mod:`.results_tables` — every table from the open datasets (:func:`~.results_tables.build_tables`) and
  :mod:`.summary` — one estimator per transition kind, agreement and convergence verdicts as data (what
  pages and figures read).
Importing this package loads numpy (and the config schema) only: scipy, xarray and ArviZ when a function
needs them.
"""
from .agreement import Agreement, agreement_summary, away_from, rms, z_scores
from .convergence import as_chains, chain_ess, chain_mcse, ess_bulk, ess_mean, mcse_mean, split_rhat
from .curves import interp_log_P
from .experiments import ok_runs, posterior, sequence_length, theory_pattern_cosine
from .stats import mean_error, mean_sem, point_estimate, seed_mean_sem
from .transition_estimators import (BootstrapCI, HysteresisWindow, bootstrap, chain_mean_sem, crossover_of_chains,
                                    crossover_point, hysteresis_of_chains, hysteresis_window, onset_of_chains,
                                    onset_point, upward_crossings)

__all__ = ["Agreement", "BootstrapCI", "HysteresisWindow", "agreement_summary", "as_chains",
           "away_from", "bootstrap", "chain_ess", "chain_mcse", "chain_mean_sem", "crossover_of_chains",
           "crossover_point", "ess_bulk", "ess_mean", "hysteresis_of_chains", "hysteresis_window", "interp_log_P",
           "mcse_mean", "mean_error", "mean_sem", "ok_runs", "onset_of_chains", "onset_point", "point_estimate",
           "posterior", "rms", "seed_mean_sem", "sequence_length", "split_rhat", "theory_pattern_cosine",
           "upward_crossings", "z_scores"]
