"""The one loop's research measurements (research/benchmarks/): one_loop_column_share, column_share_scaling
and one_loop_exact, on what they compute from their draws."""
import numpy as np
import pytest

pytestmark = pytest.mark.research


def test_off_plane_part_and_column_share_of_the_benchmark(research_script):
    """research/benchmarks/one_loop_column_share.py: the off-plane part is orthogonal to J and I, a column mode keeps
    its share 1, and the cosine of a matrix with itself is 1."""
    mod = research_script("one_loop_column_share")
    L = 6
    w = np.arange(L) - (L - 1) / 2.0
    A = 0.3 * np.eye(L) + 0.1 * np.ones((L, L)) + np.outer(np.ones(L), w) * 0.05
    D = mod.off_plane(A)
    assert abs(np.sum(D)) < 1e-12 and abs(np.trace(D)) < 1e-12
    np.testing.assert_allclose(D, np.outer(np.ones(L), w) * 0.05, atol=1e-12)
    assert mod.column_share(D) == pytest.approx(1.0) and mod.cosine(D, 2 * D) == pytest.approx(1.0)


def test_column_share_scaling_parts_fit_and_summary(research_script):
    """research/benchmarks/column_share_scaling.py: the column and rest parts add up to ‖u‖² (a column mode is all
    column), the weighted line fit recovers a line exactly, and a (size, P) with a set below the noise has
    no difference to report."""
    mod = research_script("column_share_scaling")
    L = 6
    w = np.arange(L) - (L - 1) / 2.0
    col, rest = mod.parts(np.outer(np.ones(L), w))
    assert col == pytest.approx(np.sum(w**2) * L) and rest == pytest.approx(0.0, abs=1e-12)
    u = np.random.default_rng(0).normal(size=(L, L))
    assert sum(mod.parts(u)) == pytest.approx(np.sum(u**2))
    xs = [0.0625, 0.125, 0.25, 0.5, 1.0]
    line = mod.fit_inverse_dk([1 / x for x in xs], [0.01 + 0.2 * x for x in xs], [0.01] * 5)  # its straight line
    assert (line["a"], line["b"]) == pytest.approx((0.01, 0.2)) and line["chi2_dof"] == pytest.approx(0.0, abs=1e-20)
    assert line["a_err"] > 0 and line["b_err"] > 0
    c, sc, al, sal, chi2 = mod.fit_power(xs, [0.8 * x**0.6 for x in xs], [0.01] * 5)
    assert (c, al) == pytest.approx((0.8, 0.6), rel=1e-5) and chi2 == pytest.approx(0.0, abs=1e-8)
    m, e = mod.power_predict(mod.power_fit(xs, [0.8 * x**0.6 for x in xs], [0.01] * 5), 2.0)
    assert m == pytest.approx(0.8 * 2.0**0.6, rel=1e-5) and 0 < e < 0.05      # carried beyond the fitted range
    row = {"P": 10, "share_signal": 0.05, "share_pool": 0.01, "share_one_loop": 0.012, "col_signal": 2.0,
           "rest_signal": 38.0, "col_pool": 0.5, "rest_pool": 49.5, "cos_pool": 0.9, "norm": 1.0, "norm_noise": 0.1,
           "resolved": True}
    s = mod.summary([row, dict(row, share_signal=0.07)])
    assert s["diff"] == pytest.approx(0.05) and s["se"] == pytest.approx(0.01) and s["col_ratio"] == pytest.approx(4.0)
    assert s["lnr"] == pytest.approx(0.5 * (np.log(5) + np.log(7)))
    assert np.isnan(mod.summary([row, dict(row, resolved=False)])["diff"])
    assert np.isnan(mod.summary([row, dict(row, share_signal=-0.01)])["lnr"])     # no log of a share ≤ 0


def test_exact_sampling_benchmark_samples_the_posterior_of_one_training_set(research_script):
    """research/benchmarks/one_loop_exact.py draws with the project's HMC: a short run gives order parameters in the
    sign gauge (ĉ1 ≥ 0) near the per-dataset theory at a size where the posterior is narrow."""
    mod = research_script("one_loop_exact")
    s = mod.sample(32, 16, 0, iters=150, burn=50, chains=2)
    assert s["c1"].shape == (2, 100) and (s["c1"] >= 0).all() and s["divergent"] == 0
    assert float(s["cG"].mean()) == pytest.approx(0.317, abs=0.03)       # exact 0.3175 ± 0.0005 (the page)


def test_exact_sampling_page_puts_the_effect_size_before_the_rms_z(research_script):
    """research/benchmarks/one_loop_exact.py: every (d_k, P) row and the summary give the largest
    |exact − theory| first, the RMS z beside it, from the same rows (a synthetic set: the one loop halves the
    uncorrected miss)."""
    mod = research_script("one_loop_exact")
    rows = [{"d_k": d_k, "P": P, "seed": s, "param": p, "exact": 0.5, "mcse": 0.01, "rhat": 1.0, "ess": 400.0, "accept": 0.8, "divergent": 0,
             "none": 0.5 - 0.08 / d_k * (s + 1), "one_loop": 0.5 - 0.04 / d_k * (s + 1), "pooling": 0.5 - 0.02 / d_k,
             "soft": 0.0, "soft_pooling": 0.0}
            for d_k in mod.D_KS for P in mod.PS for s in (0, 1) for p in ("c1", "cG")]
    text = mod.markdown(rows, 1.0)
    assert "largest abs(exact − theory): uncorrected | one loop | pooling sector | median" in text
    summary = next(line for line in text.splitlines() if line.startswith("Over the (d_k, P) above"))
    assert "d_k = 8: 0.02 → 0.01 (RMS z 1.58 → 0.791)" in summary     # |Δ| max 0.16/8, 0.08/8; z 1 and 2 → RMS √2.5
    assert summary.index("largest |exact − theory|") < summary.index("RMS z")
