"""Aggregation of real (tiny) runs: grid layout, seed statistics, refusal of bad inputs."""
from pathlib import Path

import numpy as np
import pytest
import yaml

from copyhead import config as c
from copyhead.aggregate import aggregate_datasets, aggregate_runs
from copyhead.provenance import DataFileError, read_dataset
from copyhead.run import train_run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cfg = c.load(ROOT / "tests/configs/tiny.yaml")
    d = tmp_path_factory.mktemp("runs")
    paths = []
    for P in (4, 8):
        for seed in (0, 1, 2):
            p = d / f"adam_P{P}_s{seed}.nc"
            train_run(c.run_config(cfg, "linear", "adam", P, seed), p)
            paths.append(p)
    return paths


def test_grid_and_seed_statistics(runs, tmp_path):
    ds = aggregate_runs(runs, tmp_path / "agg.nc", "linear")
    assert ds.sizes["P"] == 2 and ds.sizes["seed"] == 3 and list(ds["optimizer"].values) == ["adam"]
    # mean and sem over seeds, checked against numpy on the run files themselves
    for P in (4, 8):
        vals = np.array([float(read_dataset(p)["cG"]) for p in runs if f"_P{P}_" in p.name])
        assert float(ds["cG_mean"].sel(optimizer="adam", P=P)) == pytest.approx(vals.mean())
        assert float(ds["cG_sem"].sel(optimizer="adam", P=P)) == pytest.approx(vals.std(ddof=1) / np.sqrt(3))
    assert (read_dataset(tmp_path / "agg.nc")["status"] == "ok").all()


def test_corrupted_run_is_named(runs, tmp_path):
    bad = tmp_path / "bad.nc"
    bad.write_bytes(runs[0].read_bytes()[:300])
    with pytest.raises(DataFileError, match="bad.nc"):
        aggregate_datasets([*runs[1:], bad], "linear")
    assert not (tmp_path / "agg.nc").exists()


def test_duplicate_run_refused(runs, tmp_path):
    dup = tmp_path / "dup.nc"
    dup.write_bytes(runs[0].read_bytes())
    with pytest.raises(ValueError, match="two run files"):
        aggregate_datasets([*runs, dup], "linear")


def test_wrong_attention_refused(runs):
    with pytest.raises(ValueError, match="expected 'softmax'"):
        aggregate_datasets(runs, "softmax")


def test_summary_table_reports_seed_means(runs, tmp_path):
    from copyhead.aggregate import summary_table
    ds = aggregate_runs(runs, tmp_path / "agg.nc", "linear")
    text = summary_table(read_dataset(tmp_path / "agg.nc"))
    rows = [line.split() for line in text.splitlines() if line.startswith("adam")]
    assert [int(r[1]) for r in rows] == [4, 8] and all(int(r[2]) == 3 for r in rows)
    assert float(rows[1][6]) == pytest.approx(float(ds["cG_mean"].sel(optimizer="adam", P=8)), abs=1e-3)
