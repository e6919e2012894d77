"""Recovery after a killed ``snakemake``: stale directory locks and temporary files (docs/workflow.md).

Snakemake locks the working directory (``.snakemake/locks``) while it runs and removes the locks when it
ends; a ``kill -9`` (or a power loss) leaves them, and the next ``snakemake`` stops with a LockException
until ``snakemake --unlock``. Snakemake's lock files do not say who holds them, so the Snakefile adds an
owner record per run (``.snakemake/copyhead-owners/<host>.<pid>``, written when the run starts and removed
when it ends); the next run removes the locks only when every record is of a process on this machine that
no longer exists. Locks of a run on another machine (shared file system), or without a record, are left:
only ``snakemake --unlock`` removes those, after you have checked that no other snakemake uses the folder.

A ``kill -9`` of snakemake alone leaves the jobs it started running (each writes its checkpoint, log and
outputs). So every copyhead command the workflow runs records itself too (``.snakemake/copyhead-jobs/
<host>.<pid>``: pid, command, outputs, and the snakemake that started it; written when it starts, removed
when it ends, :func:`record_job`). A job of this machine that still runs although its snakemake does not is
*orphaned* (:func:`orphaned_jobs`): while one is, the locks are kept and the next snakemake refuses, naming
its pid and command (:func:`orphans_message`), instead of starting the same job beside it.
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


def _state(pid: int) -> str:
    """The process's state letter (/proc/<pid>/stat field 3: R, S, ..., Z for a zombie), '' if unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
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
        # same pid and start time: the same process, unless it has exited and waits to be reaped (a zombie)
        return _start_ticks(pid) == rec["start"] and _state(pid) not in ("Z", "X")
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
    orphans = orphaned_jobs(smk)
    if orphans:
        return orphans_message(orphans)
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
    if orphaned_jobs(smk):      # a job of the killed run still writes here: keep the locks (lock_holders)
        return ""
    shutil.rmtree(smk / "locks", ignore_errors=True)
    for p in dead:
        p.unlink(missing_ok=True)
    pids = ", ".join(str(recs[p].get("pid")) for p in dead)
    return (f"removed the directory locks of a snakemake that was killed (pid {pids} on this machine, "
            f"no longer running); its incomplete jobs are rerun")


# ------------------------------------------------------------------ the jobs a snakemake started

JOBS = "copyhead-jobs"
JOBS_ENV, OWNER_ENV = "COPYHEAD_JOBS_DIR", "COPYHEAD_OWNER"


def _this_process() -> dict:
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "start": _start_ticks(pid), "boot_id": _boot_id()}


def job_environment(smk_dir: str | Path = ".snakemake") -> dict:
    """What the Snakefile puts in its jobs' environment (the main snakemake process, when it starts):
    where a job records itself, and which snakemake started it."""
    return {JOBS_ENV: str((Path(smk_dir) / JOBS).absolute()), OWNER_ENV: json.dumps(_this_process())}


def record_job(command: str) -> Path | None:
    """Record the running copyhead command as a job of the snakemake named in its environment (None, and
    nothing written, outside the workflow or where the record cannot be written: it never fails a job)."""
    where = os.environ.get(JOBS_ENV)
    if not where:
        return None
    try:
        owner = json.loads(os.environ.get(OWNER_ENV) or "{}")
    except ValueError:
        owner = {}
    rec = dict(_this_process(), command=command, owner=owner if isinstance(owner, dict) else {},
               pgid=os.getpgid(0), cwd=os.getcwd(), slurm_job_id=os.environ.get("SLURM_JOB_ID", ""))
    path = Path(where) / f"{rec['host']}.{rec['pid']}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec))
    except OSError:
        return None
    return path


def release_job(path: Path | None) -> None:
    """Remove a job's record when it ends (however it ends, short of SIGKILL)."""
    if path is not None:
        path.unlink(missing_ok=True)


def orphaned_jobs(smk_dir: str | Path = ".snakemake") -> list[dict]:
    """The recorded jobs of this machine that still run although the snakemake that started them no longer
    does (killed with ``kill -9``, a lost shell): they write the files a new run would write. Records of
    jobs that have ended are removed on the way. Jobs on other machines (Slurm) cannot be checked here."""
    d = Path(smk_dir) / JOBS
    out = []
    for p in sorted(d.glob("*")) if d.is_dir() else []:
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(rec, dict) or rec.get("host") != socket.gethostname():
            continue
        if not _alive(rec):
            p.unlink(missing_ok=True)                  # a job that ended without removing its record
            continue
        owner = rec.get("owner") or {}
        if owner and _alive(owner):
            continue                                   # its snakemake still runs (and holds the locks)
        out.append(rec)
    return out


def orphans_message(orphans: list[dict], locks_kept: bool = True) -> str:
    """One line naming the orphaned jobs (pid and command) and what to do."""
    jobs = "; ".join(f"pid {r.get('pid')} (`{r.get('command', '?')}`, started by snakemake pid "
                     f"{(r.get('owner') or {}).get('pid', '?')})" for r in orphans)
    pids = " ".join(str(r.get("pid")) for r in orphans)
    return (f"a snakemake that no longer runs left {len(orphans)} job(s) running in this folder: {jobs}. They "
            "write the files this run would write (checkpoint, log, outputs), so nothing is started beside them"
            + (" and the directory locks are kept" if locks_kept else "") + f": wait for it to end, or stop it "
            f"(`kill {pids}`; a training job keeps its checkpoint and the next run resumes from it), then run "
            "snakemake again")


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
