"""What ``copyhead audit --fix`` removes, and why a plain ``snakemake`` then makes it all again.

Snakemake remakes a missing file only when something downstream needs to run: with the aggregate,
figures and results page up to date, a removed run file would stay missing (``Nothing to be done``) and
the audit would fail from then on. So ``--fix`` removes, with each broken file, every product made from
it, read off the products' own provenance (an aggregate's ``inputs_json``, a figure sidecar's or the
results page's ``inputs``): the next ``snakemake`` then has a missing final product, reruns its rule,
and through it remakes the missing inputs. Nothing else is touched, and every removal is printed with
its reason.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..provenance import DataFileError, read_dataset, stale_temps
from ..recovery import STALE_TEMP_S


def broken_results(results: Path) -> dict[str, str]:
    """Files under ``results`` that no reader can use: unreadable netCDF files (runs, aggregates,
    theory) or ones without copyhead's attributes, and temporary files of killed writes older than
    STALE_TEMP_S: path -> reason."""
    out = {}
    for nc in sorted(results.glob("**/*.nc")):
        try:
            if "copyhead_kind" not in read_dataset(nc).attrs:
                out[str(nc)] = "not a copyhead product (no copyhead_kind attribute)"
        except DataFileError:
            out[str(nc)] = "unreadable netCDF file"
    for tmp in stale_temps(results, STALE_TEMP_S):
        out[str(tmp)] = "temporary file of a killed write"
    return out


def _recorded_inputs(results: Path, root: Path) -> dict[Path, tuple[list[Path], list[Path]]]:
    """Per product under ``results``: (the files it was made from, the files it consists of), from the
    provenance it records. Unreadable records are skipped (the audit reports those itself)."""
    def resolve(p):
        p = Path(p)
        return (p if p.is_absolute() else root / p).resolve()

    out = {}
    for nc in results.glob("aggregate/*.nc"):
        try:
            inputs = json.loads(read_dataset(nc).attrs.get("inputs_json", "{}"))
        except (DataFileError, json.JSONDecodeError):
            continue
        out[nc.resolve()] = ([resolve(p) for p in inputs], [nc.resolve()])
    for rec in [*results.glob("figures/*.provenance.json"), *results.glob("docs/*.json")]:
        try:
            d = json.loads(rec.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        inputs = d.get("inputs") if isinstance(d, dict) else None
        if not isinstance(inputs, dict):
            continue
        stem = rec.name.removesuffix(".provenance.json").removesuffix(".json")
        parts = [rec.with_name(f"{stem}.{ext}").resolve() for ext in ("pdf", "png", "md")] + [rec.resolve()]
        out[rec.resolve()] = ([resolve(i["path"]) for i in inputs.values() if isinstance(i, dict) and "path" in i],
                              [p for p in parts if p.exists()])
    return out


def with_dependents(remove: dict[str, str], results: Path, root: Path) -> dict[str, str]:
    """``remove`` plus every product made (directly or through others) from a file in it: path -> reason."""
    out = {str(Path(p).resolve()): why for p, why in remove.items()}
    products = _recorded_inputs(results, root)
    grew = True
    while grew:
        grew = False
        gone = set(map(Path, out))
        for made_from, parts in products.values():
            hit = next((p for p in made_from if p in gone), None)
            if hit is None:
                continue
            for part in parts:
                if str(part) not in out:
                    out[str(part)] = f"made from {os.path.relpath(hit)}, which is removed"
                    grew = True
    return out


# the reason given to a readable run made with another config: moved aside, not deleted (it may be
# someone's result), so that the next snakemake trains the run the current config asks for
FOREIGN = "made with another config"


def remove_broken(remove: dict[str, str], results: Path, out=sys.stdout) -> int:
    """Delete the files `--fix` chose, each named with the reason; runs made with another config are
    moved to ``results/quarantine/`` (same relative path) instead. Return how many files went."""
    n = 0
    for path, why in sorted(remove.items()):
        p = Path(path)
        if not p.exists():
            continue
        if why.startswith(FOREIGN):
            dest = results.resolve() / "quarantine" / p.relative_to(results.resolve())
            dest.parent.mkdir(parents=True, exist_ok=True)
            p.replace(dest)
            print(f"moved {os.path.relpath(p)} to {os.path.relpath(dest)} ({why})", file=out)
        else:
            p.unlink()
            print(f"removed {os.path.relpath(p)} ({why})", file=out)
        n += 1
    return n
