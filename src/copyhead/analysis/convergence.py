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

The convergence table of a sweep (:func:`convergence_table`, per sampling recipe, P and order parameter):
**R̂** of a (recipe, P) is the rank-normalised split-R̂ across its chains (different seeds: different
datasets, so it also flags dataset-to-dataset variation larger than the posterior width). Prior- and
copy-started chains of the same P: R̂ pooled over all their chains, and the paired R̂ — per seed, the R̂ of
its prior- and copy-started chains (the same training set, independent noise), the largest over seeds: the
cleanest convergence test, and the evidence of hysteresis where it is large.
"""
from __future__ import annotations

import math

import numpy as np

from .experiments import KEYS, NAMES, Recipe, chain_series, swept_P
from .stats import NAN, as_float, point_estimate

RHAT_MAX = 1.05          # the R̂ above which a point is flagged (not shown converged)
# a point is "mixed" (its agreement verdict means something) when every chain on its training set has
# bulk ESS >= MIXED_ESS and R̂ <= MIXED_RHAT per training set (a chain's halves; with a copy-started twin
# the prior- and copy-started chains of one training set): the referee's standard (Vehtari et al. 2021)
MIXED_ESS = 100.0
MIXED_RHAT = 1.01
# the published reference's target (issue 48): every HMC point mixed with bulk ESS >= 400 per training set
# (prior- and copy-started chains together) and R̂ <= MIXED_RHAT, or flagged as metastable
REFERENCE_ESS = 400.0
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


# ------------------------------------------------------------------------- the convergence of a sweep
def _conv_row(attention, recipe, starts, P, key, x, rhat_max) -> dict:
    m, n = x.shape if x.ndim == 2 else (0, 0)
    row = {"attention": attention, "recipe": recipe, "starts": starts, "P": float(P), "param": key,
           "name": NAMES[key], "n_chains": int(m), "n_draws": int(n)}
    if m == 0 or n < 4:
        row.update(mean=NAN, rhat=NAN, rhat_within_max=NAN, ess_bulk=NAN, ess_sum=NAN, err_mcse=NAN, err_spread=NAN,
                   error=NAN, error_basis="", rhat_flag=False)
        return row
    est = point_estimate(x.mean(axis=1), chain_mcse(x))
    rhat = split_rhat(x)
    within = [split_rhat(row) for row in x]
    row["rhat_within_max"] = float(np.nanmax(within)) if np.isfinite(within).any() else NAN
    ess_each = [ess_bulk(row) for row in x]
    row["ess_chain_min"] = float(np.nanmin(ess_each)) if np.isfinite(ess_each).any() else NAN
    row.update(mean=est["mean"], rhat=rhat, ess_bulk=ess_bulk(x), ess_sum=float(np.nansum(chain_ess(x))),
               err_mcse=est["err_mcse"], err_spread=est["err_spread"], error=est["error"],
               error_basis=est["error_basis"], rhat_flag=bool(rhat > rhat_max))
    return row


def seed_pairs(ag, attention: str, prior: str, copy: str, P) -> dict[int, dict[str, np.ndarray]]:
    """One training set's two chains at ``P``, per seed ok in both recipes (its prior- and copy-started runs):
    {seed: {parameter: (2, n) draws}}, both cut to the shorter chain's length n. R̂ and ESS of such a pair
    judge mixing on one dataset, free of the spread between datasets."""
    return _by_seed(*chain_series(ag, attention, prior, P), *chain_series(ag, attention, copy, P), KEYS[attention])


def _by_seed(s_a, a, s_b, b, keys) -> dict[int, dict[str, np.ndarray]]:
    """:func:`seed_pairs` from the two recipes' series (:func:`chain_series`: seeds, parameter -> (seeds, draws))."""
    out = {}
    for seed in sorted(set(s_a.tolist()) & set(s_b.tolist())):
        i, j = list(s_a).index(seed), list(s_b).index(seed)
        out[int(seed)] = {}
        for k in keys:
            n = min(a[k].shape[1], b[k].shape[1])
            out[int(seed)][k] = np.vstack([a[k][i, :n], b[k][j, :n]])
    return out


def convergence_table(ag, attention: str, recs: dict[str, Recipe], rhat_max: float = RHAT_MAX) -> list[dict]:
    """Per (sampling recipe: SGLD or HMC, P, plotted order parameter): n_chains, n_draws, mean of the
    chain means, rank split-R̂ across the chains, rhat_within_max (the largest single-chain split-R̂:
    first against second half of one chain, free of dataset-to-dataset variation), bulk ESS (all chains),
    ess_sum (Σ of the chains' own ESS), err_mcse, err_spread, error (copyhead.analysis.stats.point_estimate),
    rhat_flag (R̂ > rhat_max). Then per copy-started recipe and its prior-started twin, at their common P, a
    row ``<twin>+<copy>`` (starts "prior+copy") with R̂ pooled over both starts' chains, ``rhat_paired_max``
    (the largest over seeds of the R̂ of one seed's two chains), ``ess_paired_min`` (the smallest over
    seeds of the bulk ESS of one seed's two chains) and ``n_pairs``; its rhat_flag is set when either
    exceeds rhat_max. HMC recipes are judged without R̂ across seeds (``rhat_basis``, ``rhat_plot``: the
    value the figures draw): a single-recipe row is flagged by its within-chain R̂, a pair row by its
    per-dataset R̂; SGLD keeps the flag across chains (docs/figures.md)."""
    rows = []
    sgld = [r for r in recs.values() if r.sampler]
    for r in sgld:
        for P in swept_P(ag, r.name):
            _, ser = chain_series(ag, attention, r.name, P)
            if not len(ser[KEYS[attention][0]]):
                continue  # no ok chain at this P (all diverged)
            for k in KEYS[attention]:
                row = _conv_row(attention, r.name, r.init, P, k, ser[k], rhat_max)
                if r.method == "hmc":   # judged per chain, never across seeds (different training sets)
                    row.update(rhat_basis="within chain", rhat_plot=row["rhat_within_max"],
                               rhat_flag=bool(as_float(row["rhat_within_max"]) > rhat_max))
                rows.append(row)
    for r in sgld:
        if r.init != "copy" or not r.twin or not recs[r.twin].sampler:
            continue
        for P in sorted(set(swept_P(ag, r.twin)) & set(swept_P(ag, r.name))):
            s_a, a = chain_series(ag, attention, r.twin, P)
            s_b, b = chain_series(ag, attention, r.name, P)
            by_seed = _by_seed(s_a, a, s_b, b, KEYS[attention])   # one training set's two chains
            for k in KEYS[attention]:
                n = min(a[k].shape[1], b[k].shape[1]) if len(a[k]) and len(b[k]) else 0
                pooled = np.vstack([a[k][:, :n], b[k][:, :n]]) if n else np.zeros((0, 0))
                row = _conv_row(attention, f"{r.twin}+{r.name}", "prior+copy", P, k, pooled, rhat_max)
                pairs = [two[k] for two in by_seed.values()] if n >= 4 else []
                paired = [x for x in (split_rhat(p) for p in pairs) if np.isfinite(x)]
                ess_p = [x for x in (ess_bulk(p) for p in pairs) if np.isfinite(x)]
                row["rhat_paired_max"] = float(max(paired)) if paired else NAN
                row["ess_paired_min"] = float(min(ess_p)) if ess_p else NAN
                row["n_pairs"] = len(paired)
                row["rhat_flag"] = bool(row["rhat_flag"] or (paired and max(paired) > rhat_max))
                if r.method == "hmc":   # per training set: one seed's prior- and copy-started chains
                    row.update(rhat_basis="per dataset", rhat_plot=row["rhat_paired_max"],
                               rhat_flag=bool(paired and max(paired) > rhat_max))
                rows.append(row)
    return rows


def is_mixed(rhat: float, ess: float, ess_min: float = MIXED_ESS, rhat_max: float = MIXED_RHAT) -> bool:
    """The one rule of "mixed" (per training set): bulk ESS >= ``ess_min`` and R̂ <= ``rhat_max``; False
    where either is NaN (not shown)."""
    return bool(np.isfinite(rhat) and np.isfinite(ess) and ess >= ess_min and rhat <= rhat_max)


def point_status(conv_rows, ess_min: float = MIXED_ESS, rhat_max: float = MIXED_RHAT) -> list[dict]:
    """Per (P, param) of one sampled attention type (the rows of :func:`convergence_table` of one sampler's
    recipes), what its chains show, worst over the training sets: ``not mixed`` (some chain has not mixed
    within itself: its two halves' R̂ > ``rhat_max`` or its bulk ESS < ``ess_min``), ``metastable`` (every
    chain mixed within itself, but a training set's prior- and copy-started chains disagree: their R̂ >
    ``rhat_max``, two branches a single chain does not cross) or ``mixed``. A point sampled from one start
    only cannot show a second branch (``paired`` False). Each dict: P, param, status, paired, rhat_within,
    ess_chain, rhat_paired (NaN unpaired)."""
    within, paired = {}, {}
    for row in conv_rows:
        key = (float(row["P"]), row["param"])
        if "+" in row["recipe"]:
            paired[key] = max(paired.get(key, -math.inf), as_float(row.get("rhat_paired_max")))
            continue
        rh, es = as_float(row.get("rhat_within_max")), as_float(row.get("ess_chain_min"))
        r0, e0 = within.get(key, (-math.inf, math.inf))
        within[key] = (max(r0, rh) if np.isfinite(rh) else math.nan, min(e0, es) if np.isfinite(es) else math.nan)
    out = []
    for (P, param), (rh, es) in sorted(within.items()):
        rp = paired.get((P, param), math.nan)
        status = ("not mixed" if not is_mixed(rh, es, ess_min, rhat_max) else
                  "metastable" if (P, param) in paired and not rp <= rhat_max else "mixed")
        out.append({"P": P, "param": param, "status": status, "paired": (P, param) in paired,
                    "rhat_within": rh, "ess_chain": es, "rhat_paired": rp})
    return out


def mixing_status(conv_rows, ess_min: float = MIXED_ESS, rhat_max: float = MIXED_RHAT) -> dict:
    """(recipe, P, param) -> {"mixed", "rhat", "ess", "basis"}: the per-training-set diagnostics of a
    sampled point, never across seeds. With a prior/copy pair row: the largest R̂ of one training set's two
    chains and the smallest bulk ESS of such a pair (both recipes of the pair get it); else the largest R̂
    of a chain's two halves and the smallest bulk ESS of one chain. ``mixed``: ESS >= ``ess_min`` and
    R̂ <= ``rhat_max`` (False where either is NaN: not shown)."""
    out = {}
    for row in conv_rows:   # single recipes first, then pairs (which override: the better test)
        if "+" in row["recipe"]:
            continue
        rh, es = as_float(row.get("rhat_within_max")), as_float(row.get("ess_chain_min"))
        out[(row["recipe"], float(row["P"]), row["param"])] = {"rhat": rh, "ess": es, "basis": "one chain's halves"}
    for row in conv_rows:
        if "+" not in row["recipe"]:
            continue
        rh, es = as_float(row.get("rhat_paired_max")), as_float(row.get("ess_paired_min"))
        for recipe in row["recipe"].split("+"):
            out[(recipe, float(row["P"]), row["param"])] = {"rhat": rh, "ess": es,
                                                            "basis": "prior- and copy-started chains of one training set"}
    for v in out.values():
        v["mixed"] = is_mixed(v["rhat"], v["ess"], ess_min, rhat_max)
    return out
