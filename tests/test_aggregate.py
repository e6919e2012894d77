"""Aggregation of real (tiny) runs: grid layout, seed statistics, refusal of bad inputs."""
import json
from pathlib import Path

import numpy as np
import pytest

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


def _rewrite(src: Path, dest: Path, drop=(), **attrs) -> Path:
    """A copy of a run file without some variables and/or with changed attributes (as older or other
    code would have written it)."""
    from copyhead.provenance import write_dataset
    ds = read_dataset(src)
    a = dict(ds.attrs, **attrs)
    ds = ds.drop_vars(list(drop))
    ds.attrs = a
    return write_dataset(ds, dest)


def test_run_lacking_a_variable_does_not_blank_the_others(runs, tmp_path):
    """A run file without one variable (written by older code) keeps its other values and its ok status;
    the missing variable is NaN for it alone and named in a warning (a combine_by_coords(compat="override")
    would blank every value of that run while it still counted as ok)."""
    old = _rewrite(runs[0], tmp_path / "old.nc", drop=("coverage_ratio",))
    for order in ([old, runs[1]], [runs[1], old]):
        with pytest.warns(UserWarning, match="coverage_ratio"):
            ag = aggregate_datasets(order, "linear")
        for p, seed in ((runs[0], 0), (runs[1], 1)):
            r = read_dataset(p)
            for v in ("c1", "cG", "test_loss_final"):
                assert float(ag[v].sel(optimizer="adam", P=4, seed=seed)) == pytest.approx(float(r[v])), (v, seed)
            assert np.allclose(ag["test_loss"].sel(optimizer="adam", P=4, seed=seed).dropna("step"), r["test_loss"])
        # the missing value is NaN, counted, and the seed statistics use the one run that has it
        assert np.isnan(float(ag["coverage_ratio"].sel(optimizer="adam", P=4, seed=0)))
        assert ag["coverage_ratio"].attrs["n_missing"] == 1 and ag.attrs["n_missing_values"] == 1
        assert json.loads(ag.attrs["missing_json"]) == {"coverage_ratio": 1}
        assert float(ag["coverage_ratio_mean"].sel(optimizer="adam", P=4)) == pytest.approx(
            float(read_dataset(runs[1])["coverage_ratio"]))
        assert np.isnan(float(ag["coverage_ratio_sem"].sel(optimizer="adam", P=4)))   # one value: no error bar
        assert (ag["status"].sel(optimizer="adam", P=4, seed=[0, 1]) == "ok").all()


def test_consistent_runs_report_nothing_missing(runs):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag = aggregate_datasets(runs, "linear")
    assert ag.attrs["n_missing_values"] == 0 and ag.attrs["mixed_code"] == 0
    assert set(ag["run_code_fingerprint"].values.ravel()) == {read_dataset(runs[0]).attrs["code_fingerprint"]}


def test_runs_of_mixed_code_are_flagged_or_refused(runs, tmp_path):
    from copyhead.aggregate import AggregateError
    other = _rewrite(runs[0], tmp_path / "other.nc", code_fingerprint="0123456789abcdef")
    with pytest.warns(UserWarning, match="different training code"):
        ag = aggregate_datasets([other, *runs[1:]], "linear")
    assert ag.attrs["mixed_code"] == 1 and "0123456789abcdef" in ag.attrs["run_code_fingerprints"]
    with pytest.raises(AggregateError, match="0123456789abcdef"):
        aggregate_datasets([other, *runs[1:]], "linear", strict=True)


def test_a_method_s_own_variables_are_not_missing_from_other_methods(runs, tmp_path):
    """HMC runs record their acceptance rate; the Adam runs beside them do not have it and are not
    counted as missing it (only a run lacking what another run of its own recipe has is)."""
    import warnings as w
    from copyhead.provenance import write_dataset
    ds = read_dataset(runs[0])
    ds.attrs = dict(ds.attrs, optimizer="hmc")
    ds["hmc_accept_rate"] = ((), 0.7)
    hmc = write_dataset(ds, tmp_path / "hmc.nc")
    with w.catch_warnings():
        w.simplefilter("error")
        ag = aggregate_datasets([*runs, hmc], "linear")
    assert "n_missing" not in ag["hmc_accept_rate"].attrs and ag.attrs["n_missing_values"] == 0
    assert float(ag["hmc_accept_rate"].sel(optimizer="hmc", P=4, seed=0)) == 0.7
    assert np.isnan(ag["hmc_accept_rate"].sel(optimizer="adam").values).all()
