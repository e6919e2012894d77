"""Bulk ESS per CPU-second of HMC on the collapsed posterior against SGLD, several chains on ONE training
set (convergence judged per dataset, never across seeds), same machine, one run (issue 27 item 5).

    python benchmarks/bench_hmc.py [--points default|all] [--chains 4] [--out results/benchmarks/hmc.json]

Per point (attention, P, σ², dataset seed) both samplers run ``--chains`` chains on the same dataset
from independent prior draws, as one batch, on one thread: HMC with the recipe below (warm-up included
in its time), SGLD with the converged study's recipe (config/converged.yaml: η = 1e-3, 60k steps, burn-in
20k, thin 100; η scaled by σ² as the recipe does). Reported per order parameter (ĉ1, ĉG for linear
attention; âG = mP/L for softmax): the posterior mean ± MCSE, split-R̂ and bulk ESS across the chains
(ArviZ), ESS per second of the whole batch, and the cost of one gradient (ms per chain). Prints a
markdown table; writes the numbers as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import cpu_name, stamp, write_benchmark_page  # noqa: E402
from copyhead import config as cfgmod  # noqa: E402
from copyhead.analysis import convergence as cv  # noqa: E402
from copyhead.config import RunConfig  # noqa: E402
from copyhead.hmc import run_hmc  # noqa: E402
from copyhead.model import CopyAttention  # noqa: E402
from copyhead.schedules import step_size  # noqa: E402
from copyhead.task import make_data  # noqa: E402
from copyhead.train import NoiseStreams, new_state, run_chains  # noqa: E402

HMC_STEPS, SGLD_STEPS = int(os.environ.get("BENCH_HMC_STEPS", 2400)), int(os.environ.get("BENCH_SGLD_STEPS", 60000))
HMC = {"method": "hmc", "init": "prior", "init_scale": 1.0, "copy_beta": 3.0, "steps": HMC_STEPS, "n_leapfrog": 8,
       "step_size": 0.05, "target_accept": 0.7, "burn_in": HMC_STEPS // 6, "thin": 1, "checkpoint_every": 0, "log_points": 10}
SGLD = {"method": "sgld", "init": "prior", "init_scale": 1.0, "copy_beta": 3.0, "steps": SGLD_STEPS, "eta": 0.001,
        "temperature": 1.0, "burn_in": SGLD_STEPS // 3, "thin": 100, "checkpoint_every": 0, "log_points": 10}
POINTS = {"default": [("linear", 16, 0.1), ("softmax", 24, 0.1)],
          "all": [("linear", 16, 0.1), ("softmax", 24, 0.1), ("linear", 300, 1.0), ("softmax", 300, 1.0)]}


def setup(attention, P, sigma2, recipe, seed, n_chains):
    cfg = cfgmod.load(ROOT / "config.yaml")
    cfg["model"]["sigma2"] = sigma2
    cfg["optimizers"] = {"bench": recipe}
    cfg["sweep"] = {attention: {"bench": {"P": [P], "seeds": [seed]}}}
    cfg["figures"]["stage_optimizer"] = "bench"
    cfg["figures"]["stages"] = {}
    rc = RunConfig.from_dict(cfgmod.run_config(cfgmod.validate(cfg), attention, "bench"))
    data = make_data(seed, rc.task.V, rc.task.L, P, rc.task.n_test)
    model = CopyAttention([data] * n_chains, attention, rc.model, torch.float64, "cpu")
    gens = [torch.Generator().manual_seed(1000 * seed + k) for k in range(n_chains)]
    theta = torch.stack([model.init_prior(g) for g in gens])
    return rc.recipe, model, new_state(model, rc.recipe, theta)


def params(state, attention, L):
    s = {k: state.samples[k].numpy() for k in ("c1", "cG", "mP")}
    return {"c1": s["c1"], "cG": s["cG"]} if attention == "linear" else {"aG": s["mP"] / L}


def one(attention, P, sigma2, method, seed, n_chains, log, hmc=None):
    """One batch of ``n_chains`` chains of ``method`` on dataset ``seed``; ``hmc`` replaces the HMC recipe."""
    recipe, model, state = setup(attention, P, sigma2, (hmc or HMC) if method == "hmc" else SGLD, seed, n_chains)
    t0 = time.process_time()
    if method == "hmc":
        gens = [torch.Generator().manual_seed(77 + k) for k in range(n_chains)]
        wgens = [torch.Generator().manual_seed(99 + k) for k in range(n_chains)]
        state = run_hmc(model, recipe, state, gens, wgens, log=log)
        grads = recipe.steps * recipe.n_leapfrog
    else:
        noise = NoiseStreams([torch.Generator().manual_seed(55 + k) for k in range(n_chains)], model.layout.n,
                             model.dtype, "cpu")
        state = run_chains(model, recipe, state, noise, eta=[step_size(recipe, P)] * n_chains, log=log)
        grads = recipe.steps
    cpu = time.process_time() - t0
    out = {"cpu_s": cpu, "ms_per_gradient_per_chain": 1e3 * cpu / (grads * n_chains),
           "extra": {k: v for k, v in state.extra.items() if not isinstance(v, dict)}}
    for name, x in params(state, attention, model.L).items():
        ess = cv.ess_bulk(x)
        out[name] = {"mean": float(x.mean()), "mcse": cv.mcse_mean(x), "rhat": cv.split_rhat(x),
                     "ess_bulk": ess, "ess_per_s": ess / cpu,
                     "chain_means": [float(c) for c in x.mean(1)]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", choices=sorted(POINTS), default="default")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0, help="the dataset")
    ap.add_argument("--out", default=str(ROOT / "results/benchmarks/hmc.json"))
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--md", help="also write the table as a markdown page (e.g. docs/benchmarks/hmc.md)")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    log = None if a.quiet else (lambda line: print("   ", line, flush=True))
    rows = []
    for attention, P, sigma2 in POINTS[a.points]:
        res = {m: one(attention, P, sigma2, m, a.seed, a.chains, log) for m in ("hmc", "sgld")}
        rows.append({"attention": attention, "P": P, "sigma2": sigma2, "seed": a.seed, "chains": a.chains, **res})
        print(f"done {attention} P={P} σ²={sigma2}", flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"hmc_recipe": HMC, "sgld_recipe": SGLD, "rows": rows,
                                       "torch": torch.__version__}, indent=1))
    lines = ["| attention | P | σ² | param | HMC mean ± MCSE | SGLD mean ± MCSE | R̂ HMC / SGLD | ESS HMC / SGLD "
             "| ESS/s HMC / SGLD | ratio | ms/grad HMC / SGLD |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        h, s = r["hmc"], r["sgld"]
        for name in [k for k in h if isinstance(h[k], dict) and "ess_bulk" in h[k]]:
            hp, sp = h[name], s[name]
            lines.append(f"| {r['attention']} | {r['P']} | {r['sigma2']} | {name} | {hp['mean']:.4f} ± {hp['mcse']:.4f} "
                         f"| {sp['mean']:.4f} ± {sp['mcse']:.4f} | {hp['rhat']:.3f} / {sp['rhat']:.3f} "
                         f"| {hp['ess_bulk']:.0f} / {sp['ess_bulk']:.0f} "
                         f"| {hp['ess_per_s']:.2f} / {sp['ess_per_s']:.3f} "
                         f"| {hp['ess_per_s'] / sp['ess_per_s']:.1f}× | {h['ms_per_gradient_per_chain']:.3f} / "
                         f"{s['ms_per_gradient_per_chain']:.3f} |")
    print("\n".join(lines))
    if a.md:
        cpu = cpu_name()
        head = ["# HMC on the collapsed posterior against SGLD: ESS per CPU-second",
                "",
                f"Written by `python benchmarks/bench_hmc.py --points {a.points} --chains {a.chains} --md {a.md}` "
                f"({stamp()}). {a.chains} chains per sampler on ONE training set (dataset seed "
                f"{a.seed}) from independent prior draws; R̂ (rank split-R̂) and bulk ESS across those chains "
                f"(ArviZ); ESS/s over the CPU time of the whole batch, HMC's warm-up included.",
                "",
                f"- HMC: {a.chains} × {HMC['steps']} iterations ({HMC['burn_in']} warm-up), {HMC['n_leapfrog']} leapfrog "
                f"steps, target acceptance {HMC['target_accept']}; acceptance after warm-up "
                + "; ".join(f"{r['attention']} P={r['P']}: " + ", ".join(f"{x:.2f}" for x in r["hmc"]["extra"]["accept_rate"])
                            for r in rows) + "; divergent after warm-up: "
                + ", ".join(str(sum(r["hmc"]["extra"]["n_divergent"])) for r in rows) + ".",
                f"- SGLD: the converged study's recipe, {SGLD['steps']} steps (burn-in {SGLD['burn_in']}, thin "
                f"{SGLD['thin']}), η = {SGLD['eta']} scaled by σ² as the recipe does.",
                "- ms/grad: CPU milliseconds per gradient evaluation per chain (HMC: n_leapfrog per iteration).",
                ""]
        write_benchmark_page(Path(a.md), head + lines, "bench_hmc",
                             {"points": a.points, "chains": a.chains, "seed": a.seed, "cpu": cpu,
                              "hmc_recipe": HMC, "sgld_recipe": SGLD})
    return 0


if __name__ == "__main__":
    sys.exit(main())
