"""The one-loop predictions at the studies' points (research.one_loop.posterior, .predict;
research.one_loop.points, .one_loop_compare; docs/one_loop.md): the posterior-mean machinery against brute force at small L, switched-off and linear
corrections, the d_k → ∞ limit, the block-form extras against full L²×L² Hessians, the comparison numbers."""
import numpy as np
import pytest
import xarray as xr

from copyhead.config import ActionParams
from copyhead.theory.action import action_linear, order_to_coeffs
from copyhead.theory.prior import neg_log_prior_matrix
from research.one_loop import compare as cmp
from research.one_loop import points as one_loop_points
from research.one_loop import posterior as lp
from research.one_loop.blocks import isotypic_bases, transverse_basis
from research.one_loop.correction import one_loop, one_loop_ek
from research.one_loop.evidence import evidence_ek, grad_hessian
from research.one_loop.prior import prior_rate_form, prior_rate_hessian

# tests of the research package (src/research/one_loop): -m research
pytestmark = pytest.mark.research


def params(L=4, V=4, d_k=16):
    return ActionParams(V=V, L=L, d_k=d_k, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1, prior="large_deviation")


def zero(c1, cG):
    return {"dS": 0.0, "rel": 1.0, "pref": 0.0, "naive": 0.0}


def test_prior_rate_form_is_the_second_directional_derivative():
    """dᵀ H_I d' of Eq. (28) on random (non-basis) directions = central differences of the SVD rate."""
    L, c, h = 5, 0.7, 1e-4
    rng = np.random.default_rng(0)
    M = 0.3 * np.ones((L, L)) + 0.8 * np.eye(L)
    d = rng.normal(size=(2, L, L))
    f = lambda X: neg_log_prior_matrix(X, 1, c, 1.0, "large_deviation")    # noqa: E731
    Q = prior_rate_form(M, c, d)
    fd = (f(M + h * (d[0] + d[1])) - f(M + h * (d[0] - d[1])) - f(M - h * (d[0] - d[1]))
          + f(M - h * (d[0] + d[1]))) / (4 * h * h)
    assert Q[0, 1] == pytest.approx(fd, rel=1e-5) and Q[0, 1] == pytest.approx(Q[1, 0], rel=1e-12)


def test_switched_off_or_constant_correction_leaves_the_mean():
    p, P = params(), 24.0
    r0 = lp.posterior_means(p, P, coarse=5, fine=81, correction=zero)
    rc = lp.posterior_means(p, P, coarse=5, fine=81, correction=lambda a, b: dict(zero(a, b), dS=7.3))
    for r in (r0, rc):
        for v in ("one_loop", "one_loop_pref", "naive"):
            for k in ("c1", "cG"):
                assert r[v][k] == pytest.approx(r["none"][k], abs=1e-13)
    assert r0["soft_weight"] == 0 and r0["near_unstable_weight"] == 0 and r0["n_unstable"] == 0


def test_linear_correction_tilts_the_mean_exactly():
    """ΔS = a·cG is interpolated exactly (bicubic): the corrected mean is the tilted mean, which an
    independent quadrature over a large box (no window) gives."""
    p, P, a = params(), 24.0, 3.0
    r = lp.posterior_means(p, P, coarse=7, fine=161, correction=lambda c1, cG: dict(zero(c1, cG), dS=a * cG))
    c1, cG = np.linspace(0, 1.5, 1201), np.linspace(-1.5, 1.5, 2401)
    C1, CG = np.meshgrid(c1, cG, indexing="ij")
    S = action_linear(C1, CG, P, p) + a * CG
    w = np.exp(-(S - S.min())) * np.where(c1[:, None] > 0, 1.0, 0.5)
    brute = (w * CG).sum() / w.sum()
    assert r["one_loop"]["cG"] < r["none"]["cG"]
    assert r["one_loop"]["cG"] == pytest.approx(brute, abs=3e-4)


def test_means_against_a_correction_on_every_fine_point():
    """L = V = 4, d_k = 16, P = 24: the one-loop mean (ΔS_EK on a 9² sub-grid, interpolated) against ΔS_EK
    evaluated at every one of 21² points (no interpolation), in the same window."""
    p, P, n = params(), 24.0, 21
    r = lp.posterior_means(p, P, coarse=9, fine=n)
    E = evidence_ek(p, P)
    (a1, b1), (a2, b2) = r["window"]
    c1, cG = np.linspace(a1, b1, n), np.linspace(a2, b2, n)
    C1, CG = np.meshgrid(c1, cG, indexing="ij")
    m1, mP = order_to_coeffs(C1, CG, p.L)
    dS = np.array([[one_loop_ek(p, P, m1[i, j], mP[i, j], E=E).dS
                    for j in range(n)] for i in range(n)])
    T = action_linear(C1, CG, P, p) + dS
    ok = np.isfinite(T)
    w = np.where(ok, np.exp(-(np.where(ok, T, np.inf) - T[ok].min())), 0) * np.where(c1[:, None] > 0, 1.0, 0.5)
    shift = r["one_loop"]["cG"] - r["none"]["cG"]
    brute = (w * CG).sum() / w.sum() - r["none"]["cG"]
    assert abs(shift) > 5e-3 and shift == pytest.approx(brute, rel=0.03)


def test_block_extras_against_full_hessians():
    """ek_correction's ΔS_EK, ½ ln det d_k H_I⊥ (naive) and ΔS_pref against the full L²×L² Hessians."""
    p, P = params(L=5, V=4, d_k=12), 30.0
    c1, cG = 0.2, 0.3
    m1, mP = map(float, order_to_coeffs(c1, cG, p.L))
    M = m1 * np.ones((p.L, p.L)) + mP * np.eye(p.L)
    g, H = grad_hessian(evidence_ek(p, P), M)
    HI = prior_rate_hessian(M, 1.0)
    T = transverse_basis(p.L)
    out = lp.ek_correction(p, P)(c1, cG)
    assert out["dS"] == pytest.approx(one_loop(H, g, HI, p.d_k).dS, rel=1e-9)
    assert out["naive"] == pytest.approx(0.5 * np.linalg.slogdet(p.d_k * T.T @ HI @ T)[1], rel=1e-10)
    B = isotypic_bases(p.L)["trivial"]
    assert out["pref"] == pytest.approx(-0.5 * np.linalg.slogdet(B.T @ HI @ B)[1], rel=1e-10)


def test_correction_is_first_order_in_one_over_d_k():
    """d_k → ∞: ΔS_EK → 0 with d_k ΔS_EK → ½ tr(H_I⊥⁻¹ H_E⊥) (Eq. (31) expanded; full L²×L² Hessians), so
    the corrected posterior tends to the uncorrected one."""
    L, V, P = 4, 4, 24.0
    m1, mP = map(float, order_to_coeffs(0.15, 0.2, L))
    M = m1 * np.ones((L, L)) + mP * np.eye(L)
    p = params(L=L, V=V)
    _, H = grad_hessian(evidence_ek(p, P), M)
    T = transverse_basis(L)
    lim = 0.5 * np.trace(np.linalg.solve(T.T @ prior_rate_hessian(M, 1.0) @ T, T.T @ H @ T))
    for d_k, tol in ((1e5, 1e-2), (1e7, 1e-4)):
        r = one_loop_ek(p.replace(d_k=d_k), P, m1, mP)
        assert d_k * r.dS == pytest.approx(lim, rel=tol)


def synthetic(gap_b=-2.0, pred_b=-2.0, soft_ratio=1.0):
    """A compute_study-shaped dataset with exact 1/d_k gaps and shifts, one soft row."""
    ratios, d_k = [1.0, 1.35, 2.0], np.array([16, 32, 64, 128])
    shape = (3, 4, 2)
    gap = np.broadcast_to((gap_b / d_k)[None, :, None], shape).copy()
    err = np.full(shape, 0.01) / d_k[None, :, None] * 10
    none = np.full(shape, 0.2)
    one = none + np.broadcast_to((pred_b / d_k)[None, :, None], shape)
    soft = np.zeros((3, 4))
    soft[ratios.index(soft_ratio)] = 0.9
    v3 = {"gap": gap, "error": err, "mean_none": none, "mean_one_loop": one, "mean_naive": none - gap,
          "mean_one_loop_pref": one, "closed": none, "experiment": none + gap}
    ds = xr.Dataset({k: (("ratio", "x", "param"), v) for k, v in v3.items()}
                    | {"soft_weight": (("ratio", "x"), soft), "near_unstable_weight": (("ratio", "x"), 0 * soft)},
                    coords={"ratio": ratios, "x": d_k, "param": ["c1", "cG"], "d_k": ("x", d_k)})
    ds.attrs["setting_flag"] = lp.SETTINGS["flag"]
    return ds


def test_comparison_numbers_on_a_synthetic_study():
    ds = synthetic()
    assert not bool(cmp.usable(ds).sel(ratio=1.0).any()) and bool(cmp.usable(ds).sel(ratio=2.0).all())
    r0, n = cmp.rms_z(ds)
    r1, _ = cmp.rms_z(ds, "one_loop")
    assert (n == 4).all() and np.allclose(r1, 0) and np.allclose(r0, 20.0)   # |gap|/err = 2/(0.1) = 20
    cf = cmp.coefficient_fits(ds, 1.35, "cG")
    assert cf["measured"]["b"] == pytest.approx(-2.0) and cf["predicted"]["b"] == pytest.approx(-2.0)
    assert cf["n"] == 4 and abs(cf["z_b"]) < 1e-6
    bad = synthetic(pred_b=-1.0)
    assert cmp.coefficient_fits(bad, 2.0, "cG")["predicted"]["b"] == pytest.approx(-1.0)
    assert np.allclose(cmp.rms_z(bad, "one_loop")[0], 10.0)
    assert cmp.consistency(ds)["closed_max_abs"] == 0
    ch = cmp.subgrid_change(ds, bad)                       # shifts −2/d_k vs −1/d_k: |Δ| × d_k = 1 everywhere
    assert ch["max"] == pytest.approx(1.0) and ch["median"] == pytest.approx(1.0)
    assert cmp.subgrid_change(ds, ds)["max"] == 0


def test_study_points_take_each_size_from_its_own_study():
    """The sizes' parameters come from the study named in the finite-size table's agreement rows (not from
    another study with the same L and d_k, e.g. L16_V8_dk32), the closed-form value from that study's rows."""
    def study(name, V, P, closed):
        rows = [{"curve": "closed_mean", "recipe": "hmc", "P": P, "param": "cG", "theory": closed}]
        return {"name": name, "L": 16, "V": V, "d_k": 32, "sigma2": 0.1, "attentions": {"linear": {"rows": rows}}}
    pt = {"x": 32, "P": 14.0, "experiment": 0.1, "error": 0.01, "theory": 0.2, "gap": -0.1}
    studies = {"studies": [study("L16_V8_dk32", 8, 14.0, 9.0), study("L16_dk32", 16, 14.0, 0.25)],
               "finite_size": {"by": "d_k", "agreement": [{"attention": "linear", "x": 32, "name": "L16_dk32"}],
                               "gaps": [{"attention": "linear", "recipe": "hmc", "ratio": 1.35, "param": "cG",
                                         "points": [pt]},
                                        {"attention": "linear", "recipe": "sgld", "ratio": 2.0, "param": "cG",
                                         "points": [pt]},
                                        {"attention": "softmax", "recipe": "hmc", "ratio": 1.4, "param": "aG",
                                         "points": [pt]}]}}
    base = {"model": {"g_Q": 1.0, "g_K": 1.0, "g_O": 1.0}, "theory": {"prior": "large_deviation"}}
    par, pts = one_loop_points.study_points(studies, "finite_size", base)
    assert par[32].V == 16 and par[32].d_k == 32 and par[32].prior == "large_deviation"
    assert list(pts) == [(1.35, 32, "cG")] and pts[(1.35, 32, "cG")]["closed"] == 0.25
    assert pts[(1.35, 32, "cG")]["gap"] == -0.1


def test_converged_points_read_a_results_json():
    """The converged study's points: ratio = P / the run's closed-form crossover, the rows of the measured
    recipe (default hmc, the reference posterior; another by name) against the same-dataset curve, the error of copyhead.analysis.fits.row_error (experiment and theory in quadrature)."""
    import json
    cfg = {"task": {"V": 16, "L": 32}, "model": {"d_k": 32, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0, "sigma2": 0.1},
           "theory": {"prior": "large_deviation"}}

    def row(curve, recipe, theory, param="cG"):
        return {"curve": curve, "recipe": recipe, "P": 20.0, "param": param, "experiment": 0.3, "error": 0.03,
                "theory_error": 0.04, "theory": theory}
    results = {"config": {"json": json.dumps(cfg)},
               "attentions": {"linear": {"theory": {"P_crossover": 10.0},
                                         "agreement": [row("same_mean", "hmc", 0.5), row("closed_mean", "hmc", 0.45),
                                                       row("same_mean", "sgld", 0.1), row("closed_mean", "sgld", 0.15),
                                                       row("same_mean", "adam", 0.9), row("same_mean", "hmc", 0.5, "m1")]}}}
    par, pts = one_loop_points.converged_points(results)
    assert par[32].L == 32 and par[32].d_k == 32 and par[32].V == 16
    assert list(pts) == [(2.0, 32, "cG")]
    q = pts[(2.0, 32, "cG")]
    assert q["gap"] == pytest.approx(-0.2) and q["error"] == pytest.approx(0.05) and q["closed"] == 0.45
    q = one_loop_points.converged_points(results, recipe="sgld")[1][(2.0, 32, "cG")]
    assert q["gap"] == pytest.approx(0.2) and q["closed"] == 0.15


def test_one_loop_curve_gives_the_corrected_curves_and_their_transition():
    """research.one_loop.curve.one_loop_curve (docs/theory.md Sec. 13; once copyhead's theory option
    theory.fluctuations, which issue 50 took out of the paper pipeline): on a P grid the uncorrected and
    corrected posterior means, the flag and the corrected crossover; the uncorrected one equals the posterior
    mean of Eq. (18) computed by posterior_means; flagged P carry NaN; softmax: âG with Eq. (35) and the
    bracket of its jump."""
    from research.one_loop.curve import one_loop_curve
    p = ActionParams(V=4, L=6, d_k=12, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1, prior="large_deviation")
    lin = one_loop_curve(p, [16, 4, 8])
    assert list(lin["P"]) == [4, 8, 16]
    ref = lp.posterior_means(p, 8.0)
    assert lin["cG_none"][1] == pytest.approx(ref["none"]["cG"], rel=1e-12)
    flagged = lin["flagged"]
    assert np.isnan(lin["cG_one_loop"][flagged]).all()
    assert np.isfinite(lin["cG_one_loop"][~flagged]).all() and (~flagged).sum() >= 2
    assert (lin["cG_one_loop"][~flagged] != lin["cG_none"][~flagged]).all()
    assert "P_crossover" in lin and lin["P_crossover_note"]
    soft = one_loop_curve(p, [4, 8, 16], attention="softmax")
    ok = ~soft["flagged"]
    assert np.isfinite(soft["aG_one_loop"][ok]).all() and ok.sum() >= 2
    assert (soft["aG_one_loop"][ok] != soft["aG_none"][ok]).all()
    ref = lp.softmax_posterior_means(p, 8.0)
    assert soft["aG_none"][1] == pytest.approx(ref["none"]["aG"], rel=1e-12)
    lo, hi = soft["P_jump_one_loop"]
    assert lo < hi and lo in lin["P"] and len(soft["beta_none"]) == 3


def test_softmax_posterior_means_uncorrected_is_the_closed_form_mean_and_the_correction_vanishes_at_large_d_k():
    """The softmax posterior mean of âG without correction is the uniform-in-β mean of mP/L under exp(−S(β))
    (an independent fine quadrature); with the one-loop terms it moves, by less at larger d_k (both
    ΔS_EK and Eq. (35) are O(1/d_k))."""
    from copyhead.theory.action import action_softmax, softmax_coeffs
    p = ActionParams(V=4, L=6, d_k=12, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1, prior="large_deviation")
    r = lp.softmax_posterior_means(p, 10.0, coarse=11, fine=401)
    b = np.linspace(-3, 15, 200001)
    w = np.exp(-(action_softmax(b, 10.0, p) - action_softmax(b, 10.0, p).min()))
    ref = float(w @ (softmax_coeffs(b, p.L)[1] / p.L) / w.sum())
    assert r["none"]["aG"] == pytest.approx(ref, rel=1e-3)
    shifts = []
    for d_k in (12, 48, 192):
        q = lp.softmax_posterior_means(p.replace(d_k=d_k), 10.0, coarse=11, fine=401)
        shifts.append(abs(q["one_loop"]["aG"] - q["none"]["aG"]))
    assert shifts[0] > shifts[1] > shifts[2] > 0


def test_the_compared_parameters_are_the_predicted_ones():
    """The measured points are read for exactly the order parameters the theory predicts."""
    assert one_loop_points.COMPARED == {"linear": lp.PARAMS, "softmax": lp.SOFTMAX_PARAMS}


def test_per_dataset_section_of_the_page_reads_its_own_shift_and_flags():
    """results.one_loop_dataset on a synthetic study whose per-dataset shift equals the measured gap and whose
    per-dataset flag sits on another row than the equivalent kernel's: RMS z 0 over its own usable points,
    the counts of each column, and the aim line of the converged study."""
    from research.one_loop import page_dataset as rd
    ds = synthetic(pred_b=-1.0)
    ds["mean_none_dataset"] = ds["mean_none"] + 0.001
    ds["mean_one_loop_dataset"] = ds["mean_none_dataset"] + ds["gap"]
    soft = np.zeros((3, 4))
    soft[2, 0] = 0.9                                           # per dataset: only (2.0, d_k = 16) flagged
    ds["soft_weight_dataset"] = (("ratio", "x"), soft)
    ds["near_unstable_weight_dataset"] = (("ratio", "x"), 0 * soft)
    ds["theory"] = ds["mean_none"]
    ds["P"] = (("ratio", "x"), np.full((3, 4), 10.0))
    ds = ds.assign_coords(L=("x", [16] * 4))
    ds.attrs.update(by="d_k", recipe="hmc", attention="linear")
    r, n = cmp.rms_z(ds, cmp.DATASET, over=cmp.DATASET)
    assert np.allclose(r, 0) and n.values.tolist() == [4, 6, 6, 6]
    _, nb = cmp.rms_z(ds, cmp.DATASET, over=("one_loop", cmp.DATASET))
    assert nb.values.tolist() == [2, 4, 4, 4]                  # ratio 1 soft for the EK correction
    rows = rd.rms_rows(ds, "d_k")
    assert rows[2].startswith("| 16 | 2 | 20 | 10 | 0 | 4 |")
    assert rd.consistency_text(ds).startswith("0.001 (")
    line = rd.answer_lines([("converged", ds.isel(x=[1]), "d_k", "Converged")])[0]
    assert "RMS z 0 — the aim ≤ 5 is met" in line
    assert any(s.startswith("## 0.") for s in rd.section([("converged", ds.isel(x=[1]), "d_k", "Converged")]))
