"""Audit of a results folder: walk a figure back to the files, configs and code that made it, and verify every checksum.

Chain: figure sidecar (``figN_<name>.provenance.json``) -> the aggregate and theory files it read (sha256
recorded in the sidecar) -> the run files behind each aggregate (sha256 recorded in the aggregate's
``inputs_json`` attribute) -> each run's own provenance (config hash, code version, status, wall time).
Works from the files alone; when Snakemake's ``.snakemake/`` metadata is present it adds the job record
(rule, start/end, external job id such as a SLURM job id). Any missing, changed or unreadable file is a
problem: the audit names it and exits non-zero.

Every product records the fingerprint of the code that made it (``code_fingerprint``; figures in their
sidecar); one that differs from the current code's (``copyhead.provenance.code_fingerprint``) is *stale*:
a warning (exit 1 under ``--strict``). So is a product whose recorded config differs from the one the
config file gives it: the file(s) the figure records it was made from (``config_files``: the workflow's
``--configfile``, else config.yaml; a product made before that record: ``config.yaml`` of the audited
folder), or ``--config``, which wins. Each differing key is one line, ``stale: <product> made with
optimizers.sgld.eta = 0.001, conf/tiny.yaml now says 0.002`` (runs per recipe, theory files, figure
options); a product for a point no longer in the sweep is not compared. A figure made from a stale product
is stale itself (``STALE`` instead of ``OK``), and products of one figure that record different config files
are named. ``--fix`` removes what is broken so that the next ``snakemake``
makes it again instead of failing downstream: an unreadable file itself, a product whose recorded input
changed (the input is kept), figure outputs that changed, and, under ``--results``, every unreadable
netCDF file and stale temporary file of a killed write.
"""
from __future__ import annotations

import base64
import itertools
import json
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..config import (ConfigError, config_differences, load_mapping, merge_overrides, run_config, run_identity,
                      theory_config, validate)
from ..figures import FIGURES
from ..provenance import CODE_ROOTS, KIND_CONCERN, DataFileError, code_fingerprint, read_dataset, sha256_file
from .fix import FOREIGN


@dataclass
class Report:
    figure: str
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    products: list[dict] = field(default_factory=list)   # aggregates / theory files
    runs: list[dict] = field(default_factory=list)
    code_versions: dict[str, list[str]] = field(default_factory=dict)  # version -> files
    stale: list[str] = field(default_factory=list)       # products made by other code or config than the current
    # (kind, key, recorded, current) -> products whose recorded config differs from the current config's
    config_stale: dict = field(default_factory=dict)
    # what `--fix` removes: path -> reason (an empty reason list: Snakemake remakes a missing file itself)
    remove: dict[str, str] = field(default_factory=dict)
    # why the figure itself is stale (made by other code or options, or from a stale product); '' if not
    figure_stale: str = ""
    config_files: list[str] = field(default_factory=list)    # the config file(s) the products were compared with

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict:
        return {"figure": self.figure, "ok": self.ok, "problems": self.problems, "warnings": self.warnings,
                "stale": self.stale, "figure_stale": self.figure_stale, "config_files": self.config_files,
                "remove": self.remove,
                "products": self.products, "runs": self.runs, "code_versions": self.code_versions,
                "total_run_wall_time_s": sum(r.get("wall_time_s") or 0 for r in self.runs)}


def _snakemake_record(root: Path, path: str) -> dict | None:
    """The Snakemake job record of an output, from .snakemake (sqlite or file backend), if present."""
    smk = root / ".snakemake"
    db = smk / "metadata.db"
    cols = ("rule", "starttime", "endtime", "external_jobid")
    if db.exists():  # the database backend; an empty or foreign database falls through to the files
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                row = con.execute(f"SELECT {', '.join(cols)} FROM snakemake_metadata WHERE target = ?",
                                  (path,)).fetchone()
            if row:
                return dict(zip(cols, row))
        except sqlite3.Error:
            pass
    meta = smk / "metadata"
    if meta.is_dir():
        rec = meta / base64.urlsafe_b64encode(path.encode()).decode()
        if rec.is_file():
            try:
                d = json.loads(rec.read_text())
                return {k: d.get(k) for k in cols}
            except (OSError, json.JSONDecodeError):
                return None
    return None


class _Auditor:
    def __init__(self, root: Path, config: Path | None = None):
        self.root = root
        # the config the products should have been made with, per figure (:meth:`_use_config`): the file
        # named by --config, else the file(s) the figure records, else config.yaml of the audited root;
        # None (with why) when it cannot be read, then no config check is made
        self.explicit = Path(config) if config is not None else None
        self._configs: dict[tuple, tuple] = {}
        self.config, self.config_error, self.config_label, self.config_files = None, "", "config.yaml", []
        # path -> (sha256, dataset or the read error): `--all` reaches the same aggregate and runs from
        # several figures; each file is hashed and read once per audit
        self._files: dict[Path, tuple[str, object]] = {}
        self.current = {c: code_fingerprint(c) for c in CODE_ROOTS}

    def _stale(self, kind: str, recorded: str) -> str:
        """'' if ``recorded`` is the current fingerprint of the code making ``kind``, else why not."""
        concern = KIND_CONCERN.get(kind)
        if concern is None:
            return ""
        if not recorded:
            return f"no code fingerprint recorded (made before fingerprints; {concern} code unknown)"
        if recorded != self.current[concern]:
            return f"made by other {concern} code (fingerprint {recorded}, current {self.current[concern]})"
        return ""

    def _use_config(self, rec: dict, inputs: list[str]):
        """Choose the config a figure's products are compared with: ``--config``, else the config file(s)
        (and ``--config`` overrides of the workflow) the figure's record names, else those an input file
        records (a figure drawn by hand from workflow products), else config.yaml of the audited root."""
        files, overrides = None, {}
        if self.explicit is not None:
            files, label = [str(self.explicit)], str(self.explicit)
        else:
            for source in itertools.chain([rec], (self._attrs(p) for p in inputs)):   # the first that says
                files = _recorded_list(source.get("config_files"))
                if files:
                    overrides = _recorded_dict(source.get("config_overrides"))
                    break
            files = files or ["config.yaml"]
            label = " + ".join(files) + (" (with the workflow's --config overrides)" if overrides else "")
        key = (tuple(files), json.dumps(overrides, sort_keys=True))
        if key not in self._configs:
            paths = [Path(f) if self.explicit is not None else self._resolve(f) for f in files]
            self._configs[key] = _current_config(paths, overrides)
        self.config, self.config_error = self._configs[key]
        self.config_label, self.config_files = label, files

    def _attrs(self, recorded_path: str) -> dict:
        """The attributes of a netCDF input ({} if it cannot be read: the audit reports that itself)."""
        path = self._resolve(recorded_path)
        if not path.exists():
            return {}
        _, content = self._load(path)
        return {} if isinstance(content, DataFileError) else dict(content.attrs)

    def _config_stale(self, rep: Report, kind: str, path: str, recorded, want, rename: dict | None = None):
        """Note every key where a product's recorded config differs from what the current config gives
        it (collected per (kind, key, values) and printed as one line each by :meth:`_config_lines`);
        ``rename`` maps a record's top-level section to the config's (a run's ``recipe`` is
        ``optimizers.<recipe>``), so the line names the key to look for in the config file."""
        if want is None:
            return
        if isinstance(recorded, str):
            try:
                recorded = json.loads(recorded)
            except json.JSONDecodeError:
                return
        for key, got, now in config_differences(recorded, want):
            head, dot, rest = key.partition(".")
            key = f"{rename[head]}{dot}{rest}" if rename and head in rename else key
            rep.config_stale.setdefault((kind, key, repr(got), repr(now)), []).append(path)

    def _config_lines(self, rep: Report):
        for (kind, key, got, now), paths in sorted(rep.config_stale.items()):
            n = len(paths)
            what = f"{n} {kind} file(s), e.g. {paths[0]}," if n > 1 else f"{kind} {paths[0]}"
            rep.warnings.append(f"stale: {what} made with {key} = {got}, {self.config_label} now says {now}")
            rep.stale += [p for p in paths if p not in rep.stale]

    def _want_run(self, a: dict):
        """The defining config the current config gives a run (None: the run is not in its sweep)."""
        cfg = self.config
        att, opt = str(a.get("attention", "")), str(a.get("optimizer", ""))
        if cfg is None or opt not in cfg["sweep"].get(att, {}):
            return None
        return run_identity(run_config(cfg, att, opt), int(a.get("P", 0)), int(a.get("seed", 0)))

    def _want_theory(self, kind: str, recorded: str):
        if self.config is None:
            return None
        want = theory_config(self.config)
        if kind == "theory_datasets":          # the training sets it was computed on are its inputs, not config
            try:
                want = dict(want, same_dataset=json.loads(recorded).get("same_dataset"))
            except (json.JSONDecodeError, AttributeError):
                return None
        return want

    def _resolve(self, p: str) -> Path:
        path = Path(p)
        return path if path.is_absolute() else self.root / path

    def _load(self, path: Path) -> tuple[str, object]:
        """(sha256, dataset or the read error) of a file, read once per audit."""
        if path not in self._files:
            try:
                content = read_dataset(path)
            except DataFileError as e:
                content = e
            self._files[path] = (sha256_file(path), content)
        return self._files[path]

    def _check_file(self, rep: Report, recorded_path: str, sha: str, what: str, consumer: list[str]):
        """Verify existence and checksum; return the opened dataset or None. For ``--fix``: an unreadable
        file is removed, a changed one makes its ``consumer`` files (made from the old content) removed."""
        path = self._resolve(recorded_path)
        if not path.exists():
            rep.problems.append(f"{recorded_path}: missing ({what})")
            for c in consumer:     # made from it: removed, so that snakemake remakes both
                rep.remove.setdefault(str(self._resolve(c)), f"made from {recorded_path}, which is missing")
            return None
        actual, content = self._load(path)
        if isinstance(content, DataFileError):
            rep.problems.append(f"{content} ({what})")
            rep.remove[str(path)] = "unreadable netCDF file"
            return None
        if sha and actual != sha:
            rep.problems.append(f"{recorded_path}: changed since it was used ({what}; "
                                f"sha256 {actual[:12]} != recorded {sha[:12]})")
            for c in consumer:
                rep.remove.setdefault(str(self._resolve(c)), f"made from an earlier {recorded_path}")
        return content

    def _note_version(self, rep: Report, ds_attrs: dict, name: str):
        v = str(ds_attrs.get("code_version", "")) or "unknown"
        rep.code_versions.setdefault(v, []).append(name)

    def audit(self, figure: Path) -> Report:
        sidecar = figure if figure.name.endswith(".provenance.json") else \
            figure.with_name(figure.name.rsplit(".", 1)[0] + ".provenance.json")
        rep = Report(figure=str(figure))
        fig_files = [str(sidecar.with_name(sidecar.name.replace(".provenance.json", "." + ext)).resolve())
                     for ext in ("pdf", "png")] + [str(sidecar.resolve())]
        if not sidecar.exists():
            rep.problems.append(f"{sidecar}: provenance sidecar missing")
            rep.remove.update({f: "figure without its provenance sidecar" for f in fig_files[:2]
                               if Path(f).exists()})
            return rep
        try:
            rec = json.loads(sidecar.read_text())
        except (OSError, json.JSONDecodeError) as e:
            rep.problems.append(f"{sidecar}: unreadable provenance record ({e})")
            rep.remove.update({f: "figure with an unreadable provenance sidecar" for f in fig_files})
            return rep
        for ext, out in rec.get("outputs", {}).items():
            p = self._resolve(out["path"])
            if not p.exists():
                rep.problems.append(f"{out['path']}: missing (figure output)")
            elif sha256_file(p) != out["sha256"]:
                rep.problems.append(f"{out['path']}: changed since it was made (figure output)")
                rep.remove.update({f: f"figure output {out['path']} changed" for f in fig_files})
        rep.code_versions.setdefault(rec.get("code_version", "unknown"), []).append(str(sidecar))
        inputs = {role: inp for role, inp in sorted(rec.get("inputs", {}).items()) if isinstance(inp, dict)}
        self._use_config(rec, [i["path"] for i in inputs.values() if str(i.get("path", "")).endswith(".nc")])
        rep.config_files = list(self.config_files)
        sources: dict[str, list[str]] = {}     # config files recorded -> the products recording them
        _note_source(sources, rec.get("config_files"), str(sidecar))
        why = self._stale("figure", rec.get("code_fingerprint", ""))
        if why:
            rep.stale.append(str(sidecar))
            rep.figure_stale = why
            rep.warnings.append(f"stale figure {figure}: {why}")
        if self.config is not None and rec.get("figure") in FIGURES:
            fig = FIGURES[rec["figure"]]
            self._config_stale(rep, "figure", str(sidecar), rec.get("options", {}), fig.options(self.config))
        fig_job = _snakemake_record(self.root, rec.get("outputs", {}).get("pdf", {}).get("path", ""))
        if fig_job:
            rep.products.append({"role": "figure", "path": str(figure), "snakemake": fig_job})
        for role, inp in inputs.items():
            ds = self._check_file(rep, inp["path"], inp.get("sha256", ""), f"input {role} of {sidecar.name}",
                                  consumer=fig_files)
            prod = {"role": role, "path": inp["path"], "kind": inp.get("kind", ""),
                    "config_hash": inp.get("config_hash", ""), "code_version": inp.get("code_version", "")}
            job = _snakemake_record(self.root, inp["path"])
            if job:
                prod["snakemake"] = job
            rep.products.append(prod)
            if ds is None:
                continue
            self._note_version(rep, ds.attrs, inp["path"])
            _note_source(sources, ds.attrs.get("config_files"), inp["path"])
            kind = str(ds.attrs.get("copyhead_kind", ""))
            prod["code_fingerprint"] = str(ds.attrs.get("code_fingerprint", ""))
            why = self._stale(kind, prod["code_fingerprint"])
            if why:
                prod["stale"] = why
                rep.stale.append(inp["path"])
                rep.warnings.append(f"stale {kind} {inp['path']}: {why}")
            if kind in ("theory", "theory_datasets"):
                self._config_stale(rep, kind, inp["path"], ds.attrs.get("config_json", "{}"),
                                   self._want_theory(kind, ds.attrs.get("config_json", "{}")))
            if kind == "aggregate":
                self._audit_runs(rep, ds.attrs, inp["path"], sources)
        stale_runs = [r for r in rep.runs if r.get("stale")]
        if stale_runs:
            rep.stale += [r["path"] for r in stale_runs]
            reasons = sorted({r["stale"] for r in stale_runs})
            rep.warnings.append(f"{len(stale_runs)} of {len(rep.runs)} stale run(s), e.g. {stale_runs[0]['path']}: "
                                + "; ".join(reasons))
        if self.config_error:
            rep.warnings.append(f"{self.config_label}: {self.config_error}; recorded configs not compared")
        self._config_lines(rep)
        if len(sources) > 1:
            rep.warnings.append("made from different config files: " + "; ".join(
                f"{src} ({len(p)} file(s), e.g. {p[0]})" for src, p in sorted(sources.items())))
        made_from = [p for p in rep.stale if p != str(sidecar)]
        if str(sidecar) in rep.stale and not rep.figure_stale:
            rep.figure_stale = "made with other figure options (named above)"
        if made_from and not rep.figure_stale:
            rep.figure_stale = f"made from {len(made_from)} stale product(s), e.g. {made_from[0]}"
            rep.warnings.append(f"stale figure {figure}: {rep.figure_stale} (`snakemake` remakes them and it)")
        if len(rep.code_versions) > 1:
            rep.warnings.append("mixed code versions: " + "; ".join(
                f"{v} ({len(f)} file(s))" for v, f in sorted(rep.code_versions.items())))
        dirty = [v for v in rep.code_versions if "-dirty" in v]
        if dirty:
            rep.warnings.append(f"made from a dirty working tree: {', '.join(sorted(dirty))}")
        return rep

    def _check_run_content(self, rep: Report, ds, agg_attrs: dict, path: str):
        """A run the aggregate must not average: non-finite values in an ok run, or a defining config
        other than the one the aggregate's config gives it (``run_configs_json``)."""
        from ..aggregate import foreign_config, nonfinite_variables

        if str(ds.attrs.get("status", "ok")) != "ok":
            return
        bad = nonfinite_variables(ds)
        if bad:
            rep.problems.append(f"{path}: status ok but non-finite values in {', '.join(bad)}")
            rep.remove[str(self._resolve(path))] = "non-finite values in a run marked ok"
        recorded = agg_attrs.get("run_configs_json", "")
        key = (str(ds.attrs.get("optimizer")), int(ds.attrs.get("P", 0)), int(ds.attrs.get("seed", 0)))
        diff = foreign_config(ds.attrs, json.loads(recorded), key) if recorded else []
        if diff:
            rep.problems.append(f"{path}: {FOREIGN} than its aggregate's: {'; '.join(diff)}")
            rep.remove[str(self._resolve(path))] = f"{FOREIGN}: {'; '.join(diff)}"

    def _audit_runs(self, rep: Report, attrs: dict, agg_path: str, sources: dict):
        try:
            inputs = json.loads(attrs.get("inputs_json", "{}"))
        except json.JSONDecodeError:
            rep.problems.append(f"{agg_path}: inputs_json attribute is not valid JSON")
            rep.remove[str(self._resolve(agg_path))] = "aggregate without a readable list of its runs"
            return
        for path, sha in sorted(inputs.items()):
            ds = self._check_file(rep, path, sha, f"run behind {agg_path}", consumer=[agg_path])
            run = {"path": path, "aggregate": agg_path}
            if ds is not None:
                a = ds.attrs
                run.update({k: (a[k].item() if hasattr(a.get(k), "item") else a.get(k)) for k in
                            ("attention", "optimizer", "P", "seed", "status", "config_hash", "code_version",
                             "code_fingerprint", "wall_time_s", "device", "host", "slurm_job_id") if k in a})
                why = self._stale("run", str(a.get("code_fingerprint", "")))
                if why:
                    run["stale"] = why
                self._config_stale(rep, "run", path, a.get("config_json", "{}"), self._want_run(a),
                                   rename={"recipe": f"optimizers.{a.get('optimizer', '?')}"})
                self._note_version(rep, a, path)
                _note_source(sources, a.get("config_files"), path)
                self._check_run_content(rep, ds, attrs, path)
            job = _snakemake_record(self.root, path)
            if job:
                run["snakemake"] = job
            rep.runs.append(run)


def _current_config(paths: list[Path], overrides: dict | None = None):
    """(validated config, '') or (None, why not): the files merged in order (as the Snakefile merges its
    ``--configfile`` files), then the ``--config`` overrides."""
    merged = {}
    for path in paths:
        if not path.is_file():
            return None, "not found" if len(paths) == 1 else f"{path.name} not found"
        try:
            merged = merge_overrides(merged, load_mapping(path))
        except ConfigError as e:
            return None, f"invalid ({str(e).splitlines()[0]})"
    try:
        return validate(merge_overrides(merged, overrides or {})), ""
    except ConfigError as e:
        return None, f"invalid ({str(e).splitlines()[0]})"


def _recorded_list(value) -> list[str]:
    """A product's ``config_files`` record (a list in a sidecar, JSON text in a netCDF attribute)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _recorded_dict(value) -> dict:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


def _note_source(sources: dict, recorded, product: str):
    files = _recorded_list(recorded)
    if files:
        sources.setdefault(" + ".join(files), []).append(product)


def audit_figures(figures, root: Path = Path("."), config: Path | None = None) -> list[Report]:
    aud = _Auditor(Path(root), config)
    return [aud.audit(Path(f)) for f in figures]


def _print(rep: Report, out=sys.stdout):
    d = rep.as_dict()
    head = "FAIL" if not rep.ok else "STALE" if rep.figure_stale else "OK  "
    print(f"{head} {rep.figure}", file=out)
    for p in rep.products:
        line = f"  <- {p['role']}: {p['path']}"
        if p.get("kind"):
            line += f" [{p['kind']}, config {p['config_hash']}, code {p['code_version']}]"
        if p.get("snakemake"):
            s = p["snakemake"]
            line += f" (rule {s.get('rule')}" + (f", job {s['external_jobid']}" if s.get("external_jobid") else "") + ")"
        print(line, file=out)
    by_status: dict[str, int] = {}
    for r in rep.runs:
        by_status[str(r.get("status", "unreadable"))] = by_status.get(str(r.get("status", "unreadable")), 0) + 1
    if rep.runs:
        print(f"     runs: {len(rep.runs)} ({', '.join(f'{n} {s}' for s, n in sorted(by_status.items()))}), "
              f"total training wall time {d['total_run_wall_time_s']:.1f} s", file=out)
        for r in rep.runs:
            extra = ""
            job = r.get("slurm_job_id") or r.get("snakemake", {}).get("external_jobid")
            if job:
                extra = f" SLURM job {job}"
            print(f"     {r.get('attention', '?')}/{r.get('optimizer', '?')} P={r.get('P', '?')} "
                  f"seed={r.get('seed', '?')} status={r.get('status', '?')} config={r.get('config_hash', '?')} "
                  f"code={r.get('code_version', '?')}{extra}{' STALE' if r.get('stale') else ''}  {r['path']}",
                  file=out)
    print(f"     code versions: {', '.join(sorted(rep.code_versions))}", file=out)
    for w in rep.warnings:
        print(f"  WARNING: {w}", file=out)
    for p in rep.problems:
        print(f"  PROBLEM: {p}", file=out)
