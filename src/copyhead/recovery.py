"""Recovery after a killed ``snakemake``: stale directory locks and temporary files (docs/workflow.md).

Snakemake locks the working directory (``.snakemake/locks``) while it runs and removes the locks when it
ends; a ``kill -9`` (or a power loss) leaves them, and the next ``snakemake`` stops with a LockException
until ``snakemake --unlock``. Snakemake's lock files do not say who holds them, so the Snakefile adds an
owner record per run (``.snakemake/copyhead-owners/<host>.<pid>``, written when the run starts and removed
when it ends); the next run removes the locks only when every record is of a process on this machine that
no longer exists. Locks of a run on another machine (shared file system), or without a record, are left:
only ``snakemake --unlock`` removes those, after you have checked that no other snakemake uses the folder.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

from .provenance import stale_temps

OWNERS = "copyhead-owners"
# temporaries of atomic writes not modified for this long were left by a killed process
STALE_TEMP_S = 3600


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> str:
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22), '' if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _alive(rec: dict) -> bool:
    """Whether the process of an owner record may still run (unknown counts as alive)."""
    if rec.get("host") != socket.gethostname():
        return True                                   # another machine: cannot tell
    if rec.get("boot_id") and _boot_id() and rec["boot_id"] != _boot_id():
        return False                                  # rebooted since
    pid = int(rec.get("pid", -1))
    if pid <= 0:
        return True
    if rec.get("start") and Path("/proc").is_dir():
        return _start_ticks(pid) == rec["start"]      # same pid and start time: the same process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def record_owner(smk_dir: str | Path = ".snakemake") -> Path:
    """Note that this process (the running snakemake) holds the locks; called from the Snakefile's onstart."""
    d = Path(smk_dir) / OWNERS
    d.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    rec = {"host": socket.gethostname(), "pid": pid, "start": _start_ticks(pid), "boot_id": _boot_id()}
    path = d / f"{rec['host']}.{pid}"
    path.write_text(json.dumps(rec))
    return path


def release_owner(smk_dir: str | Path = ".snakemake") -> None:
    """Remove this process's owner record (the Snakefile's onsuccess/onerror)."""
    (Path(smk_dir) / OWNERS / f"{socket.gethostname()}.{os.getpid()}").unlink(missing_ok=True)


def lock_holders(smk_dir: str | Path = ".snakemake") -> str:
    """Who holds the directory locks, when a snakemake that may still run does ('' otherwise): the line
    the Snakefile prints before Snakemake's own refusal ("Directory cannot be locked"), which names no
    process. Call it after :func:`clear_stale_locks`."""
    smk = Path(smk_dir)
    if not (smk / "locks").is_dir() or not any((smk / "locks").glob("*.lock")):
        return ""
    live = []
    for p in sorted((smk / OWNERS).glob("*")) if (smk / OWNERS).is_dir() else []:
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if rec and _alive(rec) and not (rec.get("host") == socket.gethostname() and rec.get("pid") == os.getpid()):
            live.append(f"pid {rec.get('pid')} on {rec.get('host')}")
    who = ", ".join(live) if live else "a snakemake that left no owner record (another machine, or an older run)"
    return (f"this folder is locked by {who}: a run that writes results waits for it to end "
            "(`snakemake --unlock` only after checking that it no longer runs)")


def clear_stale_locks(smk_dir: str | Path = ".snakemake") -> str:
    """Remove Snakemake's locks if every run that could hold them was killed on this machine; return a
    message saying what was removed ('' if nothing). Called by the Snakefile before the DAG is locked."""
    smk = Path(smk_dir)
    owners = sorted((smk / OWNERS).glob("*")) if (smk / OWNERS).is_dir() else []
    recs = {}
    for p in owners:
        try:
            recs[p] = json.loads(p.read_text())
        except (OSError, ValueError):
            recs[p] = {}
    dead = [p for p, r in recs.items() if r and not _alive(r)]
    for p in dead:
        if not (smk / "locks").is_dir():
            p.unlink(missing_ok=True)               # a record without locks: just tidy up
    locks = sorted((smk / "locks").glob("*.lock")) if (smk / "locks").is_dir() else []
    if not locks or not dead or len(dead) != len(recs):
        return ""
    shutil.rmtree(smk / "locks", ignore_errors=True)
    for p in dead:
        p.unlink(missing_ok=True)
    pids = ", ".join(str(recs[p].get("pid")) for p in dead)
    return (f"removed the directory locks of a snakemake that was killed (pid {pids} on this machine, "
            f"no longer running); its incomplete jobs are rerun")


def remove_stale_temps(results: str | Path = "results", older_than_s: float = STALE_TEMP_S) -> list[Path]:
    """Delete the temporary files killed writes left under ``results`` (the Snakefile's onstart)."""
    gone = []
    for p in stale_temps(results, older_than_s):
        try:
            p.unlink()
            gone.append(p)
        except OSError:
            pass
    return gone
