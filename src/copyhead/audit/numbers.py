"""Published products checked by their numbers, not their stamps.

A page, JSON table or figure under docs/ made from committed data is cheap to make again. When the code
that makes it changed (its record's fingerprint differs from the current code's), the audit makes it
again into a scratch copy of the checkout (:func:`regenerate`: the product's own recorded command, run in a
scratch folder that holds copies of docs/ and config/) and compares every number
(:func:`compare_files`):

- a page: the text with every number replaced by ``#`` must be the same, and each number must agree
  within :data:`copyhead.tolerances.FIT` relative, or one unit of its last printed digit (a value on a
  rounding edge may print either way on another CPU);
- a JSON table: the same keys and strings, every number within FIT relative (the keys that are stamps,
  :data:`STAMP_KEYS`, are skipped);
- a figure: the data its record holds (``figure_data``: every line, marker, bar, image and text of every
  axes, :func:`copyhead.figures.figure_data`), not its pixels;
- a netCDF file: every data variable and coordinate within FIT of the variable's largest magnitude.

Equal numbers mean the product is what the current code makes: ``copyhead audit --docs docs --accept``
then re-stamps its record (the new fingerprint, module digests and code version) instead of a remake.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..tolerances import FIT

# keys of a JSON product or record that say when and by which code it was made, not what it found
STAMP_KEYS = frozenset({"created", "code_version", "git_commit", "git_dirty", "package_version", "command", "argv",
                        "code_fingerprint", "code_modules", "wall_time_s", "host", "platform", "accepted"})
# the package whose ``python -m`` runs a recorded program: copyhead's and the research package's command lines
PROGRAMS = {"copyhead": "copyhead", "copyhead-research": "research"}
# copyhead commands that moved to the research package (issue 50): a product recorded as made by
# ``copyhead one-loop ...`` is made again by ``python -m research one-loop ...``, same arguments
MOVED_COMMANDS = {"one-loop": "research", "prior-check": "research"}
_NUM = re.compile(r"(?<![\w.])[-−]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+−]?\d+)?(?![\w])")
_MAX_SHOWN = 5


def _value(tok: str) -> tuple[float, float]:
    """A printed number and one unit of its last printed digit."""
    t = tok.replace("−", "-")
    mant = re.split(r"[eE]", t)[0]
    exp = int(re.split(r"[eE]", t)[1]) if re.search(r"[eE]", t) else 0
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return float(t), 10.0 ** (exp - decimals)


def _close(a: float, b: float, rel: float = FIT, unit: float = 0.0) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), unit * 1.0000001)


def compare_text(old: str, new: str, rel: float = FIT) -> list[str]:
    """Differences between two pages: changed words (numbers masked) and numbers beyond tolerance."""
    diffs: list[str] = []
    a_lines, b_lines = old.splitlines(), new.splitlines()
    if len(a_lines) != len(b_lines):
        diffs.append(f"{len(a_lines)} lines, now {len(b_lines)}")
    for i, (a, b) in enumerate(zip(a_lines, b_lines), 1):
        if a == b:
            continue
        if _NUM.sub("#", a) != _NUM.sub("#", b):
            diffs.append(f"line {i} reads differently: {a.strip()[:100]!r} -> {b.strip()[:100]!r}")
            continue
        for ta, tb in zip(_NUM.findall(a), _NUM.findall(b)):
            (va, ua), (vb, ub) = _value(ta), _value(tb)
            if not _close(va, vb, rel, max(ua, ub)):
                diffs.append(f"line {i}: {ta} -> {tb}")
    return diffs


def compare_json(old, new, rel: float = FIT, where: str = "") -> list[str]:
    """Differences between two JSON values: keys, strings (numbers in them as on a page), numbers."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new), key=str):
            if k in STAMP_KEYS:
                continue
            if k not in old or k not in new:
                out.append(f"{where}/{k}: {'added' if k in new else 'gone'}")
            else:
                out += compare_json(old[k], new[k], rel, f"{where}/{k}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} entries, now {len(new)}"]
        return [d for a, b in zip(old, new) for d in compare_json(a, b, rel, where)][:50]
    if isinstance(old, bool) or isinstance(new, bool) or old is None or new is None:
        return [] if old == new else [f"{where}: {old!r} -> {new!r}"]
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return [] if _close(float(old), float(new), rel) else [f"{where}: {old!r} -> {new!r}"]
    if isinstance(old, str) and isinstance(new, str):
        return [f"{where}: {d}" for d in compare_text(old, new, rel)]
    return [] if old == new else [f"{where}: {old!r} -> {new!r}"]


def compare_netcdf(old: Path, new: Path, rel: float = FIT) -> list[str]:
    """Every data variable and coordinate of two netCDF files, within ``rel`` of its largest magnitude."""
    import numpy as np

    from ..datafiles import read_dataset
    a, b = read_dataset(old), read_dataset(new)
    out = []
    for name in sorted(set(a.variables) | set(b.variables)):
        if name not in a.variables or name not in b.variables:
            out.append(f"{name}: {'added' if name in b.variables else 'gone'}")
            continue
        x, y = a[name].values, b[name].values
        if x.shape != y.shape:
            out.append(f"{name}: shape {x.shape} -> {y.shape}")
        elif x.dtype.kind in "fc":
            nan = np.isnan(x) != np.isnan(y)
            ok = ~np.isnan(x) & ~np.isnan(y)
            scale = float(np.max(np.abs(x[ok]), initial=0.0))
            err = float(np.max(np.abs(x[ok] - y[ok]), initial=0.0))
            if nan.any() or err > rel * scale:
                out.append(f"{name}: differs by {err:.3g} (largest magnitude {scale:.3g})"
                           + (f", NaN at {int(nan.sum())} other places" if nan.any() else ""))
        elif not np.array_equal(x, y):
            out.append(f"{name}: values differ")
    return out


def compare_files(old: Path, new: Path, old_record: dict | None = None, new_record: dict | None = None,
                  rel: float = FIT) -> list[str]:
    """The differences in numbers between a committed product and its regenerated twin ([] when equal)."""
    if not new.is_file():
        return [f"{new.name}: not made again"]
    if old.suffix in (".png", ".pdf"):
        a, b = (old_record or {}).get("figure_data"), (new_record or {}).get("figure_data")
        if a is None:
            return ["its record holds no figure data (made before figures recorded it): remake it once"]
        return compare_json(a, b, rel, "figure")
    if old.suffix == ".nc":
        return compare_netcdf(old, new, rel)
    if old.suffix == ".json":
        return compare_json(json.loads(old.read_text()), json.loads(new.read_text()), rel)
    return compare_text(old.read_text(errors="replace"), new.read_text(errors="replace"), rel)


def command_package(argv: list[str]) -> str | None:
    """The package whose ``python -m`` makes a recorded command again: its program's (``copyhead``, the
    ``copyhead-research`` script, or ``<package>/__main__.py`` of ``python -m``), or, for a copyhead command that
    moved (:data:`MOVED_COMMANDS`), the package it moved to; None for a program of neither."""
    prog = Path(argv[0])
    package = PROGRAMS.get(prog.name) or (prog.parent.name if prog.name == "__main__.py"
                                          and prog.parent.name in PROGRAMS.values() else None)
    if package == "copyhead" and len(argv) > 1:
        return MOVED_COMMANDS.get(argv[1], package)
    return package


class Regenerator:
    """Makes products again into one scratch copy of the checkout's docs/ and config/ (so every relative
    input path of a recorded command resolves to the same bytes, and nothing in the checkout is written).
    Each recorded command runs at most once; its outputs are found at the same relative paths in the
    scratch copy."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self._dir: Path | None = None
        self._done: dict[tuple, tuple[bool, str]] = {}

    @property
    def scratch(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="copyhead-audit-"))
            for name in ("docs", "config"):
                if (self.root / name).is_dir():
                    shutil.copytree(self.root / name, self._dir / name, symlinks=True)
        return self._dir

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def twin(self, path: Path) -> Path:
        """Where the regenerated twin of ``path`` (a file under the checkout) lies in the scratch copy."""
        return self.scratch / Path(path).resolve().relative_to(self.root)

    def run(self, rec: dict) -> tuple[bool, str]:
        """Run the record's command (``argv``; for a record made before argv was kept, its ``command`` line
        where that splits unambiguously: no JSON argument) in the scratch copy: (ok, why not)."""
        argv = rec.get("argv")
        command = str(rec.get("command") or "")
        if not argv and command and not any(c in command for c in "{}'\""):
            argv = command.split()
        if not argv:
            return False, "its record names no argv (made before records kept the command's arguments): remake it once"
        package = command_package(argv)
        if package is None:
            return False, f"its record's command is not a copyhead command ({argv[0]} ...)"
        key = tuple(argv)
        if key not in self._done:
            cmd = [sys.executable, "-m", package, *argv[1:]]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(self.root / "src"),
                                                              os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
            try:
                r = subprocess.run(cmd, cwd=self.scratch, capture_output=True, text=True, env=env, timeout=3600)
                self._done[key] = (r.returncode == 0, (r.stderr or r.stdout).strip()[-400:])
            except (OSError, subprocess.SubprocessError) as e:
                self._done[key] = (False, str(e))
        return self._done[key]

    def check(self, path: Path, rec: dict) -> tuple[list[str], dict | None]:
        """Make ``path`` again and compare: (differences, the regenerated record), or a one-item list that
        says why it could not be made."""
        ok, why = self.run(rec)
        if not ok:
            return [f"could not be made again: {why}"], None
        twin = self.twin(path)
        from ..provenance import sidecar_path
        side = sidecar_path(twin)
        new_rec = json.loads(side.read_text()) if side.is_file() else None
        if path.suffix == ".nc":
            new_rec = None
        return compare_files(path, twin, rec, new_rec), new_rec
