"""``copyhead audit``: is a product what its provenance says, and was it made by the current code?

Two kinds of audit, one command:

- :mod:`.chain` — a results folder (``results/``): a figure back through the aggregate and theory files
  it read to every run behind them, with configs, code versions and Snakemake job records (``--all``:
  every figure of ``results/figures``; ``--fix`` removes what is broken so that ``snakemake`` remakes it).
- :mod:`.published` — the published products (``docs/``): any file there against its provenance record
  (sidecar or netCDF attributes), its committed inputs and the current code (``--docs docs``: every file
  under the folder; fails on a hand-edited product, one older than a committed input, or a page or figure
  made by other code). Inputs that live outside the checkout (a study's runs) are named, not checked.

A file given by name goes to the first when it lies in ``--results``, else to the second.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from .fix import broken_results, remove_broken, with_dependents
from .chain import Report, _print, audit_figures
from .published import (ProductReport, PublishedAuditor, audit_published, print_report, product_files, remake_args,
                        remake_command, remake_rules)

__all__ = ["Report", "ProductReport", "audit_figures", "audit_published", "product_files", "main"]


def _in_folder(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def _repo_root(start: Path) -> Path:
    """The checkout a published file belongs to (its recorded paths are relative to it): the nearest
    folder above ``start`` holding .git, else the working directory."""
    for p in [start.resolve(), *start.resolve().parents]:
        if (p / ".git").exists():
            return p
    return Path.cwd()


def _remake_targets(reports) -> list[str]:
    """The docs.smk targets of the products made by other code, once each, in the reports' order."""
    return list(dict.fromkeys(r.remake for r in reports if r.remake))


def _accept(aud: PublishedAuditor, reports, named: set[str], out) -> int:
    """``--accept``: re-stamp every product made by other code whose numbers, made again, are the same
    (pages, tables and figures: already made again by the audit; a versioned input only when named on the
    command line, since making it again is slow); refuse, naming the numbers, where they differ."""
    refused = 0
    for r in reports:
        if not (r.other_code or r.input_changed) or aud.records.get(r.path, {}).get("kind") == "benchmark":
            continue                        # a benchmark page is measured again, never re-stamped
        if r.versioned_input and str(Path(r.path)) not in named:
            print(f"--accept: {r.path}: a versioned input (slow to make again): name it to accept it", file=out)
            continue
        try:
            print(f"--accept: {aud.accept(r)}", file=out)
            r.warnings = [w for w in r.warnings if "made by other" not in w and "older than its committed" not in w]
            r.problems, r.other_code, r.input_changed = [], False, False
        except ValueError as e:
            refused += 1
            print(f"--accept: REFUSED {e}", file=out)
    return refused


def _main_published(args, files: list[Path]) -> int:
    root = _repo_root(files[0].parent if files else Path.cwd())
    aud = PublishedAuditor(root, regenerate=not getattr(args, "no_regenerate", False))
    try:
        reports = audit_published(files, root, auditor=aud)
        refused = 0
        if getattr(args, "accept", False):
            named = {str(Path(f)) for f in getattr(args, "figures", [])}
            refused = _accept(aud, reports, named, sys.stderr if args.json else sys.stdout)
    finally:
        if aud.regen is not None:
            aud.regen.close()
    if getattr(args, "remake", False):
        say = sys.stderr if args.json else sys.stdout       # --json keeps stdout for the reports
        remake = _remake_targets(reports)
        if not remake:
            print("--remake: no published product is made by other code: nothing to remake", file=say)
        else:
            extra = shlex.split(args.snakemake_args or "")
            try:
                rules = remake_rules(remake, root, extra)
            except (OSError, RuntimeError) as e:       # no snakemake, no workflow/docs.smk, a broken workflow
                print(f"copyhead audit --remake: snakemake failed to find the rules that make {', '.join(remake)} "
                      f"(nothing was run): {e}", file=sys.stderr)
                return 1
            cmd = remake_args(remake, args.cores, extra, rules)
            print(f"--remake: {shlex.join(cmd)}  (in {root})", file=say, flush=True)
            try:
                rc = subprocess.run(cmd, cwd=root).returncode
            except OSError as e:                    # no snakemake on PATH
                print(f"copyhead audit --remake: cannot run snakemake: {e}", file=sys.stderr)
                return 2
            if rc:
                print(f"copyhead audit --remake: snakemake failed (exit {rc}): what it finished is kept, the "
                      "rest is as it was; run it again after the fix", file=sys.stderr)
                return rc
            files = list(dict.fromkeys([f for f in files if f.is_file()] + product_files(Path(args.docs))))
            reports = audit_published(files, root)          # what the remake left: audited again
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], indent=2, default=str))
    else:
        for r in reports:
            print_report(r, sys.stdout)
        bad = [r.path for r in reports if not r.ok]
        hand = sum(r.hand_written for r in reports)
        outside = sorted({p for r in reports for p in r.outside})
        print(f"audited {len(reports)} published file(s): {len(reports) - len(bad)} ok ({hand} hand-written), "
              f"{len(bad)} with problems" + (f": {', '.join(bad)}" if bad else "")
              + (f"; {len(outside)} input(s) live outside the checkout (named, not checked)" if outside else ""))
        remake = _remake_targets(reports)
        if remake:
            print(f"made by other code, remade from committed inputs by: {remake_command(remake)}")
    if args.strict and any(r.warnings for r in reports):
        return 1
    return 0 if all(r.ok for r in reports) and not refused else 1


def main(args) -> int:
    results = Path(args.results)
    given = [Path(f) for f in args.figures]
    published = [f for f in given if not _in_folder(f, results)]
    figures = [str(f) for f in given if _in_folder(f, results)]
    docs = getattr(args, "docs", None)
    if docs:
        if not Path(docs).is_dir():
            print(f"copyhead audit: --docs {docs}: not a folder", file=sys.stderr)
            return 2
        published += product_files(Path(docs))
    if getattr(args, "accept", False) and not (docs or published):
        print("copyhead audit: --accept re-stamps published products: give --docs DIR or their files", file=sys.stderr)
        return 2
    if getattr(args, "remake", False) and not docs:
        print("copyhead audit: --remake remakes published products: give --docs DIR", file=sys.stderr)
        return 2
    if published and (figures or args.all or getattr(args, "fix", False)):
        print("copyhead audit: audit published files (--docs, files outside --results) apart from a results "
              "folder's figures (--all, --fix)", file=sys.stderr)
        return 2
    if published:
        missing = [str(f) for f in published if not f.is_file()]
        if missing:
            print(f"copyhead audit: no such file: {', '.join(missing)}", file=sys.stderr)
            return 2
        return _main_published(args, published)
    if args.all:
        figures += sorted(str(p) for p in (results / "figures").glob("*.provenance.json"))
    fix = getattr(args, "fix", False)
    if not figures and not fix:
        print("copyhead audit: no figures given (name files, or use --all or --docs DIR)", file=sys.stderr)
        return 2
    root = results.resolve().parent
    reports = audit_figures(figures, root=root, config=getattr(args, "config", None))
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], indent=2, default=str))
    else:
        for r in reports:
            _print(r)
        bad = sum(not r.ok for r in reports)
        stale = len({p for r in reports for p in r.stale})
        print(f"audited {len(reports)} figure(s): {len(reports) - bad} ok, {bad} with problems"
              + (f"; {stale} stale product(s) (made by other code or config: `snakemake` remakes them)"
                 if stale else ""))
    if fix:
        remove = {str(Path(p).resolve()): why for r in reports for p, why in r.remove.items()}
        for p, why in broken_results(results).items():
            remove.setdefault(str(Path(p).resolve()), why)
        n = remove_broken(with_dependents(remove, results, root), results, out=sys.stderr if args.json else sys.stdout)
        print(f"--fix: removed {n} file(s) (broken, and what was made from them); the next `snakemake` "
              "makes them again", file=sys.stderr if args.json else sys.stdout)
    if args.strict and any(r.warnings for r in reports):
        return 1
    return 0 if all(r.ok for r in reports) else 1

