"""The phase map's files (docs/theory.md, Sec. 12; rendered on docs/phase_map.md): the closed-form map and its
exact slice, computed by the pure module :mod:`.phase_map` and written here as one netCDF file each with its
provenance. ``copyhead phase-map map --out FILE`` calls :func:`write_map`, ``copyhead phase-map exact --map
FILE --out FILE`` :func:`write_exact`. (The prior check beside them is research: :mod:`research.prior_check`.)
"""
from __future__ import annotations

import json

import xarray as xr

from copyhead.provenance import input_checksums, provenance_attrs, read_dataset, write_dataset

from .phase_map import N_OVER_V2_MIN, PATHS, SETTINGS, compute_exact, compute_map


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

