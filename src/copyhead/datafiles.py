"""Data files: checksums, atomic writes (a target is old, new or absent; a failed write names the file
and the free space and leaves nothing), reading netCDF with one-line errors, and the temporaries a killed
write leaves. (Provenance attributes and code fingerprints: copyhead.provenance, which re-exports these.)"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any


class DataFileError(RuntimeError):
    """A data file that is missing, truncated or not what it claims to be (the message names it)."""


class WriteError(DataFileError):
    """A product could not be written (the message names the file and the free space)."""


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def input_checksums(paths) -> dict[str, str]:
    """{path: sha256} for the inputs of a product (paths as given, usually relative to the repo root)."""
    return {str(p): sha256_file(p) for p in paths}


# Temporary files of atomic writes: ``.<target name>.<8 random characters of mkstemp>.tmp`` beside the
# target. A process killed during a write leaves one behind; the next write of the same target removes
# those older than the writing process (``_tmp_beside``) and the workflow's start removes old ones
# anywhere under results/ (``stale_temps``).
_TMP_RE = re.compile(r"^\.(?P<target>.+)\.[a-z0-9_]{8}\.tmp$")
_PROCESS_START = time.time()


def _is_temp_of(name: str, target: str | None = None) -> bool:
    m = _TMP_RE.match(name)
    return bool(m) and (target is None or m["target"] == target)


def stale_temps(root: str | Path, older_than_s: float) -> list[Path]:
    """Temporary files of atomic writes under ``root`` not modified for ``older_than_s`` seconds (a
    write takes seconds; such a file was left by a killed process)."""
    root, cutoff, out = Path(root), time.time() - older_than_s, []
    if root.is_dir():
        for dirpath, _, names in os.walk(root):
            for n in names:
                p = Path(dirpath, n)
                try:
                    if _is_temp_of(n) and p.stat().st_mtime < cutoff:
                        out.append(p)
                except OSError:  # removed meanwhile
                    pass
    return sorted(out)


def _tmp_beside(path: Path) -> Path:
    """A new temporary file beside ``path``; temporaries of the same target left by an earlier (killed)
    process are removed first."""
    try:
        for entry in os.scandir(path.parent):
            if _is_temp_of(entry.name, path.name) and entry.stat().st_mtime < _PROCESS_START:
                Path(entry.path).unlink(missing_ok=True)
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def _umask() -> int:
    """The process umask (read without changing it where /proc tells it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, write) -> Path:
    """Call ``write(tmp_path)`` then rename onto ``path``; the target is either old, new, or absent.

    The file gets the mode a plain ``open(path, "w")`` would give (0o666 minus the umask), not
    mkstemp's 0o600, so results on a shared file system are readable by the group as the umask allows.
    Any failure to write (the folder cannot be made or written, a full disk, and a writer whose own
    cleanup then fails, such as matplotlib's) is a :class:`WriteError`: one line naming the file.
    """
    return atomic_write_all({path: write})[0]


def atomic_write_all(writes: dict) -> list[Path]:
    """Write several files as one product (path -> ``write(tmp_path)``): every file goes to a temporary
    beside its target first, and only when all are written are they renamed onto their targets, so a
    failure (a full disk at the second file) leaves every target as it was and no temporary behind."""
    done, current = [], None
    try:
        for path, write in writes.items():
            current = path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = _tmp_beside(path)
            done.append((tmp, path))
            write(tmp)
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
        for tmp, path in done:
            os.replace(tmp, path)
    except BaseException as e:
        for tmp, _ in done:
            tmp.unlink(missing_ok=True)
        cause = _write_cause(e)
        if cause is not None:
            raise WriteError(_write_failure(current, cause)) from e
        raise
    return [path for _, path in done]


def _write_cause(e: BaseException) -> BaseException | None:
    """The error that says why a write failed: ``e`` itself (OSError; netCDF/HDF5 report a full disk as
    a RuntimeError "HDF error"), or an OSError in its chain (matplotlib's writer, after a full disk,
    fails again in its cleanup with an AttributeError whose context is the OSError); None otherwise."""
    if not isinstance(e, Exception):               # Ctrl-C, SIGTERM, exit: not a failed write
        return None
    if isinstance(e, (OSError, RuntimeError)) and not isinstance(e, DataFileError):
        return e
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError):
            return e
        e = e.__cause__ or e.__context__
    return None


def check_writable(path: str | Path) -> Path:
    """Raise a one-line :class:`WriteError` now if ``path`` could not be written later (its folder does not
    exist or is not a folder, or a file cannot be created in it), so that a command refuses before it
    computes. The folder is never created here: a command writes into a folder that exists (inside the
    workflow Snakemake makes every output's folder before the job runs), so a mistyped ``--out`` is named
    instead of becoming a new folder. A probe file is created and removed; the target is not touched."""
    path = Path(path)
    folder = path.parent
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        if not folder.is_dir():
            above = next((p for p in folder.parents if p.exists()), None)
            if folder.exists() or (above is not None and not above.is_dir()):
                bad = folder if folder.exists() else above
                raise WriteError(f"{path}: cannot be written ({bad} is a file, not a folder); nothing was computed")
            raise WriteError(f"{path}: cannot be written ({folder}: no such folder; copyhead does not create "
                             "it: make it first, or give another --out); nothing was computed")
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise WriteError(f"{path}: cannot be written ({type(e).__name__}: {e.strerror or e}); "
                         "nothing was computed") from None
    return path


def _copyhead_record_names(sidecar: Path, name: str) -> bool:
    """Whether ``sidecar`` is a copyhead provenance record (JSON with ``outputs``) that lists a file ``name``."""
    try:
        rec = json.loads(sidecar.read_text())
    except (OSError, ValueError):
        return False
    outs = rec.get("outputs") if isinstance(rec, dict) else None
    return isinstance(outs, dict) and any(isinstance(o, dict) and Path(str(o.get("path", ""))).name == name
                                          for o in outs.values())


def foreign_file(path: str | Path, sidecar: Path | None = None) -> str:
    """'' unless ``path`` is an existing file that copyhead did not write, else why it is not copyhead's.

    Copyhead's own: a netCDF file with a ``copyhead_kind`` attribute, a file listed by its provenance
    record ``sidecar`` (pages, JSON, figures), or a text file whose first line says which copyhead command
    generated it (study configs). A file that cannot be read as any of these, a damaged netCDF included,
    counts as foreign: overwriting it is for its owner to decide."""
    path = Path(path)
    if not path.is_file():
        return ""
    if path.suffix == ".nc":
        try:
            import netCDF4
            with netCDF4.Dataset(path) as nc:
                if "copyhead_kind" in nc.ncattrs():
                    return ""
            return "a netCDF file without copyhead's record (no copyhead_kind attribute)"
        except (OSError, RuntimeError, ValueError) as e:
            return f"not a readable netCDF file ({type(e).__name__}: {e})"
    if sidecar is not None and _copyhead_record_names(sidecar, path.name):
        return ""
    try:
        with open(path, encoding="utf-8") as f:
            if "generated by `copyhead " in f.readline():
                return ""
    except (OSError, UnicodeDecodeError):
        pass
    return f"no copyhead provenance record lists it ({sidecar.name if sidecar else 'no record'})"


def check_not_foreign(path: str | Path, sidecar: Path | None = None) -> None:
    """Raise a one-line :class:`WriteError` now if ``path`` exists and copyhead did not write it
    (:func:`foreign_file`): a command overwrites only its own products, never a user's file that happens to
    be at its ``--out``."""
    why = foreign_file(path, sidecar)
    if why:
        raise WriteError(f"{path}: exists and was not written by copyhead ({why}); copyhead does not overwrite "
                         "it: move it away or give another --out; nothing was computed")


# below this much free space a failed write is called a full disk (HDF5 does not say why it failed)
LOW_SPACE_BYTES = 64 * 2**20


def _write_failure(path: Path, e: BaseException) -> str:
    """One line: the file, the error, and the free space where it was written (errno 28 or little left:
    the disk is full). Nothing is left behind: the temporary file is already removed."""
    import errno
    import shutil
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        free = None
    full = getattr(e, "errno", None) == errno.ENOSPC or (free is not None and free < LOW_SPACE_BYTES)
    where = f"{free / 2**20:.1f} MiB free on {path.parent}" if free is not None else "free space unknown"
    return (f"{path}: could not be written ({type(e).__name__}: {e}); {where}"
            + ("; the disk is full: free space and rerun (no partial file was left)" if full
               else " (no partial file was left)"))


def write_dataset(ds, path: str | Path) -> Path:
    """Write an xarray Dataset to netCDF atomically (engine netcdf4, zlib-compressed variables)."""
    enc = {v: {"zlib": True, "complevel": 4} for v in ds.data_vars
           if ds[v].dtype.kind in "fiub" and ds[v].ndim > 0}
    return atomic_write(path, lambda tmp: ds.to_netcdf(tmp, engine="netcdf4", encoding=enc))


def json_text(obj: Any) -> str:
    """The text of a JSON product (sorted keys, indented, a final newline)."""
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def write_json(obj: Any, path: str | Path) -> Path:
    return atomic_write(path, lambda tmp: Path(tmp).write_text(json_text(obj)))


def read_dataset(path: str | Path):
    """Open a netCDF file fully into memory, or raise DataFileError naming the file and the problem."""
    import xarray as xr
    path = Path(path)
    if not path.exists():
        raise DataFileError(f"{path}: file is missing")
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            return ds.load()
    except Exception as e:  # netCDF4 raises OSError/RuntimeError/ValueError for damaged files
        raise DataFileError(f"{path}: not a readable netCDF file (truncated or corrupted?): "
                            f"{type(e).__name__}: {e}") from None


def require_kind(path: str | Path, kind: str, attention: str | None = None) -> None:
    """Raise DataFileError (one line naming the file) unless ``path`` is a readable copyhead product of
    ``kind`` (run, aggregate, theory) and, where given and recorded, of that attention type."""
    import xarray as xr
    path = Path(path)
    if not path.exists():
        raise DataFileError(f"{path}: file is missing")
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            attrs = dict(ds.attrs)
    except Exception as e:
        raise DataFileError(f"{path}: not a readable netCDF file (truncated or corrupted?): "
                            f"{type(e).__name__}: {e}") from None
    found = attrs.get("copyhead_kind")
    article = "an" if kind[0] in "aeiou" else "a"
    if found is None:
        raise DataFileError(f"{path}: not a copyhead file (no copyhead_kind attribute); expected {article} "
                            f"{kind} file")
    if found != kind:
        raise DataFileError(f"{path}: a copyhead {found} file, expected {article} {kind} file")
    if attention and attrs.get("attention", attention) != attention:
        raise DataFileError(f"{path}: a {attrs['attention']}-attention {kind} file, expected {attention}")


# Which config file(s) a product was made from, recorded in it (netCDF attribute ``config_files``, a sidecar's
# ``config_files``) so that ``copyhead audit`` compares it with that file, not with whatever config.yaml lies
# beside it. The workflow names the files it read (``--configfile``, else config.yaml) and its ``--config``
# overrides in its jobs' environment (the Snakefile); a command run by hand that reads ``--config FILE``
# names that file itself (copyhead.cli: :func:`config_source_given`).
CONFIG_FILES_ENV, CONFIG_OVERRIDES_ENV = "COPYHEAD_CONFIG_FILES", "COPYHEAD_CONFIG_OVERRIDES"
_config_source_given: list[str] | None = None


def config_path_record(path: str | Path) -> str:
    """A config file's path as products record it: relative to the working directory when inside it (the
    workflow's folder: a copied or moved folder keeps its record), else absolute."""
    p = Path(path).absolute()
    try:
        return p.relative_to(Path.cwd().absolute()).as_posix()
    except ValueError:
        return str(p)


def config_source_given(files) -> None:
    """Set (a list of paths) or clear (None) the config file(s) the running command read itself."""
    global _config_source_given
    _config_source_given = None if files is None else [config_path_record(f) for f in files]


def config_source() -> dict:
    """``{"config_files": [...]}`` (plus ``config_overrides``, the workflow's ``--config`` values, when
    given): the config the current product is made from, or {} when nobody said."""
    if _config_source_given is not None:
        return {"config_files": list(_config_source_given)}
    try:
        files = json.loads(os.environ.get(CONFIG_FILES_ENV, "null"))
        overrides = json.loads(os.environ.get(CONFIG_OVERRIDES_ENV, "null"))
    except ValueError:
        return {}
    if not isinstance(files, list) or not files:
        return {}
    out = {"config_files": [str(f) for f in files]}
    if isinstance(overrides, dict) and overrides:
        out["config_overrides"] = overrides
    return out
