"""The consistent per-dataset one loop (research.one_loop.dataset; docs/theory.md Sec. 13, "Per-dataset
one loop"): the closed-form dataset Hessian against the Hessian-vector products, the block prior against the
full projection, the uncorrected mean against the same-dataset theory, the softmax observable's term against
Monte Carlo, and the comparison's bookkeeping."""
import numpy as np
import pytest
import xarray as xr

from copyhead.config import ActionParams, theory_params
from copyhead.theory.same_dataset import run_training_tokens, same_dataset_theory
from research.one_loop import compare as cmp
from research.one_loop.blocks import block_dirs, transverse_basis
from research.one_loop.correction import one_loop, plane_point
from research.one_loop.dataset import (DatasetMoments, dataset_one_loop, dataset_posterior_means,
                                       dataset_softmax_correction, per_dataset_one_loop, prior_precision_transverse,
                                       transverse_system)
from research.one_loop.evidence import copy_weight, evidence_dataset, grad_hessian
from research.one_loop.prior import prior_rate_form, prior_rate_hessian
from research.one_loop.softmax import softmax_point

# tests of the research package (src/research/one_loop): -m research
pytestmark = pytest.mark.research


def _params(L=4, V=3, d_k=16, sigma2=0.1):
    return ActionParams(V=V, L=L, d_k=d_k, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=sigma2, prior="large_deviation")


@pytest.mark.parametrize("attention", ["linear", "softmax"])
@pytest.mark.parametrize("L,V,P", [(3, 4, 5), (5, 3, 7)])
def test_closed_form_dataset_hessian_equals_the_hessian_vector_products(attention, L, V, P):
    p = _params(L, V)
    tok = run_training_tokens(p, 1, P)
    M = np.random.default_rng(L).normal(size=(L, L)) * 0.7
    g0, H0 = grad_hessian(evidence_dataset(tok, p, attention), M)
    g1, H1 = DatasetMoments(tok, V, p.g_O, p.sigma2).grad_hessian_M(M, attention)
    np.testing.assert_allclose(g1, g0, rtol=1e-9, atol=1e-9 * np.abs(g0).max())
    np.testing.assert_allclose(H1, H0, rtol=1e-9, atol=1e-9 * np.abs(H0).max())


@pytest.mark.parametrize("m1,mP", [(0.05, 0.0), (0.1, 0.8), (-0.2, 1.5)])
def test_dataset_one_loop_equals_eq31_on_the_full_projections(m1, mP):
    """Σ⁻¹ in block form (K ⊗ 1 and two scalars on the transverse basis) = the full projected prior Hessian."""
    p = _params(L=5, V=3, d_k=12)
    tok = run_training_tokens(p, 0, 6)
    mom = DatasetMoments(tok, p.V, p.g_O, p.sigma2)
    M = plane_point(m1, mP, p.L)
    g, H = mom.grad_hessian_M(M)
    full = one_loop(H, g, prior_rate_hessian(M, p.g_Q * p.g_K, p.prior), p.d_k)
    mine = dataset_one_loop(p, mom, m1, mP)
    assert full.stable == mine.stable
    if full.stable:
        assert mine.dS == pytest.approx(full.dS, rel=1e-9, abs=1e-9)
        assert mine.grad_term == pytest.approx(full.grad_term, rel=1e-9, abs=1e-9)
        assert mine.grad_term < 0               # a dataset has a transverse slope: the gradient term gains
    assert mine.min_rel_eig == pytest.approx(full.min_rel_eig, rel=1e-8)


@pytest.mark.research   # long one-loop numerics (the per-dataset one loop, ~16 s)
@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_uncorrected_per_dataset_mean_is_the_same_dataset_theory(attention):
    """The weight the per-dataset correction is added to is the run's own 2-D (softmax 1-D) action (Sec. 4.4):
    its mean equals the same-dataset theory's posterior mean (its own grid and code path) to the grid error."""
    cfg = {"task": {"V": 4, "L": 6}, "model": {"d_k": 12, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0, "sigma2": 0.1},
           "theory": {"prior": "large_deviation", "P_min": 1.0, "P_max": 60.0, "n_P": 30, "grid_n": 161,
                      "landscape_P": {"linear": [], "softmax": []},
                      "exact": {"n_datasets": 2, "P": [6, 12], "seed": 0}, "scaling": {"L": []}}}
    th = theory_params(cfg)
    ref = same_dataset_theory(th, attention, [(6, 0), (12, 0)], log=lambda *a: None)
    prm = {"linear": ("c1", "cG"), "softmax": ("aG",)}[attention]
    for P in (6, 12):
        grid = dict(coarse=5) if attention == "linear" else dict(coarse=7, fine=801)
        r = dataset_posterior_means(th.action, P, [0], attention=attention, **grid)["per_seed"][0]["none"]
        for k in prm:
            want = (float(ref["mP_mean_same"].sel(P=P, seed=0)) / th.action.L if k == "aG" else
                    float(ref[f"{k}_mean_same"].sel(P=P, seed=0)))
            assert r[k] == pytest.approx(want, abs=2e-3), (P, k)


def test_softmax_observable_term_against_monte_carlo():
    """½ tr[∇²âG⊥ (C + x̄x̄ᵀ)] is the second-order mean of âG under x ∼ N(x̄, C) on the transverse space: at a
    large d_k (small C, x̄) it equals the Monte Carlo mean of âG(M + x) − âG(M) to a few per cent."""
    p = _params(L=4, V=3, d_k=400)
    tok = run_training_tokens(p, 2, 10)
    mom = DatasetMoments(tok, p.V, p.g_O, p.sigma2)
    corr = dataset_softmax_correction(p, mom)
    beta = 1.5
    r, obs = corr(beta)
    assert r.stable and np.isfinite(obs)
    L = p.L
    M = plane_point(*softmax_point(beta, L), L)
    Ht, gt, Sinv, T = transverse_system(p, mom, M, "softmax")
    C = np.linalg.inv(Ht + Sinv)
    xbar = -C @ gt
    rng = np.random.default_rng(0)
    x = rng.multivariate_normal(xbar, C, size=20000)
    a0 = copy_weight(M)
    vals = np.array([copy_weight(M + (T @ xi).reshape(L, L)) for xi in x]) - a0
    # the first-order part has zero mean only because ∇âG has no transverse component at an invariant point
    assert abs(float(T.T @ copy_weight.grad(M) @ np.ones(T.shape[1]))) < 1e-10
    assert vals.mean() == pytest.approx(obs, rel=0.05, abs=3 * vals.std() / np.sqrt(len(vals)))


def test_comparison_takes_the_per_dataset_shift_against_its_own_base_and_flags():
    dims = ("ratio", "x", "param")
    one = np.ones((1, 2, 2))
    ds = xr.Dataset({"gap": (dims, -0.1 * one), "error": (dims, 0.01 * one), "mean_none": (dims, 0.5 * one),
                     "mean_one_loop": (dims, 0.45 * one), "mean_none_dataset": (dims, 0.6 * one),
                     "mean_one_loop_dataset": (dims, 0.5 * one),
                     **{k: (("ratio", "x"), np.array([[0.0, 0.9]])) for k in ("soft_weight_dataset",)},
                     **{k: (("ratio", "x"), np.zeros((1, 2))) for k in
                        ("soft_weight", "near_unstable_weight", "near_unstable_weight_dataset")}},
                    coords={"ratio": [1.0], "x": [16, 32], "param": ["c1", "cG"]}, attrs={"setting_flag": 0.5})
    np.testing.assert_allclose(cmp.shift(ds, cmp.DATASET).values, -0.1)
    np.testing.assert_allclose(cmp.shift(ds).values, -0.05)
    assert cmp.usable(ds, variant=cmp.DATASET).values.tolist() == [[True, False]]
    assert cmp.usable(ds).values.tolist() == [[True, True]]
    rms, n = cmp.rms_z(ds, cmp.DATASET, over=cmp.DATASET)
    assert float(rms.sel(x=16)) == pytest.approx(0.0) and int(n.sel(x=32)) == 0


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_per_dataset_one_loop_extends_the_same_dataset_theory(attention):
    """research.one_loop.dataset.per_dataset_one_loop, passed to copyhead's same-dataset theory as its
    ``extend`` (the research side computes it; copyhead's theory product has no one-loop option), adds each
    run's per-dataset one loop: the values of dataset_posterior_means for that run alone; without it the
    same-dataset theory has none of it."""
    cfg = {"task": {"V": 4, "L": 5}, "model": {"d_k": 10, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0, "sigma2": 0.1},
           "theory": {"prior": "large_deviation", "P_min": 1.0, "P_max": 40.0, "n_P": 20, "grid_n": 41,
                      "landscape_P": {"linear": [], "softmax": []},
                      "exact": {"n_datasets": 1, "P": [8], "seed": 0}, "scaling": {"L": []}}}
    quiet = dict(log=lambda *a: None)
    th = theory_params(cfg)
    off = same_dataset_theory(th, attention, [(8, 1)], **quiet)
    assert not any("one_loop" in k for k in off.data_vars)
    on = same_dataset_theory(th, attention, [(8, 1), (12, 2)], extend=per_dataset_one_loop, **quiet)
    prm = "cG" if attention == "linear" else "aG"
    grid = dict(coarse=7) if attention == "linear" else dict(coarse=21, fine=801)
    want = dataset_posterior_means(th.action, 12, [2], attention=attention, **grid)
    assert float(on[f"{prm}_mean_same_one_loop"].sel(P=12, seed=2)) == pytest.approx(want["one_loop"][prm], abs=1e-12)
    assert float(on[f"{prm}_mean_same_none"].sel(P=12, seed=2)) == pytest.approx(want["none"][prm], abs=1e-12)
    assert np.isnan(float(on[f"{prm}_mean_same_one_loop"].sel(P=8, seed=2)))     # pair not requested
    assert np.isfinite(float(on["one_loop_soft_weight_same"].sel(P=8, seed=1)))


def test_transverse_system_prior_precision_is_the_full_projection_of_eq28():
    """The shared transverse system's Σ⁻¹ (block form: K ⊗ 1_{L−1} and two scalars) equals d_k Tᵀ H_I T of the
    full L²×L² rate Hessian (Eq. (28)), and its H⊥, g⊥ are the dataset's full ones projected on T."""
    p = _params(L=5, V=3, d_k=10)
    tok = run_training_tokens(p, 1, 8)
    mom = DatasetMoments(tok, p.V, p.g_O, p.sigma2)
    M = plane_point(0.04, 0.3, p.L)
    Ht, gt, Sinv, T = transverse_system(p, mom, M)
    np.testing.assert_allclose(T, transverse_basis(p.L))
    full = p.d_k * (T.T @ prior_rate_hessian(M, p.g_Q * p.g_K, p.prior) @ T)
    np.testing.assert_allclose(Sinv, full, atol=1e-10 * np.abs(full).max())
    g, H = mom.grad_hessian_M(M)
    np.testing.assert_allclose(Ht, T.T @ H @ T, atol=1e-12 * np.abs(H).max())
    np.testing.assert_allclose(gt, T.T @ g, atol=1e-12 * np.abs(g).max())
    blocks = prior_rate_form(M, 1.0, block_dirs(p.L).reshape(-1, p.L, p.L), p.prior) * p.d_k
    np.testing.assert_allclose(prior_precision_transverse(blocks, p.L), Sinv)
