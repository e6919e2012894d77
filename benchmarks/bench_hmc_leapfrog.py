"""The HMC trajectory length: bulk ESS per CPU-second against the number of leapfrog steps per iteration,
at a fixed budget of gradients per chain (issue 27: the reference chains must reach bulk ESS ≥ 400 per
training set at an affordable cost).

    python benchmarks/bench_hmc_leapfrog.py [--leapfrog 4 6 8 12 16] [--points default|all]
                                            [--grads 19200] [--md docs/benchmarks/hmc_leapfrog.md]

Per point (attention, P, σ², dataset seed 0) and per number of leapfrog steps n, ``--chains`` HMC chains on
ONE training set from independent prior draws (the same draws and streams for every n), as one batch on
one thread, with the recipe of benchmarks/bench_hmc.py except n_leapfrog = n and ``--grads / n``
iterations, of which one sixth warm-up (step size adapted per chain towards acceptance 0.7, then fixed).
So every n spends the same number of gradients and keeps the same share of warm-up. Reported per order
parameter (ĉ1, ĉG linear; âG = mP/L softmax): split-R̂ and bulk ESS across the chains (ArviZ), ESS per
CPU-second of the whole batch (warm-up included), the acceptance after warm-up and the adapted step size.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_hmc import HMC, one  # noqa: E402
from common import stamp, write_benchmark_page  # noqa: E402

POINTS = {"default": [("linear", 16, 0.1), ("softmax", 24, 0.1)],
          "all": [("linear", 8, 0.1), ("linear", 16, 0.1), ("linear", 32, 0.1), ("linear", 300, 1.0),
                  ("softmax", 20, 0.1), ("softmax", 24, 0.1), ("softmax", 48, 0.1), ("softmax", 300, 1.0)]}


def recipe(n_leapfrog: int, grads: int) -> dict:
    """The benchmark's HMC recipe with ``n_leapfrog`` steps and ``grads // n_leapfrog`` iterations."""
    steps = grads // n_leapfrog
    return {**HMC, "n_leapfrog": n_leapfrog, "steps": steps, "burn_in": steps // 6}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leapfrog", type=int, nargs="+", default=[4, 6, 8, 12, 16])
    ap.add_argument("--points", choices=sorted(POINTS), default="default")
    ap.add_argument("--grads", type=int, default=19200, help="gradients per chain (iterations × leapfrog steps)")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--out", default=str(ROOT / "results/benchmarks/hmc_leapfrog.json"))
    ap.add_argument("--md", help="also write the tables as a markdown page (e.g. docs/benchmarks/hmc_leapfrog.md)")
    ap.add_argument("--render", metavar="JSON", help="no runs: render the tables (and --md) from a JSON file this "
                                                      "script wrote, with that measurement's stamp and options")
    a = ap.parse_args(argv)
    if a.render:
        saved = json.loads(Path(a.render).read_text())
        a.leapfrog, a.points, a.grads, a.chains = (saved["options"][k] for k in ("leapfrog", "points", "grads", "chains"))
        return render(saved["rows"], a, saved["stamp"])
    if any(n < 1 for n in a.leapfrog) or a.grads < 6 * max(a.leapfrog) or a.chains < 2:
        ap.error("--leapfrog values must be ≥ 1, --grads at least 6 × the largest, --chains ≥ 2")
    torch.set_num_threads(1)
    when = stamp()
    rows = []
    for attention, P, sigma2 in POINTS[a.points]:
        for n in a.leapfrog:
            r = one(attention, P, sigma2, "hmc", 0, a.chains, None, hmc=recipe(n, a.grads))
            rows.append({"attention": attention, "P": P, "sigma2": sigma2, "n_leapfrog": n, **r})
            print(f"done {attention} P={P} σ²={sigma2} n_leapfrog={n}: "
                  + ", ".join(f"{k} ESS {v['ess_bulk']:.0f}" for k, v in r.items() if isinstance(v, dict) and "ess_bulk" in v),
                  flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"base_recipe": HMC, "grads": a.grads, "rows": rows, "stamp": when,
                                       "options": {k: getattr(a, k) for k in ("leapfrog", "points", "grads", "chains")},
                                       "torch": torch.__version__}, indent=1))
    return render(rows, a, when)


def render(rows: list[dict], a, when: str) -> int:
    """Print the tables of ``rows`` and, with ``a.md``, write them as the benchmark page."""
    lines = ["| attention | P | σ² | param | n_leapfrog | iterations | R̂ | bulk ESS | ESS/s | acceptance | step size | mean |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    best = {}
    for r in rows:
        x = r["extra"]
        for name in [k for k in r if isinstance(r[k], dict) and "ess_bulk" in r[k]]:
            p = r[name]
            key = (r["attention"], r["P"], r["sigma2"], name)
            best[key] = max(best.get(key, (0, 0)), (p["ess_per_s"], r["n_leapfrog"]))
            lines.append(f"| {r['attention']} | {r['P']} | {r['sigma2']} | {name} | {r['n_leapfrog']} "
                         f"| {a.grads // r['n_leapfrog']} | {p['rhat']:.3f} | {p['ess_bulk']:.0f} | {p['ess_per_s']:.1f} "
                         f"| {min(x['accept_rate']):.2f}–{max(x['accept_rate']):.2f} "
                         f"| {min(x['step_size']):.3g}–{max(x['step_size']):.3g} | {p['mean']:.4f} |")
    summary = ["| attention | P | σ² | param | fastest n_leapfrog | its ESS/s | ESS/s at " + ", ".join(f"n = {n}" for n in a.leapfrog) + " |",
               "|---|---|---|---|---|---|" + "---|"]
    ratio = {n: [] for n in a.leapfrog}     # per n: its ESS/s over the fastest n's, per (point, param)
    for key, (rate, n) in best.items():
        per_n = {r["n_leapfrog"]: r[key[3]]["ess_per_s"] for r in rows
                 if (r["attention"], r["P"], r["sigma2"]) == key[:3]}
        summary.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {n} | {rate:.1f} | "
                       + ", ".join(f"{per_n[m]:.1f}" for m in a.leapfrog) + " |")
        for m, x in per_n.items():
            ratio[m].append(x / rate)
    geo = {n: math.exp(sum(math.log(max(x, 1e-12)) for x in v) / len(v)) for n, v in ratio.items() if v}
    verdict = ("Over the " + str(len(best)) + " (point, parameter) rows, ESS/s as a share of the fastest n_leapfrog's "
               "(geometric mean, smallest): " + "; ".join(f"n = {n}: {geo[n]:.0%} ({min(ratio[n]):.0%})" for n in geo) + ".")
    print("\n".join([verdict, ""] + summary + [""] + lines))
    if a.md:
        head = ["# HMC trajectory length: bulk ESS per CPU-second against the leapfrog steps per iteration", "",
                f"Written by `python benchmarks/bench_hmc_leapfrog.py --leapfrog {' '.join(map(str, a.leapfrog))} "
                f"--points {a.points} --grads {a.grads} --chains {a.chains} --md {a.md}` ({when}). "
                f"{a.chains} HMC chains on ONE training set (dataset seed 0) from independent prior draws, the same "
                f"draws and streams for every n_leapfrog; {a.grads} gradients per chain for every n_leapfrog "
                f"(iterations = {a.grads}/n, one sixth of them warm-up), jittered step (×U[0.8, 1.2]) adapted "
                f"per chain during warm-up towards acceptance {HMC['target_accept']}; R̂ (rank split-R̂) and bulk "
                "ESS across the chains (ArviZ); ESS/s over the CPU time of the whole batch, warm-up included. "
                "Acceptance and step size: range over the chains, after warm-up.", "",
                "## Answer: the fastest number of leapfrog steps per point", "", verdict, ""]
        write_benchmark_page(Path(a.md), head + summary + ["", "## Every run", ""] + lines,
                             "benchmark_hmc_leapfrog", {"leapfrog": a.leapfrog, "points": a.points,
                                                        "grads": a.grads, "chains": a.chains})
    return 0


if __name__ == "__main__":
    sys.exit(main())
