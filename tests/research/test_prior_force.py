"""research/benchmarks/prior_force.py: the Schwinger–Dyson identity it rests on — over exact posterior draws of a tiny
model the evidence's mean force and the exact prior's (estimated per draw given Q) cancel in every direction of
M — and its decomposition of the chains' mean against the Gaussian order."""
import numpy as np
import pytest
import torch

from copyhead.config import ActionParams
from copyhead.task import make_data
from research.one_loop.blocks import transverse_basis
from research.one_loop.prior import neg_log_prior_matrix_grad, saddle_correction_grad
from copyhead.theory.same_dataset import run_training_tokens

# tests of the research benchmark research/benchmarks/prior_force.py: -m research
pytestmark = pytest.mark.research


def test_the_exact_prior_force_balances_the_evidence_force_on_exact_draws(bench_script, research_script):
    """⟨∇E + d_k²(QᵀQ)⁻¹M/g_K⟩ = 0 over HMC draws of the collapsed posterior (L = V = 3, d_k = 12, P = 6), every
    one of the L² components within 4 standard errors (batch means), while the evidence force alone is not 0;
    the rate's force is the rate's gradient and the corrected one adds ΔR's (copyhead.theory.prior)."""
    common, mod = bench_script("common"), research_script("prior_force")
    p = ActionParams(V=3, L=3, d_k=12, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1, prior="large_deviation")
    P, seed = 6, 0
    data = make_data(seed, p.V, p.L, P, 8)

    def record(A, Q, K):
        return torch.stack([Q.transpose(1, 2) @ K / p.d_k, Q.transpose(1, 2) @ Q], 1)
    rec, h = common.collapsed_attention_samples(data, "linear", p.d_k, p.sigma2, 7, chains=4, iters=3000, burn=300,
                                                record=record, qk=True)
    D = torch.stack(rec, 0).numpy()                                   # (n, chains, 2, L, L)
    M, W = D[:, :, 0].reshape(-1, p.L, p.L), D[:, :, 1].reshape(-1, p.L, p.L)
    fE, fR, fR1, fX = mod.forces(p, run_training_tokens(p, seed, P), M, W)
    assert np.allclose(fR[5], neg_log_prior_matrix_grad(M[5], p.d_k, p.g_Q, p.g_K).ravel())
    assert np.allclose(fR1[5] - fR[5], saddle_correction_grad(M[5], p.g_Q, p.g_K).ravel())
    n_batch = 20
    total = (fE + fX).reshape(D.shape[0], -1, p.L**2)                 # (n, chains, L²)
    batches = np.array([b.mean((0, 1)) for b in np.array_split(total, n_batch)])
    z = batches.mean(0) / (batches.std(0, ddof=1) / np.sqrt(n_batch))
    assert np.all(np.abs(z) < 4), z
    e_batches = np.array([b.mean((0, 1)) for b in np.array_split(fE.reshape(D.shape[0], -1, p.L**2), n_batch)])
    z_E = e_batches.mean(0) / (e_batches.std(0, ddof=1) / np.sqrt(n_batch))
    assert np.max(np.abs(z_E)) > 5                                    # the data do push: the check has power


def test_the_exact_prior_force_given_q_is_the_score_of_m(research_script):
    """Stein's identity for the per-draw estimate f_X = d_k²(QᵀQ)⁻¹M/g_K: given Q the columns of M = QᵀK/d_k are
    N(0, g_K QᵀQ/d_k²), so E_K[f_X vec(M)ᵀ] = I (the transposed form (M(QᵀQ)⁻¹) fails it) and E_K[f_X] = 0."""
    mod = research_script("prior_force")
    L, d_k, n = 3, 5, 40000
    p = ActionParams(V=3, L=L, d_k=d_k, g_Q=1.0, g_K=2.0, g_O=1.0, sigma2=0.1, prior="large_deviation")
    rng = np.random.default_rng(1)
    Q = rng.standard_normal((d_k, L)) * np.array([0.5, 1.0, 2.0])     # an anisotropic QᵀQ
    K = np.sqrt(p.g_K) * rng.standard_normal((n, d_k, L))
    M = np.einsum("ka,nkb->nab", Q, K) / d_k
    W = np.broadcast_to(Q.T @ Q, M.shape)
    fX = mod.exact_prior_force(M, W, p)
    stein = fX.T @ M.reshape(n, -1) / n
    np.testing.assert_allclose(stein, np.eye(L * L), atol=0.05)
    np.testing.assert_allclose(fX.mean(0), 0.0, atol=5 * fX.std(0).max() / np.sqrt(n))
    wrong = np.array([(d_k**2 * np.linalg.solve(w, m.T).T / p.g_K).ravel() for m, w in zip(M[:4000], W[:4000])])
    assert np.abs(wrong.T @ M[:4000].reshape(4000, -1) / 4000 - np.eye(L * L)).max() > 0.3


def test_the_page_splits_the_difference_into_its_prior_and_non_linear_parts(research_script):
    """From saved rows: chains − Gaussian = prior part + non-linear part per point, R / exact = ⟨f_R⟩/−⟨f_E⟩, and
    the Schwinger–Dyson column is shown only at d_k ≥ 2L."""
    mod = research_script("prior_force")
    p = ActionParams(V=16, L=32, d_k=32, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1, prior="large_deviation")
    rng = np.random.default_rng(0)
    rows = []
    for d_k, ratio, P in ((32, 0.6, 8), (64, 0.6, 11)):
        for seed in range(3):
            r = {"d_k": d_k, "ratio": ratio, "P": P, "seed": seed, "c1": 0.01, "cG": 0.001, "accept": 0.7}
            for s in ("col", "rest"):
                r |= {f"mean_{s}": 0.02 + 0.01 * rng.random(), f"gauss_{s}": 0.05, f"prior_{s}": -0.01 * rng.random(),
                      f"fE_{s}": -0.5 - rng.random(), f"fR_{s}": 0.3, f"fR1_{s}": 0.5,
                      f"sd_{s}": 0.01 * rng.standard_normal(), f"gauss1_{s}": 0.01, f"var_{s}": 0.08,
                      f"var_gauss_{s}": 0.08, f"var_gauss1_{s}": 0.02}
                r |= {f"{k}_err_{s}": 0.001 for k in ("mean", "fE", "fR", "fR1", "sd", "prior", "var")}
            rows.append(r)
    S = mod.summary([r for r in rows if r["d_k"] == 32], "col")
    sel = [r for r in rows if r["d_k"] == 32]
    assert np.isclose(S["diff"][0], S["prior"][0] + S["rest"][0])
    assert np.isclose(S["share"][0], np.mean([0.3 / -r["fE_col"] for r in sel]))
    text = "\n".join(mod.markdown(p, rows, 1.0, "stamp"))
    lines = [ln for ln in text.splitlines() if ln.startswith("| 1 | 8 (0.6)") or ln.startswith("| 0.5 | 11 (0.6)")]
    assert len(lines) == 2 and "variance is infinite" in lines[0] and "variance is infinite" not in lines[1]
    assert f"{S['share'][0]:.2f} ± {S['share'][1]:.2f}" in lines[0]
    assert f"{S['share1'][0]:.2f} ± {S['share1'][1]:.2f}" in lines[0]
    assert np.isclose(S["var1"][0], 4.0) and f"{S['ratio1'][0]:.2f} ± {S['ratio1'][1]:.2f}" in lines[0]


def test_the_correction_hessian_at_the_origin_is_the_closed_form_curvature(research_script):
    """correction_hessian (ΔR's transverse Hessian by differences of its gradient) at M = 0 is (2L + 1)/c times the
    identity on the transverse coordinates (ΔR adds (2L + 1)‖M‖²/(2c) near 0, tests/research/test_prior_correction.py)."""
    mod = research_script("prior_force")
    p = ActionParams(V=3, L=5, d_k=7, g_Q=1.0, g_K=1.5, g_O=1.0, sigma2=0.1, prior="large_deviation")
    T = transverse_basis(5)
    np.testing.assert_allclose(mod.correction_hessian(np.zeros((5, 5)), T, p), 11 / 1.5 * np.eye(T.shape[1]),
                               atol=1e-4)
