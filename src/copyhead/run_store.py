"""The run store: finished run files kept by what they are, reused instead of trained again.

A packed training job (:mod:`copyhead.pack`) is the unit Snakemake reruns, so adding one P to a recipe would
retrain every P of it without this store; :func:`copyhead.run.train_points` asks it for each chain first.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from .datafiles import (DataFileError, WriteError, atomic_write, read_dataset, sha256_file, write_json)
from .provenance import now_iso

# A packed job is the unit Snakemake reruns (and it removes all of the job's outputs first), so adding one
# P to a recipe, or one missing file, would retrain every P of it. `copyhead train` therefore keeps each
# file it writes in a content-addressed store (a hard link, else a copy): `<store>/<key>.nc` plus
# `<key>.json` (the identity and the file's sha256), key = sha256 of the run's identity
# (copyhead.run.run_identity: the run config with P and seed, the point's seeds, the train code
# fingerprint, device, dtype, torch version and threads, the config file(s) the workflow read). A job
# asked for a chain whose entry is there and intact links that file to its output instead of training the
# chain; only the remaining chains are batched and trained. The workflow sets the store to
# results/.runs (workflow/rules/train.smk); by hand it is off unless COPYHEAD_RUN_STORE names a folder.
RUN_STORE_ENV = "COPYHEAD_RUN_STORE"
_OFF = ("", "0", "off", "none", "no")

# attributes of a run file that must equal the identity of the run asked for (the rest of the identity,
# e.g. the GPU's name, is only in the entry's record)
IDENTITY_ATTRS = ("copyhead_kind", "config_json", "P", "seed", "batch_seeds", "code_fingerprint", "device",
                  "dtype", "torch_version", "torch_threads", "config_files", "config_overrides")


def run_store(env=None) -> "RunStore | None":
    """The store named by ``COPYHEAD_RUN_STORE`` (a folder; unset, empty or 'off': none)."""
    env = os.environ if env is None else env
    where = env.get(RUN_STORE_ENV, "").strip()
    return None if where.lower() in _OFF else RunStore(Path(where))


def identity_key(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _link_or_copy(src: Path, dst: Path) -> None:
    """``dst`` (a temporary made by atomic_write) becomes a hard link to ``src``, else a copy of it."""
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
    except OSError:   # another file system, or one without hard links
        shutil.copyfile(src, dst)


class RunStore:
    """Finished run files by their identity (see the comment above :data:`RUN_STORE_ENV`)."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def paths(self, identity: dict) -> tuple[Path, Path]:
        key = identity_key(identity)
        return self.root / f"{key}.nc", self.root / f"{key}.json"

    def problem(self, identity: dict) -> str | None:
        """Why the entry of ``identity`` must not be used ('' when there is none; None when it is intact:
        its record names this identity, the file has the sha256 recorded when it was stored, and it opens
        as a run file whose own attributes are this identity, with status ok or diverged)."""
        return self._check(identity)[0]

    def _check(self, identity: dict):
        """(:meth:`problem`'s answer, the entry's Dataset where it is intact, else None)."""
        nc, rec = self.paths(identity)
        if not nc.exists() and not rec.exists():
            return "", None
        try:
            record = json.loads(rec.read_text())
        except (OSError, ValueError) as e:
            return f"its record {rec.name} is unreadable ({type(e).__name__})", None
        if not isinstance(record, dict) or record.get("identity") != identity:
            return f"its record {rec.name} names another run", None
        try:
            actual = sha256_file(nc)
        except OSError as e:
            return f"{nc.name} cannot be read ({e.strerror or e})", None
        if actual != record.get("sha256"):
            return (f"its content does not match the sha256 recorded when it was stored ({actual[:12]} != "
                    f"{str(record.get('sha256'))[:12]}): changed or damaged since"), None
        try:
            ds = read_dataset(nc)
        except DataFileError as e:
            return str(e), None
        a = ds.attrs
        for k in IDENTITY_ATTRS:
            want, got = identity.get(k), a.get(k)
            if (None if want is None else str(want)) != (None if got is None else str(got)):
                return f"its attribute {k} is {got!r}, the run asked for has {want!r}", None
        status = str(ds["status"].values) if "status" in ds else None
        if a.get("status") not in ("ok", "diverged") or status != a.get("status"):
            return f"its status is {a.get('status')!r} (variable: {status!r})", None
        return None, ds

    def fetch(self, identity: dict, out: Path, log):
        """Put the stored file of ``identity`` at ``out`` (hard link, else copy; atomically; mtime now) when
        the entry is intact, and return its Dataset (the very file now at ``out``, opened once to check it);
        else None. Says in ``log`` what was reused or why an entry was not."""
        why, ds = self._check(identity)
        where = f"P={identity['P']} seed {identity['seed']}"
        nc, _ = self.paths(identity)
        if why == "":
            return None
        if why is not None:
            log(f"{where}: not reusing {nc} from the run store: {why}; training it")
            return None
        try:
            if not (out.exists() and os.path.samefile(out, nc)):   # rename() onto the same file does nothing
                atomic_write(out, lambda tmp: _link_or_copy(nc, Path(tmp)))
            os.utime(out)    # made now, as far as Snakemake's mtimes go (the file's own times are its run's)
        except (OSError, WriteError) as e:
            log(f"{where}: could not take {nc} from the run store ({e}); training it")
            return None
        log(f"{where}: reused {nc} from the run store; wrote {out}")
        return ds

    def put(self, path: Path, identity: dict, log) -> None:
        """Keep the just written run file ``path`` as the entry of ``identity``. A failure only costs the
        reuse: one log line, the job goes on."""
        nc, rec = self.paths(identity)
        try:
            if not (nc.exists() and os.path.samefile(path, nc)):
                atomic_write(nc, lambda tmp: _link_or_copy(Path(path), Path(tmp)))
            write_json({"identity": identity, "sha256": sha256_file(nc), "written_as": str(path),
                        "stored_at": now_iso()}, rec)
        except (OSError, WriteError) as e:
            log(f"could not keep {path} in the run store {self.root} ({e}); it is written, only its reuse "
                "by a later job is lost")
