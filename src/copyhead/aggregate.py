"""Aggregation: all run files of one attention type -> one xarray Dataset.

Dims ``(optimizer, P, seed)`` for per-run results, plus ``step`` (training curves; the union of the
recipes' recording steps, NaN where a recipe did not record), ``sample`` (SGLD samples) and
``query``/``key`` (attention matrices). Nothing is dropped silently: every grid point has a ``status``
("ok", "diverged", or "absent" where the sweep has no such run), diverged runs keep their curves but
their results are NaN, and ``n_ok`` counts the runs behind each summary. The variables are the union over
the run files: a variable some runs lack (files written by older code) is NaN for those runs, counted
(variable attribute ``n_missing``, global ``missing_json``) and warned about, never blanking the runs
that have it. Runs made by different code (``code_fingerprint``) are flagged (``mixed_code``, a warning)
or refused (``strict``). Two kinds of run are never averaged in (status ``nonfinite`` and ``foreign``,
results blanked like a diverged run, counted per point in ``n_nonfinite``/``n_foreign``, named in the
global ``nonfinite_json``/``foreign_json``, a warning; refused under ``strict``): a run whose file says ok
but holds a NaN or infinite value, and a run whose recorded defining config (``config_json``) is not the
one the current config gives it (``run_configs``: per recipe :func:`copyhead.config.run_config`). Seed
summaries ``<var>_mean`` and ``<var>_sem`` (standard error over the seeds that have a value, NaN with fewer
than two: :func:`copyhead.analysis.stats.seed_mean_sem`) are stored next to the runs; chain diagnostics
(R̂, ESS, MCSE) are not stored: the results compute them from the samples (``copyhead.analysis.convergence``,
ArviZ; ``copyhead.analysis.posterior`` gives a recipe's ``<var>_sample`` as ``chain × draw``). The sha256
of every input file is recorded (``inputs_json``) for the audit.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from .analysis.stats import seed_mean_sem
from .config import config_diff, run_identity
from .order_params import PAPER_NAMES, paper_order_parameters
from .provenance import DataFileError, provenance_attrs, read_dataset, sha256_file, write_dataset

# Per-run attributes copied into (optimizer, P, seed) variables, so the aggregate alone tells which
# config and code version made each run and how long it took.
RUN_ATTRS = {"config_hash": "run_config_hash", "code_version": "run_code_version",
             "code_fingerprint": "run_code_fingerprint",
             "status": None, "wall_time_s": "run_wall_time_s", "device": "run_device",
             "diverged_step": "run_diverged_step"}

# Result variables (no step dim) whose seed mean and sem are stored.
SUMMARY_VARS = ("c1", "cG", "m1", "mP", "coverage_ratio", "coverage_cosine", "train_loss_final",
                "test_loss_final")
GRID = ("optimizer", "P", "seed")


class AggregateError(ValueError):
    """Run files that cannot be aggregated together (the message names them)."""


def nonfinite_variables(ds: xr.Dataset) -> list[str]:
    """The float variables of a run holding a NaN or infinite value (none in a healthy ok run)."""
    return sorted(str(v) for v in ds.data_vars if ds[v].dtype.kind == "f" and not np.isfinite(ds[v].values).all())


def foreign_config(attrs: dict, run_configs: dict | None, key: tuple[str, int, int]) -> list[str]:
    """Where a run's recorded defining config differs from the one the current config gives it
    (``run_configs``: recipe -> :func:`copyhead.config.run_config`); [] if it matches or nothing to check."""
    if run_configs is None:
        return []
    opt, P, seed = key
    if opt not in run_configs:
        return [f"recipe {opt!r} is not swept by the current config (swept: {sorted(run_configs)})"]
    try:
        got = json.loads(attrs.get("config_json", ""))
    except json.JSONDecodeError:
        return ["no readable config_json attribute"]
    return config_diff(got, run_identity(run_configs[opt], P, seed))


def _one_run(path: Path, run_configs: dict | None = None) -> tuple[tuple[str, int, int], xr.Dataset, dict]:
    ds = read_dataset(path)
    a = ds.attrs
    kind = a.get("copyhead_kind", "run")
    if kind != "run":
        raise DataFileError(f"{path}: a copyhead {kind} file, not a run file")
    try:
        key = (str(a["optimizer"]), int(a["P"]), int(a["seed"]))
    except KeyError as e:
        raise DataFileError(f"{path}: not a copyhead run file (attribute {e} missing)") from None
    status = str(a.get("status", "ok"))
    ds = ds.drop_vars([v for v in ("status",) if v in ds.variables])
    meta = {"status": status, "path": str(path), "sha256": sha256_file(path)}
    if status == "ok":
        meta["nonfinite"] = nonfinite_variables(ds)
        meta["foreign"] = foreign_config(a, run_configs, key)
        status = meta["status"] = "foreign" if meta["foreign"] else "nonfinite" if meta["nonfinite"] else "ok"
    if status != "ok":  # keep the curves (they show where it diverged), blank the results
        for v in ds.data_vars:
            if "step" not in ds[v].dims and ds[v].dtype.kind == "f":
                ds[v] = ds[v] * np.nan
    for k, name in RUN_ATTRS.items():
        if name:
            meta[name] = a.get(k, "")
    return key, ds, meta


def _union_layout(runs):
    """Per variable (dims, template DataArray) and per non-grid dim the sorted union of coordinates."""
    specs: dict[str, xr.DataArray] = {}
    for _, ds, meta in runs:
        for v in ds.data_vars:
            if v not in specs:
                specs[v] = ds[v]
            elif ds[v].dims != specs[v].dims:
                raise AggregateError(f"{meta['path']}: variable {v!r} has dims {ds[v].dims}, other runs "
                                     f"{specs[v].dims}")
    coords: dict[str, list] = {}
    for _, ds, meta in runs:
        for d in ds.dims:
            if d not in ds.coords:
                raise AggregateError(f"{meta['path']}: dimension {d!r} has no coordinate")
            coords.setdefault(d, set()).update(ds[d].values.tolist())
    return specs, {d: sorted(v) for d, v in coords.items()}


def _assemble(runs, optimizers, Ps, seeds) -> tuple[xr.Dataset, dict[str, np.ndarray]]:
    """One Dataset on the (optimizer, P, seed) grid with the union of variables and coordinates; each
    run's values are placed in its own cell (nothing is overridden or blanked by another run). Returns
    it and, per variable, the mask of cells whose run had that variable."""
    specs, coords = _union_layout(runs)
    where = {d: {c: i for i, c in enumerate(vals)} for d, vals in coords.items()}
    grid_shape = (len(optimizers), len(Ps), len(seeds))
    arrays, present = {}, {}
    for v, t in specs.items():
        shape = grid_shape + tuple(len(coords[d]) for d in t.dims)
        numeric = t.dtype.kind in "fiub"
        arrays[v] = np.full(shape, np.nan) if numeric else np.full(shape, "", dtype=object)
        present[v] = np.zeros(grid_shape, bool)
    for (opt, P, seed), ds, _ in runs:
        cell = (optimizers.index(opt), Ps.index(P), seeds.index(seed))
        for v in ds.data_vars:
            x = ds[v]
            idx = np.ix_(*[[where[d][c] for c in x[d].values.tolist()] for d in x.dims]) if x.ndim else ()
            arrays[v][cell + idx] = x.values
            present[v][cell] = True
    out = xr.Dataset(coords={"optimizer": optimizers, "P": Ps, "seed": seeds})
    for d, vals in coords.items():
        template = next(ds[d] for _, ds, _ in runs if d in ds.coords)
        out = out.assign_coords({d: (d, np.asarray(vals, dtype=template.dtype), dict(template.attrs))})
    for v, t in specs.items():
        arr = arrays[v] if t.dtype.kind in "fiub" else arrays[v].astype(str)
        out[v] = (GRID + t.dims, arr, dict(t.attrs))
    return out, present


def _excluded(runs, attention: str) -> tuple[dict[str, dict[str, list[str]]], str]:
    """The runs excluded from the statistics, per kind (nonfinite, foreign): path -> what is wrong; and
    the message that names each ('' if none)."""
    out = {kind: {m["path"]: m[kind] for _, _, m in runs if m["status"] == kind} for kind in ("nonfinite", "foreign")}
    what = {"nonfinite": "status ok but non-finite values in", "foreign": "made with another config:"}
    lines = [f"{path}: {what[kind]} {', '.join(items)}" for kind, bad in out.items() for path, items in bad.items()]
    if lines:
        return out, (f"{attention} aggregate: {len(lines)} run(s) left out of every mean (status nonfinite/foreign;"
                     " `copyhead audit --all --fix` removes them and the next `snakemake` trains them again):\n  "
                     + "\n  ".join(lines))
    return out, ""


def _configs_disagree(runs, attention: str) -> str:
    """Without the current config: the runs of one recipe must at least share one defining config; the
    message naming the groups where they do not ('' if they do)."""
    groups: dict[str, dict[str, list[str]]] = {}
    for (opt, _, _), ds, meta in runs:
        rec = {k: v for k, v in json.loads(ds.attrs.get("config_json", "{}") or "{}").items() if k not in ("P", "seed")}
        groups.setdefault(opt, {}).setdefault(json.dumps(rec, sort_keys=True), []).append(meta["path"])
    mixed = {opt: g for opt, g in groups.items() if len(g) > 1}
    if mixed:
        return f"{attention} runs of one recipe made with different configs (give --config to check against yours): " + \
            "; ".join(f"{opt}: " + " vs ".join(f"{len(ps)} run(s), e.g. {ps[0]}" for ps in g.values())
                      for opt, g in sorted(mixed.items()))
    return ""


def aggregate_datasets(paths, attention: str, strict: bool = False, run_configs: dict | None = None) -> xr.Dataset:
    """Aggregate run files; ``strict`` refuses runs made by different code (else they are flagged), runs
    with non-finite values and, given ``run_configs`` (recipe -> :func:`copyhead.config.run_config` of the
    current config), runs made with another config (else they are left out of the means and named)."""
    runs = [_one_run(Path(p), run_configs) for p in paths]
    if not runs:
        raise AggregateError("no run files to aggregate")
    for key, ds, meta in runs:
        if ds.attrs.get("attention", attention) != attention:
            raise AggregateError(f"{meta['path']}: attention {ds.attrs.get('attention')!r}, "
                                 f"expected {attention!r}")
    seen = {}
    for key, _, meta in runs:
        if key in seen:
            raise AggregateError(f"two run files for optimizer={key[0]} P={key[1]} seed={key[2]}: "
                                 f"{seen[key]} and {meta['path']}")
        seen[key] = meta["path"]
    fingerprints = sorted({str(meta["run_code_fingerprint"]) or "unrecorded" for _, _, meta in runs})
    mixed = len(fingerprints) > 1
    if mixed:
        by_fp = {fp: [m["path"] for _, _, m in runs if (str(m["run_code_fingerprint"]) or "unrecorded") == fp]
                 for fp in fingerprints}
        msg = (f"{attention} runs made by different training code (code_fingerprint): " + "; ".join(
            f"{fp}: {len(ps)} run(s), e.g. {ps[0]}" for fp, ps in by_fp.items()))
        if strict:
            raise AggregateError(msg + " (rerun the stale runs, or aggregate without --strict)")
        warnings.warn(msg, stacklevel=2)
    excluded, left_out = _excluded(runs, attention)
    problems = [m for m in (left_out, _configs_disagree(runs, attention) if run_configs is None else "") if m]
    if problems and strict:
        raise AggregateError("\n".join(problems))
    for msg in problems:
        warnings.warn(msg, stacklevel=2)
    optimizers = sorted({k[0] for k, _, _ in runs})
    Ps = sorted({k[1] for k, _, _ in runs})
    seeds = sorted({k[2] for k, _, _ in runs})
    out, present = _assemble(runs, optimizers, Ps, seeds)

    shape = (len(optimizers), len(Ps), len(seeds))
    status = np.full(shape, "absent", dtype=object)
    meta_vars = {name: np.full(shape, "", dtype=object) for name in RUN_ATTRS.values() if name}
    for (opt, P, seed), _, meta in runs:
        idx = (optimizers.index(opt), Ps.index(P), seeds.index(seed))
        status[idx] = meta["status"]
        for name in meta_vars:
            meta_vars[name][idx] = str(meta[name])
    out["status"] = (GRID, status.astype(str), {
        "long_name": "run status (ok | diverged | nonfinite | foreign | absent)",
        "comment": "nonfinite: the file says ok but holds NaN/inf values; foreign: made with another config "
                   "(nonfinite_json, foreign_json); neither is in any mean"})
    for name, arr in meta_vars.items():
        out[name] = (GRID, arr.astype(str))
    ran = status != "absent"
    # missing: a run lacks a variable that another run of the same recipe has (a method's own variables,
    # e.g. HMC's acceptance rate, are not expected from the runs of other methods)
    expected = {v: ran & m.any(axis=(1, 2), keepdims=True) for v, m in present.items()}
    missing = {v: int((expected[v] & ~m).sum()) for v, m in present.items() if (expected[v] & ~m).any()}
    for v, n in missing.items():
        out[v].attrs["n_missing"] = n
    if missing:
        warnings.warn(f"{attention} aggregate: variables missing from some run files (NaN there, counted in "
                      f"the variable's n_missing): " + ", ".join(f"{v} ({n})" for v, n in sorted(missing.items())),
                      stacklevel=2)
    ok = out["status"] == "ok"
    n = ok.sum("seed")
    out["n_diverged"] = (out["status"] == "diverged").sum("seed").assign_attrs(
        long_name="runs left out of the means: status diverged", units="1")
    out["n_ok"] = n.assign_attrs(long_name="runs with status ok", units="1")
    for kind in excluded:
        out[f"n_{kind}"] = (out["status"] == kind).sum("seed").assign_attrs(
            long_name=f"runs left out of the means: status {kind}", units="1")
    for v in SUMMARY_VARS:
        if v not in out:
            continue
        # over the seeds with a value (a run lacking the variable does not count); no error with one seed
        mean, sem = seed_mean_sem(out[v].where(ok))
        name, units = out[v].attrs.get("long_name", v), out[v].attrs.get("units", "1")
        out[f"{v}_mean"] = mean.assign_attrs(long_name=f"mean over seeds of {name}", units=units)
        out[f"{v}_sem"] = sem.assign_attrs(long_name=f"standard error over seeds of {name}", units=units)
    out["P"].attrs.update(long_name="training-set size", units="sequences")
    inputs = {meta["path"]: meta["sha256"] for _, _, meta in runs}
    out.attrs = provenance_attrs(
        "aggregate", {"attention": attention, "inputs": sorted(inputs)},
        title=f"copyhead aggregate of {len(runs)} {attention}-attention runs",
        extra={"attention": attention, "inputs_json": json.dumps(inputs, sort_keys=True),
               "n_runs": len(runs), "n_diverged": int((status == "diverged").sum()),
               "n_absent": int((status == "absent").sum()),
               "missing_json": json.dumps(missing, sort_keys=True),
               "n_missing_values": int(sum(missing.values())),
               "run_code_fingerprints": ",".join(fingerprints), "mixed_code": int(mixed),
               **{f"{kind}_json": json.dumps(bad, sort_keys=True) for kind, bad in excluded.items()},
               **{f"n_{kind}": len(bad) for kind, bad in excluded.items()},
               "run_configs_json": json.dumps(run_configs, sort_keys=True) if run_configs is not None else ""})
    return out


def aggregate_runs(paths, out: Path, attention: str, strict: bool = False,
                   run_configs: dict | None = None) -> xr.Dataset:
    ds = aggregate_datasets(paths, attention, strict=strict, run_configs=run_configs)
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
            left = [f"{int(ag[f'n_{k}'].sel(optimizer=opt, P=P))} {k}" for k in ("diverged", "nonfinite", "foreign")
                    if f"n_{k}" in ag and int(ag[f"n_{k}"].sel(optimizer=opt, P=P))]
            lines.append(f"{str(opt):<12} {int(P):>5} {n:>4}  " + "  ".join(cells)
                         + (f"  [left out: {', '.join(left)}]" if left else ""))
    for kind in ("nonfinite", "foreign"):
        for path, why in json.loads(ag.attrs.get(f"{kind}_json", "") or "{}").items():
            lines.append(f"  {kind}: {path}: {', '.join(why)}")
    return "\n".join(lines)


def left_out_summary(paths) -> str:
    """One line naming how many runs the aggregates at ``paths`` leave out of every mean (non-finite or
    made with another config) and how to see and remake them; '' when none (or no aggregate yet). What
    the Snakefile prints when a run ends, so that a successful `snakemake` does not hide them."""
    counts = {}
    for path in map(Path, paths):
        if not path.is_file():
            continue
        try:
            with xr.open_dataset(path) as ag:
                attrs = dict(ag.attrs)
        except (OSError, ValueError) as e:
            return f"{path}: unreadable ({type(e).__name__}); `copyhead audit --all` names what is wrong"
        for kind in ("nonfinite", "foreign"):
            n = len(json.loads(attrs.get(f"{kind}_json", "") or "{}"))
            if n:
                counts[f"{attrs.get('attention', path.stem)} {kind}"] = n
    if not counts:
        return ""
    total = sum(counts.values())
    return (f"{total} run(s) left out of every mean ({', '.join(f'{n} {k}' for k, n in counts.items())}): "
            f"`copyhead summary {' '.join(map(str, paths))}` names them; `copyhead audit --all --fix` then "
            "`snakemake` makes them again")
