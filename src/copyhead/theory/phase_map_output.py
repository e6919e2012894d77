"""The phase map's files (docs/theory.md, Sec. 12; rendered on docs/phase_map.md): the closed-form map, its exact
slice and the prior check, each computed by its pure module (:mod:`.phase_map`, :mod:`.prior_effect`) and
written here as one netCDF file with its provenance. ``copyhead phase-map map --out FILE`` calls
:func:`write_map`, ``copyhead phase-map exact --map FILE --out FILE`` :func:`write_exact` and
``copyhead prior-check --out FILE`` :func:`write_check`.
"""
from __future__ import annotations

import json

import xarray as xr

from copyhead.provenance import input_checksums, provenance_attrs, read_dataset, write_dataset

from .phase_map import N_OVER_V2_MIN, PATHS, SETTINGS, compute_exact, compute_map
from .prior_effect import SETTINGS as CHECK_SETTINGS
from .prior_effect import compute_check


def _write(ds, out, kind, title, settings, inputs=()):
    checksums = input_checksums(inputs)
    ds.attrs.update(provenance_attrs(kind, {"settings": settings, "paths": list(PATHS),
                                            "N_over_V2_min": N_OVER_V2_MIN}, title,
                                     extra={"inputs_json": json.dumps(checksums, sort_keys=True),
                                            "docs": "docs/theory.md Sec. 12; docs/phase_map.md"}))
    write_dataset(ds, out)
    return ds


def write_map(out, settings=SETTINGS, log=print) -> xr.Dataset:
    """The closed-form map (:func:`compute_map`) written to ``out`` with its provenance (kind phase_map)."""
    return _write(compute_map(settings, log), out, "phase_map",
                  "copyhead phase map: linear crossover / softmax P*", settings)


def write_exact(map_path, out, settings=SETTINGS, log=print) -> xr.Dataset:
    """The exact dataset average on the V = 16 slice (:func:`compute_exact`) next to the closed-form map
    ``map_path``, written to ``out`` with its provenance (kind phase_map_exact; the map's sha256)."""
    return _write(compute_exact(read_dataset(map_path), settings, log), out, "phase_map_exact",
                  "copyhead phase map, exact dataset average on the V = 16 slice", settings, [map_path])


def write_check(out, settings=CHECK_SETTINGS, log=print) -> xr.Dataset:
    """The prior check (:func:`compute_check`) written to ``out`` with its provenance (kind prior_check)."""
    ds = compute_check(settings, log)
    ds.attrs.update(provenance_attrs("prior_check", {"settings": settings}, "copyhead prior check at d_k < L",
                                     extra={"docs": "docs/theory.md Sec. 12; docs/phase_map.md"}))
    write_dataset(ds, out)
    return ds
