"""The results: the tables of docs/results.md (copyhead.analysis.results_tables and the modules it calls) on synthetic
aggregates with known answers (chains drawn from known distributions, planted transitions), and the pages
copyhead.results renders and records. The fake aggregates have the variable layout of copyhead.aggregate
(dims optimizer, P, seed, sample; <var>_sample series, run results, status)."""
import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from copyhead.analysis.agreement import agreement_summaries, agreement_table, away_mask
from copyhead.analysis.convergence import convergence_table, mixing_status
from copyhead.analysis.curves import theory_resolution
from copyhead.analysis.experiments import recipes
from copyhead.analysis.results_tables import build_tables, jsonable
from copyhead.analysis.samplers import sampler_summaries, sampler_table
from copyhead.analysis.transition_table import transition_table
from copyhead.cli import main as cli_main
from copyhead.figures import FIGURES
from copyhead.format import g
from copyhead.provenance import code_fingerprint, sha256_file, sidecar_path, write_dataset
from copyhead.results import write_pages, write_results
from copyhead.results.page import render_page
from stored import FIT

L = 8


def ar1(rng, n, rho=0.5):
    """A stationary AR(1) series with unit marginal variance."""
    x = np.empty(n)
    x[0] = rng.standard_normal()
    for t in range(1, n):
        x[t] = rho * x[t - 1] + np.sqrt(1 - rho ** 2) * rng.standard_normal()
    return x


def stored_params(attention, a, b, L=L) -> dict:
    """c1, cG, m1, mP (the stored variables) from the plotted pair: linear (ĉ1, ĉG), softmax (â1, âG)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if attention == "linear":
        mP = b * L / np.sqrt(L - 1)
        return {"c1": a, "cG": b, "m1": a - mP / L, "mP": mP}
    return {"c1": a + b, "cG": b * np.sqrt(L - 1), "m1": a, "mP": b * L}


def fake_aggregate(attention, series: dict, Ps, seeds, L=L):
    """An aggregate-shaped dataset from per-recipe sample series: ``series[recipe]`` = (c1, cG) arrays of
    shape (n_P, n_seeds, n_samples) (linear: c1, cG; softmax: â1, âG, stored as m1 = â1, mP = L âG); an
    Adam recipe has n_samples = 1. NaN series: that run is absent."""
    opts = list(series)
    n_s = max(v[0].shape[-1] for v in series.values())
    shape = (len(opts), len(Ps), len(seeds))
    dims = ("optimizer", "P", "seed")
    ds = xr.Dataset(coords={"optimizer": opts, "P": np.asarray(Ps, np.int64), "seed": np.asarray(seeds, np.int64),
                            "sample": np.arange(n_s), "query": np.arange(L), "key": np.arange(L)})
    a = np.full(shape + (n_s,), np.nan)
    b = np.full(shape + (n_s,), np.nan)
    for i, o in enumerate(opts):
        x, y = series[o]
        a[i, ..., :x.shape[-1]] = x
        b[i, ..., :y.shape[-1]] = y
    status = np.where(np.isfinite(a[..., 0]), "ok", "absent")
    ds["status"] = (dims, status.astype(str))
    for v, arr in stored_params(attention, a, b, L).items():
        ds[f"{v}_sample"] = (dims + ("sample",), arr)
        with np.errstate(invalid="ignore"):
            ds[v] = (dims, np.nanmean(arr, axis=-1) if n_s > 1 else arr[..., 0])
        x = ds[v].where(ds["status"] == "ok")
        ds[f"{v}_mean"] = x.mean("seed")
        ds[f"{v}_sem"] = (x.std("seed", ddof=1) / np.sqrt(x.notnull().sum("seed"))).where(x.notnull().sum("seed") > 1)
    ds["test_loss_final"] = (dims, np.ones(shape))
    ds["test_loss_final_mean"] = ds["test_loss_final"].mean("seed")
    ds["test_loss_final_sem"] = ds["test_loss_final"].std("seed")
    ds["run_config_hash"] = (dims, np.full(shape, "h").astype(str))
    ds.attrs.update(copyhead_kind="aggregate", attention=attention, config_hash="agg",
                    config_json=json.dumps({"attention": attention}), n_runs=int((status == "ok").sum()),
                    n_diverged=0)
    # the aggregate's own config does not give L: the attention dims do
    ds["attention"] = (dims + ("query", "key"), np.zeros(shape + (L, L)))
    return ds


def fake_theory(attention, P_dense, curves: dict, scalars: dict | None = None, exact=None, L=L):
    """A theory-shaped dataset: ``curves`` key -> (a, b) functions of P for the closed-form saddle and mean
    (key "saddle"/"mean"); ``exact``: (P_exact, {kind: (a, b) arrays}, sd_b, n_datasets) or None."""
    ds = xr.Dataset(coords={"P": np.asarray(P_dense, float)})

    def put(suffix, a, b, dim):
        for v, arr in stored_params(attention, a, b, L).items():
            ds[f"{v}{suffix}"] = (dim, arr)

    for kind, (fa, fb) in curves.items():
        put(f"_{kind}", fa(ds["P"].values), fb(ds["P"].values), "P")
    for k in ("P_onset", "P_crossover", "P_star", "P_spinodal_low", "P_spinodal_high"):
        ds[k] = float((scalars or {}).get(k, np.nan))
        ds[k + "_exact"] = float((scalars or {}).get(k + "_exact", np.nan))
    n = 0
    if exact is not None:
        Pe, kinds, sd_b, n = exact
        ds = ds.assign_coords(P_exact=np.asarray(Pe, float))
        for kind, (a, b) in kinds.items():
            put(f"_{kind}_exact", a, b, "P_exact")
        sd = np.asarray(sd_b, float)
        if attention == "linear":
            ds["c1_saddle_exact_sd"] = ("P_exact", np.zeros_like(sd))
            ds["cG_saddle_exact_sd"] = ("P_exact", sd)
        else:
            ds["m1_saddle_exact_sd"] = ("P_exact", sd * L)  # a1 = m1 moves against aG
            ds["mP_saddle_exact_sd"] = ("P_exact", sd * L)
    ds.attrs.update(copyhead_kind="theory", attention=attention, prior="large_deviation", exact_n_datasets=n,
                    config_hash="th", config_json=json.dumps({"task": {"L": L, "V": 4},
                                                              "model": {"d_k": 8, "sigma2": 0.1}}))
    return ds


def fake_same(attention, Ps, seeds, a, b, L=L):
    """Same-dataset theory file (copyhead.theory.same_dataset layout): a, b of shape (n_P, n_seeds)."""
    ds = xr.Dataset(coords={"P": np.asarray(Ps, float), "seed": np.asarray(seeds, np.int64)})
    for kind in ("saddle", "mean"):
        for v, arr in stored_params(attention, a, b, L).items():
            ds[f"{v}_{kind}_same"] = (("P", "seed"), arr)
    ds["action_gap_same"] = (("P", "seed"), np.zeros((len(Ps), len(seeds))))
    ds.attrs.update(copyhead_kind="theory_datasets", config_hash="same",
                    config_json=json.dumps({"task": {"L": L, "V": 4}}))
    return ds


# ------------------------------------------------------------------------------- a known posterior
PS = [4, 6, 8, 12, 16, 24, 32, 48, 64, 96]
MU1 = lambda P: 0.05 + 0.0 * np.asarray(P, float)           # noqa: E731
MUG = lambda P: 0.3 * np.asarray(P, float) / (np.asarray(P, float) + 20)  # noqa: E731


def known_posterior(seed=0, n_seeds=8, n_draws=200, tau=0.02, sd=0.05, rho=0.5):
    """SGLD chains of a linear sweep: chain (P, seed) samples AR(1) noise (sd, rho) around the posterior
    mean of its own dataset, μ(P) + δ(P, seed), δ ~ N(0, τ²); the dataset average is μ(P)."""
    rng = np.random.default_rng(seed)
    delta = tau * rng.standard_normal((2, len(PS), n_seeds))
    x = np.empty((2, len(PS), n_seeds, n_draws))
    for k, mu in enumerate((MU1, MUG)):
        for i, P in enumerate(PS):
            for j in range(n_seeds):
                x[k, i, j] = mu(P) + delta[k, i, j] + sd * ar1(rng, n_draws, rho)
    ag = fake_aggregate("linear", {"sgld": (x[0], x[1])}, PS, range(n_seeds))
    th = fake_theory("linear", np.geomspace(2, 200, 200), {"saddle": (MU1, MUG), "mean": (MU1, MUG)})
    means = np.stack([MU1(PS)[:, None] + delta[0], MUG(PS)[:, None] + delta[1]])
    same = fake_same("linear", PS, range(n_seeds), means[0], means[1])
    return ag, th, same


def test_z_scores_of_a_known_posterior_are_standard_normal():
    """Dataset-averaged curve: z = (mean over chains − μ)/error ~ t_{m−1}, RMS ≈ 1 (pooled over repetitions);
    same-dataset curve: the dataset offsets cancel, z ~ N(0, 1), per-chain z too."""
    rms = {"closed_mean": [], "same_mean": []}
    zc = []
    for rep in range(4):
        ag, th, same = known_posterior(seed=rep)
        recs = recipes(ag)
        assert recs["sgld"].method == "sgld"
        rows = agreement_table(ag, th, same, "linear", recs)
        for curve in rms:
            z = np.array([r["z"] for r in rows if r["curve"] == curve])
            assert len(z) == 2 * len(PS) and all(r["away"] for r in rows)  # no transitions: all away
            rms[curve].append(np.sqrt(np.mean(z ** 2)))
        zc += [r["z_chains_rms"] for r in rows if r["curve"] == "same_mean"]
        same_rows = [r for r in rows if r["curve"] == "same_mean"]
        assert {r["error_basis"] for r in same_rows} <= {"spread", "mcse"}
    # 80 z values per curve: RMS of t_7 (sd 1.18) or N(0,1) within ±0.3
    assert 0.75 < np.mean(rms["closed_mean"]) < 1.45
    assert 0.7 < np.mean(rms["same_mean"]) < 1.3
    assert 0.7 < np.mean(zc) < 1.3


def test_a_wrong_theory_is_found_and_summarised():
    ag, th, same = known_posterior()
    shifted = th.copy()
    shifted["cG_mean"] = shifted["cG_mean"] + 0.05     # ~ 7 errors off
    rows = agreement_table(ag, shifted, None, "linear", recipes(ag))
    summ = {(s["recipe"], s["curve"]): s for s in agreement_summaries(rows)}
    good, bad = summ[("sgld", "closed_saddle")], summ[("sgld", "closed_mean")]
    assert good["rms_z"] < 2 and good["n_within_2"] >= 0.75 * good["n_away"]  # t_7: RMS ≈ 1.2
    assert bad["rms_z"] > 3 and bad["worst_param"] == "ĉG" and abs(bad["worst_z"]) > 4
    assert bad["dof"] == bad["n_away"] == 2 * len(PS) and bad["p_value"] < 1e-6


def test_points_near_transitions_are_left_out_of_the_summary():
    ag, th, _ = known_posterior()
    th["P_onset"] = 8.0          # excludes P in [8/1.5, 8*1.5] = 6, 8, 12
    th["P_crossover"] = 48.0     # excludes 32, 48, 64
    rows = agreement_table(ag, th, None, "linear", recipes(ag))
    away = sorted({r["P"] for r in rows if r["away"] and r["curve"] == "closed_mean"})
    assert away == [4.0, 16.0, 24.0, 96.0]
    s = [x for x in agreement_summaries(rows) if x["curve"] == "closed_mean"][0]
    assert s["n_away"] == 8 and s["n_all"] == 2 * len(PS)


def test_softmax_spinodal_window_is_excluded():
    tr = {"P_onset": np.nan, "P_crossover": np.nan, "P_star": 20.0, "P_spinodal_low": 16.0,
          "P_spinodal_high": 30.0}
    P = np.array([4, 8, 12, 14, 20, 34, 40, 64])  # window [16/1.2, 30·1.2] = [13.3, 36]
    np.testing.assert_array_equal(away_mask(P, "softmax", tr, 1.2), [1, 1, 1, 0, 0, 0, 1, 1])


def test_exact_average_only_at_its_own_P_with_its_dataset_error():
    ag, th, _ = known_posterior()
    Pe = [8, 16, 32]
    th = fake_theory("linear", np.geomspace(2, 200, 200), {"saddle": (MU1, MUG), "mean": (MU1, MUG)},
                     exact=(Pe, {"saddle": (MU1(Pe), MUG(Pe)), "mean": (MU1(Pe), MUG(Pe))}, [0.04, 0.04, 0.04], 4))
    rows = [r for r in agreement_table(ag, th, None, "linear", recipes(ag)) if r["curve"] == "exact_mean"]
    assert sorted({r["P"] for r in rows}) == [8.0, 16.0, 32.0]
    cg = [r for r in rows if r["param"] == "cG"]
    assert all(r["theory_error"] == pytest.approx(0.02) for r in cg)   # sd/√n = 0.04/2
    r = cg[0]
    assert r["z"] == pytest.approx((r["experiment"] - r["theory"]) / np.hypot(r["error"], 0.02))


def test_adam_has_the_seed_sem_and_no_z_with_one_seed():
    rng = np.random.default_rng(1)
    x = 0.05 + 0.01 * rng.standard_normal((len(PS), 3, 1))
    y = MUG(PS)[:, None, None] + 0.01 * rng.standard_normal((len(PS), 3, 1))
    one = np.full_like(x, np.nan)
    one[:, 0] = x[:, 0]
    ag = fake_aggregate("linear", {"adam": (x, y), "adam_map": (one, np.where(np.isnan(one), np.nan, y))},
                        PS, [0, 1, 2])
    th = fake_theory("linear", np.geomspace(2, 200, 200), {"saddle": (MU1, MUG)})
    recs = recipes(ag)
    assert recs["adam"].method == "adam" and recs["adam_map"].method == "adam"
    rows = agreement_table(ag, th, None, "linear", recs)
    a = [r for r in rows if r["recipe"] == "adam"]
    assert all(r["error_basis"] == "spread" and r["natural"] for r in a)
    sem = float(ag["cG"].sel(optimizer="adam", P=4).std(ddof=1) / np.sqrt(3))
    assert [r["error"] for r in a if r["param"] == "cG" and r["P"] == 4.0][0] == pytest.approx(sem)
    assert all(np.isnan(r["z"]) for r in rows if r["recipe"] == "adam_map")
    s = [x for x in agreement_summaries(rows) if x["recipe"] == "adam_map"][0]
    assert s["n_away"] == 0 and s["n_no_error"] == 2 * len(PS)


# ------------------------------------------------------------------------------------- convergence
def hysteresis_sweep(n_seeds=4, n_draws=120, seed=0):
    """Softmax: prior-started chains copy (âG ≈ 0.6) from P = 24 on, copy-started ones from P = 12 on;
    both agree elsewhere. Chains are white noise around their level (sd 0.03)."""
    rng = np.random.default_rng(seed)
    Ps = [8, 12, 16, 20, 24, 32, 48]
    lev_p = np.where(np.array(Ps) >= 24, 0.6, 0.02)
    lev_c = np.where(np.array(Ps) >= 12, 0.6, 0.02)
    out = {}
    for name, lev in (("sgld", lev_p), ("sgld_copy", lev_c)):
        aG = lev[:, None, None] + 0.03 * rng.standard_normal((len(Ps), n_seeds, n_draws))
        out[name] = (1 - aG, aG)
    return fake_aggregate("softmax", out, Ps, range(n_seeds)), Ps


def test_convergence_table_flags_disagreeing_starts():
    ag, Ps = hysteresis_sweep()
    recs = recipes(ag)
    assert recs["sgld_copy"].init == "copy" and recs["sgld_copy"].twin == "sgld"
    rows = convergence_table(ag, "softmax", recs)
    own = {(r["recipe"], r["P"], r["param"]): r for r in rows}
    for P in Ps:  # each recipe alone: i.i.d. chains around one level
        r = own[("sgld", float(P), "aG")]
        assert r["n_chains"] == 4 and r["n_draws"] == 120 and r["rhat"] < 1.05 and not r["rhat_flag"]
        assert r["ess_sum"] > 300 and r["err_mcse"] == pytest.approx(0.03 / np.sqrt(480), rel=0.3)
    for P in (12, 16, 20):  # inside the window the starts disagree: pooled and paired R̂ large
        r = own[("sgld+sgld_copy", float(P), "aG")]
        assert r["starts"] == "prior+copy" and r["n_pairs"] == 4
        assert r["rhat"] > 1.3 and r["rhat_paired_max"] > 1.3 and r["rhat_flag"]  # rank R̂ saturates
    assert not own[("sgld+sgld_copy", 24.0, "aG")]["rhat_flag"]
    # the verdicts' mixing rule: a training set's two starts disagree inside the window (both recipes not
    # mixed); outside it, chains long enough for bulk ESS >= 100 and one training set's R̂ <= 1.01 are mixed
    long, _ = hysteresis_sweep(n_draws=1000)
    mix = mixing_status(convergence_table(long, "softmax", recipes(long)))
    assert not mix[("sgld", 16.0, "aG")]["mixed"] and not mix[("sgld_copy", 16.0, "aG")]["mixed"]
    assert mix[("sgld", 48.0, "aG")]["mixed"] and mix[("sgld", 8.0, "aG")]["mixed"]


def test_a_stuck_chain_is_flagged():
    rng = np.random.default_rng(3)
    x = 0.1 + 0.02 * rng.standard_normal((3, 4, 200))
    x[1, 2] += 0.2  # one chain at P index 1 sits elsewhere
    ag = fake_aggregate("linear", {"sgld": (x, x.copy())}, [4, 8, 16], range(4))
    rows = convergence_table(ag, "linear", recipes(ag))
    flagged = {(r["P"], r["param"]) for r in rows if r["rhat_flag"]}
    assert flagged == {(8.0, "c1"), (8.0, "cG")}


# ------------------------------------------------------------------------------------- transitions
@pytest.mark.parametrize("shape", ["step", "logistic"])
def test_jump_known_answer_same_through_the_data_and_the_theory_path(shape):
    """Known answer: a step (or a logistic sharper than the grid) at P = 17 on a grid with 16 and 18 gives
    the bracket [16, 18] read from noisy chains (the data path: seed means, bootstrap) AND from the same
    curve stored as a theory file (closed-form posterior mean on a dense grid, same-dataset file on the
    swept P): one estimator on both sides, brackets that overlap; the theory's P* is shown, not compared."""
    rng = np.random.default_rng(5)
    Ps = np.array([8, 10, 12, 14, 16, 18, 20, 22, 25, 28, 32, 40, 48])
    P_true, seeds = 17.0, range(6)

    def curve(P):
        P = np.asarray(P, float)
        if shape == "step":
            return 0.05 + 0.5 * (P > P_true) + 0.001 * np.log(P)
        return 0.05 + 0.5 / (1 + np.exp(-(np.log(P) - np.log(P_true)) / 0.02))

    aG = curve(Ps)[:, None, None] + 0.02 * rng.standard_normal((len(Ps), 6, 1))
    ag = fake_aggregate("softmax", {"sgld": (1 - aG, aG)}, Ps, seeds)
    th = fake_theory("softmax", np.geomspace(2, 200, 400), {"mean": (lambda P: 1 - curve(P), curve)},
                     scalars={"P_star": 30.0, "P_star_exact": 30.0, "P_spinodal_low": 15.0, "P_spinodal_high": 19.0})
    same_aG = np.broadcast_to(curve(Ps)[:, None], (len(Ps), 6))
    same = fake_same("softmax", Ps, list(seeds), 1 - same_aG, same_aG)
    (row,) = transition_table(ag, th, same, "softmax", recipes(ag), n_boot=200)
    assert row["transition"] == "jump of âG (steepest rise)" and row["bracket"] == [16.0, 18.0]
    assert row["ci_lo"] <= 16.0 and row["ci_hi"] >= 18.0 and row["ci_hi"] / row["ci_lo"] < 1.4
    th_rows = {t["curve"]: t for t in row["theory"]}
    for label in ("closed form, posterior mean (seed mean, swept P, steepest rise)",
                  "same dataset, posterior mean (seed mean, swept P, steepest rise)"):
        assert (th_rows[label]["lo"], th_rows[label]["hi"]) == (16.0, 18.0) and th_rows[label]["contains"] is True
    p_star = next(t for t in row["theory"] if t["curve"].startswith("closed form, P*"))
    assert p_star["value"] == 30.0 and p_star["compared"] is False and p_star["contains"] is None
    assert row["windows"][0]["overlaps"] is True


def test_jump_bracket_moves_with_the_truth_and_disjoint_brackets_disagree():
    """A theory curve that jumps one grid step early is a disjoint bracket: 'disjoint', never 'inside'."""
    from copyhead.analysis.summary import _method_cell
    Ps = np.array([10, 12, 14, 16, 18, 20, 24])
    aG = np.where(Ps > 17, 0.5, 0.05)[:, None, None] + np.zeros((len(Ps), 4, 1))
    ag = fake_aggregate("softmax", {"sgld": (1 - aG, aG)}, Ps, range(4))
    th = fake_theory("softmax", np.geomspace(2, 200, 400),
                     {"mean": (lambda P: np.where(P > 13, 0.5, 0.95), lambda P: np.where(P > 13, 0.5, 0.05))})
    (row,) = transition_table(ag, th, None, "softmax", recipes(ag), n_boot=50)
    assert row["bracket"] == [16.0, 18.0]
    cell = _method_cell(row, "jump", "sgld")
    assert (cell["theory"]["lo"], cell["theory"]["hi"]) == (12.0, 14.0)
    assert cell["verdict"]["outcome"] == "disjoint"


def test_linear_crossover_interval_contains_the_truth():
    rng = np.random.default_rng(7)
    Ps = np.array([4, 6, 8, 10, 12, 14, 16, 20, 24, 32])
    c1 = 0.1 + 0.005 * rng.standard_normal((len(Ps), 5, 1))
    # linear in log P, like the estimator's interpolation
    cG = (0.1 + 0.1 * np.log(Ps / 13.0))[:, None, None] + 0.005 * rng.standard_normal((len(Ps), 5, 1))
    ag = fake_aggregate("linear", {"adam": (c1, cG)}, Ps, range(5))
    th = fake_theory("linear", np.geomspace(2, 200, 100), {"saddle": (MU1, MUG)},
                     scalars={"P_crossover": 13.0, "P_onset": 3.0})
    rows = {r["transition"]: r for r in transition_table(ag, th, None, "linear", recipes(ag), n_boot=200)}
    row = rows["crossover ĉG = ĉ1"]
    assert row["ci_lo"] < 13.0 < row["ci_hi"]
    assert {t["curve"]: t["contains"] for t in row["theory"]}["closed form, minimiser"] is True


def test_hysteresis_window_edges_bracket_the_planted_window():
    ag, _ = hysteresis_sweep()
    th = fake_theory("softmax", np.geomspace(2, 200, 100), {"saddle": (lambda P: 1 - P / 300, lambda P: P / 300)},
                     scalars={"P_spinodal_low": 11.0, "P_spinodal_high": 22.0})
    rows = [r for r in transition_table(ag, th, None, "softmax", recipes(ag), n_boot=100)
            if r["transition"].startswith("hysteresis")]
    lo, hi = rows
    assert lo["recipe"] == "sgld+sgld_copy" and lo["disagree_P"] == [12.0, 16.0, 20.0]
    assert 8 < lo["estimate"] < 12 and 20 < hi["estimate"] < 24
    assert lo["theory"][0]["value"] == 11.0 and hi["theory"][0]["value"] == 22.0


# -------------------------------------------------------------------------------------- the page
@pytest.fixture(scope="module")
def page_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("results")
    ag, th, same = known_posterior(n_seeds=4, n_draws=100)
    ag_s, _ = hysteresis_sweep(n_draws=60)
    th_s = fake_theory("softmax", np.geomspace(2, 200, 100), {"saddle": (lambda P: 1 - P / 300, lambda P: P / 300),
                                                              "mean": (lambda P: 1 - P / 300, lambda P: P / 300)},
                       scalars={"P_star": 18.0, "P_spinodal_low": 11.0, "P_spinodal_high": 22.0})
    files = {"aggregate_linear": ag, "theory_linear": th, "datasets_linear": same, "aggregate_softmax": ag_s,
             "theory_softmax": th_s}
    return {k: write_dataset(v, d / f"{k}.nc") for k, v in files.items()}


def test_write_results_page_appendix_and_json_carry_the_same_numbers(page_inputs, tmp_path):
    out = tmp_path / "docs" / "results.md"
    tables = write_results(page_inputs, out, n_boot=50, config_name="fake.yaml")
    md, app = out.read_text(), (out.parent / "results_appendix.md").read_text()
    data = json.loads(out.with_suffix(".json").read_text(),
                      parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert data == json.loads(json.dumps(tables))
    assert len(md.splitlines()) <= 150
    for section in ("## Headline", "## linear attention", "## softmax attention", "## Convergence",
                    "## Key figures", "## Studies"):
        assert section in md
    for section in ("## Configuration", "## Agreement", "## Transition points", "## Convergence", "## Adam",
                    "## Against the paper's own numbers", "## Definitions", "## Inputs"):
        assert section in app
    assert "../results/figures/fig3_linear_order_params.png" in md and "`fake.yaml`" in md
    assert "(results_appendix.md)" in md and "(results.md)" in app
    # the paper on our σ² (0.1): P ≈ 300 at σ² = 1 is 30, P ≈ 322–400 is 32.2–40
    assert "30 (P ≈ 300)" in md and "32.2–40 (P ≈ 322–400)" in md
    # the agreement line is the summary's row, its verdict the summary's outcome
    s = [x for x in data["summary"]["attentions"]["linear"]["agreement"] if x["method"] == "sgld"][0]
    assert s["curve"] == "same_mean" and s["verdict"]["outcome"] in md
    assert f"RMS z = {g(s['rms_z'])}" in md and f"{s['n_within_2']} of {s['n_away']} points within 2σ" in md
    # the softmax jump on the page is the table's grid bracket with its interval
    jump = [r for r in data["summary"]["attentions"]["softmax"]["transitions"] if r["kind"] == "jump"][0]["sgld"]
    row = [r for r in data["attentions"]["softmax"]["transitions"] if r["transition"].startswith("jump")][0]
    assert (jump["estimate"], jump["ci_lo"], jump["ci_hi"]) == (row["estimate"], row["ci_lo"], row["ci_hi"])
    assert jump["bracket"] == row["bracket"]
    assert f"{g(row['bracket'][0])}–{g(row['bracket'][1])} [{g(jump['ci_lo'])}, {g(jump['ci_hi'])}]" in md
    for role, v in data["inputs"].items():
        assert v["sha256"][:12] in app
    again = tmp_path / "again" / "results.md"   # the pages are a function of the JSON
    again.parent.mkdir()
    write_pages(out.with_suffix(".json"), again, figure_dir="../results/figures")
    assert again.read_text() == md
    assert (again.parent / "results_appendix.md").read_text() == app


def test_every_file_copyhead_results_writes_records_the_sha256_of_what_it_read(page_inputs, tmp_path):
    """results.json (``copyhead results --inputs``: write_results), results.md and results_appendix.md
    (``copyhead results --tables``) each get a ``<file>.provenance.json`` naming the files it read with
    their sha256 (the aggregates and theory files; the results JSON and the studies reports) and its own."""
    out = tmp_path / "docs" / "results.json"
    write_results(page_inputs, out, n_boot=50, config_name="fake.yaml")
    report = tmp_path / "studies_x" / "studies.json"
    report.parent.mkdir()
    report.write_text(json.dumps({"studies": []}))
    md = tmp_path / "docs" / "results.md"
    assert cli_main(["results", "--tables", str(out), "--out", str(md), "--figure-dir", "results_figures",
                     "--studies", str(report)]) == 0
    expected = {out: page_inputs, md: {"results": out, "studies_x": report},
                md.with_name("results_appendix.md"): {"results": out}}
    for product, read in expected.items():
        rec = json.loads(sidecar_path(product).read_text())
        assert rec["concern"] == "results" and rec["code_fingerprint"] == code_fingerprint("results")
        assert rec["outputs"] == {product.name: {"path": str(product), "sha256": sha256_file(product)}}
        assert {role: (e["path"], e["sha256"]) for role, e in rec["inputs"].items()} == \
            {role: (str(p), sha256_file(p)) for role, p in read.items()}
    assert json.loads(sidecar_path(out).read_text())["inputs"]["aggregate_linear"]["kind"] == "aggregate"
    # rendering again from a changed results JSON records the new checksum
    out.write_text(out.read_text().replace('"fake.yaml"', '"other.yaml"'))
    assert cli_main(["results", "--tables", str(out), "--out", str(md)]) == 0
    assert json.loads(sidecar_path(md).read_text())["inputs"]["results"]["sha256"] == sha256_file(out)


def test_build_tables_needs_a_theory_for_each_aggregate():
    ag, th, _ = known_posterior(n_seeds=2, n_draws=20)
    with pytest.raises(ValueError, match="theory_linear"):
        build_tables({"aggregate_linear": ag})
    t = jsonable(build_tables({"aggregate_linear": ag, "theory_linear": th}, n_boot=10))
    assert set(t["attentions"]) == {"linear"} and not t["attentions"]["linear"]["same_dataset"]
    json.dumps(t, allow_nan=False)


def test_runs_at_the_origin_are_no_crossover_and_a_flat_curve_no_jump():
    """Adam collapsed onto A = 0 (ĉ1 = ĉG = 1e-100) at small P is not a crossing; a flat âG (plain MAP
    staying uniform) has no jump; one seed per P gives no interval."""
    rng = np.random.default_rng(2)
    Ps = np.array([4, 6, 8, 10, 12, 14, 16, 20, 24, 32])
    c1 = 0.1 + 0.005 * rng.standard_normal((len(Ps), 3, 1))
    cG = (0.1 + 0.1 * np.log(Ps / 13.0))[:, None, None] + 0.005 * rng.standard_normal((len(Ps), 3, 1))
    c1[:3], cG[:3] = 1e-100, 2e-100
    ag = fake_aggregate("linear", {"adam": (c1, cG)}, Ps, range(3))
    th = fake_theory("linear", np.geomspace(2, 200, 100), {"saddle": (MU1, MUG)}, scalars={"P_crossover": 13.0})
    row = {r["transition"]: r for r in transition_table(ag, th, None, "linear", recipes(ag), n_boot=100)}[
        "crossover ĉG = ĉ1"]
    assert 12 < row["estimate"] < 14
    flat = np.zeros((6, 1, 1))
    flat[3:] = 1e-9
    ag = fake_aggregate("softmax", {"adam_map": (1 - flat, flat)}, [8, 12, 16, 24, 32, 48], [0])
    th = fake_theory("softmax", np.geomspace(2, 200, 100), {"saddle": (lambda P: 1 - P / 300, lambda P: P / 300)},
                     scalars={"P_star": 18.0})
    (row,) = transition_table(ag, th, None, "softmax", recipes(ag), n_boot=50)
    assert np.isnan(row["estimate"]) and "no jump" in row["note"] and "one seed per P" in row["note"]


def test_a_run_exactly_on_the_theory_value_has_a_finite_z():
    """Theory values carry their numerical resolution (grid spacing / 128) as an error: Adam sitting at
    A = 0 with the theory at 1e-16 gives z ≈ 0, not ±inf."""
    zero = np.zeros((3, 3, 1))
    zero[:, :, 0] = 1e-110 * np.arange(3)
    ag = fake_aggregate("linear", {"adam": (zero, zero)}, [2, 3, 4], range(3))
    th = fake_theory("linear", np.geomspace(1, 10, 50), {"saddle": (lambda P: 1e-16 + 0 * P, lambda P: 0 * P)})
    th.attrs.update(grid_range="[0.7]", grid_n=161)
    assert theory_resolution(th, "linear", L) == pytest.approx(1.4 / 160 / 128)
    rows = agreement_table(ag, th, None, "linear", recipes(ag))
    assert rows and all(abs(r["z"]) < 1e-6 for r in rows if r["curve"] == "closed_saddle")
    sm = fake_theory("softmax", [1.0], {})
    sm.attrs.update(grid_range="[-0.5, 5.0]", grid_n=111)
    assert theory_resolution(sm, "softmax", L) == pytest.approx(5.5 / 110 / 128 * L / (4 * (L - 1)))


def test_the_page_names_the_recipes_and_warns_when_the_config_is_not_the_runs(page_inputs, tmp_path):
    recipe = {"method": "sgld", "init": "prior", "steps": 20000, "eta": 0.001, "burn_in": 10000, "thin": 100}
    cfg = {"optimizers": {"sgld": recipe, "sgld_copy": dict(recipe, init="copy")},
           "sweep": {"linear": {"sgld": {"P": PS, "seeds": [0, 1, 2, 3]}},
                     "softmax": {"sgld": {"P": [8, 12, 16, 20, 24, 32, 48], "seeds": [0, 1, 2, 3]},
                                 "sgld_copy": {"P": [8, 12], "seeds": [0, 1, 2, 3]}}}}
    out = tmp_path / "results.md"
    write_results(page_inputs, out, config=cfg, n_boot=20)
    md = (tmp_path / "results_appendix.md").read_text()
    assert "| sgld | sgld | prior | 20000 | 0.001 | 10000 | 100 | – |" in md
    assert "warning**: the softmax runs" in md and "recipes sgld_copy differ" in md
    assert "warning**: the linear runs" not in md


def _numbers(a, b, path=""):
    """Every leaf of ``a`` that differs from ``b``: numbers within tests/stored.py's FIT tolerance (the
    tables hold logistic fits of transitions and bootstrap intervals over such fits, whose last digits
    follow the BLAS kernels: 1.7e-6 relative between AVX2 and AVX-512), else exactly."""
    if isinstance(a, dict):
        assert set(a) <= set(b), (path, sorted(set(a) - set(b)))
        return [d for k in a for d in _numbers(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list):
        assert len(a) == len(b), path
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _numbers(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return [] if b == pytest.approx(a, rel=FIT, abs=1e-9) else [(path, a, b)]
    return [] if a == b else [(path, a, b)]


@pytest.mark.stored_numbers
def test_the_fit_tolerance_still_catches_a_real_change():
    """FIT passes the kernels' spread of the softmax jump (1.7e-6) and catches a change of 1e-3."""
    stored = 23.733659577
    assert not _numbers({"x": stored}, {"x": 23.733699845}) and not _numbers({"x": stored}, {"x": 23.733637639})
    assert _numbers({"x": stored}, {"x": stored * (1 + 1e-3)})


@pytest.mark.stored_numbers
def test_the_results_tables_keep_every_number_of_commit_9109f6e():
    """The tables of the synthetic page fixture equal, number for number, those the code of commit 9109f6e
    computed (tests/data/results_tables_9109f6e.json); later code only adds keys (summary, nonfinite,
    n_nonfinite). The unified estimator changes no table: the summary reads the tables' own rows (fig8's
    old grid reading of the softmax jump was not in the tables). The one change of numbers is the switch
    of the diagnostics to ArviZ: the MCSE (ArviZ splits each
    chain for its ESS), hence the errors whose floor it is and their z, the bulk ESS (within 15 %) and the
    within-chain R̂ (ArviZ needs two chains: a chain's halves, split again); every mean, every R̂ across
    chains and every transition point is unchanged — except the softmax jump, whose estimator changed by
    design (a logistic midpoint became the grid bracket of the steepest rise, read the same way on every
    theory curve): its rows are left out of the number-for-number comparison and checked for the new form."""
    ag, th, same = known_posterior(n_seeds=4, n_draws=100)
    ag_s, _ = hysteresis_sweep(n_draws=60)
    th_s = fake_theory("softmax", np.geomspace(2, 200, 100), {"saddle": (lambda P: 1 - P / 300, lambda P: P / 300),
                                                              "mean": (lambda P: 1 - P / 300, lambda P: P / 300)},
                       scalars={"P_star": 18.0, "P_spinodal_low": 11.0, "P_spinodal_high": 22.0})
    new = jsonable(build_tables({"aggregate_linear": ag, "theory_linear": th, "datasets_linear": same,
                                 "aggregate_softmax": ag_s, "theory_softmax": th_s}, n_boot=50))
    old = json.loads((Path(__file__).parent / "data" / "results_tables_9109f6e.json").read_text())
    arviz = {"err_mcse", "error", "error_basis", "z", "z_chains_rms", "ess_bulk", "ess_sum", "rhat_within_max",
             "chi2", "chi2_per_dof", "p_value", "rms_z", "rms_z_all", "worst_z", "worst_recipe", "worst_P",
             "worst_param",
             # the softmax summaries count âG only (â1 = 1 − âG would count a deviation twice): their counts
             "n_away", "n_all", "dof", "n_within_2", "n_no_error",
             # the crossover's interval holds its interpolation error (log P against P)
             "ci_lo", "ci_hi"}
    def without_jump(t):
        t = json.loads(json.dumps(t))
        sm = t["attentions"]["softmax"]
        sm["transitions"] = [r for r in sm["transitions"] if not r["transition"].startswith("jump")]
        return t

    jumps = [r for r in new["attentions"]["softmax"]["transitions"] if r["transition"].startswith("jump")]
    assert [r["transition"] for r in jumps] == ["jump of âG (steepest rise)"] and all(
        r["bracket"][0] < r["bracket"][1] and r["ci_lo"] <= r["bracket"][0] for r in jumps)
    assert not [r for r in old["attentions"]["softmax"]["transitions"] if r["transition"].startswith("jump")] or \
        len(jumps) == 1
    changed = _numbers(without_jump(old), without_jump(new))
    assert changed and {p.rsplit("/", 1)[1] for p, _, _ in changed} <= arviz, changed
    ess = [(a, b) for p, a, b in changed if p.endswith("/ess_bulk")]
    assert ess and all(0.85 < b / a < 1.15 for a, b in ess)   # 13 % at ESS ≈ 13 (unconverged rows)
    assert set(new) - set(old) == {"summary"}
    for att, sa in new["summary"]["attentions"].items():
        for r in sa["transitions"]:
            for method in ("sgld", "adam"):
                c = r[method]
                if c is None:
                    continue
                row = [t for t in new["attentions"][att]["transitions"] if t["recipe"] == c["recipe"]
                       and t["transition"].startswith({"crossover": "crossover", "onset": "onset", "jump": "jump",
                                                       "hysteresis_lower": "hysteresis window, lower",
                                                       "hysteresis_upper": "hysteresis window, upper"}[r["kind"]])]
                assert len(row) == 1 and (c["estimate"], c["ci_lo"], c["ci_hi"]) == \
                    (row[0]["estimate"], row[0]["ci_lo"], row[0]["ci_hi"])


def test_a_run_with_a_non_finite_result_is_named_and_marked(tmp_path):
    """Aggregate status "nonfinite" (the file said ok, a result is not finite) with the per-recipe
    n_nonfinite and the nonfinite_json attribute: the tables count it, the page names it, fig3 marks its P."""
    import matplotlib.pyplot as plt
    ag, th, same = known_posterior(n_seeds=4, n_draws=40)
    P = float(ag["P"].values[2])
    ag["status"] = ag["status"].astype("<U9")
    ag["status"].loc[dict(optimizer="sgld", P=int(P), seed=1)] = "nonfinite"
    ag.attrs["nonfinite_json"] = json.dumps({f"results/runs/linear/sgld/P{int(P)}/seed1.nc": ["c1", "c1_sample"]})
    tables = jsonable(build_tables({"aggregate_linear": ag, "theory_linear": th}, n_boot=10))
    assert tables["attentions"]["linear"]["sweep"]["sgld"]["n_nonfinite"] == 1
    assert tables["summary"]["attentions"]["linear"]["nonfinite"] == [
        {"recipe": "sgld", "P": P, "seed": 1, "variables": ["c1", "c1_sample"]}]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(tables))
    write_pages(path, tmp_path / "results.md")
    md = (tmp_path / "results.md").read_text()
    assert f"**non-finite result**: linear `sgld` P = {int(P)} seed 1 (c1, c1_sample)" in md
    files = {"aggregate_linear": str(write_dataset(ag, tmp_path / "ag.nc")),
             "theory_linear": str(write_dataset(th, tmp_path / "th.nc"))}
    fig = FIGURES["fig3_linear_order_params"].draw(dict(files, results=str(path)), {})
    marks = [ln for ax in fig.axes for ln in ax.lines if ln.get_marker() == "x" and ln.get_color() == "red"]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [P]
    assert any("1 non-finite run(s) excluded" in t.get_text() for ax in fig.axes for t in ax.texts)
    plt.close(fig)


# ------------------------------------------------------------------------------- SGLD against HMC
def _two_samplers(seed=0, n_seeds=4, n_draws=200, tau=0.02, sd=0.05, bias_at=None, bias=0.0):
    """SGLD ("sgld", AR(1) ρ = 0.8) and HMC ("hmc", ρ = 0.1) chains on the same datasets: both around the
    dataset's own posterior mean μ(P) + δ(P, seed); SGLD's ĉG shifted by ``bias`` at P = ``bias_at``."""
    rng = np.random.default_rng(seed)
    delta = tau * rng.standard_normal((2, len(PS), n_seeds))
    out = {}
    for name, rho in (("sgld", 0.8), ("hmc", 0.1)):
        x = np.empty((2, len(PS), n_seeds, n_draws))
        for k, mu in enumerate((MU1, MUG)):
            for i, P in enumerate(PS):
                shift = bias if (name == "sgld" and k == 1 and P == bias_at) else 0.0
                for j in range(n_seeds):
                    x[k, i, j] = mu(P) + delta[k, i, j] + shift + sd * ar1(rng, n_draws, rho)
        out[name] = (x[0], x[1])
    return fake_aggregate("linear", out, PS, range(n_seeds))


def test_sgld_against_hmc_on_the_same_datasets_cancels_the_dataset_and_finds_a_bias():
    """The difference of two unbiased samplers on the same training sets has z ~ N(0, 1) although the
    datasets differ by τ = 0.4 sd (the dataset cancels); a planted SGLD bias of 0.03 at one P is the one
    point outside 2σ; HMC is recognised as a sampler by its name; its ESS per chain beats SGLD's."""
    z = []
    for rep in range(3):
        ag = _two_samplers(seed=rep)
        recs = recipes(ag)
        assert recs["hmc"].method == "hmc" and recs["hmc"].sampler and recs["sgld"].sampler
        rows = sampler_table(ag, "linear", recs)
        assert len(rows) == 2 * len(PS) and {r["reference"] for r in rows} == {"hmc"}
        assert all(r["n_seeds"] == 4 and r["ess_hmc"] > 2 * r["ess_sgld"] for r in rows)
        z += [r["z"] for r in rows]
    assert 0.7 < np.sqrt(np.mean(np.square(z))) < 1.3
    ag = _two_samplers(seed=5, bias_at=16, bias=0.03)
    rows = sampler_table(ag, "linear", recipes(ag))
    out = [(r["P"], r["param"]) for r in rows if abs(r["z"]) > 3]
    assert out == [(16.0, "cG")]
    (s,) = sampler_summaries(rows)
    assert (s["recipe"], s["reference"], s["worst_P"], s["worst_param"]) == ("sgld", "hmc", 16.0, "ĉG")
    assert s["worst_diff"] == pytest.approx(0.03, abs=0.01)


def test_the_page_reports_the_hmc_reference_and_sgld_against_it(tmp_path):
    """With an HMC recipe the summary has a ``reference`` section and the page leads with HMC: a transition
    column, the convergence of its chains and the SGLD − HMC table."""
    ag = _two_samplers(seed=1, bias_at=16, bias=0.03)
    th = fake_theory("linear", np.geomspace(2, 200, 200), {"saddle": (MU1, MUG), "mean": (MU1, MUG)})
    tables = jsonable(build_tables({"aggregate_linear": ag, "theory_linear": th}, n_boot=20))
    ref = tables["summary"]["attentions"]["linear"]["reference"]
    assert ref["convergence"]["n_rows"] == 2 * len(PS) and ref["sgld"][0]["worst_P"] == 16.0
    page = render_page(tables)
    assert "## The reference posterior: HMC, and SGLD against it" in page
    assert "| HMC `hmc` [95% CI] |" in page and "`sgld` − `hmc`" in page
    assert "- **linear**: HMC " in page
    # every Markdown table keeps its column count (a '|' inside a header or cell is escaped)
    import re
    cols = [len(re.findall(r"(?<!\\)\|", line)) for line in page.splitlines() if line.startswith("|")]
    assert cols and "largest \\|z\\|" in page
    blocks, cur = [], []
    for line in page.splitlines() + [""]:
        if line.startswith("|"):
            cur.append(len(re.findall(r"(?<!\\)\|", line)))
        elif cur:
            blocks.append(cur)
            cur = []
    assert blocks and all(len(set(b)) == 1 for b in blocks), blocks


def test_a_point_whose_chains_have_not_mixed_is_left_out_of_the_verdict():
    """Per training set, never across seeds: a chain's halves (or one dataset's prior- and copy-started
    chains, which override) with bulk ESS < 100 or R̂ > 1.01 is 'not mixed'; such points are left out of the
    effect size, which decides the verdict; with no mixed point the verdict is 'not mixed'."""
    from copyhead.analysis.agreement import agreement_summaries
    from copyhead.analysis.convergence import mixing_status
    from copyhead.analysis.summary import agreement_verdict, effect_size
    from copyhead.analysis.results_model import AgreementVerdict
    from copyhead.format import verdict_text
    conv = [{"recipe": "hmc", "P": 8.0, "param": "c1", "rhat_within_max": 1.002, "ess_chain_min": 300.0},
            {"recipe": "hmc", "P": 16.0, "param": "c1", "rhat_within_max": 1.002, "ess_chain_min": 50.0},
            {"recipe": "hmc", "P": 24.0, "param": "c1", "rhat_within_max": 1.001, "ess_chain_min": 900.0},
            {"recipe": "hmc_copy", "P": 24.0, "param": "c1", "rhat_within_max": 1.001, "ess_chain_min": 900.0},
            {"recipe": "hmc+hmc_copy", "P": 24.0, "param": "c1", "rhat_paired_max": 1.3, "ess_paired_min": 400.0}]
    m = mixing_status(conv)
    assert m[("hmc", 8.0, "c1")]["mixed"] and not m[("hmc", 16.0, "c1")]["mixed"]
    assert not m[("hmc", 24.0, "c1")]["mixed"] and m[("hmc", 24.0, "c1")]["rhat"] == 1.3   # the pair decides
    assert m[("hmc_copy", 24.0, "c1")]["basis"].startswith("prior- and copy-started")
    rows = [{"attention": "linear", "recipe": "hmc", "method": "hmc", "curve": "same_mean", "P": P, "name": "ĉ1",
             "param": "c1", "z": z, "away": True, "mixed": m[("hmc", P, "c1")]["mixed"], "experiment": x,
             "theory": 0.30} for P, z, x in ((8.0, 0.5, 0.31), (16.0, 5.0, 0.50), (24.0, -4.0, 0.05))]
    (s,) = agreement_summaries(rows)
    assert (s["n_not_mixed"], s["n_mixed"], s["n_within_2_mixed"]) == (2, 1, 1) and s["rms_z_mixed"] == 0.5
    v = agreement_verdict(s, effect_size(rows, "hmc", "same_mean", 0.02))
    assert v["outcome"] == "agrees within tolerance" and v["effect"]["n"] == 1 and v["effect"]["n_not_mixed"] == 2
    assert verdict_text(AgreementVerdict.from_dict(v)).startswith("agrees within tolerance (|Δ| ≤ 0.02); 2 of 3 "
                                                                  "points not mixed")
    rows_ok = [dict(r, mixed=True) for r in rows]
    v = agreement_verdict(agreement_summaries(rows_ok)[0], effect_size(rows_ok, "hmc", "same_mean", 0.02))
    assert v["outcome"] == "deviates" and v["effect"]["max_abs_delta"] == pytest.approx(0.25)
    assert verdict_text(AgreementVerdict.from_dict(v)) == "deviates by 0.25 (−83 %; tolerance |Δ| ≤ 0.02)"
    none = [dict(r, mixed=False) for r in rows]
    v = agreement_verdict(agreement_summaries(none)[0], effect_size(none, "hmc", "same_mean", 0.02))
    assert v["outcome"] == "not mixed"


def test_every_verdict_row_carries_its_effect_size_and_the_tolerance(tmp_path):
    """The published results page's verdicts, rendered by the current code from the committed results JSON:
    every agreement verdict has |Δ|, Δ relative to the theory and the tolerance beside its significance; the
    claims table's agreement row and the SGLD-against-HMC table say |Δ|; no location verdict compares the
    paper's number at an unstated size."""
    import shutil
    from copyhead.analysis.summary import build_summary
    from copyhead.results import write_pages
    shutil.copy(Path(__file__).resolve().parents[1] / "docs/results.json", tmp_path / "results.json")
    tables = json.loads((tmp_path / "results.json").read_text())
    summ = build_summary(tables)
    for sa in summ["attentions"].values():
        for r in sa["agreement"]:
            for v in [r["verdict"]] + [o["verdict"] for o in r["others"]]:
                e = v["effect"]
                assert e["tolerance"] == summ["tolerance"] and "max_abs_delta" in e and "worst_rel" in e
                assert v["outcome"] in ("agrees within tolerance", "deviates", "not mixed", "no points")
        for s in (sa.get("reference") or {}).get("sgld", []):
            assert s["effect"]["tolerance"] == summ["tolerance"] and s["effect"]["n"] > 0
    write_pages(tmp_path / "results.json", tmp_path / "results.md", figure_dir="results_figures")
    md = (tmp_path / "results.md").read_text()
    lines = [x for x in md.splitlines() if x.startswith("- ") and " against the " in x and "**" in x]
    assert lines and all("|Δ| ≤ " in x and ("|Δ| = " in x or "deviates by" in x or "within tolerance" in x
                                            or "not mixed" in x) for x in lines), lines
    claims = [x for x in md.splitlines() if x.startswith("| theory agrees with Adam and SGLD")]
    assert claims and "\\|Δ\\| ≤" in claims[0] and "tolerance" in claims[0]
    assert "paper / ours" not in md and "size not stated" in md
    assert md.split("## The paper's claims")[0].count("At this study's size") == 1


def test_seed_block_bootstrap_widens_the_rms_z_when_seeds_move_together():
    """Seeds whose deviation is the same at every P (a shared start and noise stream on nested datasets)
    give an RMS z whose seed-block interval is wide; independent deviations per P give a narrow one."""
    from copyhead.analysis.agreement import block_rms_z
    rng = np.random.default_rng(3)
    n_P, seeds = 8, [0, 1, 2, 3, 4, 5]

    def rows(locked):
        off = rng.normal(0, 0.05, len(seeds))
        out = []
        for i in range(n_P):
            dev = off if locked else rng.normal(0, 0.05, len(seeds))
            v = 0.02 + dev + rng.normal(0, 0.002, len(seeds))
            z = v.mean() / (v.std(ddof=1) / np.sqrt(len(v)))
            out.append({"z": z, "seeds": seeds, "seed_values": list(v), "seed_mcse": None, "z_offset": 0.0,
                        "error": v.std(ddof=1) / np.sqrt(len(v)), "theory_error": 0.0})
        return out

    locked, free = block_rms_z(rows(True), n_boot=300), block_rms_z(rows(False), n_boot=300)
    assert locked["n_distinct"] == 462 and free["n_seeds"] == 6
    rel = {k: b["rms_z_lo"] / b["rms_z_hi"] for k, b in (("locked", locked), ("free", free))}
    assert rel["locked"] < 0.5 * rel["free"]   # locked seeds: the RMS z can be small or large together
