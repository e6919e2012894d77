"""Same-dataset theory (docs/theory.md, Sec. 4.4): the exact action on each run's own training set."""
import dataclasses
import json

import numpy as np
import pytest
import xarray as xr

from copyhead.config import load, theory_config, theory_params
from copyhead.order_params import paper_order_parameters
from copyhead.task import make_data
from copyhead.theory.action import softmax_coeffs
from copyhead.theory.data import copy_task_tokens
from copyhead.theory.evidence import neg_log_evidence
from copyhead.theory.output import compute_theory, write_same_dataset_theory
from copyhead.theory.prior import neg_log_prior_family, neg_log_prior_softmax
from copyhead.theory.same_dataset import dataset_branches, run_training_tokens, same_dataset_theory

KEYS = ("c1", "cG", "m1", "mP")
QUIET = dict(log=lambda *a: None)


def tiny_cfg(n_datasets=2, seed=0):
    return {"task": {"V": 4, "L": 6},
            "model": {"d_k": 8, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0, "sigma2": 0.5},
            "theory": {"prior": "large_deviation", "P_min": 1.0, "P_max": 60.0, "n_P": 30, "grid_n": 41,
                       "landscape_P": {"linear": [], "softmax": []},
                       "exact": {"n_datasets": n_datasets, "P": [4, 8, 16], "seed": seed},
                       "scaling": {"L": []}}}


def brute_action(attention, p, tokens, x):
    """S(x) on one dataset with A built explicitly and the evidence of Eq. (4) on the N tokens: an
    independent path (no family statistics, no Eq. (22))."""
    L = p.L
    if attention == "linear":
        c1, cG = x
        mP = cG * L / np.sqrt(L - 1.0)
        m1 = c1 - mP / L
        prior = neg_log_prior_family(m1, mP, L, p.d_k, p.g_Q, p.g_K, p.prior)
    else:
        m1, mP = softmax_coeffs(x[0], L)
        prior = neg_log_prior_softmax(x[0], L, p.d_k, p.g_Q, p.g_K, p.prior)
    A = (m1 * np.ones((L, L)) + mP * np.eye(L)) / L
    return neg_log_evidence(tokens, A, p.V, p.g_O, p.sigma2) + float(prior)


def point(ds, attention, suffix, P, seed):
    names = ("c1", "cG") if attention == "linear" else ("beta",)
    return np.array([float(ds[f"{k}{suffix}"].sel(P=P, seed=seed)) for k in names])


def test_datasets_are_the_runs_training_sets():
    """make_data(seed, V, L, P, n_test).train for any n_test, nested in P (one draw serves every P)."""
    p = theory_params(tiny_cfg()).action
    for seed in (0, 3):
        big = run_training_tokens(p, seed, 20)
        for P in (1, 7, 20):
            assert np.array_equal(big[:P], make_data(seed, p.V, p.L, P, n_test=5).train)
            assert np.array_equal(run_training_tokens(p, seed, P), make_data(seed, p.V, p.L, P, 0).train)


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_one_dataset_average_equals_same_dataset(attention):
    """Validation (a): the dataset-averaged exact theory with n_datasets = 1 and seed s is the same-dataset
    theory of the theory's own dataset s (copyhead.theory.data draws, which differ from the runs')."""
    s = 2
    th = theory_params(tiny_cfg(n_datasets=1, seed=s))
    avg = compute_theory(th, attention, **QUIET)
    Ps = [int(P) for P in avg["P_exact"].values]
    same = same_dataset_theory(th, attention, [(P, s) for P in Ps], **QUIET,
                               tokens=lambda p, seed, P: copy_task_tokens(seed, p.V, p.L, P, 1)[0])
    names = KEYS + (("beta",) if attention == "softmax" else ())
    for k in names:
        for kind in ("saddle", "mean"):
            np.testing.assert_allclose(same[f"{k}_{kind}_same"].sel(seed=s).values,
                                       avg[f"{k}_{kind}_exact"].values, rtol=0, atol=1e-12, err_msg=f"{k}_{kind}")
    np.testing.assert_allclose(same["action_min_same"].sel(seed=s).values, avg["action_min_exact"].values,
                               rtol=1e-13)


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_minimiser_is_a_minimum_of_the_runs_dataset(attention):
    """Validation (b): S, evaluated independently on make_data's training set, is not lower at the
    neighbouring points (one grid spacing and 1/8 of it, every direction) of the stored minimisers."""
    th = theory_params(tiny_cfg())
    p = th.action
    pairs = [(4, 0), (12, 1), (16, 0), (40, 1)]
    ds = same_dataset_theory(th, attention, pairs, **QUIET)
    rng = json.loads(ds.attrs["grid_range"])
    spacing = (2 * rng[0] if attention == "linear" else rng[1] - rng[0]) / (th.grid_n - 1)
    for kind in ("saddle", "mean"):   # the grid error (change on a twice finer grid) of every requested pair
        err = np.array([float(ds[f"cG_{kind}_same_grid_err"].sel(P=P, seed=s)) for P, s in pairs])
        assert np.isfinite(err).all() and (err >= 0).all() and err.max() < 0.05
    for P, seed in pairs:
        tokens = make_data(seed, p.V, p.L, P, 16).train
        for suffix in ("_saddle_same", "_saddle_same_prior_side", "_saddle_same_copy_side"):
            x = point(ds, attention, suffix, P, seed)
            s0 = brute_action(attention, p, tokens, x)
            if suffix == "_saddle_same":
                assert s0 == pytest.approx(float(ds["action_min_same"].sel(P=P, seed=seed)), rel=1e-10)
            dirs = [np.array(d) for d in ([1, 0], [0, 1], [1, 1], [1, -1])] if attention == "linear" \
                else [np.array([1.0])]
            for h in (spacing, spacing / 8):
                for d in dirs:
                    for sgn in (1, -1):
                        assert brute_action(attention, p, tokens, x + sgn * h * d) >= s0 - 1e-9 * abs(s0), \
                            (P, seed, suffix, h, d, sgn)


def test_two_minima_softmax_hysteresis_window():
    """config/dk_equals_L.yaml (V = 16, L = d_k = 32, σ² = 0.1), softmax, P = 12, seed 2: the run's dataset has two local minima (uniform side
    global, copy side metastable); both are local minima of the independently evaluated action and
    action_gap_same is their difference."""
    th = dataclasses.replace(theory_params(theory_config(load("config/dk_equals_L.yaml"))), grid_n=81)
    ds = same_dataset_theory(th, "softmax", [(12, 2)], **QUIET)
    p = th.action
    tokens = make_data(2, p.V, p.L, 12, 0).train
    lo = point(ds, "softmax", "_saddle_same_prior_side", 12, 2)
    hi = point(ds, "softmax", "_saddle_same_copy_side", 12, 2)
    assert int(ds["n_minima_same"].sel(P=12, seed=2)) == 2
    assert lo[0] < 0.3 < 0.8 < hi[0]
    s_lo, s_hi = brute_action("softmax", p, tokens, lo), brute_action("softmax", p, tokens, hi)
    assert float(ds["action_gap_same"].sel(P=12, seed=2)) == pytest.approx(s_hi - s_lo, rel=1e-8)
    assert s_hi > s_lo                                        # the uniform side is the global minimum here
    assert point(ds, "softmax", "_saddle_same", 12, 2) == pytest.approx(lo)
    for x, s in ((lo, s_lo), (hi, s_hi)):
        for h in (0.02, -0.02):
            assert brute_action("softmax", p, tokens, x + h) > s


class DoubleWell:
    """S(x) = (x² - 1)² + h x on a 1-D grid: minima near ±1, the one at -1 lower for h > 0."""
    dim, symmetric = 1, False

    def __init__(self, h):
        self.h = h
        self.axes = (np.linspace(-2, 2, 201),)
        self.spacing = 0.02

    def points(self, P, x):
        x = np.asarray(x, float)[..., 0]
        return (x**2 - 1) ** 2 + self.h * x

    def grid(self, P):
        return self.points(P, self.axes[0][:, None])

    def canon(self, x):
        return np.asarray(x, float)


@pytest.mark.parametrize("h", [0.3, -0.3])
def test_branches_planted_double_well(h):
    """The prior side is where steepest descent from 0 ends (downhill: the -1 well for h > 0, +1 for
    h < 0); the copy side is the largest-x minimum; the gap is S(copy side) - S(prior side)."""
    m = DoubleWell(h)
    br = dataset_branches(m, 1.0, m.grid(1.0))
    assert br["n_minima"] == 2
    (xp, sp), (xc, sc) = br["prior_side"], br["copy_side"]
    assert xc[0] > 0.8
    assert xp[0] == pytest.approx(-1 if h > 0 else xc[0], abs=0.1)
    if h > 0:
        assert sc - sp == pytest.approx(2 * h, rel=0.05)
    else:
        assert (xp, sp) == (xc, sc)


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_write_contract(tmp_path, attention):
    """dims (P, seed), NaN where a pair is not requested, long_name/units everywhere, provenance of kind
    theory_datasets with the pairs in the recorded config, readable by paper_order_parameters."""
    cfg = tiny_cfg()
    pairs = [(4, 0), (4, 1), (12, 1)]
    out = tmp_path / f"{attention}_datasets.nc"
    write_same_dataset_theory(cfg, attention, pairs, out)
    ds = xr.open_dataset(out)
    assert list(ds["P"].values) == [4, 12] and list(ds["seed"].values) == [0, 1]
    for v in ds.data_vars:
        assert ds[v].dims == ("P", "seed"), v
        assert ds[v].attrs["long_name"] and ds[v].attrs["units"] == "1", v
        assert np.isnan(float(ds[v].sel(P=12, seed=0))) and np.isfinite(float(ds[v].sel(P=12, seed=1))), v
    for suffix in ("_saddle_same", "_mean_same", "_saddle_same_prior_side", "_saddle_same_copy_side"):
        a1, aG = paper_order_parameters(ds, attention, 6, suffix)
        assert a1.dims == aG.dims == ("P", "seed")
        if attention == "softmax":
            np.testing.assert_allclose((a1 + aG).sel(P=4, seed=0), 1.0)
    assert ("beta_saddle_same" in ds) == (attention == "softmax")
    assert ds.attrs["copyhead_kind"] == "theory_datasets" and ds.attrs["attention"] == attention
    rec = json.loads(ds.attrs["config_json"])
    assert rec["same_dataset"] == {"attention": attention, "pairs": [[4, 0], [4, 1], [12, 1]]}
    assert rec["task"] == cfg["task"]


def test_grid_is_the_theory_files_and_grows_past_its_P():
    """The default grid is results/theory's (so the curves are evaluated alike); a pair past the theory's
    P range sizes it at that P instead, keeping the minimiser inside."""
    from copyhead.theory.ranges import theory_grid
    cfg = tiny_cfg()
    th = theory_params(cfg)
    ds = same_dataset_theory(th, "softmax", [(8, 0)], **QUIET)
    assert json.loads(ds.attrs["grid_range"]) == list(theory_grid(th, "softmax")[1])
    small = theory_params(dict(cfg, theory=dict(cfg["theory"], P_max=4.0, exact=dict(cfg["theory"]["exact"], P=[4]))))
    narrow = same_dataset_theory(small, "softmax", [(1000, 0)], ranges=theory_grid(small, "softmax")[1], **QUIET)
    assert narrow.attrs["grid_boundary_hits"] == 1                    # beta* = 3.53 > beta_hi = 3
    ds = same_dataset_theory(small, "softmax", [(1000, 0)], **QUIET)
    assert ds.attrs["grid_boundary_hits"] == 0
    assert float(ds["beta_saddle_same"].sel(P=1000, seed=0)) == pytest.approx(3.53, abs=0.01)
