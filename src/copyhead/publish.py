"""Publishing into docs/: what was computed elsewhere (a study's folder, outside the checkout) becomes a
committed input of the published pages.

- ``copyhead publish-studies <report> [--docs docs] [--name N]``: a studies report (below);
- ``copyhead publish-aggregates <study folder> --config <its config>``: a study's aggregates (one netCDF
  file per attention type, with the sha256 of every run behind it) to ``docs/data/<name>/``, from which
  ``snakemake -s workflow/docs.smk`` makes the results page, its JSON and its figures. The manifest names
  the study folder (``source``), so the audit resolves the aggregates' runs there: outside the checkout,
  named and not checked (checked where that folder is present).

A studies report:

The report folder (studies.json from ``copyhead studies-report``, the page and figures ``copyhead
studies-page`` rendered from it, with their provenance records) is copied to ``docs/<name>/``, replacing
what an earlier publish put there; the command then renders the page and figures again in place, so their
records name the published studies.json. The command never removes or overwrites anything it did not
write itself:

- ``name`` is one plain folder name (letters, digits, ``_ . -``; not ``.``/``..``, no path separator),
  so the target is always a direct child of ``docs/``;
- each published folder carries a manifest (``MANIFEST``: every file with its sha256); an existing
  ``docs/<name>/`` is replaced only when it holds exactly the files its manifest lists, unchanged: a
  folder without one, a file added or edited by hand, is refused with the file named;
- the copy is made in a temporary folder beside the target and swapped in by two renames, so a failed
  or killed publish leaves the old folder (or nothing) in place, never a mix;
- a page rendered into a published folder (``copyhead studies-page``, the docs rule of
  workflow/studies.smk) is refused the same way (:func:`check_published`) and updates the manifest
  (:func:`record_written`), so the folder stays what copyhead wrote.

docs/results.md has one writer (the results_doc rule); it quotes the reports' findings from their JSON
(copyhead.results.findings) and links to them.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from copyhead.config import canonical_json, load, run_config
from copyhead.provenance import DataFileError, atomic_write, read_dataset, require_kind, sha256_file

MANIFEST = ".published.json"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class PublishError(DataFileError):
    """The publish was refused before anything was written (the message names why)."""


def check_name(name: str) -> str:
    """``name`` if it is one plain folder name, else a PublishError saying what a name must be."""
    if not _NAME.fullmatch(name or "") or name in (".", ".."):
        raise PublishError(f"--name {name!r} is not a plain folder name: it must be one folder under the docs "
                           "folder (letters, digits, '_', '.', '-'; e.g. studies or studies_fixed_dk16)")
    return name


def _files(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``folder`` (links refused: they could point anywhere)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            raise PublishError(f"{p}: is a symbolic link; a published folder holds plain files only")
        if p.is_file():
            out[p.relative_to(folder).as_posix()] = sha256_file(p)
    return out


def _check_replaceable(dest: Path) -> None:
    """Refuse unless ``dest`` holds exactly what an earlier publish wrote (its manifest), unchanged."""
    if not dest.is_dir() or dest.is_symlink():
        raise PublishError(f"{dest}: exists and is not a folder written by publish-studies; nothing was changed "
                           "(move it away first)")
    try:
        recorded = json.loads((dest / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise PublishError(f"{dest}: has no readable {MANIFEST}, so it was not written by publish-studies; "
                           "nothing was changed (move it away, or choose another --name)") from None
    now = {k: v for k, v in _files(dest).items() if k != MANIFEST}
    extra = sorted(set(now) - set(recorded))
    edited = sorted(k for k in set(now) & set(recorded) if now[k] != recorded[k])
    if extra or edited:
        what = ([f"{dest / k} was not published here" for k in extra]
                + [f"{dest / k} was changed after it was published" for k in edited])
        raise PublishError(f"{what[0]}" + (f" (and {len(what) - 1} more)" if len(what) > 1 else "")
                           + "; nothing was changed (move those files away first)")


def check_published(folder: str | Path) -> None:
    """Before a render into ``folder``: if it is a published folder (it holds a manifest), refuse unless it
    holds exactly what its manifest lists, unchanged (the message names the first file that is not)."""
    folder = Path(folder)
    if (folder / MANIFEST).exists():
        _check_replaceable(folder)


def record_written(folder: str | Path, paths) -> None:
    """After a render wrote ``paths`` into ``folder``: if it is a published folder, its manifest lists them
    with their new sha256 (the other entries stay; an entry whose file is gone is dropped)."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not manifest.exists():
        return
    rec = json.loads(manifest.read_text())
    files = {k: v for k, v in rec.get("files", {}).items() if (folder / k).is_file()}
    files.update({Path(p).relative_to(folder).as_posix(): sha256_file(p) for p in map(Path, paths)})
    out = {"report": rec.get("report", ""), "files": files,
           "rendered": "pages and figures rendered in place from the published studies.json (copyhead studies-page)"}
    atomic_write(manifest, lambda t: Path(t).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n"))


def _swap_in(dest: Path, fill, manifest: dict) -> Path:
    """Write a published folder: ``fill(tmp)`` copies the files into a temporary folder beside ``dest``,
    the manifest (``manifest`` plus every file's sha256) is added, and the folder replaces ``dest`` by two
    renames (an earlier publish's folder only, checked first), so a failed or killed publish leaves the
    old folder (or nothing) in place, never a mix."""
    if dest.exists() or dest.is_symlink():
        _check_replaceable(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}"
    tmp, old = dest.parent / f".{dest.name}.publishing-{tag}", dest.parent / f".{dest.name}.replaced-{tag}"
    try:
        fill(tmp)
        (tmp / MANIFEST).write_text(json.dumps(dict(manifest, files=_files(tmp)), indent=1, sort_keys=True) + "\n")
        if dest.exists():
            os.replace(dest, old)
        os.replace(tmp, dest)
    except BaseException:
        if old.exists() and not dest.exists():
            os.replace(old, dest)                     # put the earlier publish back
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)            # the earlier publish, checked above
    return dest


def _check_docs(docs: Path) -> None:
    if docs.exists() and not docs.is_dir():
        raise PublishError(f"{docs}: is not a folder; nothing was changed")


def publish(report_dir: str | Path, docs: str | Path, name: str = "studies") -> Path:
    """Copy the report folder to ``docs/<name>/`` (``studies`` for the whole report, ``studies_<group>``
    for a group's), replacing only an earlier publish's folder; return the folder."""
    report_dir, docs, name = Path(report_dir), Path(docs), check_name(name)
    if not any((report_dir / f).is_file() for f in ("studies.json", "studies.md")):
        raise PublishError(f"{report_dir}: is not a studies report (no studies.json or studies.md; make it with "
                           "`snakemake -s workflow/studies.smk`); nothing was changed")
    _check_docs(docs)
    dest = docs / name
    src, target = report_dir.resolve(), dest.resolve()
    if src == target or target in src.parents or src in target.parents:
        raise PublishError(f"{report_dir} and {dest} overlap; publish a report into another folder")
    if MANIFEST in _files(report_dir):
        raise PublishError(f"{report_dir / MANIFEST}: a report folder must not hold a publish manifest")
    return _swap_in(dest, lambda tmp: shutil.copytree(report_dir, tmp), {"report": str(report_dir)})


def publish_aggregates(study: str | Path, config: str | Path, docs: str | Path = "docs", name: str = "converged") -> Path:
    """Copy the aggregates of the study folder ``study`` (``results/aggregate/<attention>.nc``, made with
    ``config``) to ``docs/data/<name>/aggregate_<attention>.nc``; refuse before writing anything when one is
    missing, is not an aggregate, or holds runs made with another config than ``config`` gives them."""
    study, docs, name = Path(study), Path(docs), check_name(name)
    cfg = load(config)
    _check_docs(docs)
    files = {}
    for att in sorted(cfg["sweep"]):
        src = study / "results" / "aggregate" / f"{att}.nc"
        if not src.is_file():
            raise PublishError(f"{src}: missing (run `snakemake --configfile {config} --directory {study}` "
                               "first); nothing was changed")
        require_kind(src, "aggregate", att)
        attrs = read_dataset(src).attrs
        want = {opt: run_config(cfg, att, opt) for opt in cfg["sweep"][att]}
        got = json.loads(attrs.get("run_configs_json") or "null")
        if got is None or canonical_json(got) != canonical_json(want):
            raise PublishError(f"{src}: its runs' configs are not what {config} gives them (made with another "
                               "config, or before it changed); nothing was changed")
        files[f"aggregate_{att}.nc"] = src

    def fill(tmp: Path) -> None:
        tmp.mkdir()
        for dest_name, src in files.items():
            shutil.copy2(src, tmp / dest_name)

    return _swap_in(docs / "data" / name, fill, {"source": str(study), "config": str(config)})
