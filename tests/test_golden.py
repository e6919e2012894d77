"""Default-config run files are unchanged by the refactors: three Adam runs of config.yaml trained now
match, number for number, the files written by the engine before the batched rewrite (commit 1c930f5;
tests/data/golden_runs_1c930f5.npz holds every data variable of those files). SGLD runs are not pinned
here: their noise streams changed on purpose (per chain and per initialisation kind, docs/engine.md)."""
from pathlib import Path

import numpy as np
import pytest

from copyhead import config as cfgmod
from copyhead.run import train_run

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = np.load(ROOT / "tests/data/golden_runs_1c930f5.npz")
RUNS = {"linear_adam_P8_s0": ("linear", "adam", 8, 0), "softmax_adam_P8_s1": ("softmax", "adam", 8, 1),
        "linear_adam_map_P12_s2": ("linear", "adam_map", 12, 2)}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_default_adam_run_is_unchanged(tmp_path, name):
    cfg = cfgmod.load(ROOT / "config.yaml")
    cfg["numerics"]["device"] = "cpu"
    ds = train_run(cfgmod.run_config(cfg, *RUNS[name]), tmp_path / "r.nc", log=lambda line: None)
    keys = [k.split("/", 1)[1] for k in GOLDEN.files if k.startswith(name + "/")]
    assert len(keys) > 20
    for v in keys:
        old, new = GOLDEN[f"{name}/{v}"], ds[v].values.astype(np.float64)
        assert old.shape == new.shape, v
        assert np.array_equal(old, new, equal_nan=True), (v, np.nanmax(np.abs(old - new)))
