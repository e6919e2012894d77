"""Benchmark: the whole default DAG from scratch, wall time and time by rule.

    python benchmarks/bench_dag.py [--config config.yaml] [--cores 2] [--keep DIR]

Copies the workflow (Snakefile, workflow/, the config) into a fresh directory, runs
``snakemake --cores N`` there, and prints the total wall time plus, per rule, the number of jobs and the
sum / max of the wall seconds Snakemake's ``benchmark:`` files recorded (results/benchmarks/**.tsv).
"""
from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def by_rule(bench_dir: Path) -> dict[str, list[float]]:
    out = defaultdict(list)
    for tsv in bench_dir.rglob("*.tsv"):
        rule = tsv.relative_to(bench_dir).parts[0]
        with open(tsv) as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        out[rule] += [float(r["s"]) for r in rows]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "config.yaml"))
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", help="run in this directory (kept) instead of a temporary one")
    a = ap.parse_args(argv)
    wd = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="copyhead-dag-"))
    wd.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", wd / "Snakefile")
    shutil.copytree(ROOT / "workflow", wd / "workflow", dirs_exist_ok=True)
    shutil.copytree(ROOT / "envs", wd / "envs", dirs_exist_ok=True)
    shutil.copy(a.config, wd / "config.yaml")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", str(a.cores)], cwd=wd,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:], file=sys.stderr)
        return r.returncode
    print(f"default DAG from scratch: {wall:.1f} s wall with --cores {a.cores} (in {wd})")
    print(f"{'rule':<12} {'jobs':>5} {'sum s':>9} {'max s':>7}")
    for rule, secs in sorted(by_rule(wd / "results/benchmarks").items(), key=lambda kv: -sum(kv[1])):
        print(f"{rule:<12} {len(secs):>5} {sum(secs):>9.1f} {max(secs):>7.1f}")
    if not a.keep:
        shutil.rmtree(wd, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
