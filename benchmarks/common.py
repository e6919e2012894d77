"""What the benchmark scripts share: the machine's name and the writer of their published pages."""
from __future__ import annotations

import platform
import time
from pathlib import Path

import torch

from copyhead.provenance import code_version, product_record, write_product


def cpu_name() -> str:
    """The CPU model of this machine (``/proc/cpuinfo``), else what :mod:`platform` says."""
    info = Path("/proc/cpuinfo")
    if info.exists():
        for ln in info.read_text().splitlines():
            if ln.startswith("model name"):
                return ln.split(":", 1)[1].strip()
    return platform.processor()


def write_benchmark_page(path: Path, lines: list[str], name: str, options: dict, concern: str = "train"):
    """Write a benchmark's markdown page with its provenance record: a measurement of this machine and of
    the code it ran (``concern`` of copyhead.provenance.CODE_MODULES, default the training code; the audit
    names that code and warns when it has changed since)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rec = product_record(name, concern, {}, kind="benchmark", options=options)
    write_product({path: "\n".join(lines) + "\n"}, rec)


def stamp() -> str:
    """Where and with what a measurement ran: commit, date, CPU, one thread, torch."""
    ver = code_version()
    commit = (ver["git_commit"][:7] or "unknown") + ("-dirty" if ver["git_dirty"] else "")
    return f"commit {commit}, {time.strftime('%Y-%m-%d')}, {cpu_name()}, one thread, torch {torch.__version__}"
