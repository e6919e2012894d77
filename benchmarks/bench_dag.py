"""Benchmark: the whole default DAG from scratch, wall time and time by rule and by sampler.

    python benchmarks/bench_dag.py [--config config.yaml] [--modes recipe,point] [--also CONFIG ...]
                                   [--cores 2] [--keep DIR] [--md PAGE]

Copies the workflow (Snakefile, workflow/, the config) into a fresh directory per run, runs
``snakemake --cores N`` there, and prints the total wall time plus, per rule, the number of jobs and the
sum / max of the wall seconds Snakemake's ``benchmark:`` files recorded (results/benchmarks/**.tsv), and
the training jobs per sampler (the recipes' ``method``). ``--modes`` runs the config once per training
mode (``COPYHEAD_TRAIN_PACK``: ``recipe``, the default, one packed job per recipe; ``point``, one job per
P), ``--also`` adds other configs (in the default mode), all on the same machine one after the other, so
their times compare. ``--md`` writes the result as a page with its provenance (docs/benchmarks/dag.md):
the first run is the answer, the others are beside it.
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
sys.path.insert(0, str(ROOT / "benchmarks"))


def by_rule(bench_dir: Path) -> dict[str, list[float]]:
    out = defaultdict(list)
    for tsv in bench_dir.rglob("*.tsv"):
        rule = tsv.relative_to(bench_dir).parts[0]
        with open(tsv) as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        out[rule] += [float(r["s"]) for r in rows]
    return out


def by_method(bench_dir: Path, cfg: dict) -> dict[str, list[float]]:
    """Training job seconds per sampler (``method`` of each recipe: adam, sgld, hmc), from the per-job
    benchmark files results/benchmarks/train/<attention>/<recipe>/*.tsv."""
    out = defaultdict(list)
    for tsv in (bench_dir / "train").glob("*/*/*.tsv"):
        method = cfg["optimizers"][tsv.parent.name]["method"]
        with open(tsv) as f:
            out[method] += [float(r["s"]) for r in csv.DictReader(f, delimiter="\t")]
    return out


def page(runs: list[dict], cores: int, argv: str) -> list[str]:
    """The markdown page: the answer (the first run's wall time against the 5 min aim, and the floor the
    non-HMC jobs set) first, then the runs side by side, then the first run's tables by sampler and rule."""
    from common import stamp
    first = runs[0]
    wall, rules, methods = first["wall"], first["rules"], first["methods"]
    total = sum(sum(v) for v in rules.values())
    hmc = methods.get("hmc", [])
    rest = total - sum(hmc)
    lines = [f"# The default DAG from scratch, `snakemake --cores {cores}`", "",
             f"Written by `python benchmarks/bench_dag.py {argv}` ({stamp()}; the jobs themselves run with "
             f"`OMP_NUM_THREADS=1`, {cores} at a time; the runs one after the other on the same machine). Job "
             "seconds: the wall seconds of each job from Snakemake's benchmark files.", "",
             f"**Answer.** `{first['config']}` ({first['mode']}): {wall:.0f} s wall ({wall / 60:.1f} min) against the "
             f"aim of ≤ 300 s (issue 48): {'met' if wall <= 300 else 'not met'}. All jobs: {total:.0f} s of job time; "
             f"the jobs other than the HMC reference chains take {rest:.0f} s of it, a floor of "
             f"{rest / cores:.0f} s of wall on {cores} cores even with no HMC at all.", "",
             "| config | training jobs | jobs | wall | job seconds (all) | job seconds (training) |",
             "|---|---|---|---|---|---|"]
    for r in runs:
        n = sum(len(v) for v in r["rules"].values())
        lines.append(f"| `{r['config']}` | {r['mode']} | {n} | {r['wall']:.0f} s | "
                     f"{sum(sum(v) for v in r['rules'].values()):.0f} | {sum(r['rules'].get('train', [])):.0f} |")
    lines += ["", f"`{first['config']}` ({first['mode']}), by sampler and by rule:", "",
              "| sampler | training jobs | job seconds | per job (mean) | longest job |", "|---|---|---|---|---|"]
    for m, secs in sorted(methods.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"| {m} | {len(secs)} | {sum(secs):.0f} | {sum(secs) / len(secs):.1f} | {max(secs):.1f} |")
    lines += ["", "| rule | jobs | job seconds | longest job |", "|---|---|---|---|"]
    for rule, secs in sorted(rules.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"| {rule} | {len(secs)} | {sum(secs):.0f} | {max(secs):.1f} |")
    return lines


MODES = {"recipe": "packed: one job per recipe", "point": "one job per P"}


def run_dag(config: Path, mode: str, cores: int, wd: Path) -> dict:
    """One DAG from scratch in ``wd``: its wall time and the jobs' seconds by rule and by sampler."""
    import os

    import yaml
    wd.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", wd / "Snakefile")
    shutil.copytree(ROOT / "workflow", wd / "workflow", dirs_exist_ok=True)
    shutil.copytree(ROOT / "envs", wd / "envs", dirs_exist_ok=True)
    shutil.copy(config, wd / "config.yaml")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", str(cores)], cwd=wd, capture_output=True,
                       text=True, env={**os.environ, "COPYHEAD_TRAIN_PACK": mode})
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"snakemake failed in {wd} (exit {r.returncode})")
    name = config.resolve().relative_to(ROOT).as_posix() if config.resolve().is_relative_to(ROOT) else str(config)
    return {"config": name, "mode": MODES[mode], "wall": wall, "rules": by_rule(wd / "results/benchmarks"),
            "methods": by_method(wd / "results/benchmarks", yaml.safe_load(config.read_text()))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "config.yaml"))
    ap.add_argument("--modes", default="recipe", help="comma-separated training modes to run the config in "
                    f"(COPYHEAD_TRAIN_PACK: {', '.join(MODES)}); the first is the answer")
    ap.add_argument("--also", nargs="*", default=[], help="other configs to run beside it (default mode)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", help="run in this directory (kept) instead of a temporary one")
    ap.add_argument("--md", help="also write the result as a page with its provenance (docs/benchmarks/dag.md)")
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    bad = [m for m in modes if m not in MODES]
    if bad:
        ap.error(f"--modes: unknown mode(s) {bad}; allowed: {list(MODES)}")
    base = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="copyhead-dag-"))
    plan = [(Path(a.config), m) for m in modes] + [(Path(c), "recipe") for c in a.also]
    runs = []
    for i, (cfg, mode) in enumerate(plan):
        r = run_dag(cfg, mode, a.cores, base / f"{i}_{cfg.stem}_{mode}")
        runs.append(r)
        print(f"{r['config']} ({r['mode']}): {r['wall']:.1f} s wall with --cores {a.cores}")
        print(f"  {'rule':<12} {'jobs':>5} {'sum s':>9} {'max s':>7}")
        for rule, secs in sorted(r["rules"].items(), key=lambda kv: -sum(kv[1])):
            print(f"  {rule:<12} {len(secs):>5} {sum(secs):>9.1f} {max(secs):>7.1f}")
        for m, secs in sorted(r["methods"].items(), key=lambda kv: -sum(kv[1])):
            print(f"  train {m:<6} {len(secs):>5} {sum(secs):>9.1f} {max(secs):>7.1f}")
    if a.md:
        from common import write_benchmark_page
        argv_text = " ".join(["--config", runs[0]["config"], "--modes", a.modes]
                             + (["--also", *[r["config"] for r in runs[len(modes):]]] if a.also else [])
                             + ["--cores", str(a.cores), "--md", a.md])
        write_benchmark_page(Path(a.md), page(runs, a.cores, argv_text), "bench_dag",
                             {"config": runs[0]["config"], "modes": a.modes, "also": [r["config"] for r in runs[len(modes):]],
                              "cores": a.cores})
    if not a.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
