"""How far the stored-number tests' results move between BLAS kernels (the numbers behind the comments in
tests/stored.py): the pinned theory numbers (max relative deviation), the golden Adam runs (max deviation
over each variable's largest magnitude) and the softmax jump estimate of the results tables. Run by
benchmarks/cross_kernel.sh under each kernel; by hand: python benchmarks/stored_deviations.py"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import test_theory_pinned as tp
from copyhead.config import theory_params
from copyhead.theory.output import compute_theory
dev = 0.0
for att in ("linear", "softmax"):
    ds = compute_theory(theory_params(tp.pinned_cfg()), att, log=lambda *a: None)
    for k, want in tp.PINNED[att].items():
        got, want = np.atleast_1d(ds[k].values).astype(float), np.atleast_1d(want).astype(float)
        ok = ~np.isnan(want)
        if ok.any():
            dev = max(dev, float(np.max(np.abs(got[ok] - want[ok]) / np.maximum(np.abs(want[ok]), 1e-300))))
print(f"theory pinned: max relative deviation {dev:.3g}")
import test_golden as tg
from copyhead import config as cfgmod
from copyhead.run import train_run
import pathlib
import tempfile
gdev = 0.0
for name, args in tg.RUNS.items():
    cfg = cfgmod.load(tg.ROOT / "config.yaml"); cfg["numerics"]["device"] = "cpu"
    with tempfile.TemporaryDirectory() as d:
        ds = train_run(cfgmod.run_config(cfg, *args), pathlib.Path(d) / "r.nc", log=lambda l: None)
    for k in [k.split("/", 1)[1] for k in tg.GOLDEN.files if k.startswith(name + "/")]:
        old, new = tg.GOLDEN[f"{name}/{k}"].astype(float), ds[k].values.astype(float)
        ok = ~np.isnan(old)
        if ok.any():
            gdev = max(gdev, float(np.max(np.abs(old[ok] - new[ok])) / max(np.max(np.abs(old[ok])), 1e-300)))
print(f"golden Adam runs: max deviation / largest magnitude {gdev:.3g}")
import test_results as tr
from copyhead.analysis.results_tables import build_tables, jsonable
ag_s, _ = tr.hysteresis_sweep(n_draws=60)
ag, th, same = tr.known_posterior(n_seeds=4, n_draws=100)
th_s = tr.fake_theory("softmax", np.geomspace(2, 200, 100), {"saddle": (lambda P: 1 - P / 300, lambda P: P / 300), "mean": (lambda P: 1 - P / 300, lambda P: P / 300)}, scalars={"P_star": 18.0, "P_spinodal_low": 11.0, "P_spinodal_high": 22.0})
new = jsonable(build_tables({"aggregate_linear": ag, "theory_linear": th, "datasets_linear": same, "aggregate_softmax": ag_s, "theory_softmax": th_s}, n_boot=50))
print(f'results tables: softmax jump estimate {new["attentions"]["softmax"]["transitions"][0]["estimate"]:.9f}')
