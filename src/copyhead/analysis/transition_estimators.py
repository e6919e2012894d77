"""Transition points read off experimental curves y(P) on a grid of training-set sizes P, with bootstrap
confidence intervals over chains/seeds.

Pure numpy/scipy, arrays in / numbers out. Curve estimators take one value per grid point (a mean over
chains) and interpolate linearly in log P between the two grid points that bracket the event; they return
NaN when the grid does not bracket it (no extrapolation):

- :func:`crossover_point` — linear attention: the first P where ĉG overtakes ĉ1.
- :func:`onset_point` — linear attention: where ĉ1 leaves its baseline beyond k standard errors for good.
- :func:`steepest_rise` — softmax attention: the grid bracket [P_i, P_i+1] where âG rises fastest per
  unit log P (the jump, located to the grid; the same reading of the data and of every theory curve read on
  the same P grid, :func:`jump_bracket_of_chains`, :func:`bracket_ratio`).
- :func:`hysteresis_window` — the P range where prior- and copy-started chains disagree beyond k errors.

:func:`bootstrap` resamples the chains (seeds) at each P and reruns any of them on the chain means;
the ``*_of_chains`` functions are those estimators on per-chain arrays of shape (n_P, n_chains).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .stats import mean_sem


def _finite(P, *ys):
    """P and the ys restricted to the points where all of them are finite, sorted by P."""
    P = np.asarray(P, float)
    ys = [np.asarray(y, float) for y in ys]
    ok = np.isfinite(P) & np.all([np.isfinite(y) for y in ys], axis=0)
    order = np.argsort(P[ok], kind="stable")
    return (P[ok][order], *(y[ok][order] for y in ys))


def _zero_between(P, d, i: int, log: bool = True) -> float:
    """The P between grid points i−1 and i where the linear interpolation of d in log P (or, ``log``
    False, in P) is zero."""
    t = -d[i - 1] / (d[i] - d[i - 1])
    if not log:
        return float(P[i - 1] + t * (P[i] - P[i - 1]))
    return float(np.exp(np.log(P[i - 1]) + t * (np.log(P[i]) - np.log(P[i - 1]))))


def upward_crossings(P, d, log: bool = True) -> np.ndarray:
    """Every P where ``d`` changes from negative to non-negative between neighbouring grid points
    (``d[i-1] < 0 <= d[i]``), interpolated linearly in log P (``log`` False: in P); in increasing order."""
    P, d = _finite(P, d)
    return np.asarray([_zero_between(P, d, i, log) for i in range(1, len(P)) if d[i - 1] < 0 <= d[i]])


def crossover_point(P, c1, cG, log: bool = True) -> float:
    """Linear attention: the first P where ĉG overtakes ĉ1 (ĉG − ĉ1 crosses zero upwards), interpolated in
    log P (``log`` False: in P; the difference of the two is the interpolation error,
    :func:`interpolation_error`). NaN if ĉG never overtakes ĉ1 on the grid."""
    x = upward_crossings(P, np.asarray(cG, float) - np.asarray(c1, float), log)
    return float(x[0]) if len(x) else float("nan")


def interpolation_error(P, c1, cG) -> float:
    """How far the crossover moves when the curves are interpolated between grid points linearly in P
    instead of in log P: an estimate of the error of reading a point between two grid points (0 when the
    crossover falls on a grid point; NaN without a crossover)."""
    return abs(crossover_point(P, c1, cG) - crossover_point(P, c1, cG, log=False))


def onset_point(P, y, err, k: float = 2.0, baseline=0.0) -> float:
    """Linear attention: the P where ``y`` (ĉ1) leaves ``baseline`` beyond ``k`` errors for good — the last
    upward crossing of (y − baseline)/err through k, interpolated in log P, provided y stays beyond k errors
    up to the largest P. NaN if it is already beyond at the smallest P (onset below the grid) or not beyond
    at the largest (not reached); points with a non-finite or zero error are skipped. A detection point: it
    is located only to within the grid step it falls in, and moves to larger P when the errors are larger.
    Note: the sign-fixed ĉ1 of a run is |·| of a symmetric quantity before the onset, so its seed mean is
    positive there too; pass the pre-onset level (e.g. the prior's) as ``baseline`` when it is not small."""
    y, err = np.asarray(y, float), np.asarray(err, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(err > 0, (y - baseline) / err, np.nan) - k
    Ps, s = _finite(P, s)
    if len(s) < 2 or s[-1] < 0:
        return float("nan")
    x = upward_crossings(Ps, s)
    return float(x[-1]) if len(x) else float("nan")


@dataclass(frozen=True)
class HysteresisWindow:
    """P range [lo, hi] where the two branches disagree beyond k errors (edges interpolated in log P; an
    edge is NaN where the disagreement reaches the end of the grid), and the disagreement per grid point."""
    lo: float
    hi: float
    disagree: np.ndarray


def hysteresis_window(P, y_prior, err_prior, y_copy, err_copy, k: float = 2.0,
                      min_diff: float = 0.0) -> HysteresisWindow:
    """Where prior-started and copy-started chains disagree: |y_copy − y_prior| > k √(err_prior² +
    err_copy²) and, when ``min_diff`` > 0, > min_diff (two branches, not a small offset measured with tiny
    errors). The window is the run of neighbouring grid points that disagree around the largest
    disagreement (an isolated chance disagreement elsewhere does not stretch it); each edge is where the
    first of the two conditions fails (score d/err − k, or d/min_diff − 1, crossing zero), interpolated in
    log P towards the neighbouring agreeing point, or NaN
    where the window is open at the end of the grid. ``disagree`` is per input point (False where a value
    is missing). (NaN, NaN) when they agree everywhere."""
    yp, ep, yc, ec = (np.asarray(v, float) for v in (y_prior, err_prior, y_copy, err_copy))
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(yc - yp)
        s = d / np.sqrt(ep ** 2 + ec ** 2) - k
        if min_diff > 0:
            s = np.minimum(s, d / min_diff - 1)
    disagree = np.isfinite(s) & (s > 0)
    Ps, ss = _finite(P, s)
    if not (ss > 0).any():
        return HysteresisWindow(float("nan"), float("nan"), disagree)
    i0 = i1 = int(np.argmax(ss))
    while i0 > 0 and ss[i0 - 1] > 0:
        i0 -= 1
    while i1 < len(ss) - 1 and ss[i1 + 1] > 0:
        i1 += 1
    lo = _zero_between(Ps, ss, i0) if i0 > 0 else float("nan")
    hi = _zero_between(Ps, -ss, i1 + 1) if i1 < len(Ps) - 1 else float("nan")
    return HysteresisWindow(lo, hi, disagree)


@dataclass(frozen=True)
class RiseBracket:
    """The grid step [lo, hi] of neighbouring swept P where y rises fastest per unit log P; ``rise`` is
    y(hi) − y(lo), ``share`` that rise as a fraction of the whole rise of y over the grid (max − min): near
    1 for a jump the grid does not resolve, small for a smooth rise. ``mid`` = √(lo·hi)."""
    lo: float
    hi: float
    rise: float
    share: float

    @property
    def mid(self) -> float:
        return float(np.sqrt(self.lo * self.hi))


_NO_RISE = RiseBracket(float("nan"), float("nan"), float("nan"), float("nan"))


def steepest_rise(P, y, min_rise: float = 0.0) -> RiseBracket:
    """Softmax attention's jump read off a curve on a grid: the neighbouring grid points P_i < P_i+1 where
    (y_i+1 − y_i)/(ln P_i+1 − ln P_i) is largest. The data locate a jump only to such a grid step, so the
    answer is the step itself (an interval), never a point inside it. Apply it to the data and to a
    theory curve read on the same P grid, and the two are the same estimator. All NaN with fewer than two
    finite points or when y rises by less than ``min_rise`` over the grid (no jump)."""
    P, y = _finite(P, y)
    if len(P) < 2 or not np.ptp(y) >= max(min_rise, 1e-300):
        return _NO_RISE
    slope = np.diff(y) / np.diff(np.log(P))
    i = int(np.argmax(slope))
    rise = float(y[i + 1] - y[i])
    return RiseBracket(float(P[i]), float(P[i + 1]), rise, rise / float(np.ptp(y)))


def bracket_ratio(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """The interval of x/y for x in [a0, a1] and y in [b0, b1] (positive intervals): [a0/b1, a1/b0]. A
    ratio of two grid brackets (or of a CI and a bracket) is an interval, not a point with a Gaussian error."""
    a0, a1 = (float(v) for v in a)
    b0, b1 = (float(v) for v in b)
    if not (np.isfinite([a0, a1, b0, b1]).all() and min(a0, b0) > 0):
        return float("nan"), float("nan")
    return a0 / b1, a1 / b0


# ----------------------------------------------------------------------- estimators on per-chain arrays
def chain_mean_sem(x) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over chains (last axis) of an (n_P, n_chains) array (NaN = no chain)."""
    return mean_sem(x, axis=-1)


def crossover_of_chains(P, c1, cG) -> float:
    """:func:`crossover_point` of the chain means."""
    return crossover_point(P, chain_mean_sem(c1)[0], chain_mean_sem(cG)[0])


def onset_of_chains(P, c1, k: float = 2.0, baseline=0.0) -> float:
    """:func:`onset_point` of the chain means with their standard error over chains."""
    return onset_point(P, *chain_mean_sem(c1), k=k, baseline=baseline)


def jump_bracket_of_chains(P, aG, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                           min_rise: float = 0.0) -> tuple[RiseBracket, BootstrapCI]:
    """:func:`steepest_rise` of the chain means, and its interval over chains: a percentile bootstrap of the
    bracket's lower edge (its low quantile) and upper edge (its high quantile) from the same resamples, so
    the interval is a union of grid steps. With 4 chains per P a resample at one P is one of 35 multisets;
    the resamples are drawn independently at each P."""
    br = steepest_rise(P, chain_mean_sem(aG)[0], min_rise)
    kw = dict(n_boot=n_boot, level=level, seed=seed)
    lo = bootstrap(lambda P_, a: steepest_rise(P_, chain_mean_sem(a)[0], min_rise).lo, P, aG, **kw)
    hi = bootstrap(lambda P_, a: steepest_rise(P_, chain_mean_sem(a)[0], min_rise).hi, P, aG, **kw)
    return br, BootstrapCI(br.mid, lo.lo, hi.hi, level, n_boot, min(lo.n_valid, hi.n_valid))


def hysteresis_of_chains(P, prior, copy, k: float = 2.0, min_diff: float = 0.0) -> HysteresisWindow:
    """:func:`hysteresis_window` of prior- and copy-started chains (means ± standard errors over chains)."""
    return hysteresis_window(P, *chain_mean_sem(prior), *chain_mean_sem(copy), k=k, min_diff=min_diff)


@dataclass(frozen=True)
class BootstrapCI:
    """A point estimate with its percentile bootstrap interval; ``n_valid`` of ``n_boot`` replicates gave a
    finite value (the others found no transition on the grid)."""
    estimate: float
    lo: float
    hi: float
    level: float
    n_boot: int
    n_valid: int

    def contains(self, value) -> bool:
        """Whether ``value`` lies inside the interval (False for a NaN interval or value)."""
        return bool(self.lo <= float(value) <= self.hi)


def bootstrap(estimator, P, *samples, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> BootstrapCI:
    """Percentile bootstrap over chains of a scalar ``estimator(P, *samples)``. Each sample is an array
    (n_P, n_chains) of per-chain values (NaN where a chain is missing); a replicate redraws, independently at
    each P, as many chains as that P has (with replacement, among the chains finite in every sample; one
    chain's values in the different samples stay together). A P with a single chain contributes no spread.
    The interval covers the central ``level`` of the finite replicates (NaN if fewer than half are finite)."""
    P = np.asarray(P, float)
    xs = [np.asarray(s, float) for s in samples]
    if any(x.shape != xs[0].shape or x.ndim != 2 or x.shape[0] != len(P) for x in xs):
        raise ValueError("every sample must have shape (len(P), n_chains)")
    valid = np.all([np.isfinite(x) for x in xs], axis=0)
    rows = [np.flatnonzero(v) for v in valid]
    rng = np.random.default_rng(seed)
    estimate = float(estimator(P, *xs))
    reps = np.full(n_boot, np.nan)
    for b in range(n_boot):
        idx = [rng.choice(r, size=len(r)) if len(r) else r for r in rows]
        res = [np.full_like(x, np.nan) for x in xs]
        for i, ii in enumerate(idx):
            for r, x in zip(res, xs):
                r[i, :len(ii)] = x[i, ii]
        reps[b] = estimator(P, *res)
    ok = reps[np.isfinite(reps)]
    if len(ok) < max(n_boot / 2, 1):
        lo = hi = float("nan")
    else:
        lo, hi = (float(v) for v in np.quantile(ok, [(1 - level) / 2, (1 + level) / 2]))
    return BootstrapCI(estimate, lo, hi, level, n_boot, len(ok))
