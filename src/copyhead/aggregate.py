"""Aggregation: all run files of one attention type -> one xarray Dataset.

Dims ``(optimizer, P, seed)`` for per-run results, plus ``step`` (training curves; the union of the
recipes' recording steps, NaN where a recipe did not record), ``sample`` (SGLD samples) and
``query``/``key`` (attention matrices). Nothing is dropped silently: every grid point has a ``status``
("ok", "diverged", or "absent" where the sweep has no such run), diverged runs keep their curves but
their results are NaN, and ``n_ok`` counts the runs behind each summary. Seed summaries ``<var>_mean``
and ``<var>_sem`` (standard error over seeds, NaN with one seed) are stored next to the runs. The
sha256 of every input file is recorded (``inputs_json``) for the audit.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from .order_params import PAPER_NAMES, paper_order_parameters
from .provenance import DataFileError, provenance_attrs, read_dataset, sha256_file, write_dataset

# Per-run attributes copied into (optimizer, P, seed) variables, so the aggregate alone tells which
# config and code version made each run and how long it took.
RUN_ATTRS = {"config_hash": "run_config_hash", "code_version": "run_code_version",
             "status": None, "wall_time_s": "run_wall_time_s", "device": "run_device",
             "diverged_step": "run_diverged_step"}

# Result variables (no step dim) whose seed mean and sem are stored.
SUMMARY_VARS = ("c1", "cG", "m1", "mP", "coverage_ratio", "coverage_cosine", "train_loss_final",
                "test_loss_final")


def _one_run(path: Path) -> tuple[tuple[str, int, int], xr.Dataset, dict]:
    ds = read_dataset(path)
    a = ds.attrs
    try:
        key = (str(a["optimizer"]), int(a["P"]), int(a["seed"]))
    except KeyError as e:
        raise DataFileError(f"{path}: not a copyhead run file (attribute {e} missing)") from None
    status = str(a.get("status", "ok"))
    ds = ds.drop_vars([v for v in ("status",) if v in ds.variables])
    if status != "ok":  # keep the curves (they show where it diverged), blank the results
        for v in ds.data_vars:
            if "step" not in ds[v].dims and ds[v].dtype.kind == "f":
                ds[v] = ds[v] * np.nan
    meta = {"status": status, "path": str(path), "sha256": sha256_file(path)}
    for k, name in RUN_ATTRS.items():
        if name:
            meta[name] = a.get(k, "")
    return key, ds, meta


def aggregate_datasets(paths, attention: str) -> xr.Dataset:
    runs = [_one_run(Path(p)) for p in paths]
    for key, ds, meta in runs:
        if ds.attrs.get("attention", attention) != attention:
            raise ValueError(f"{meta['path']}: attention {ds.attrs.get('attention')!r}, expected {attention!r}")
    seen = {}
    for key, _, meta in runs:
        if key in seen:
            raise ValueError(f"two run files for optimizer={key[0]} P={key[1]} seed={key[2]}: "
                             f"{seen[key]} and {meta['path']}")
        seen[key] = meta["path"]
    optimizers = sorted({k[0] for k, _, _ in runs})
    Ps = sorted({k[1] for k, _, _ in runs})
    seeds = sorted({k[2] for k, _, _ in runs})
    parts = []
    for key, ds, _ in runs:
        ds = ds.drop_attrs() if hasattr(ds, "drop_attrs") else ds
        parts.append(ds.expand_dims(optimizer=[key[0]], P=[key[1]], seed=[key[2]]))
    # outer join over step/sample coordinates; absent (optimizer, P, seed) cells become NaN
    out = xr.combine_by_coords(parts, data_vars="minimal", coords="minimal", compat="override", join="outer",
                             combine_attrs="drop", fill_value=np.nan)
    out = out.reindex(optimizer=optimizers, P=Ps, seed=seeds)

    shape = (len(optimizers), len(Ps), len(seeds))
    status = np.full(shape, "absent", dtype=object)
    meta_vars = {name: np.full(shape, "", dtype=object) for name in RUN_ATTRS.values() if name}
    for (opt, P, seed), _, meta in runs:
        idx = (optimizers.index(opt), Ps.index(P), seeds.index(seed))
        status[idx] = meta["status"]
        for name in meta_vars:
            meta_vars[name][idx] = str(meta[name])
    dims = ("optimizer", "P", "seed")
    out["status"] = (dims, status.astype(str), {"long_name": "run status (ok | diverged | absent)"})
    for name, arr in meta_vars.items():
        out[name] = (dims, arr.astype(str))
    ok = out["status"] == "ok"
    n = ok.sum("seed")
    out["n_ok"] = n.assign_attrs(long_name="runs with status ok", units="1")
    for v in SUMMARY_VARS:
        if v not in out:
            continue
        x = out[v].where(ok)
        out[f"{v}_mean"] = x.mean("seed").assign_attrs(
            long_name=f"mean over seeds of {out[v].attrs.get('long_name', v)}", units=out[v].attrs.get("units", "1"))
        sem = x.std("seed", ddof=1) / np.sqrt(n)
        out[f"{v}_sem"] = sem.where(n > 1).assign_attrs(
            long_name=f"standard error over seeds of {out[v].attrs.get('long_name', v)}",
            units=out[v].attrs.get("units", "1"))
    out["P"].attrs.update(long_name="training-set size", units="sequences")
    inputs = {meta["path"]: meta["sha256"] for _, _, meta in runs}
    # keep the variable attrs of the first run (long_name/units)
    first = runs[0][1]
    for v in first.data_vars:
        if v in out and not out[v].attrs:
            out[v].attrs.update(first[v].attrs)
    out.attrs = provenance_attrs(
        "aggregate", {"attention": attention, "inputs": sorted(inputs)},
        title=f"copyhead aggregate of {len(runs)} {attention}-attention runs",
        extra={"attention": attention, "inputs_json": json.dumps(inputs, sort_keys=True),
               "n_runs": len(runs), "n_diverged": int((status == "diverged").sum()),
               "n_absent": int((status == "absent").sum())})
    return out


def aggregate_runs(paths, out: Path, attention: str) -> xr.Dataset:
    ds = aggregate_datasets(paths, attention)
    write_dataset(ds, out)
    return ds


def summary_table(ag: xr.Dataset) -> str:
    """Plain-text table of seed means ± sem of the order parameters and test loss per (optimizer, P),
    with the count of ok runs (what `copyhead summary` prints)."""
    att = str(ag.attrs.get("attention", ""))
    L = ag.sizes["query"]
    means = (*paper_order_parameters(ag, att, L, "_mean"), ag["test_loss_final_mean"])
    sems = (*paper_order_parameters(ag, att, L, "_sem"), ag["test_loss_final_sem"])
    head = f"{'optimizer':<12} {'P':>5} {'n_ok':>4}  " + "  ".join(
        f"{n:>15}" for n in (*PAPER_NAMES[att], "test loss"))
    lines = [f"{att} attention ({ag.attrs.get('n_runs', '?')} runs, {ag.attrs.get('n_diverged', 0)} diverged)",
             head]
    for opt in ag["optimizer"].values:
        for P in ag["P"].values:
            if (ag["status"].sel(optimizer=opt, P=P) == "absent").all():  # not in the sweep
                continue
            n = int(ag["n_ok"].sel(optimizer=opt, P=P))
            cells = []
            for mean, sem in zip(means, sems):
                m, s = float(mean.sel(optimizer=opt, P=P)), float(sem.sel(optimizer=opt, P=P))
                cells.append(f"{m:7.3f} ± {s:5.3f}" if np.isfinite(s) else f"{m:7.3f}        ")
            lines.append(f"{str(opt):<12} {int(P):>5} {n:>4}  " + "  ".join(cells))
    return "\n".join(lines)
