"""Timing of the one-loop posterior means at the finite-size study's points. The computation lives in
research.one_loop (the points: research.one_loop.points) and is rendered by workflow/one_loop.smk
(docs/one_loop.md); this script only times posterior_means per point and prints the predicted shift next to
the measured gap.

    python src/research/benchmarks/one_loop_gaps.py [--study finite_size] [--ratios 1.35 2] [--x 16 64] [--coarse 11]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import time

from research.one_loop.points import study_points
from copyhead.config import load_yaml
from research.one_loop import posterior as lp

ROOT = pathlib.Path(__file__).resolve().parents[3]   # the checkout


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--study", default="finite_size", choices=["finite_size", "finite_L"])
    ap.add_argument("--ratios", type=float, nargs="+", default=[1.35])
    ap.add_argument("--x", type=int, nargs="+", default=None, help="sizes (d_k or L); default all")
    ap.add_argument("--coarse", type=int, default=lp.SETTINGS["coarse"])
    a = ap.parse_args(argv)
    studies = json.loads((ROOT / "docs/studies/studies.json").read_text())
    params, points = study_points(studies, a.study, load_yaml(ROOT / "config/studies/base.yaml"))
    for ratio in a.ratios:
        for x in a.x or sorted(params):
            q = points[(ratio, x, "cG")]
            t0 = time.perf_counter()
            r = lp.posterior_means(params[x], q["P"], a.coarse, lp.SETTINGS["fine"])
            dt = time.perf_counter() - t0
            print(f"ratio {ratio} x {x} P {q['P']:g}: cG shift {r['one_loop']['cG'] - r['none']['cG']:+.4f}, "
                  f"measured gap {q['gap']:+.4f} ± {q['error']:.4f}; {dt:.2f} s ({a.coarse}² sub-grid)")


if __name__ == "__main__":
    main()
