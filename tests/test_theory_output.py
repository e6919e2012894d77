"""write_theory: the netCDF contract of docs/theory.md ("Output file"), on a tiny configuration."""
import json

import numpy as np
import pytest
import xarray as xr

from copyhead.theory.output import write_theory


def tiny_cfg():
    return {"task": {"V": 4, "L": 6},
            "model": {"d_k": 8, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0, "sigma2": 0.5},
            "theory": {"prior": "large_deviation", "P_min": 1.0, "P_max": 200.0, "n_P": 40, "grid_n": 41,
                       "landscape_P": {"linear": [], "softmax": [10.0, 50.0]},
                       "exact": {"n_datasets": 2, "P": [4, 8, 16], "seed": 0},
                       "scaling": {"L": [4, 6]}}}


COMMON = ["c1_saddle", "cG_saddle", "m1_saddle", "mP_saddle", "c1_mean", "cG_mean", "m1_mean", "mP_mean",
          "action_min"]
TRANS = ["P_onset", "P_crossover", "P_fastest_growth", "P_star", "P_spinodal_low", "P_spinodal_high"]


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_write_theory_contract(tmp_path, attention):
    out = tmp_path / f"{attention}.nc"
    write_theory(tiny_cfg(), attention, out)
    ds = xr.open_dataset(out)
    names = COMMON + (["beta_saddle", "beta_mean"] if attention == "softmax" else [])
    for v in names:
        assert ds[v].dims == ("P",)
        assert ds[v + "_exact"].dims == ("P_exact",)
        assert ds[v + "_exact_sd"].dims == ("P_exact",) if v.endswith("saddle") else True
        assert ds[v + "_gaussian"].dims == ("P",)
    for v in TRANS:
        assert ds[v].dims == () and ds[v + "_exact"].dims == ()
    assert ds["onset_direction"].dims == ("component",)
    assert list(ds["component"].values) == ["c1", "cG"]
    if attention == "linear":
        assert ds["action_landscape"].dims == ("landscape_P", "c1_grid", "cG_grid")
        assert len(ds["landscape_P"]) >= 2
    else:
        assert ds["action_landscape"].dims == ("landscape_P", "beta_grid")
        assert list(ds["landscape_P"].values) == [10.0, 50.0]
        assert np.allclose(ds["c1_saddle"], 1.0)
    assert float(ds["action_landscape"].min()) == pytest.approx(0.0, abs=1e-9)
    for v in ("P_onset_vs_L", "P_crossover_vs_L", "P_star_vs_L"):
        assert ds[v].dims == ("scaling_L",)
    for v in ds.data_vars:
        assert "long_name" in ds[v].attrs and ds[v].attrs["units"] in ("1", "sequences"), v
    tr = json.loads(ds.attrs["transitions_json"])
    assert all({"kind", "P", "classification", "details"} <= set(t) for t in tr)
    assert ds.attrs["copyhead_kind"] == "theory" and json.loads(ds.attrs["config_json"])["task"]["V"] == 4
    assert np.array_equal(ds["P_exact"].values, [4, 8, 16])
    # the theory's own numerical error: every minimiser and mean records its change on a finer grid
    for v in [n for n in names if n != "action_min"]:
        assert ds[v + "_grid_err"].dims == ("P",) and (ds[v + "_grid_err"] >= 0).all()
        assert ds[v + "_exact_grid_err"].dims == ("P_exact",)


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_recorded_grid_error_is_the_change_on_a_four_times_finer_grid(tmp_path, attention):
    """An independent recomputation: the closed-form posterior mean at grid_n and at 4(grid_n − 1) + 1."""
    from copyhead.config import theory_params
    from copyhead.theory.output import compute_theory
    from copyhead.theory.ranges import make_model, theory_grid
    from copyhead.theory.scan import analyse
    th = theory_params(tiny_cfg())
    ds = compute_theory(th, attention, log=lambda *a: None)
    P_ref, ranges = theory_grid(th, attention)
    P = ds["P"].values[[5, 25]]
    coarse, fine = (analyse(make_model(attention, th.action, n, P_ref, ranges=ranges), P)[0]["mean"]
                    for n in (41, 161))
    np.testing.assert_allclose(ds["cG_mean_grid_err"].values[[5, 25]], np.abs(coarse["cG"] - fine["cG"]),
                               rtol=1e-6, atol=1e-12)


def test_exact_P_grid_contains_every_configured_P():
    """Issue 13: past 200 integers the grid is log-spaced, and must still hold each configured P."""
    from copyhead.theory.ranges import exact_P_grid
    assert np.array_equal(exact_P_grid([4, 8, 12]), np.arange(4, 13))
    P = [4, 16, 64, 100, 300]
    g = exact_P_grid(P)
    assert set(P) <= set(g.tolist()) and g[0] == 4 and g[-1] == 300
    assert np.all(np.diff(g) > 0) and np.all(g == np.round(g)) and len(g) <= 200 + len(P)
    g = exact_P_grid([3, 5, 977, 1000, 5000], max_points=50)
    assert {3, 5, 977, 1000, 5000} <= set(g.tolist()) and len(g) <= 55


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_write_theory_with_exact_P_spanning_more_than_200_integers(tmp_path, attention):
    """Issue 13: `theory.exact.P` spanning > 200 integers used to crash with a KeyError."""
    cfg = tiny_cfg()
    cfg["theory"].update(n_P=12, grid_n=21, exact={"n_datasets": 1, "P": [4, 16, 100, 300], "seed": 0},
                         scaling={"L": []})
    ds = write_theory(cfg, attention, tmp_path / f"{attention}.nc")
    assert np.array_equal(ds["P_exact"].values, [4, 16, 100, 300])
    assert ds["action_landscape_exact"].shape[0] == 4
    assert np.all(np.isfinite(ds["action_min_exact"].values))
    assert "log-spaced" in ds["P_onset_exact"].attrs["long_name"]
