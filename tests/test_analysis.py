"""copyhead.analysis: each statistic against a known answer (AR(1) chains, iid and shifted chains, exact
curves, steps on a grid) and the aggregate-level helpers the figures use."""
import json

import numpy as np
import pytest
import xarray as xr
from scipy.signal import lfilter

from copyhead import analysis as an
from copyhead.analysis.convergence import convergence_table
from copyhead.analysis.experiments import recipes
from copyhead.analysis.fits import fit_inverse_dk, loglog_slope, row_error
from test_results import fake_aggregate


def ar1(rho, m, n, seed=0):
    """m stationary AR(1) chains x_t = ρ x_{t−1} + √(1−ρ²) ε_t with unit variance: ESS = n(1−ρ)/(1+ρ)."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((m, n)) * np.sqrt(1 - rho ** 2)
    e[:, 0] = rng.standard_normal(m)
    return lfilter([1.0], [1.0, -rho], e, axis=1)


# ------------------------------------------------------------------------------------------ stats
def test_mean_sem_ignores_nan_and_has_no_error_for_one_value():
    x = np.array([[1.0, 2.0, 4.0], [3.0, np.nan, np.nan], [np.nan] * 3])
    mean, sem = an.mean_sem(x)
    np.testing.assert_allclose(mean, [7 / 3, 3.0, np.nan])
    np.testing.assert_allclose(sem, [np.std([1, 2, 4], ddof=1) / np.sqrt(3), np.nan, np.nan])
    m0, s0 = an.mean_sem(x.T, axis=0)
    np.testing.assert_allclose(m0, mean) and np.testing.assert_allclose(s0, sem)
    da = xr.DataArray(x, dims=("P", "seed"), coords={"P": [4, 8, 16]})
    dm, ds = an.seed_mean_sem(da)
    assert dm.dims == ("P",) and list(dm["P"].values) == [4, 8, 16]
    np.testing.assert_allclose(ds.values, sem)


# ------------------------------------------------------------------------------------ convergence
@pytest.mark.parametrize("rho, tol", [(0.0, 0.1), (0.5, 0.1), (0.9, 0.2), (-0.3, 0.1)])
def test_ess_of_ar1_chains(rho, tol):
    x = ar1(rho, 4, 10000, seed=1)
    assert an.ess_mean(x) == pytest.approx(4 * 10000 * (1 - rho) / (1 + rho), rel=tol)
    assert an.ess_bulk(x) == pytest.approx(4 * 10000 * (1 - rho) / (1 + rho), rel=tol)
    np.testing.assert_allclose(an.chain_ess(x), 10000 * (1 - rho) / (1 + rho), rtol=2 * tol)


def test_standard_error_of_a_chain_mean():
    rho = 0.5
    x = ar1(rho, 4, 10000, seed=2)
    se = np.sqrt((1 + rho) / (1 - rho) / x.size)  # exact for the mean of unit-variance AR(1) draws
    assert an.mcse_mean(x) == pytest.approx(se, rel=0.1)
    naive = x.std(ddof=1) / np.sqrt(x.size)
    assert an.mcse_mean(x) > 1.4 * naive  # the naive sd underestimates by √3
    assert an.mcse_mean(x[0]) == pytest.approx(np.sqrt(3 / 10000), rel=0.2)  # one chain (1-D input)
    np.testing.assert_allclose(an.chain_mcse(x), np.sqrt(3 / 10000), rtol=0.2)


def test_point_estimate_takes_the_larger_error_of_spread_and_mcse():
    e = an.point_estimate([1.0, 2.0, 3.0], [0.01, 0.01, 0.01])
    assert e["error_basis"] == "spread" and e["error"] == pytest.approx(1 / np.sqrt(3))
    e = an.point_estimate([1.0, 1.0], [3.0, 4.0])
    assert e["error_basis"] == "mcse" and e["error"] == pytest.approx(2.5)
    e = an.point_estimate([1.0, np.nan])
    assert e["n"] == 1 and np.isnan(e["error"]) and e["error_basis"] == ""


def test_split_rhat():
    rng = np.random.default_rng(3)
    iid = rng.standard_normal((4, 1000))
    assert an.split_rhat(iid) < 1.01 and an.split_rhat(iid, "classic") < 1.01
    shifted = iid.copy()
    shifted[0] += 2.0
    assert an.split_rhat(shifted) > 1.1 and an.split_rhat(shifted, "classic") > 1.1
    scaled = iid.copy()
    scaled[0] *= 3.0  # same mean, different spread: only the rank-normalised (folded) R̂ sees it
    assert an.split_rhat(scaled) > 1.1 and an.split_rhat(scaled, "classic") < 1.01
    drift = np.concatenate([rng.standard_normal(500), 1.0 + rng.standard_normal(500)])
    assert an.split_rhat(drift) > 1.1  # one chain: the split halves disagree
    assert an.split_rhat(ar1(0.9, 4, 10000, seed=4)) < 1.01


def test_convergence_edge_cases():
    assert np.isnan(an.split_rhat(np.ones((4, 100)), "classic"))   # constant chains: no R̂
    assert np.isnan(an.split_rhat(np.zeros((4, 3))))                # fewer than 4 draws
    assert np.isnan(an.ess_mean([[1.0, np.nan, 2.0, 3.0, 4.0]]))    # a non-finite draw
    assert np.isnan(an.mcse_mean([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="allowed values"):
        an.split_rhat(np.zeros((4, 10)), "bulk")
    with pytest.raises(ValueError, match="n_chains"):
        an.ess_bulk(np.zeros((2, 2, 10)))


# -------------------------------------------------------------------------------------- agreement
def test_z_scores_and_summary():
    rng = np.random.default_rng(5)
    theory = np.linspace(0, 1, 400)
    err = np.full(400, 0.1)
    exp = theory + err * rng.standard_normal(400)
    z = an.z_scores(exp, theory, err)
    s = an.agreement_summary(z)
    assert s.n == s.dof == 400 and s.chi2_per_dof == pytest.approx(1.0, abs=0.2) and s.p_value > 0.01
    assert s.rms_z == pytest.approx(np.sqrt(s.chi2_per_dof)) and abs(s.worst_z) == np.abs(z).max()
    off = an.agreement_summary(an.z_scores(exp + 0.1, theory, err))  # a one-sigma offset: χ²/dof ≈ 2
    assert off.chi2_per_dof > 1.5 and off.p_value < 1e-6
    np.testing.assert_allclose(an.z_scores([1.0, 1.0, 1.0], 0.0, [0.5, 0.0, np.nan], theory_error=[1.5, 0, 0]),
                               [1 / np.sqrt(2.5), np.nan, np.nan])


def test_summary_mask_worst_point_and_empty():
    z = np.array([[0.5, -3.0], [1.0, 9.0]])
    s = an.agreement_summary(z, mask=[[True, True], [True, False]])
    assert s.n == 3 and s.worst_index == (0, 1) and s.worst_z == -3.0
    assert s.chi2 == pytest.approx(0.25 + 9 + 1)
    assert an.agreement_summary(z, n_params=1).dof == 3
    empty = an.agreement_summary([np.nan])
    assert empty.n == 0 and empty.worst_index is None and np.isnan(empty.rms_z)


def test_theory_at_experimental_P_and_away_from_transitions():
    Pg = np.geomspace(1, 100, 21)
    y = an.interp_log_P([2.0, 10.0, 0.5, 200.0], Pg, 3 * np.log(Pg))
    np.testing.assert_allclose(y, [3 * np.log(2), 3 * np.log(10), np.nan, np.nan])
    np.testing.assert_array_equal(an.away_from([4, 8, 16, 32, 64], [10.0, np.nan], factor=1.5),
                                  [True, False, True, True, True])


# ------------------------------------------------------------------------------------ transitions
P9 = np.geomspace(4, 64, 9)  # 4, 5.66, 8, ..., 64


def test_crossover_point_is_exact_for_log_linear_curves():
    c1 = np.full(9, 0.3)
    cG = 0.4 * np.log(P9 / 4) / np.log(16)  # reaches 0.3 at P = 4·16^0.75 = 32, a grid point
    assert an.crossover_point(P9, c1, cG) == pytest.approx(32.0)
    assert an.crossover_point(P9, c1 + 1, cG) != an.crossover_point(P9, c1 + 1, cG)  # never: NaN
    shuffled = np.random.default_rng(0).permutation(9)
    assert an.crossover_point(P9[shuffled], c1[shuffled], cG[shuffled]) == pytest.approx(32.0)
    np.testing.assert_allclose(an.upward_crossings([1, 2, 4, 8], [-1, 1, -1, 1]), [np.sqrt(2), np.sqrt(32)])


def test_crossover_bootstrap_interval_contains_the_truth():
    rng = np.random.default_rng(6)
    c1 = 0.3 + 0.03 * rng.standard_normal((9, 6))
    cG = (0.4 * np.log(P9 / 4) / np.log(16))[:, None] + 0.03 * rng.standard_normal((9, 6))
    ci = an.bootstrap(an.crossover_of_chains, P9, c1, cG, n_boot=400, seed=1)
    assert ci.n_valid == 400 and ci.lo < ci.estimate < ci.hi and ci.contains(32.0)
    assert ci.hi / ci.lo < 1.5
    assert an.bootstrap(an.crossover_of_chains, P9, c1, cG, n_boot=400, seed=1) == ci  # reproducible


def test_onset_point():
    err = np.full(9, 0.01)
    y = np.where(P9 > 9, 0.04, 0.0)  # 0 up to P=8, 4 errors from P=11.3 on: s − k goes −2 -> +2
    assert an.onset_point(P9, y, err) == pytest.approx(np.sqrt(8 * P9[3]))
    assert np.isnan(an.onset_point(P9, y + 0.04, err))  # beyond errors everywhere: below the grid
    assert np.isnan(an.onset_point(P9, np.where(P9 < 60, y, 0), err))  # falls back: not for good
    blip = y.copy()
    blip[1] = 0.04  # a chance excursion before the onset does not move it
    assert an.onset_point(P9, blip, err) == pytest.approx(np.sqrt(8 * P9[3]))
    assert an.onset_point(P9, y + 0.02, err, baseline=0.02) == pytest.approx(np.sqrt(8 * P9[3]))
    rng = np.random.default_rng(7)
    chains = np.where(P9 > 10, 0.5 * np.log(P9 / 10), 0.0)[:, None] + 0.02 * rng.standard_normal((9, 8))
    ci = an.bootstrap(an.onset_of_chains, P9, chains, n_boot=300)
    # a detection point: in the grid step that holds the true onset P=10 (not at 10: the grid cannot say
    # where inside the step ĉ1 starts to grow); the interval also admits chance excursions one step below
    assert 8.0 <= ci.estimate <= P9[3] and P9[1] <= ci.lo <= ci.estimate <= ci.hi <= P9[3]
    faint = np.where(P9 > 10, 0.05 * np.log(P9 / 10), 0.0)[:, None] + 0.02 * rng.standard_normal((9, 8))
    assert an.onset_of_chains(P9, faint) > P9[3]  # a faint rise is detected later (a detection point)


def test_hysteresis_window():
    err = np.full(9, 0.01)
    prior = np.where(P9 > 30, 0.9, 0.05)  # prior-started chains jump late,
    copy = np.where(P9 > 10, 0.9, 0.05)   # copy-started ones fall back early
    w = an.hysteresis_window(P9, prior, err, copy, err)
    np.testing.assert_array_equal(w.disagree, (P9 > 10) & (P9 < 30))
    assert 8.0 < w.lo < P9[3] and P9[5] < w.hi < 32.0
    blip = copy.copy()
    blip[0] = 0.2  # an isolated disagreement away from the window does not stretch it
    assert an.hysteresis_window(P9, prior, err, blip, err).lo == pytest.approx(w.lo)
    open_low = an.hysteresis_window(P9, prior, err, np.full(9, 0.9), err)
    assert np.isnan(open_low.lo) and P9[5] < open_low.hi < 32.0
    none = an.hysteresis_window(P9, prior, err, prior, err)
    assert np.isnan(none.lo) and np.isnan(none.hi) and not none.disagree.any()
    rng = np.random.default_rng(10)
    pc = prior[:, None] + 0.02 * rng.standard_normal((9, 4))
    cc = copy[:, None] + 0.02 * rng.standard_normal((9, 4))
    wc = an.hysteresis_of_chains(P9, pc, cc)
    assert 8.0 < wc.lo < P9[3] and P9[5] < wc.hi < 32.0
    # a small offset measured with tiny errors is not a second branch when min_diff asks for more
    tiny = np.full(9, 1e-4)
    offset = an.hysteresis_window(P9, prior, tiny, prior + 0.003, tiny)
    assert offset.disagree.all()
    assert not an.hysteresis_window(P9, prior, tiny, prior + 0.003, tiny, min_diff=0.01).disagree.any()
    np.testing.assert_array_equal(an.hysteresis_window(P9, prior, err, copy, err, min_diff=0.01).disagree,
                                  w.disagree)


def test_bootstrap_resamples_chains_within_each_P():
    x = np.array([[1.0, 2.0, np.nan], [5.0, np.nan, np.nan]])  # P=1: two chains; P=2: one chain
    seen = []
    ci = an.bootstrap(lambda P, a: seen.append(a.copy()) or float(np.nanmean(a[0])), [1, 2], x, n_boot=200)
    assert ci.estimate == 1.5 and ci.lo == 1.0 and ci.hi == 2.0 and ci.n_valid == 200
    assert all(s[1, 0] == 5.0 and np.isnan(s[1, 1:]).all() and np.isnan(s[0, 2]) for s in seen[1:])
    failed = an.bootstrap(lambda P, a: float("nan"), [1, 2], x, n_boot=10)
    assert np.isnan(failed.lo) and failed.n_valid == 0 and not failed.contains(1.0)
    with pytest.raises(ValueError, match="shape"):
        an.bootstrap(lambda P, a: 0.0, [1, 2, 3], x)


# ------------------------------------------------------------------------- aggregate-level helpers
def _aggregate(c1, cG, m1, mP, L=4):
    """A minimal aggregate: one optimizer, seed means per P (plus ok runs for the attention matrices)."""
    P = [2, 4, 8, 16]
    ds = xr.Dataset(coords={"optimizer": ["sgld"], "P": P, "seed": [0]})
    for v, y in (("c1", c1), ("cG", cG), ("m1", m1), ("mP", mP)):
        ds[f"{v}_mean"] = (("optimizer", "P"), np.asarray(y, float)[None, :])
    ds.attrs["config_json"] = json.dumps({"task": {"L": L}})
    return ds


def test_sequence_length_from_the_config():
    ag = _aggregate([0.3] * 4, [0.1, 0.2, 0.4, 0.5], [0.9, 0.9, 0.2, 0.1], [0.0, 0.4, 2.8, 3.2])
    assert an.sequence_length(ag) == 4


def test_theory_pattern_cosine():
    L = 4
    ds = xr.Dataset(coords={"optimizer": ["adam"], "P": [2, 8], "seed": [0, 1], "query": range(L),
                            "key": range(L)})
    At = (0.5 * np.ones((L, L)) + 2.0 * np.eye(L)) / L
    A = np.broadcast_to(At, (1, 2, 2, L, L)).copy()
    A[0, 1, 1] = np.eye(L)
    ds["attention"] = (("optimizer", "P", "seed", "query", "key"), A)
    ds["c1"] = (("optimizer", "P", "seed"), np.zeros((1, 2, 2)))
    ds["status"] = (("optimizer", "P", "seed"), np.array([[["ok", "ok"], ["ok", "diverged"]]]))
    ds.attrs["config_json"] = json.dumps({"task": {"L": L}})
    th = xr.Dataset({"m1_saddle": ("P", [0.0, 0.5]), "mP_saddle": ("P", [0.0, 2.0])}, coords={"P": [2.0, 8.0]})
    cos = an.theory_pattern_cosine(ds, th)
    assert cos.dims == ("optimizer", "P", "seed")
    assert np.isnan(cos.values[0, 0]).all()  # the theory predicts A = 0 at P=2: undefined
    assert cos.values[0, 1, 0] == pytest.approx(1.0) and np.isnan(cos.values[0, 1, 1])  # diverged run


def test_inverse_size_fit_recovers_a_known_line():
    dk = np.array([32, 64, 128, 256])
    f = fit_inverse_dk(dk, 0.05 - 3.2 / dk, np.full(4, 0.01))
    assert f["a"] == pytest.approx(0.05, abs=1e-12) and f["b"] == pytest.approx(-3.2, abs=1e-9)
    assert f["n"] == 4 and 0 < f["a_err"] < 0.05 and f["chi2_dof"] == pytest.approx(0, abs=1e-12)
    assert np.isnan(fit_inverse_dk([32], [0.1], [0.01])["a"])
    assert loglog_slope([16, 32, 64], [3 * L ** 1.5 for L in (16, 32, 64)]) == pytest.approx(1.5)
    assert np.isnan(loglog_slope([16, 32], [1.0, -1.0]))   # one usable point
    assert row_error({"error": 0.3, "theory_error": 0.4}) == pytest.approx(0.5)
    assert row_error({"error": 0.3, "theory_error": None}) == pytest.approx(0.3)


@pytest.mark.stored_numbers   # stored chains as input; both sides of every comparison computed here
def test_the_results_diagnostics_are_arvizs_on_the_projects_own_chains():
    """The results' R̂, bulk ESS and MCSE are ArviZ's (arviz-stats) on the default run's SGLD chains
    (tests/data/sgld_chains_default.npz: 4 chains x 100 draws per (attention, recipe, P, stored order
    parameter), 56 series), and the aggregate's samples open in ``arviz_stats.summary`` as chain × draw
    (copyhead.analysis.posterior) with the same numbers the convergence table reports."""
    from pathlib import Path
    import arviz_stats
    from arviz_stats.base import array_stats as az
    d = np.load(Path(__file__).parent / "data" / "sgld_chains_default.npz")
    assert len(d.files) == 56
    for k in d.files:
        x = d[k].astype(float)
        # the same formulas; two implementations may order their sums differently, so not bitwise
        assert an.split_rhat(x) == pytest.approx(az.rhat(x, method="rank"), rel=1e-12)
        assert an.ess_bulk(x) == pytest.approx(az.ess(x, method="bulk"), rel=1e-12)
        assert an.ess_mean(x) == pytest.approx(az.ess(x, method="mean"), rel=1e-12)
        assert an.mcse_mean(x) == pytest.approx(az.mcse(x, method="mean"), rel=1e-12)
        np.testing.assert_allclose(an.chain_mcse(x), [az.mcse(c[None], method="mean") for c in x], rtol=1e-12)
    lin = sorted(k for k in d.files if k.startswith("linear") and k.endswith("c1"))[:2]
    x = np.stack([d[k].astype(float) for k in lin])                      # (n_P, chains, draws)
    ag = fake_aggregate("linear", {"sgld": (x, 0.5 * x)}, [8, 16], range(4))
    rows = {(r["P"], r["param"]): r for r in convergence_table(ag, "linear", recipes(ag))}
    for P in (8, 16):
        post = an.posterior(ag, "sgld", P=P)
        assert dict(post.sizes) == {"chain": 4, "draw": 100}
        summ = arviz_stats.summary(post, var_names=["c1"], kind="diagnostics", round_to="none")
        assert float(summ.loc["c1", "r_hat"]) == pytest.approx(rows[(float(P), "c1")]["rhat"], rel=1e-12)
        assert float(summ.loc["c1", "ess_bulk"]) == pytest.approx(rows[(float(P), "c1")]["ess_bulk"], rel=1e-12)


def test_crossover_interpolation_error_is_the_log_against_linear_reading():
    """Between two grid points the crossover is read linearly in log P; reading it linearly in P moves it by
    the interpolation error, which the transition interval includes (0 on a grid point)."""
    from copyhead.analysis.transition_estimators import crossover_point, interpolation_error
    P = np.array([8.0, 16.0, 32.0])
    c1 = np.zeros(3)
    cG = np.array([-1.0, 1.0, 2.0])   # crosses half-way between 8 and 16
    assert crossover_point(P, c1, cG) == pytest.approx(np.sqrt(8 * 16))
    assert crossover_point(P, c1, cG, log=False) == pytest.approx(12.0)
    assert interpolation_error(P, c1, cG) == pytest.approx(12.0 - np.sqrt(128))
    assert interpolation_error(P, c1, np.array([-1.0, 0.0, 1.0])) == pytest.approx(0.0, abs=1e-12)


def test_softmax_summary_counts_the_copy_weight_once():
    """â1 = 1 − âG inside the span: the softmax summaries count âG only, linear counts ĉ1 and ĉG."""
    from copyhead.analysis.agreement import agreement_summaries
    rows = [{"attention": att, "recipe": "sgld", "method": "sgld", "curve": "same_mean", "P": float(P),
             "name": k, "param": k, "z": 3.0, "away": True, "experiment": 0.5, "theory": 0.5 - 0.01 * P}
            for att, keys in (("softmax", ("a1", "aG")), ("linear", ("c1", "cG"))) for k in keys for P in (8, 16)]
    rows.append(dict(rows[-1], P=32.0, theory=-1.0, away=False))        # near a transition: not counted
    summaries = agreement_summaries(rows)
    assert {s["attention"]: s["n_away"] for s in summaries} == {"softmax": 2, "linear": 4}
    # the effect size over the same points: the largest |experiment − theory| (P = 16), not the near point's
    assert all(s["max_abs_delta"] == pytest.approx(0.16) for s in summaries)


def test_twin_verdicts_give_the_effect_size_first_and_significance_beside_it():
    """The σ² twins' verdict (studies page, results page) is decided by |Δ| against the agreement tolerance;
    z is shown beside it. Tiny errors make every pair 'significant', yet pairs within |Δ| ≤ 0.02 agree."""
    from copyhead.analysis.twins import twin_effect
    from copyhead.studies.conclude import collapse_verdict

    from copyhead.analysis.results_model import Twin

    def row(att, name, v, vr):
        return {"attention": att, "recipe": "hmc", "P": 50.0, "P_over_sigma2": 50.0, "param": name, "name": name,
                "value": v, "value_ref": vr, "error": 1e-4, "error_ref": 1e-4, "theory": v, "theory_ref": vr,
                "z": 40.0, "z_vs_theory": 50.0}

    def twin(rows):
        return Twin.from_dict({"study": "A", "ref": "B", "sigma2": 1.0, "sigma2_ref": 0.5, "differs": "σ²",
                               "eta": 0.01, "eta_ref": 0.01, "rows": rows, "n": 2, "n_within_2": 0, "rms_z": 40.0,
                               "n_within_2_theory": 0, "rms_z_theory": 50.0, "transitions": {}})
    close = twin([row("linear", "ĉG", 0.30, 0.31), row("softmax", "âG", 0.20, 0.205)])
    e = twin_effect(close)
    assert e["n"] == 2 and e["n_within_tol"] == 2 and abs(e["max_abs_delta"] - 0.01) < 1e-12
    (head,) = collapse_verdict(close)
    assert head.startswith("- Verdict: the order parameters collapse at equal P/σ² (largest |Δ| = 0.01")
    assert "2 of 2 pairs within |Δ| ≤ 0.02" in head and "significance: 0 of 2 equal within 2σ (RMS z 40" in head
    # softmax â1 = 1 − âG: of two equal |Δ| the one larger relative to its value is named
    far = twin([row("softmax", "â1", 0.976, 0.910), row("softmax", "âG", 0.024, 0.090)])
    e = twin_effect(far)
    assert e["name"] == "âG" and e["n_within_tol"] == 0 and abs(e["rel"] - (0.024 - 0.090) / 0.090) < 1e-12
    assert collapse_verdict(far)[0].startswith("- Verdict: the order parameters do not collapse")
