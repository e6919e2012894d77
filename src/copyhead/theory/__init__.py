"""Bayesian theory of copy-head emergence (the paper's core), as pure numpy/scipy functions.

Owns everything in docs/theory.md: the exact evidence of the copy-task data given an attention pattern
(``evidence``), the prior over the score matrix M = QᵀK/d_k (``prior``), the order-parameter action in
closed form (equivalent kernel) and exactly averaged over sampled datasets (``action``), the action on its
order-parameter grid (``models``), the scan over P with its transitions (``scan``, classified by
``transitions``), the grid ranges and P grids (``ranges``), transition points vs L, V, d_k (``scaling``),
the netCDF writer used by ``copyhead theory`` (``output``), the exact action on each run's own
training set (``same_dataset``; it takes the runs' datasets from ``copyhead.task``, pure numpy), the
design's reference table (``reference``) and the phase map over (L, V, d_k) (``phase_map``; its files
written by ``phase_map_output``: the other modules write no file). It reads no measured results; the pages
are written by ``copyhead.results``. (What goes beyond the paper, built on these modules, is in the research
package, src/research: e.g. ``research.one_loop``, ``research.prior_check``; docs/theory.md's module map.)
Parameters arrive typed, as ``copyhead.config.TheoryParams`` / ``ActionParams``. Every formula names its equation in docs/theory.md as
"Eq. (n)". No dependence on the training engine: datasets for the exact average are generated here
(``data``) with numpy.
"""
from .data import copy_task_tokens, one_hot_targets
from .evidence import neg_log_evidence_from_stats, sufficient_statistics, neg_log_evidence
from .prior import phi, neg_log_prior_family, neg_log_prior_matrix
from .action import (order_to_coeffs, coeffs_to_order, softmax_coeffs, closed_form_nle, population_moments,
                     action_linear, action_softmax)

__all__ = [
    "copy_task_tokens", "one_hot_targets", "neg_log_evidence_from_stats", "sufficient_statistics",
    "neg_log_evidence", "phi", "neg_log_prior_family", "neg_log_prior_matrix", "order_to_coeffs",
    "coeffs_to_order", "softmax_coeffs", "closed_form_nle", "population_moments", "action_linear",
    "action_softmax",
]
