"""Benchmark of the theory (run: ``python benchmarks/bench_theory.py [--config config.yaml] [--skip-write]``).

Prints, on one CPU thread (BLAS threads pinned to 1 before numpy is imported):
1. the closed-form prediction curve over 200 P values with transitions (copyhead.theory.scan.analyse),
   per attention type and prior (aim: < 2 s);
2. the exact dataset-averaged curve for one setting (the config's ``theory.exact``: n_datasets nested
   datasets, transitions on every integer P in [min P, max P]), per attention type (aim: < 2 min);
3. the wall time of ``write_theory`` on the config, per attention type (what the workflow runs).
"""
from __future__ import annotations

import os

for _k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_k] = "1"

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from copyhead.config import load, theory_config, theory_params  # noqa: E402
from copyhead.theory.action import ExactAverage  # noqa: E402
from copyhead.theory.output import write_theory  # noqa: E402
from copyhead.theory.ranges import exact_P_grid, make_model  # noqa: E402
from copyhead.theory.scan import analyse  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "config.yaml"))
    ap.add_argument("--skip-write", action="store_true")
    a = ap.parse_args(argv)
    tc = theory_config(load(a.config))
    th = theory_params(tc)
    grid_n = th.grid_n
    P = np.geomspace(th.P_min, th.P_max, 200)
    q = th.action
    print(f"V={q.V} L={q.L} d_k={q.d_k} sigma2={q.sigma2} grid_n={grid_n}")
    for att in ("linear", "softmax"):
        for prior in ("large_deviation", "gaussian"):
            p = q.replace(prior=prior)
            t = time.perf_counter()
            model = make_model(att, p, grid_n, P[-1])
            _, _, tr = analyse(model, P)
            dt = time.perf_counter() - t
            print(f"closed form, {att:7s} {prior:15s}: 200 P + transitions in {dt:6.2f} s  "
                  f"(P_onset={tr['P_onset']:.3g}, P_crossover={tr['P_crossover']:.3g}, P*={tr['P_star']:.3g})")
    ex = th.exact
    if ex.enabled:
        Pg = exact_P_grid(ex.P)
        for att in ("linear", "softmax"):
            t = time.perf_counter()
            exact = ExactAverage(q, ex.n_datasets, max(ex.P), ex.seed)
            model = make_model(att, q, grid_n, max(P[-1], max(ex.P)), exact=exact)
            _, _, tr = analyse(model, Pg, continuous=False)
            dt = time.perf_counter() - t
            print(f"exact average, {att:7s}: {ex.n_datasets} datasets x {len(Pg)} integer P in {dt:6.2f} s "
                  f"(P_onset={tr['P_onset']:.3g}, P*={tr['P_star']:.3g})")
    if not a.skip_write:
        with tempfile.TemporaryDirectory() as d:
            for att in ("linear", "softmax"):
                t = time.perf_counter()
                write_theory(tc, att, Path(d) / f"{att}.nc")
                print(f"write_theory {att:7s} (default config, everything): {time.perf_counter() - t:6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
