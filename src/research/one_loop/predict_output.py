"""The one-loop predictions' file (docs/theory.md, Sec. 13; one file of docs/one_loop/): :func:`.predict.compute`
at the studies' points, written with its provenance. ``python -m research one-loop predict`` calls
:func:`write_predictions`.
"""
from __future__ import annotations

import json
import time

import xarray as xr

from copyhead.provenance import input_checksums, provenance_attrs, write_dataset

from .posterior import SETTINGS
from .predict import compute


def write_predictions(out, params, points, attrs, seeds=(), attention="linear", coarse=None, inputs=(),
                      log=print) -> xr.Dataset:
    """:func:`compute` at the given points (``coarse``: the sub-grid size, default SETTINGS) written to ``out``
    (netCDF, kind ``one_loop``; the sha256 of each file of ``inputs`` in ``inputs_json``)."""
    t0 = time.perf_counter()
    settings = dict(SETTINGS, coarse=SETTINGS["coarse"] if coarse is None else int(coarse))
    ds = compute(params, points, attrs, settings, log, tuple(seeds), attention)
    ds.attrs["seconds_total"] = time.perf_counter() - t0
    checksums = input_checksums(inputs)
    config = {"study": attrs["study"], "attention": attention, "settings": settings, "seeds": list(seeds),
              "inputs": sorted(checksums)}
    prov = provenance_attrs("one_loop", config, f"research one-loop predictions at the {attrs['study']} study's "
                            f"points ({attention} attention)",
                            extra={"inputs_json": json.dumps(checksums, sort_keys=True),
                                   "docs": "docs/theory.md Sec. 13; docs/one_loop.md"})
    ds.attrs = {**prov, **ds.attrs}
    write_dataset(ds, out)
    return ds
