"""One run end to end: file layout, determinism, checkpoint resume, divergence, atomic write, CLI."""
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from copyhead import cli
from copyhead import config as cfgmod
from copyhead.provenance import read_dataset
from copyhead.run import Interrupted, checkpoint_path, train_run

REPO = Path(__file__).resolve().parents[1]

STEP_VARS = ["train_loss", "test_loss", "c1_step", "cG_step", "m1_step", "mP_step", "energy"]
SAMPLE_VARS = ["c1_sample", "cG_sample", "m1_sample", "mP_sample", "coverage_ratio_sample",
               "coverage_cosine_sample", "test_loss_sample"]
SCALARS = ["c1", "cG", "m1", "mP", "coverage_ratio", "coverage_cosine", "train_loss_final",
           "test_loss_final", "c1_sd", "cG_sd", "m1_sd", "mP_sd", "coverage_ratio_sd", "coverage_cosine_sd"]


def tiny_config() -> dict:
    """config/dk_equals_L.yaml (it has every kind of recipe, sgld_copy and adam_map included) cut to seconds."""
    cfg = yaml.safe_load((REPO / "config/dk_equals_L.yaml").read_text())
    cfg["task"] = {"V": 4, "L": 6, "n_test": 16}
    cfg["model"].update(d_k=6)
    cfg["numerics"] = {"dtype": "float64", "device": "cpu"}
    for name, rec in cfg["optimizers"].items():
        rec["steps"] = 120
        rec["log_points"] = 8
        if rec["method"] == "sgld":
            rec.update(burn_in=60, thin=10, checkpoint_every=20)
        if rec["method"] == "hmc":   # warm-up and thinning fit the 120 iterations, whatever config.yaml runs
            rec.update(burn_in=100, thin=4, checkpoint_every=100)
    return cfgmod.validate(cfg)


def run_cfg(att="softmax", opt="sgld", P=8, seed=0, **recipe):
    rc = cfgmod.run_config(tiny_config(), att, opt, P, seed)
    rc["recipe"].update(recipe)
    return rc


def data_equal(a: xr.Dataset, b: xr.Dataset) -> bool:
    a, b = a.copy(), b.copy()
    a.attrs, b.attrs = {}, {}
    return a.identical(b)


@pytest.mark.parametrize("att,opt", [("linear", "adam"), ("softmax", "sgld")])
def test_layout(tmp_path, att, opt):
    out = tmp_path / "r.nc"
    ds = train_run(run_cfg(att, opt), out)
    f = read_dataset(out)
    assert data_equal(ds, f)
    n_samp = 1 if opt == "adam" else 6
    assert dict(f.sizes) == {"step": 8, "sample": n_samp, "query": 6, "key": 6}
    assert f.step.values[0] == 0 and f.step.values[-1] == 120
    for v in STEP_VARS:
        assert f[v].dims == ("step",) and np.all(np.isfinite(f[v]))
    for v in SAMPLE_VARS:
        assert f[v].dims == ("sample",)
    for v in SCALARS:
        assert f[v].dims == ()
    for v in ("attention", "scores"):
        assert f[v].dims == ("query", "key")
    assert str(f.status.values) == "ok" and f.attrs["status"] == "ok" and f.attrs["diverged_step"] == -1
    for v in f.variables:
        assert "long_name" in f[v].attrs and "units" in f[v].attrs, v
    for k in ("device", "dtype", "start_time", "end_time", "wall_time_s", "attention", "optimizer",
              "method", "P", "seed", "torch_version", "config_json", "config_hash"):
        assert k in f.attrs, k
    # the scalars are the sample means of the per-sample values; attention gives them back
    assert float(f.cG) == pytest.approx(float(f.cG_sample.mean()))
    from copyhead import order_params as op
    assert float(f.c1) == pytest.approx(float(op.pooling(f.attention.values)))
    if opt == "adam":
        assert float(f.cG_sd) == 0.0
        assert float(f.test_loss_final) == pytest.approx(float(f.test_loss[-1]))
    if att == "linear":
        assert float(f.c1) >= 0
    assert not checkpoint_path(out).exists()


def test_determinism_and_seed_dependence(tmp_path):
    a = train_run(run_cfg(), tmp_path / "a.nc")
    b = train_run(run_cfg(), tmp_path / "b.nc")
    c = train_run(run_cfg(seed=1), tmp_path / "c.nc")
    assert data_equal(a, b)
    assert not np.array_equal(a.cG_sample.values, c.cG_sample.values)


@pytest.mark.parametrize("att,opt", [("linear", "sgld"), ("softmax", "adam")])
def test_checkpoint_resume_bit_identical(tmp_path, att, opt):
    rc = run_cfg(att, opt, checkpoint_every=20)
    ref = train_run(rc, tmp_path / "ref.nc")
    out = tmp_path / "res.nc"
    with pytest.raises(Interrupted):
        train_run(rc, out, _stop_after=80)
    assert checkpoint_path(out).exists() and not out.exists()
    res = train_run(rc, out)
    assert data_equal(ref, res)
    assert not checkpoint_path(out).exists()


def test_stale_checkpoint_of_other_config_is_ignored(tmp_path):
    out = tmp_path / "r.nc"
    with pytest.raises(Interrupted):
        train_run(run_cfg(seed=1), out, _stop_after=40)
    res = train_run(run_cfg(seed=0), out)
    assert data_equal(res, train_run(run_cfg(seed=0), tmp_path / "ref.nc"))


def test_divergence_via_cli(tmp_path):
    cfg = tiny_config()
    cfg["optimizers"]["sgld"]["eta"] = 5.0
    cfg_path = tmp_path / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "runs" / "d.nc"
    out.parent.mkdir()                     # copyhead writes into an existing folder (it never makes an --out's)
    rc = cli.main(["train", "--config", str(cfg_path), "--attention", "linear", "--optimizer", "sgld",
                   "--P", "8", "--seed", "0", "--out", str(out)])
    assert rc == 0
    f = read_dataset(out)
    assert str(f.status.values) == "diverged" and f.attrs["status"] == "diverged"
    d = int(f.attrs["diverged_step"])
    assert 0 < d <= 120
    # recorded before divergence, NaN after
    assert np.isfinite(f.train_loss.values[0])
    assert np.all(np.isnan(f.train_loss.values[f.step.values > d]))
    assert np.isnan(float(f.cG))


def test_injected_nan_diverges(tmp_path, monkeypatch):
    from copyhead.model import CopyAttention
    orig = CopyAttention.energy_grad
    calls = {"n": 0}

    def bad(self, theta, **kw):
        calls["n"] += 1
        if calls["n"] == 31:
            theta[0] = float("nan")
        return orig(self, theta, **kw)

    monkeypatch.setattr(CopyAttention, "energy_grad", bad)
    ds = train_run(run_cfg("softmax", "adam"), tmp_path / "n.nc")
    assert str(ds.status.values) == "diverged" and ds.attrs["diverged_step"] >= 30


def test_atomic_write_leaves_nothing(tmp_path, monkeypatch):
    def broken(self, path, *a, **k):
        Path(path).write_bytes(b"CDF\x01 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", broken)
    out = tmp_path / "x.nc"
    from copyhead.provenance import WriteError

    with pytest.raises(WriteError, match="x.nc: could not be written"):   # names the file (issue 17)
        train_run(run_cfg("linear", "adam"), out)
    assert list(tmp_path.iterdir()) == []


def test_cli_train_end_to_end(tmp_path):
    cfg_path = tmp_path / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(tiny_config()))
    out = tmp_path / "results/runs/softmax/sgld_copy/P8/seed0.nc"
    out.parent.mkdir(parents=True)         # as Snakemake does before the job
    assert cli.main(["train", "--config", str(cfg_path), "--attention", "softmax", "--optimizer",
                     "sgld_copy", "--P", "8", "--seed", "0", "--out", str(out)]) == 0
    f = read_dataset(out)
    assert f.attrs["optimizer"] == "sgld_copy" and str(f.status.values) == "ok"
    # a copy start keeps the diagonal dominant at step 0
    assert f.cG_step.values[0] > 1.0


@pytest.mark.parametrize("att", ["linear", "softmax"])
def test_token_position_option_runs(tmp_path, att):
    rc = run_cfg(att, "sgld_copy")
    rc["model"].update(scores="token+position", d_k=12)
    ds = train_run(rc, tmp_path / "tp.nc")
    assert str(ds.status.values) == "ok" and ds.attrs["scores"] == "token+position"
    assert ds.attention.shape == (6, 6) and np.all(np.isfinite(ds.attention))
    # the test-averaged softmax attention is still row-stochastic
    if att == "softmax":
        assert np.allclose(ds.attention.sum("key"), 1.0)
    # coverage per test sequence: one value per sequence in [0, 1]; token-dependent patterns leave the span
    cov = ds.coverage_ratio_per_sequence
    assert cov.sizes["test_sequence"] == rc["task"]["n_test"]
    assert np.all((cov.values > 0) & (cov.values <= 1 + 1e-12)) and cov.values.min() < 1 - 1e-6
    assert cov.attrs["mean"] == pytest.approx(float(cov.mean()))
    # with position-only scores every sequence has the same pattern: no per-sequence variable
    assert "coverage_ratio_per_sequence" not in train_run(run_cfg(att, "adam"), tmp_path / "pos.nc")


def test_recipe_without_samples_is_a_config_error(tmp_path, capsys):
    cfg = tiny_config()
    cfg["optimizers"]["sgld"].update(burn_in=100, thin=50)
    cfg_path = tmp_path / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    rc = cli.main(["train", "--config", str(cfg_path), "--attention", "linear", "--optimizer", "sgld",
                   "--P", "8", "--seed", "0", "--out", str(tmp_path / "x.nc")])
    err = capsys.readouterr().err
    assert rc == 2 and "'optimizers.sgld.burn_in' + 'thin'" in err and "no samples" in err
    assert not (tmp_path / "x.nc").exists()


def test_packed_group_command(tmp_path, capsys):
    """``copyhead train`` given several P trains every (P, seed) of a recipe in one process, P-major
    outputs; a wrong number of outputs, a P given twice or bad JSON is refused (exit 2) before anything
    is trained."""
    import json

    rc = cfgmod.run_config(tiny_config(), "linear", "adam")
    outs = [str(tmp_path / f"P{P}_s{s}.nc") for P in (4, 8) for s in (0, 1)]
    args = ["train", "--run-config", json.dumps(rc), "--P", "4", "8", "--seeds", "0", "1"]
    assert cli.main([*args, "--out", *outs[:3]]) == 2
    assert "need 4 --out files" in capsys.readouterr().err
    assert cli.main(["train", "--run-config", json.dumps(rc), "--P", "4", "4", "--seeds", "0", "--out",
                     *outs[:2]]) == 2
    assert "a training-set size twice" in capsys.readouterr().err
    assert cli.main(["train", "--run-config", "{", "--P", "4", "--seeds", "0", "--out", outs[0]]) == 2
    assert not any(Path(o).exists() for o in outs)
    assert cli.main([*args, "--out", *outs]) == 0
    for o, (P, s) in zip(outs, [(4, 0), (4, 1), (8, 0), (8, 1)]):
        ds = read_dataset(o)
        assert (ds.attrs["P"], ds.attrs["seed"], ds.attrs["packed_P"]) == (P, s, "4 8")
