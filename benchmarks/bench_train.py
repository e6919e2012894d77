"""Benchmark of the training engine against a baseline commit, side by side in one run
(``python benchmarks/bench_train.py [--quick] [--energy] [--baseline REF]``).

Every measurement runs in its own process with one thread (``OMP_NUM_THREADS=1``,
``torch.set_num_threads(1)``), the baseline engine (a git worktree of ``--baseline``, default 9109f6e,
the engine before co-occurrence counts) and this one interleaved, so both see the same machine load
(the load average is printed with the table):

1. chain-steps per second of K chains as one batch (``run_chains`` with recording, divergence checks
   and noise; data and start-up excluded) at the default size (V 16, L 32, d_k 32, P 48, σ² 0.1,
   float64) for K = 1, 4, 8, 16, Adam and SGLD; then K = 8 SGLD at the paper scale (σ² = 1, P = 300),
   at L 16, d_k 256, P 80 and at long context L 128, d_k 32, P 24;
2. end to end: the default SGLD job (P 48, 4000 steps) with 1 and with 8 seeds as one
   ``copyhead train`` process each (start-up, data, training, files): seconds per seed;
3. ``--energy``: seconds per energy-and-gradient call of 8 chains by each kind (direct, dense, sparse
   counts) at several sizes and the kind the cost rule (``copyhead.schedules.cheapest_energy``) picks:
   the calibration behind the rule;
4. the training estimate of ``config/cluster_L32_dk64.yaml`` by the resource model (2 CPU cores; one GPU).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = "9109f6e"
SIZES = {  # name -> (V, L, d_k, P, sigma2)
    "default": (16, 32, 32, 48, 0.1), "paper P300": (16, 32, 32, 300, 1.0),
    "L16 dk256 P80": (16, 16, 256, 80, 0.1), "L128 dk32 P24": (16, 128, 32, 24, 0.1)}


def worker(spec: dict) -> dict:
    """Runs in a child process with the engine on PYTHONPATH: chain-steps/s of one batch."""
    import torch

    from copyhead import config as cfgmod
    from copyhead.model import CopyAttention
    from copyhead.task import make_data, noise_seed
    from copyhead.train import NoiseStreams, new_state, run_chains

    torch.set_num_threads(1)
    V, L, d_k, P, sigma2 = spec["size"]
    K, steps, name = spec["K"], spec["steps"], spec["recipe"]
    cfg = cfgmod.load(REPO / "config.yaml")
    rc = cfgmod.run_config(cfg, "softmax", name)
    rec = dict(rc["recipe"], steps=steps, log_points=40)
    if rec["method"] == "sgld":
        rec.update(burn_in=steps // 2, thin=max(1, steps // 100), checkpoint_every=0)
    if rec.get("prior_warmup"):
        rec["prior_warmup"] = steps // 2
    recipe = cfgmod.Recipe.from_dict(name, rec)
    model_cfg = dict(rc["model"], d_k=d_k, sigma2=sigma2)
    model = CopyAttention([make_data(s, V, L, P, 512) for s in range(K)], "softmax", model_cfg,
                          torch.float64, "cpu")
    theta = torch.stack([model.init_prior(torch.Generator().manual_seed(s)) for s in range(K)])
    noise = (NoiseStreams([torch.Generator().manual_seed(noise_seed(s, "prior")) for s in range(K)],
                          model.layout.n, model.dtype, "cpu") if recipe.sgld else None)
    state = new_state(model, recipe, theta)
    t = time.perf_counter()
    run_chains(model, recipe, state, noise)
    return {"rate": K * steps / (time.perf_counter() - t), "energy": getattr(model, "energy_kind", "direct")}


def child(src: Path, spec: dict) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", COPYHEAD_THREADS="1", PYTHONPATH=str(src))
    r = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], env=env, cwd=REPO,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def job_seconds(src: Path, K: int, out: Path) -> float:
    """Wall seconds of one default SGLD ``copyhead train`` process (P 48, 4000 steps) with K seeds."""
    from copyhead import config as cfgmod

    cfg = cfgmod.load(REPO / "config.yaml")
    cfg["numerics"]["device"] = "cpu"
    rc = cfgmod.run_config(cfg, "softmax", "sgld")
    rc["recipe"].update(steps=4000, burn_in=2000, checkpoint_every=0)
    env = dict(os.environ, OMP_NUM_THREADS="1", COPYHEAD_THREADS="1", PYTHONPATH=str(src))
    cmd = [sys.executable, "-m", "copyhead", "train", "--run-config", json.dumps(rc), "--P", "48",
           "--seeds", *map(str, range(K)), "--out", *[str(out / f"s{s}.nc") for s in range(K)]]
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def baseline_tree(ref: str) -> Path | None:
    """A temporary git worktree of the baseline engine (None outside a git clone with that commit)."""
    d = Path(tempfile.mkdtemp(prefix="copyhead-baseline-"))
    r = subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(d / "tree"), ref],
                       capture_output=True, text=True)
    return d / "tree" if r.returncode == 0 else None


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def engine_table(base: Path | None, quick: bool):
    rows = [("default", name, K) for name in ("adam", "sgld") for K in ((1, 4) if quick else (1, 4, 8, 16))]
    rows += [(size, "sgld", 8) for size in SIZES if size != "default" and not quick]
    print(f"\n{'size':<15} {'recipe':<6} {'K':>3} {'energy':>7} {'base [chain-steps/s]':>21} "
          f"{'new':>8} {'speed-up':>9}")
    for size, name, K in rows:
        steps = 300 if quick else (400 if size == "paper P300" else 1000)
        spec = {"size": SIZES[size], "K": K, "steps": steps, "recipe": name}
        b = child(base / "src", spec)["rate"] if base else float("nan")
        n = child(REPO / "src", spec)
        print(f"{size:<15} {name:<6} {K:>3} {n['energy']:>7} {b:>21.0f} {n['rate']:>8.0f} "
              f"{n['rate'] / b:>9.2f}", flush=True)
    print(load())


def end_to_end(base: Path | None):
    print("\nend to end, default SGLD job (P 48, 4000 steps), seconds per seed:")
    with tempfile.TemporaryDirectory() as d:
        res = {}
        for K in (1, 8):
            for tag, src in (("base", base / "src" if base else None), ("new", REPO / "src")):
                res[tag, K] = job_seconds(src, K, Path(d)) / K if src else float("nan")
        for tag in ("base", "new"):
            print(f"  {tag}: 1 seed {res[tag, 1]:.2f} s, 8 seeds {res[tag, 8]:.2f} s/seed "
                  f"(batching gain {res[tag, 1] / res[tag, 8]:.2f}x)")
        print(f"  new vs base at 8 seeds: {res['base', 8] / res['new', 8]:.2f}x; {load()}")


def energy_table():
    import torch

    from copyhead import schedules
    from copyhead.model import CopyAttention
    from copyhead.task import make_data

    torch.set_num_threads(1)
    print(f"\nenergy-and-gradient call, K = 8 chains, ms per call by kind, and the rule's pick ({load()}):")
    for V, L, d_k in ((16, 32, 32), (16, 16, 256), (16, 128, 32), (32, 16, 32)):
        for P in ((8, 24) if L >= 128 else (8, 48, 300, 2000)):
            datas = [make_data(s, V, L, P, 8) for s in range(8)]
            cfg = dict(scores="position", d_k=d_k, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1)
            ms = {}
            for kind in schedules.ENERGY_KINDS:
                m = CopyAttention(datas, "softmax", cfg, energy=kind)
                th = torch.stack([m.init_prior(torch.Generator().manual_seed(s)) for s in range(8)])
                m.energy_grad(th)
                n, t = 0, time.perf_counter()
                while time.perf_counter() - t < 0.3:
                    m.energy_grad(th)
                    n += 1
                ms[kind] = 1e3 * (time.perf_counter() - t) / n
            best = min(ms, key=ms.get)
            print(f"  V {V:>2} L {L:>3} d_k {d_k:>3} P {P:>4}: " + "  ".join(f"{k} {v:7.2f}" for k, v in ms.items())
                  + f"   fastest {best:<6} rule {schedules.cheapest_energy(V, L, P)}", flush=True)


def paper_estimate():
    from copyhead import config as cfgmod
    from copyhead.resources import sweep_seconds

    paper = cfgmod.load(REPO / "config/cluster_L32_dk64.yaml")
    cpu, gpu = sweep_seconds(paper, "cpu"), sweep_seconds(paper, "gpu")
    print(f"\nconfig/cluster_L32_dk64.yaml training by the resource model (an upper bound on CPU): {cpu / 3600:.1f} "
          f"core-hours = {cpu / 2 / 3600:.1f} h on 2 cores; {gpu / 3600:.1f} h of jobs on one GPU")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="fewer steps, K <= 4, default size only")
    ap.add_argument("--energy", action="store_true", help="only the per-call energy table (the cost rule)")
    ap.add_argument("--baseline", default=BASELINE, help="git ref of the engine to compare with")
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(json.loads(a.worker))))
        return
    if a.energy:
        energy_table()
        return
    base = baseline_tree(a.baseline)
    print(f"engine vs baseline {a.baseline}{'' if base else ' (NOT AVAILABLE: baseline columns are nan)'}; "
          f"float64, 1 thread per process, {os.cpu_count()} cores; {load()}")
    try:
        engine_table(base, a.quick)
        if not a.quick:
            end_to_end(base)
            paper_estimate()
    finally:
        if base is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)],
                           capture_output=True)
            shutil.rmtree(base.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
