"""Provenance: what every product records about how it was made, and safe file I/O.

Owns (1) the provenance attributes written into every netCDF file (effective config as JSON and its
hash, code version, library versions, device, host, times) together with the CF global attributes,
(2) sha256 checksums of input files, (3) atomic writes (temporary file + rename, so a killed process
never leaves a half-written output) and (4) reading netCDF files with an error that names the file.
The audit of a figure back to its runs (``copyhead audit``) lives in ``copyhead.audit``.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

from . import __version__
from .config import canonical_json, config_hash
# the data files themselves (checksums, atomic writes, reading, temporaries) live in copyhead.datafiles;
# re-exported here, where the readers and writers of every product have always found them
# the code fingerprints (what code made a product) live in copyhead.fingerprint; re-exported here
from .fingerprint import CODE_ROOTS, KIND_CONCERN, changed_modules, code_fingerprint, module_digests
from .datafiles import config_source   # the config file(s) a product records (end of provenance_attrs)
from .datafiles import (DataFileError, WriteError, _PROCESS_START, atomic_write, atomic_write_all, input_checksums,
                        json_text, read_dataset, require_kind, sha256_file, stale_temps, write_dataset, write_json)

__all__ = ["PAPER", "CODE_ROOTS", "KIND_CONCERN", "code_fingerprint", "module_digests", "changed_modules",
           "code_version", "code_version_string",
           "library_versions", "now_iso", "provenance_attrs", "figure_record", "product_record",
           "write_product", "sidecar_path",
           # re-exported from copyhead.datafiles
           "DataFileError", "WriteError", "_PROCESS_START", "atomic_write", "atomic_write_all", "input_checksums",
           "json_text", "read_dataset",
           "require_kind", "sha256_file", "stale_temps", "write_dataset", "write_json"]

PAPER = ("Lavie, Fischer, Lekov, Van Maele, Ringel, Helias: Phase Transitions in Attention: A Bayesian "
         "Theory of Copy Head Emergence, arXiv 2606.12058 (NeurIPS 2026)")


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


_REPO = Path(__file__).resolve().parents[2]
_code_version_cache: dict | None = None
# what a working tree's code is: these paths of the repository (a dirty state is identified by its diff)
_CODE_PATHS = ("src", "workflow", "Snakefile", "pyproject.toml")

def _git_code_version(repo: Path) -> dict:
    """{git_commit, git_dirty, git_dirty_hash} of a working tree: the hash (12 hex digits) is of the
    diff against HEAD plus the untracked files under the code paths, so two different uncommitted
    states never share a label."""
    info = {"git_commit": "", "git_dirty": 0, "git_dirty_hash": ""}
    run = lambda *a: subprocess.run(["git", "-C", str(repo), *a], capture_output=True, timeout=30)
    head = run("rev-parse", "HEAD")
    if head.returncode != 0:
        return info
    info["git_commit"] = head.stdout.decode().strip()
    status = run("status", "--porcelain", "--untracked-files=all", "--", *_CODE_PATHS)
    if status.stdout.strip():
        h = hashlib.sha256(run("diff", "HEAD", "--binary", "--", *_CODE_PATHS).stdout)
        untracked = run("ls-files", "--others", "--exclude-standard", "-z", "--", *_CODE_PATHS).stdout
        for name in sorted(n for n in untracked.decode().split("\0") if n):
            h.update(b"\0" + name.encode() + b"\0")
            try:
                h.update((repo / name).read_bytes())
            except OSError:
                pass
        info["git_dirty"], info["git_dirty_hash"] = 1, h.hexdigest()[:12]
    return info


def code_version() -> dict:
    """git commit and dirty state (with the content hash of the uncommitted changes) of the source tree,
    or the package version outside git."""
    global _code_version_cache
    if _code_version_cache is None:
        info = {"package_version": __version__, "git_commit": "", "git_dirty": 0, "git_dirty_hash": ""}
        try:
            if (_REPO / ".git").exists():
                info.update(_git_code_version(_REPO))
        except (OSError, subprocess.SubprocessError):
            pass
        _code_version_cache = info
    return dict(_code_version_cache)


def code_version_string(info: dict | None = None) -> str:
    """``<commit[:12]>``, ``<commit[:12]>-dirty-<content hash>`` or ``copyhead <version>``."""
    info = info or code_version()
    if info.get("git_commit"):
        dirty = f"-dirty-{info.get('git_dirty_hash') or 'unknown'}" if info.get("git_dirty") else ""
        return info["git_commit"][:12] + dirty
    return f"copyhead {info['package_version']}"


def library_versions() -> dict:
    """The versions of the numerical libraries, the same whatever this process happened to import (a file
    reused from the run store and one trained beside it carry the same record): a loaded module's
    ``__version__``, else the installed distribution's (importlib.metadata; omitted when not installed)."""
    import numpy
    from importlib import metadata
    out = {"python_version": platform.python_version(), "numpy_version": numpy.__version__}
    for mod in ("torch", "scipy", "xarray", "netCDF4"):
        m = sys.modules.get(mod)
        try:
            version = getattr(m, "__version__", "") if m is not None else metadata.version(mod)
        except metadata.PackageNotFoundError:
            continue
        out[f"{mod.lower()}_version"] = version
    return out


def provenance_attrs(kind: str, effective_config: dict, title: str, extra: dict | None = None) -> dict:
    """Global attributes for one product (``kind`` = run, theory, aggregate, ...).

    Only str/number attrs (netCDF-safe); the config is stored as canonical JSON with its hash, the code
    as ``code_fingerprint`` (of the modules that make this kind, CODE_ROOTS) and ``code_version``.
    """
    cv = code_version()
    attrs = {
        "title": title,
        "source": f"copyhead {__version__} ({kind})",
        "references": PAPER,
        "Conventions": "CF-1.10",
        "history": f"{now_iso()} created by copyhead {kind} ({code_version_string(cv)})",
        "copyhead_kind": kind,
        "config_json": canonical_json(effective_config),
        "config_hash": config_hash(effective_config),
        "code_version": code_version_string(cv),
        "git_commit": cv["git_commit"],
        "git_dirty": int(cv["git_dirty"]),
        "code_fingerprint": code_fingerprint(KIND_CONCERN[kind]) if kind in KIND_CONCERN else "",
        "code_modules_json": (json.dumps(module_digests(KIND_CONCERN[kind]), sort_keys=True)
                              if kind in KIND_CONCERN else "{}"),
        "package_version": cv["package_version"],
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "command": " ".join(sys.argv),
        "argv_json": json.dumps(list(sys.argv)),
    }
    attrs.update(library_versions())
    for k in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID"):
        if os.environ.get(k):
            attrs[k.lower()] = os.environ[k]
    if extra:
        attrs.update(extra)
    # which config file(s) it was made from (copyhead.datafiles.config_source; copyhead audit reads it)
    attrs.update({k: json.dumps(v, sort_keys=True) for k, v in config_source().items()})
    return attrs


def sidecar_path(path: str | Path) -> Path:
    """Where the provenance record of a product that cannot hold one itself lives: ``X.provenance.json``
    beside a page, JSON or text file ``X`` (a figure's pdf and png share ``<stem>.provenance.json``)."""
    path = Path(path)
    if path.suffix in (".pdf", ".png"):
        return path.with_suffix(".provenance.json")
    return path.with_name(path.name + ".provenance.json")


def _input_entry(path: str | Path) -> dict:
    """One input of a product: its path, sha256 and, where the file says, what made it (a netCDF file's
    kind, config hash and code version; another file's from its own provenance sidecar)."""
    path = Path(path)
    entry = {"path": str(path), "sha256": sha256_file(path), "kind": "", "config_hash": "", "code_version": ""}
    if path.suffix == ".nc":
        attrs = read_dataset(path).attrs
        entry.update(kind=str(attrs.get("copyhead_kind", "")), config_hash=str(attrs.get("config_hash", "")),
                     code_version=str(attrs.get("code_version", "")))
    elif sidecar_path(path).is_file():
        try:
            rec = json.loads(sidecar_path(path).read_text())
            entry.update(kind=str(rec.get("kind", "")), code_version=str(rec.get("code_version", "")))
        except (OSError, ValueError):
            pass
    return entry


def product_record(product: str, concern: str, inputs: dict, options: dict | None = None,
                   kind: str = "page", views: dict | None = None) -> dict:
    """The provenance record of one product that is not a netCDF file (a page, a JSON table, a figure):
    the code that made it (version and the fingerprint of its ``concern``, a key of CODE_ROOTS), the
    command, its options and, per input role, the path and sha256 of the file it read with what made that
    file; ``views``: per role, the part of that file the product read (``{"studies": [...], "sha256": ...}``,
    copyhead.studies.spec.spec_view), which the audit compares where the file's sha256 differs.
    :func:`write_product` adds the outputs' checksums; ``copyhead audit`` reads it."""
    if concern not in CODE_ROOTS:
        raise ValueError(f"unknown code concern {concern!r}; allowed values: {sorted(CODE_ROOTS)}")
    cv = code_version()
    return {"product": product, "kind": kind, "concern": concern, "created": now_iso(),
            "code_version": code_version_string(cv), "code_fingerprint": code_fingerprint(concern),
            "code_modules": module_digests(concern),
            "git_commit": cv["git_commit"], "git_dirty": cv["git_dirty"], "package_version": cv["package_version"],
            "command": " ".join(sys.argv), "argv": list(sys.argv), "options": options or {},
            "inputs": {role: {**_input_entry(path), **({"view": views[role]} if role in (views or {}) else {})}
                       for role, path in sorted(inputs.items())},
            **config_source()}   # which config file(s) it was made from (copyhead.datafiles.config_source)


def write_product(outputs: dict, record: dict, sidecar: str | Path | None = None) -> dict:
    """Write a product's files (path -> str or bytes) and its provenance record (``record`` with the
    outputs' sha256 added; at ``sidecar``, default :func:`sidecar_path` of the first output) as one
    atomic product: every file appears together, or none changes."""
    data = {Path(p): (c.encode() if isinstance(c, str) else bytes(c)) for p, c in outputs.items()}
    if not data:
        raise ValueError("write_product: no outputs")
    sidecar = Path(sidecar) if sidecar is not None else sidecar_path(next(iter(data)))
    record = dict(record, outputs={p.suffix.lstrip(".") if record.get("kind") == "figure" else p.name:
                                   {"path": str(p), "sha256": hashlib.sha256(b).hexdigest()}
                                   for p, b in data.items()})
    writes = {p: (lambda t, b=b: Path(t).write_bytes(b)) for p, b in data.items()}
    writes[sidecar] = lambda t: Path(t).write_text(json_text(record))
    atomic_write_all(writes)
    return record


def figure_record(name: str, inputs: dict, options: dict) -> dict:
    """The provenance sidecar of a figure (``<name>.provenance.json``): :func:`product_record` of concern
    ``figures`` with the figure's name under ``figure`` (what ``copyhead audit`` looks up)."""
    return dict(product_record(name, "figures", inputs, options, kind="figure"), figure=name)
