"""The prior beyond copyhead.theory.prior's rate (research.one_loop.prior): the exact cumulant generating
function (Eq. (6)) against sampled Q, K; the rate's gradient at a general score matrix and its saddle-point
correction ΔR (Eq. (38)) — against central differences, against its definition through the exact cumulant
generating function, near M = 0, and at L = 1 against the exact variance-gamma density."""
import numpy as np
import pytest
from scipy.special import kve

from copyhead.theory.prior import neg_log_prior_matrix
from research.one_loop.prior import cgf, neg_log_prior_matrix_grad, saddle_correction, saddle_correction_grad

pytestmark = pytest.mark.research


def _central_differences(f, M, h=1e-6):
    fd = np.zeros_like(M)
    for i in np.ndindex(M.shape):
        d = np.zeros_like(M)
        d[i] = h
        fd[i] = (f(M + d) - f(M - d)) / (2 * h)
    return fd


@pytest.mark.parametrize("prior", ["large_deviation", "gaussian"])
def test_the_rate_gradient_equals_central_differences_at_a_general_matrix(prior):
    M = 0.3 * np.random.default_rng(0).standard_normal((5, 5))
    fd = _central_differences(lambda m: neg_log_prior_matrix(m, 10, 1.0, 1.5, prior), M)
    np.testing.assert_allclose(neg_log_prior_matrix_grad(M, 10, 1.0, 1.5, prior), fd, atol=1e-6 * np.abs(fd).max())


def test_the_rate_gradient_names_an_unknown_prior():
    with pytest.raises(ValueError, match="prior 'exact' is not allowed"):
        neg_log_prior_matrix_grad(np.eye(2), 4, 1.0, 1.0, "exact")


def test_the_saddle_point_correction_gradient_and_its_curvature_at_the_origin():
    """∂ΔR/∂M equals central differences of ΔR at a general M (L = 5), and near M = 0 ΔR adds (2L + 1)‖M‖²/(2c)."""
    rng = np.random.default_rng(0)
    g_Q, g_K = 1.0, 1.5
    M = 0.4 * rng.standard_normal((5, 5))
    fd = _central_differences(lambda m: saddle_correction(m, g_Q, g_K), M)
    np.testing.assert_allclose(saddle_correction_grad(M, g_Q, g_K), fd, atol=1e-6 * np.abs(fd).max())
    m = 1e-3 * rng.standard_normal((5, 5))
    assert np.isclose(saddle_correction(m, g_Q, g_K) - saddle_correction(0 * m, g_Q, g_K),
                      11 / (2 * 1.5) * np.sum(m**2), rtol=1e-4)


def test_the_saddle_point_correction_is_half_the_log_determinant_of_the_exact_cgf_hessian():
    """Eq. (38) against its definition: ½ ln det ∇²Λ(G*) with Λ the exact cumulant generating function (Eq. (6))
    differentiated numerically at the Legendre point G* = U diag(d_k(s − 1)/(2σ)) Vᵀ of three random M, and
    ∇Λ(G*) = M there; the two differ by the M-independent ½ L² ln(c/d_k)."""
    L, d_k, c = 3, 5, 1.5
    rng = np.random.default_rng(2)
    E, h = np.eye(L * L).reshape(L * L, L, L), 1e-4
    for _ in range(3):
        M = 0.5 * rng.standard_normal((L, L))
        U, sv, Vt = np.linalg.svd(M)
        G = (U * (d_k * (np.sqrt(1 + 4 * sv**2 / c) - 1) / (2 * sv))) @ Vt
        grad = np.array([(cgf(G + h * e, d_k, c) - cgf(G - h * e, d_k, c)) / (2 * h) for e in E]).reshape(L, L)
        np.testing.assert_allclose(grad, M, atol=1e-6)
        H = np.array([[(cgf(G + h * a + h * b, d_k, c) - cgf(G + h * a - h * b, d_k, c)
                        - cgf(G - h * a + h * b, d_k, c) + cgf(G - h * a - h * b, d_k, c)) / (4 * h * h) for b in E]
                      for a in E])
        assert np.isclose(0.5 * np.linalg.slogdet(H)[1] - saddle_correction(M, 1.0, c),
                          0.5 * L * L * np.log(c / d_k), atol=1e-5)


def test_the_corrected_rate_is_closer_to_the_exact_density_at_one_position():
    """At L = 1 the exact density of M = qᵀk/d_k is the variance-gamma |z|^ν K_ν(|z|), z = d_k m/√c,
    ν = (d_k − 1)/2: the corrected rate is closer to the exact −ln p(m) + ln p(0) than the rate alone over the
    prior's bulk (up to 3 standard deviations), by more than 3× at d_k = 8."""
    d_k, c = 8, 1.0
    nu = (d_k - 1) / 2
    ms = np.linspace(0.05, 3.0, 60) * np.sqrt(c / d_k)

    def exact(m):                                                   # −ln(|z|^ν K_ν(|z|)), K_ν = kve·e^{−z}
        z = d_k * np.abs(m) / np.sqrt(c)
        return -(nu * np.log(z) + np.log(kve(nu, z)) - z)
    ex = exact(ms) - exact(1e-8 * np.sqrt(c) / d_k)
    rate = np.array([neg_log_prior_matrix(np.array([[m]]), d_k, 1.0, c) for m in ms])
    corr = rate + np.array([saddle_correction(np.array([[m]]), 1.0, c) - saddle_correction(np.zeros((1, 1)), 1.0, c)
                            for m in ms])
    assert np.abs(corr - ex).max() * 3 < np.abs(rate - ex).max()


def test_cgf_of_score_matrix_by_sampling():
    """Eq. (6): E exp Tr(GᵀM) over sampled Q, K equals det(I - c GᵀG/d_k²)^(-d_k/2)."""
    rng = np.random.default_rng(5)
    d_k, L, gQ, gK, n = 6, 3, 1.3, 0.7, 400000
    G = rng.normal(scale=0.8, size=(L, L))
    Q = rng.normal(scale=np.sqrt(gQ), size=(n, d_k, L))
    K = rng.normal(scale=np.sqrt(gK), size=(n, d_k, L))
    M = np.einsum("nia,nib->nab", Q, K) / d_k
    vals = np.exp(np.einsum("ab,nab->n", G, M))
    mc, se = vals.mean(), vals.std() / np.sqrt(n)
    assert abs(mc - np.exp(cgf(G, d_k, gQ * gK))) < 5 * se
