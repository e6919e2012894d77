"""Mean and standard error over seeds or chains: the one definition the aggregate, figures and transition
estimators share; :func:`point_estimate`, the error of an SGLD point from its chains (spread or MCSE);
:func:`mean_error`, the error of a mean of values with independent errors."""
from __future__ import annotations

import math
import warnings

import numpy as np

NAN = float("nan")


def is_number(x) -> bool:
    """A finite number (not a bool, not None): what a JSON table holds where a number exists."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def as_float(x) -> float:
    """``x`` as a float; NaN where it is not a number (None, a string)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return NAN


def mean_sem(x, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of the mean along ``axis``, ignoring NaN: sem = sd(ddof=1)/√n with n the
    number of values that are not NaN; NaN where n < 2 (one seed has no error bar, not a zero one)."""
    x = np.asarray(x, float)
    n = (~np.isnan(x)).sum(axis=axis)
    with warnings.catch_warnings():  # all-NaN slices (absent or diverged runs) give NaN, silently
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(x, axis=axis)
        sem = np.where(n > 1, np.nanstd(x, axis=axis, ddof=1) / np.sqrt(n), np.nan)
    return mean, sem


def seed_mean_sem(x, dim: str = "seed"):
    """:func:`mean_sem` of an xarray DataArray over ``dim`` (two DataArrays without that dim)."""
    import xarray as xr
    return xr.apply_ufunc(mean_sem, x, input_core_dims=[[dim]], output_core_dims=[[], []])


def mean_error(errors) -> float:
    """The standard error of the mean of n values with independent errors e_i: √(Σ e_i²)/n."""
    e = np.asarray(errors, float)
    return float(np.sqrt((e ** 2).sum()) / len(e))


def point_estimate(values, mcse=None) -> dict:
    """Mean over chains (or seeds) of ``values`` (one number per chain) and its error: n, mean, err_spread
    (sd/√n, the spread of the chain means), err_mcse (√Σ MCSE_i²/n, when ``mcse`` is given for every
    value), error (the larger finite one: the spread is the honest error of a mean over independent
    datasets, the MCSE a floor it cannot go below) and error_basis ("spread" | "mcse" | "")."""
    v = np.asarray(values, float)
    ok = np.isfinite(v)
    n = int(ok.sum())
    mean = float(v[ok].mean()) if n else math.nan
    spread = float(v[ok].std(ddof=1) / np.sqrt(n)) if n > 1 else math.nan
    mc = math.nan
    if mcse is not None and n:
        m = np.asarray(mcse, float)[ok]
        if np.isfinite(m).all():
            mc = mean_error(m)
    cands = {"spread": spread, "mcse": mc}
    fin = {k: e for k, e in cands.items() if np.isfinite(e)}
    basis = max(fin, key=fin.get) if fin else ""
    return {"n": n, "mean": mean, "err_spread": spread, "err_mcse": mc,
            "error": fin[basis] if basis else math.nan, "error_basis": basis}
