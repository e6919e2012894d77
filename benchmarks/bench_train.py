"""Benchmark of the batched training engine (run: ``python benchmarks/bench_train.py [--quick]``).

Measured side by side in one run, on one CPU thread per process, at the default sizes (V=16, L=32,
d_k=32, P=48, float64), for Adam and SGLD:

1. steady state: chain-steps per second of K chains advanced as one batch (``copyhead.train.run_chains``,
   with recording, divergence checks, noise) for K = 1, 4, 8, 16, in this process;
2. end to end, as the workflow runs them: K runs as K processes of the engine before batching (the
   baseline commit ``--baseline``, checked out into a temporary git worktree, one ``copyhead train`` per
   run), against ONE ``copyhead train --seeds ...`` process of this engine; chain-steps per second per
   core of each and the ratio (the issue's aim: >= 2x at K = 4, >= 3x at K = 8);
3. the fixed cost of one job (interpreter, imports, data, file writes: the same job with 2 steps)
   against its training time, for the default Adam job (3 seeds; aim <= 15 %).

Step counts are the recipes' defaults (Adam 4000, SGLD 20000) unless ``--steps`` is given; ``--quick``
uses 500 steps and K <= 4 (a smoke run).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from copyhead import config as cfgmod
from copyhead.model import CopyAttention
from copyhead.task import make_data, noise_seed
from copyhead.train import NoiseStreams, new_state, run_chains

REPO = Path(__file__).resolve().parents[1]
BASELINE = "1c930f5"   # the last commit with the one-process-per-run engine


def steady_state(rc: dict, K: int, steps: int) -> float:
    """Chain-steps per second of K chains as one batch (one thread, in this process)."""
    r = cfgmod.RunConfig.from_dict(rc)
    recipe = cfgmod.Recipe.from_dict(rc["optimizer"], dict(rc["recipe"], steps=steps, **(
        {"burn_in": steps // 2} if r.recipe.sgld else {})))
    seeds = list(range(K))
    model = CopyAttention([make_data(s, r.task.V, r.task.L, 48, r.task.n_test) for s in seeds], "softmax",
                          r.model, torch.float64, "cpu")
    theta = torch.stack([model.init_prior(torch.Generator().manual_seed(s)) for s in seeds])
    noise = (NoiseStreams([torch.Generator().manual_seed(noise_seed(s, "prior")) for s in seeds],
                          model.layout.n, model.dtype, "cpu") if recipe.sgld else None)
    t = time.perf_counter()
    run_chains(model, recipe, new_state(model, recipe, theta), noise)
    return K * steps / (time.perf_counter() - t)


def _run(cmd, env) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, cwd=REPO)
    return time.perf_counter() - t


def baseline_tree(ref: str) -> Path | None:
    """A temporary git worktree of the baseline engine (None outside a git clone with that commit)."""
    d = Path(tempfile.mkdtemp(prefix="copyhead-baseline-"))
    r = subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(d / "tree"), ref],
                       capture_output=True, text=True)
    return d / "tree" if r.returncode == 0 else None


def end_to_end(rc: dict, K: int, base: Path | None, out: Path) -> tuple[float, float]:
    """(seconds for K baseline processes, seconds for one batched process), one thread each."""
    env = dict(os.environ, OMP_NUM_THREADS="1", COPYHEAD_THREADS="1")
    t_base = float("nan")
    if base is not None:
        benv = dict(env, PYTHONPATH=str(base / "src"))
        t_base = 0.0
        for s in range(K):
            t_base += _run([sys.executable, "-m", "copyhead", "train", "--run-config",
                            json.dumps(dict(rc, P=48, seed=s)), "--out", str(out / f"base{s}.nc")], benv)
    env["PYTHONPATH"] = str(REPO / "src")
    t_new = _run([sys.executable, "-m", "copyhead", "train", "--run-config", json.dumps(rc), "--P", "48",
                  "--seeds", *map(str, range(K)), "--out", *[str(out / f"new{s}.nc") for s in range(K)]], env)
    return t_base, t_new


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="500 steps, K <= 4 (smoke run)")
    ap.add_argument("--steps", type=int, help="steps of every run (default: each recipe's own)")
    ap.add_argument("--K", type=int, nargs="+", default=[1, 4, 8, 16], help="chains per batch")
    ap.add_argument("--baseline", default=BASELINE, help="git ref of the one-process-per-run engine")
    a = ap.parse_args()
    torch.set_num_threads(1)
    cfg = cfgmod.load(REPO / "config.yaml")
    cfg["numerics"]["device"] = "cpu"
    Ks = [k for k in a.K if k <= 4] if a.quick else a.K
    base = baseline_tree(a.baseline)
    print(f"batched engine vs one process per run (baseline {a.baseline}"
          f"{'' if base else ': NOT AVAILABLE, baseline columns are nan'}); V=16, L=32, d_k=32, P=48, "
          f"float64, 1 thread per process; {os.cpu_count()} cores on this machine")
    try:
        with tempfile.TemporaryDirectory() as d:
            out = Path(d)
            for name in ("adam", "sgld"):
                rc = cfgmod.run_config(cfg, "softmax", name)
                steps = 500 if a.quick else (a.steps or rc["recipe"]["steps"])
                rc["recipe"]["steps"] = steps
                if rc["recipe"]["method"] == "sgld":
                    rc["recipe"]["burn_in"] = steps // 2
                    rc["recipe"]["checkpoint_every"] = 0
                print(f"\n{name}: {steps} steps per run")
                print(f"  {'K':>3} {'steady chain-steps/s':>21} {'baseline K procs [s]':>21} "
                      f"{'batched 1 proc [s]':>19} {'chain-steps/s base':>19} {'batched':>9} {'speed-up':>9}")
                for K in Ks:
                    ss = steady_state(rc, K, min(steps, 2000))
                    tb, tn = end_to_end(rc, K, base, out)
                    rb, rn = K * steps / tb, K * steps / tn
                    print(f"  {K:>3} {ss:>21.0f} {tb:>21.1f} {tn:>19.1f} {rb:>19.0f} {rn:>9.0f} {rn / rb:>9.2f}")
            # fixed cost of the default Adam job (3 seeds) against its training time
            rc = cfgmod.run_config(cfg, "softmax", "adam")
            seeds = cfg["sweep"]["softmax"]["adam"]["seeds"]
            env = dict(os.environ, OMP_NUM_THREADS="1", COPYHEAD_THREADS="1", PYTHONPATH=str(REPO / "src"))
            tiny = copy.deepcopy(rc)
            tiny["recipe"].update(steps=2, log_points=2)
            outs = [str(out / f"j{s}.nc") for s in seeds]
            job = lambda r: _run([sys.executable, "-m", "copyhead", "train", "--run-config", json.dumps(r),
                                  "--P", "48", "--seeds", *map(str, seeds), "--out", *outs], env)
            fixed, full = min(job(tiny) for _ in range(2)), job(rc)
            print(f"\ndefault Adam job (P=48, seeds {seeds}, {rc['recipe']['steps']} steps): fixed cost "
                  f"{fixed:.2f} s, whole job {full:.2f} s, fixed/(whole - fixed) {fixed / (full - fixed):.2f}")
    finally:
        if base is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)],
                           capture_output=True)
            shutil.rmtree(base.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
