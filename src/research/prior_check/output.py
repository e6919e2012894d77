"""The prior check's file (docs/theory.md, Sec. 12.3): :func:`research.prior_check.effect.compute_check`
written as one netCDF file with its provenance (kind prior_check). ``python -m research prior-check --out
FILE`` calls :func:`write_check`; the only module of this package that writes a file."""
from __future__ import annotations

import xarray as xr

from copyhead.provenance import provenance_attrs, write_dataset

from .effect import SETTINGS as CHECK_SETTINGS
from .effect import compute_check


def write_check(out, settings=CHECK_SETTINGS, log=print) -> xr.Dataset:
    """The prior check (:func:`compute_check`) written to ``out`` with its provenance (kind prior_check)."""
    ds = compute_check(settings, log)
    ds.attrs.update(provenance_attrs("prior_check", {"settings": settings}, "copyhead prior check at d_k < L",
                                     extra={"docs": "docs/theory.md Sec. 12.3; docs/prior_check.md"}))
    write_dataset(ds, out)
    return ds
