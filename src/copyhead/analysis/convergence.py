"""Convergence of Markov chains (SGLD): R̂, effective sample size and Monte Carlo standard errors, computed
by ArviZ (``arviz-stats``, the maintained implementation of Vehtari, Gelman, Simpson, Carpenter & Bürkner
2021, Bayesian Analysis 16:667). This module only fixes the project's conventions around it.

Array in / number out. ``x`` is the draws of one scalar quantity with shape ``(n_chains, n_draws)`` (a
1-D array is one chain), in the order the chain produced them, burn-in removed. Every function returns
NaN for fewer than 4 draws per chain or any non-finite draw (a diverged or missing chain is removed by
the caller, never averaged in).

Definitions (``arviz_stats.base.array_stats``; docs/figures.md, "Convergence definitions"):

- :func:`split_rhat` — ``method="rank"`` (default): ArviZ's rank-normalised split-R̂, the larger of the
  bulk R̂ and the folded (tail) R̂, so chains that differ in location or in scale are both flagged;
  ``method="classic"``: ArviZ's ``"split"`` R̂ of the raw draws (Gelman et al., BDA3, §11.4).
- :func:`ess_bulk` — bulk ESS (rank-normalised split chains): the convergence diagnostic.
- :func:`ess_mean` — the ESS behind the error of a mean (ArviZ ``method="mean"``: split chains, raw
  draws); for an AR(1) chain with coefficient ρ it is ≈ n (1−ρ)/(1+ρ).
- :func:`mcse_mean` — the Monte Carlo standard error of the mean of all draws (ArviZ ``mcse``,
  ``method="mean"``, = sd/√ESS_mean); :func:`chain_mcse` — the same of each chain alone.
"""
from __future__ import annotations

import numpy as np

RHAT_METHODS = {"rank": "rank", "classic": "split"}
MIN_DRAWS = 4


def _az():
    from arviz_stats.base import array_stats
    return array_stats


def as_chains(x) -> np.ndarray:
    """Draws as a float array of shape (n_chains, n_draws); a 1-D array is one chain."""
    x = np.asarray(x, float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2:
        raise ValueError(f"draws must have shape (n_chains, n_draws) or (n_draws,), got {x.shape}")
    return x


def _usable(x: np.ndarray) -> bool:
    return x.shape[1] >= MIN_DRAWS and bool(np.isfinite(x).all())


def _scalar(f, x: np.ndarray, **kw) -> float:
    """ArviZ's ``f`` on (chains, draws), as a float; NaN where the draws are unusable or ArviZ gives NaN
    (e.g. constant chains for R̂) — with its divide-by-zero warnings silenced, since NaN says it."""
    if not _usable(x):
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(f(x, chain_axis=-2, draw_axis=-1, **kw))


def split_rhat(x, method: str = "rank") -> float:
    """Split-R̂ across chains: ``"rank"`` = max(bulk, tail) rank-normalised split-R̂ (Vehtari et al. 2021),
    ``"classic"`` = split-R̂ of the raw draws (BDA3). ≈ 1 for chains that sample the same distribution;
    > 1.01–1.05 flags disagreement. One chain (ArviZ needs two): the R̂ of its first and second half as
    two chains (the middle draw dropped when n is odd), which ArviZ splits again. NaN with fewer than 4
    draws per chain."""
    if method not in RHAT_METHODS:
        raise ValueError(f"method {method!r} is not allowed; allowed values: {sorted(RHAT_METHODS)}")
    x = as_chains(x)
    if x.shape[0] == 1:
        h = x.shape[1] // 2
        x = np.concatenate([x[:, :h], x[:, x.shape[1] - h:]])
    return _scalar(_az().rhat, x, method=RHAT_METHODS[method])


def ess_bulk(x) -> float:
    """Bulk effective sample size of all chains (rank-normalised split chains)."""
    return _scalar(_az().ess, as_chains(x), method="bulk")


def ess_mean(x) -> float:
    """Effective sample size of the mean of all draws (ArviZ ``method="mean"``)."""
    return _scalar(_az().ess, as_chains(x), method="mean")


def mcse_mean(x) -> float:
    """Monte Carlo standard error of the mean of all draws (sd/√ESS_mean)."""
    return _scalar(_az().mcse, as_chains(x), method="mean")


def chain_mcse(x) -> np.ndarray:
    """:func:`mcse_mean` of each chain alone (rows of an (n_chains, n_draws) array)."""
    return np.array([mcse_mean(row) for row in as_chains(x)])


def chain_ess(x) -> np.ndarray:
    """:func:`ess_mean` of each chain alone."""
    return np.array([ess_mean(row) for row in as_chains(x)])
