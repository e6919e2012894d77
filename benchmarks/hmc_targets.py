"""Issue 27's mixing target on a finished sweep: per (attention, P), the convergence of the HMC reference
chains judged per training set (never across seeds), against bulk ESS ≥ 400 and split-R̂ ≤ 1.01.

    python benchmarks/hmc_targets.py results/aggregate/linear.nc results/aggregate/softmax.nc \
        [--config config.yaml] [--ess 400] [--rhat 1.01] [--md docs/benchmarks/hmc_targets.md]

For every training set (seed) of a point, its prior-started (``hmc``) and copy-started (``hmc_copy``)
chains together: rank split-R̂ and bulk ESS (ArviZ) of each plotted order parameter (ĉ1, ĉG linear; âG
softmax) over those two chains. A point meets the target when every training set does, for every
parameter. A training set whose two chains sit on different branches (their means differ by more than
``--split`` pooled within-chain standard deviations: the chains do not overlap) is *metastable*: no
finite chain pair mixes there by construction (docs/benchmarks/metastability.md), and the target is
stated for the other points. The pairs are those of ``copyhead.analysis.convergence.convergence_table``
(the rows the results page reports as "per dataset").
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from copyhead import config as cfgmod  # noqa: E402
from copyhead.analysis.convergence import ess_bulk, seed_pairs, split_rhat  # noqa: E402
from copyhead.analysis.experiments import recipes, swept_P  # noqa: E402
from copyhead.provenance import read_dataset  # noqa: E402


def point_rows(ag, attention: str, prior: str, copy: str, split: float) -> list[dict]:
    """One row per (P, training set, parameter) with the two chains' R̂, ESS, means and whether they
    sit on different branches."""
    rows = []
    for P in sorted(set(swept_P(ag, prior)) & set(swept_P(ag, copy))):
        for seed, two in seed_pairs(ag, attention, prior, copy, P).items():
            for k, pair in two.items():
                x, y = pair
                sd = float(np.sqrt(0.5 * (x.var() + y.var())))
                rows.append({"attention": attention, "P": float(P), "seed": seed, "param": k, "draws": len(x),
                             "rhat": split_rhat(pair), "ess": ess_bulk(pair),
                             "mean_prior": float(x.mean()), "mean_copy": float(y.mean()),
                             "split": bool(abs(x.mean() - y.mean()) > split * max(sd, 1e-300))})
    return rows


def summarise(rows: list[dict], ess_min: float, rhat_max: float) -> list[dict]:
    """Per (attention, P), in the order of ``rows``: the metastable training sets, the smallest ESS and
    largest R̂ over the others (NaN if none), whether the target holds on all of them (``met``), the
    number of training sets, the fewest draws per chain and the worst row (smallest ESS)."""
    points = {}
    for r in rows:
        points.setdefault((r["attention"], r["P"]), []).append(r)
    out = []
    for (att, P), rs in points.items():
        meta = sorted({r["seed"] for r in rs if r["split"]})
        rest = [r for r in rs if r["seed"] not in meta]
        ess = min((r["ess"] for r in rest), default=float("nan"))
        rhat = max((r["rhat"] for r in rest), default=float("nan"))
        out.append({"attention": att, "P": P, "metastable": meta, "ess": ess, "rhat": rhat,
                    "met": bool(rest) and bool(ess >= ess_min and rhat <= rhat_max),
                    "n_sets": len({r["seed"] for r in rs}), "draws": min(r["draws"] for r in rs),
                    "worst": min(rs, key=lambda r: r["ess"])})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("aggregates", nargs="+", help="aggregate netCDF files (copyhead aggregate)")
    ap.add_argument("--config", default=str(ROOT / "config.yaml"), help="the sweep's config (its recipes)")
    ap.add_argument("--prior", default="hmc")
    ap.add_argument("--copy", default="hmc_copy")
    ap.add_argument("--ess", type=float, default=400.0)
    ap.add_argument("--rhat", type=float, default=1.01)
    ap.add_argument("--split", type=float, default=4.0, help="branch separation in within-chain sds")
    ap.add_argument("--md", help="also write the tables as a markdown page")
    a = ap.parse_args(argv)
    cfg = cfgmod.validate(cfgmod.load(a.config))
    rows, made = [], []
    for path in a.aggregates:
        ag = read_dataset(path)
        made.append(f"`{path}` (code {ag.attrs.get('code_version', '?')}, config hash {ag.attrs.get('config_hash', '?')})")
        att = str(ag.attrs.get("attention", ""))
        recs = recipes(ag, cfg)
        for r in (a.prior, a.copy):
            if r not in recs:
                ap.error(f"{path}: no recipe {r!r} in the aggregate (it has {sorted(recs)})")
        rows += point_rows(ag, att, a.prior, a.copy, a.split)
    if not rows:
        ap.error("no training set has both a prior- and a copy-started chain")
    points = summarise(rows, a.ess, a.rhat)
    table = ["| attention | P | training sets | draws per chain | smallest ESS | largest R̂ | metastable sets | "
             "target met | worst set (param: prior / copy mean) |", "|---|---|---|---|---|---|---|---|---|"]
    for p in points:
        w = p["worst"]
        table.append(f"| {p['attention']} | {p['P']:g} | {p['n_sets']} | {p['draws']} | {p['ess']:.0f} "
                     f"| {p['rhat']:.4f} | {', '.join(map(str, p['metastable'])) or '–'} | {'yes' if p['met'] else '**no**'} "
                     f"| seed {w['seed']} ({w['param']}: {w['mean_prior']:.4f} / {w['mean_copy']:.4f}, "
                     f"ESS {w['ess']:.0f}, R̂ {w['rhat']:.3f}) |")
    stable = [p for p in points if not p["metastable"]]
    answer = (f"{sum(p['met'] for p in stable)} of {len(stable)} points without a metastable training set meet bulk "
              f"ESS ≥ {a.ess:g} and split-R̂ ≤ {a.rhat} on every training set (smallest ESS and largest R̂ over the "
              f"non-metastable training sets and the parameters {', '.join(sorted({r['param'] for r in rows}))}); "
              f"{len(points) - len(stable)} point(s) have a metastable training set.")
    print(answer)
    print("\n".join(table))
    if a.md:
        from common import stamp, write_benchmark_page
        cmd = " ".join(["python benchmarks/hmc_targets.py", *a.aggregates, "--config", a.config, "--md", a.md])
        head = ["# HMC reference chains against issue 27's mixing target (per training set)", "",
                f"Written by `{cmd}` ({stamp()}). Per training set its prior-started (`{a.prior}`) and copy-started "
                f"(`{a.copy}`) chains together: rank split-R̂ and bulk ESS across those two chains (never across "
                f"seeds). Metastable: the two chains' means differ by more than {a.split:g} pooled within-chain "
                "standard deviations (different branches; left out of the target, named). The aggregates: "
                + ", ".join(made) + ".", "",
                "**Answer.** " + answer, ""]
        write_benchmark_page(Path(a.md), head + table, "benchmark_hmc_targets",
                             {"aggregates": a.aggregates, "ess": a.ess, "rhat": a.rhat, "split": a.split})
    return 0


if __name__ == "__main__":
    sys.exit(main())
