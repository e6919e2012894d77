"""Benchmark of the training engine (run: ``python benchmarks/bench_train.py [--quick]``).

Prints, for the default sizes (V=16, L=32, d_k=32, P=48, float64, one CPU thread):
1. steps/s of the engine's loop (``copyhead.train.run_chain``: recording at log-spaced steps, samples,
   divergence checks, lr schedule) for Adam and SGLD, and the ratio to a bare loop doing the same tensor
   operations (energy_grad + the update) with no bookkeeping (aim >= 0.5);
2. the fixed cost of one CLI run (interpreter start, imports, data, file write: ``copyhead train`` with
   2 steps) next to a default CLI run (aim: fixed cost <= 15 % of a default run).
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from copyhead import config as cfgmod
from copyhead.model import CopyAttention
from copyhead.task import make_data
from copyhead.train import new_state, run_chain

REPO = Path(__file__).resolve().parents[1]


def bare_loop(model, recipe, theta, gen, steps):
    theta = theta.clone()
    if recipe["method"] == "sgld":
        eta = recipe["eta"]
        ns = math.sqrt(2 * eta * recipe["temperature"])
        for _ in range(steps):
            g = model.energy_grad(theta)[3]
            xi = torch.randn(theta.shape, generator=gen, dtype=theta.dtype)
            theta.add_(g, alpha=-eta).add_(xi, alpha=ns)
    else:
        m, v = torch.zeros_like(theta), torch.zeros_like(theta)
        for s in range(steps):
            g = model.energy_grad(theta)[3]
            t = s + 1
            m.mul_(0.9).add_(g, alpha=0.1)
            v.mul_(0.999).addcmul_(g, g, value=0.001)
            theta.addcdiv_(m, (v / (1 - 0.999 ** t)).sqrt_().add_(1e-8), value=-recipe["lr"] / (1 - 0.9 ** t))
    return theta


def engine_vs_bare(cfg, name, steps):
    rc = cfgmod.run_config(cfg, "softmax", name, 48, 0)
    recipe = dict(rc["recipe"], steps=steps)
    if recipe["method"] == "sgld":
        recipe["burn_in"] = steps // 2
    data = make_data(0, rc["task"]["V"], rc["task"]["L"], 48, rc["task"]["n_test"])
    model = CopyAttention(data, "softmax", rc["model"], torch.float64, "cpu")
    theta = model.init_prior(torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(1)
    bare_loop(model, recipe, theta, gen, 50)  # warm-up
    t = time.perf_counter()
    bare_loop(model, recipe, theta, gen, steps)
    bare = steps / (time.perf_counter() - t)
    t = time.perf_counter()
    run_chain(model, recipe, new_state(model, recipe, theta, gen), gen)
    eng = steps / (time.perf_counter() - t)
    return eng, bare


def cli_time(run_cfg: dict) -> float:
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "copyhead", "train", "--run-config", json.dumps(run_cfg),
                        "--out", str(Path(d) / "r.nc")], check=True, cwd=REPO)
        return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer steps (CI smoke run)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    cfg = cfgmod.load(REPO / "config.yaml")
    steps = 500 if a.quick else 3000
    print(f"engine loop vs bare loop (V=16, L=32, d_k=32, P=48, float64, 1 thread, {steps} steps)")
    for name in ("adam", "sgld"):
        eng, bare = engine_vs_bare(cfg, name, steps)
        print(f"  {name:5s}: engine {eng:7.0f} steps/s   bare {bare:7.0f} steps/s   ratio {eng / bare:.2f}")
    print("CLI (copyhead train, softmax, P=48; torch threads as configured by the environment)")
    for name in ("adam", "sgld"):
        rc = cfgmod.run_config(cfg, "softmax", name, 48, 0)
        tiny = copy.deepcopy(rc)
        tiny["recipe"].update(steps=2, log_points=2, **({"burn_in": 0, "thin": 1} if name == "sgld" else {}))
        fixed = cli_time(tiny)
        full = cli_time(rc) if not a.quick else float("nan")
        print(f"  {name:5s}: fixed cost (2 steps) {fixed:5.2f} s   default run ({rc['recipe']['steps']} steps) "
              f"{full:5.2f} s   fixed/default {fixed / full:.2f}")


if __name__ == "__main__":
    main()
