"""Mean and standard error over seeds or chains: the one definition the aggregate, figures and transition
estimators share."""
from __future__ import annotations

import warnings

import numpy as np


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
