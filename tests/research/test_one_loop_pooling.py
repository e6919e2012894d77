"""The pooling sector (research.one_loop.pooling; docs/theory.md Sec. 13, "The pooling sector", Eq. (37)):
the column basis, the rotation symmetry that makes the column norm ρ an order parameter, the von Mises–Fisher
normaliser against Monte Carlo, the radial integral against a brute-force quadrature over the whole column
space, its Gaussian limit at large d_k, the split of a dataset's transverse system, and the per-dataset
posterior means with the pooling variant."""
import numpy as np
import pytest
from scipy.special import logsumexp

from copyhead.config import ActionParams
from copyhead.theory.prior import neg_log_prior_matrix
from copyhead.theory.same_dataset import run_training_tokens
from research.one_loop.blocks import isotypic_bases, transverse_basis
from research.one_loop.correction import gaussian_correction, plane_point
from research.one_loop.dataset import DatasetMoments, dataset_means, transverse_system
from research.one_loop.evidence import evidence_ek
from research.one_loop.pooling import pooling_vector_nlp, PoolingSector, column_basis, log_vmf

# tests of the research package (src/research/one_loop): -m research
pytestmark = pytest.mark.research


def _params(L=4, V=3, d_k=8, prior="large_deviation"):
    return ActionParams(V=V, L=L, d_k=d_k, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1, prior=prior)


def _curvatures(ps, m1, mP):
    """(hE, hI): the equivalent-kernel and the prior (times d_k) curvature along the unit column direction u."""
    p, L = ps.p, ps.p.L
    M = plane_point(m1, mP, L)
    hE = float(ps.E.hvp(M, ps.u[None])[0] @ ps.u.ravel())
    x, h = L * m1 + mP, 1e-4 * (1.0 + abs(L * m1 + mP))
    nlp = lambda R: float(pooling_vector_nlp(R, L, p.d_k, p.g_Q * p.g_K, p.prior))  # noqa: E731
    hI = 2.0 * (nlp(np.hypot(x, h)) - nlp(abs(x))) / h**2       # the column curvature of the exact prior (Eq. (37))
    return hE, hI


@pytest.mark.parametrize("L", [3, 4, 5, 6])
def test_column_basis_is_the_orthonormal_column_modes_and_splits_the_transverse_space(L):
    """Cb's columns are the unit column modes 1nᵀ/√L (n ⊥ 1), orthonormal; [Ct Rt] is an orthogonal basis of
    the transverse space with Cb = T Ct, and the column mode's copy coefficients are (1/√L, √((L−2)/2L), −1/√2)."""
    Cb, Ct, Rt = column_basis(L)
    T = transverse_basis(L)
    n = L - 1
    assert Cb.shape == (L * L, n) and Ct.shape == (L * L - 2, n) and Rt.shape == (L * L - 2, L * L - 2 - n)
    X = Cb.T.reshape(n, L, L)
    np.testing.assert_allclose(X, np.broadcast_to(X[:, :1, :], X.shape), atol=1e-14)   # identical rows: 1nᵀ
    nvec = X[:, 0, :] * np.sqrt(L)
    np.testing.assert_allclose(nvec.sum(-1), 0.0, atol=1e-13)                        # n ⊥ 1
    np.testing.assert_allclose(nvec @ nvec.T, np.eye(n), atol=1e-13)                  # orthonormal n's
    np.testing.assert_allclose(Cb.T @ Cb, np.eye(n), atol=1e-13)
    np.testing.assert_allclose(Ct.T @ Ct, np.eye(n), atol=1e-13)
    np.testing.assert_allclose(Rt.T @ Rt, np.eye(Rt.shape[1]), atol=1e-13)
    np.testing.assert_allclose(Rt.T @ Ct, 0.0, atol=1e-13)
    Q = np.concatenate([Ct, Rt], 1)
    assert Q.shape[0] == Q.shape[1] and np.linalg.matrix_rank(Q) == Q.shape[0]
    np.testing.assert_allclose(Q @ Q.T, np.eye(Q.shape[0]), atol=1e-13)
    np.testing.assert_allclose(Cb, T @ Ct, atol=1e-14)
    # the column modes are orthogonal to the plane span{I, J}
    np.testing.assert_allclose(isotypic_bases(L)["trivial"].T @ Cb, 0.0, atol=1e-14)
    # the n of Cb are the standard component's basis of 1⊥, with the documented copy coefficients
    w = isotypic_bases(L)["standard"][0].reshape(L, L, n).diagonal().T                 # (L, n): diag(w_k)
    np.testing.assert_allclose(nvec, w.T, atol=1e-13)
    np.testing.assert_allclose(Ct[[0, n, 2 * n], 0], [1 / np.sqrt(L), np.sqrt((L - 2) / (2 * L)), -1 / np.sqrt(2)],
                               atol=1e-13)


@pytest.mark.parametrize("prior", ["large_deviation", "gaussian"])
def test_evidence_and_prior_depend_on_the_column_part_through_its_norm_only(prior):
    """E_EK and the prior rate are invariant under M → RMRᵀ with R1 = 1: at m + ρ·(unit column mode) they do
    not depend on the mode's direction (while a generic transverse direction at the same ρ changes them)."""
    L, P = 5, 7
    p = _params(L=L, V=3, d_k=10, prior=prior)
    E = evidence_ek(p, P)
    Cb = column_basis(L)[0]
    T = transverse_basis(L)
    rng = np.random.default_rng(1)
    for m1, mP, rho in [(0.1, 0.3, 0.4), (-0.2, 1.2, 1.5), (0.05, 0.0, 0.8)]:
        m = plane_point(m1, mP, L)
        dirs = rng.normal(size=(6, L - 1))
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        Ms = [m + rho * (Cb @ d).reshape(L, L) for d in dirs]
        e = np.array([E(M) for M in Ms])
        i = np.array([neg_log_prior_matrix(M, p.d_k, p.g_Q, p.g_K, prior) for M in Ms])
        np.testing.assert_allclose(e, e[0], rtol=1e-10)
        np.testing.assert_allclose(i, i[0], rtol=1e-10)
        # control: generic transverse directions of the same norm are not equivalent for the evidence
        gen = rng.normal(size=(3, T.shape[1]))
        gen /= np.linalg.norm(gen, axis=1, keepdims=True)
        eg = np.array([E(m + rho * (T @ d).reshape(L, L)) for d in gen])
        assert np.ptp(eg) > 1e-4 * abs(eg[0])          # measured 2e-2 to 0.17


def test_log_vmf_against_monte_carlo_over_the_sphere():
    """ln Z = ln E_n̂[e^{κ n̂·e}] over uniform unit vectors of R^{L−1} and A_ν = the tilted mean of n̂·e agree with
    Monte Carlo (within 4 standard errors); the small-κ series branch joins the Bessel branch continuously."""
    L = 6
    rng = np.random.default_rng(0)
    n = rng.normal(size=(200_000, L - 1))
    c = n[:, 0] / np.linalg.norm(n, axis=1)                   # n̂·e for n̂ uniform on S^{L−2}
    for kappa in (0.5, 2.0, 5.0):
        lz, A = log_vmf(kappa, L)
        w = np.exp(kappa * c)
        mc, se = w.mean(), w.std() / np.sqrt(len(w))
        assert abs(np.exp(float(lz)) - mc) < 4 * se, kappa
        a_mc = (w * c).sum() / w.sum()
        se_a = np.sqrt(np.mean(w**2 * (c - a_mc) ** 2)) / w.mean() / np.sqrt(len(w))   # ratio estimator (delta method)
        assert abs(float(A) - a_mc) < 4 * se_a, kappa
    # at κ = 0 both vanish; near it ln Z = κ²/(2(L−1)), A = κ/(L−1) on either side of the branch point 1e-6
    lz0, A0 = log_vmf(0.0, L)
    assert float(lz0) == 0.0 and float(A0) == 0.0
    lz, A = log_vmf(np.array([1e-7, 2e-6]), L)
    k = np.array([1e-7, 2e-6])
    # the Bessel branch at 2e-6 sums O(10) terms to ~4e-13: rounding leaves a few per cent of that value
    np.testing.assert_allclose(lz / k**2, 1.0 / (2 * (L - 1)), rtol=0.05)
    np.testing.assert_allclose(A / k, 1.0 / (L - 1), rtol=1e-9)
    below, above = log_vmf(np.array([1e-6 * (1 - 1e-9), 1e-6 * (1 + 1e-9)]), L)[0]
    assert abs(below - above) < 1e-14
    # and the large-κ asymptotics A_ν = 1 − (ν + ½)/κ + O(κ⁻²), ν = (L − 3)/2
    kb = 400.0
    assert float(log_vmf(kb, L)[1]) == pytest.approx(1 - (L - 2) / (2 * kb), abs=5.0 / kb**2)


@pytest.mark.research   # long one-loop numerics
def test_radial_integral_equals_brute_force_quadrature_over_the_column_space():
    """Eq. (37) (the ρ integral with the exact direction average) equals −ln of the ratio of the 3-D column-space
    integrals ∫e^{−ΔI−ΔE−g·x} / ∫e^{−ΔI} at L = 4, and its mean is x̄_c = −ĝ ⟨ρA_ν⟩ (also ⟨ρ²⟩ with and without
    the evidence)."""
    L, P, m1, mP, gnorm = 4, 6, 0.1, 0.3, 4.0
    p = _params(L=L, V=3, d_k=8)
    ps = PoolingSector(p, P)
    r = ps.radial(m1, mP, gnorm)
    E = evidence_ek(p, P)
    m = plane_point(m1, mP, L)
    Cb = column_basis(L)[0]
    ghat = np.array([0.3, -0.5, 0.8])
    ghat /= np.linalg.norm(ghat)
    x = L * m1 + mP

    def nlp(X):                      # the pooling vector's −ln density at (x, x_c)
        return pooling_vector_nlp(np.hypot(x, np.linalg.norm(X, axis=1)), L, p.d_k, 1.0, p.prior)
    I0, E0 = float(pooling_vector_nlp(abs(x), L, p.d_k, 1.0, p.prior)), E(m)

    def box(R, n=41):
        x = np.linspace(-R, R, n)
        X = np.stack(np.meshgrid(x, x, x, indexing="ij"), -1).reshape(-1, 3)
        edge = np.abs(X).max(1) > R * (1 - 1e-12)
        return X, (m + (X @ Cb.T).reshape(-1, L, L)), np.log((x[1] - x[0]) ** 3), edge

    # numerator: width ≈ (hE + hI)^{−½} ≈ 0.15 around a shift ≈ g/(hE + hI) ≈ 0.1; denominator: the prior alone
    X, Ms, lh, edge = box(1.4)
    ell = -(nlp(X) - I0) - np.array([E(M) - E0 for M in Ms]) - gnorm * X @ ghat
    Xd, Md, lhd, edged = box(5.0)
    ell0 = -(nlp(Xd) - I0)
    assert ell[edge].max() < ell.max() - 15 and ell0[edged].max() < ell0.max() - 15    # boxes hold the mass
    dS = -(logsumexp(ell) + lh - logsumexp(ell0) - lhd)
    q, q0 = np.exp(ell - ell.max()), np.exp(ell0 - ell0.max())
    assert r["dS"] == pytest.approx(dS, abs=1e-6)
    np.testing.assert_allclose(q @ X / q.sum(), -ghat * r["mean"], atol=1e-6)
    assert np.linalg.norm(q @ X / q.sum()) > 0.05                 # the tilt moves the mean visibly
    assert r["rho2"] == pytest.approx(q @ (X**2).sum(1) / q.sum(), rel=1e-5)
    assert r["rho2_prior"] == pytest.approx(q0 @ (Xd**2).sum(1) / q0.sum(), rel=1e-5)


def test_radial_integral_tends_to_the_gaussian_column_block_at_large_d_k():
    """As d_k → ∞ (P/d_k fixed) Eq. (37) tends to the column block of Eq. (31) with the equivalent-kernel
    curvature, (L−1)/2·ln(1 + hE/hI) − ½g²/(hE + hI); the non-Gaussian remainder falls like 1/d_k."""
    L, m1, mP = 5, 0.1, 0.3
    err = {}
    for d_k in (4000, 16000):
        ps = PoolingSector(_params(L=L, V=3, d_k=d_k), d_k // 10)
        hE, hI = _curvatures(ps, m1, mP)
        assert 0.5 < hE / hI < 5                                    # both curvatures matter
        g = 2.0 * np.sqrt(hE + hI)                                  # gradient term −2
        gauss = 0.5 * (L - 1) * np.log1p(hE / hI) - 0.5 * g**2 / (hE + hI)
        err[d_k] = abs(ps.radial(m1, mP, g)["dS"] - gauss) / abs(gauss)
    assert err[16000] < 0.5 * err[4000]                             # measured: 1.7e-3 → 4.2e-4
    assert err[4000] < 0.01


def test_correction_splits_into_the_column_sector_and_the_gaussian_rest():
    """correction(): rest = Eq. (31) on the Rt-projected system, dS = rest + column, its mean is −ĝ_c⟨ρA_ν⟩ on the
    column modes and −(H_R + Σ⁻¹_R)⁻¹g_R on the rest; at large d_k the column sector becomes the decoupled
    Gaussian column block with the equivalent-kernel curvature, and the whole is close to the full Eq. (31)."""
    L, P, m1, mP = 5, 40, 0.1, 0.3
    Cb, Ct, Rt = column_basis(L)
    T = transverse_basis(L)
    res = {}
    for d_k in (1000, 10000):
        p = _params(L=L, V=3, d_k=d_k)
        mom = DatasetMoments(run_training_tokens(p, 0, P), p.V, p.g_O, p.sigma2)
        Ht, gt, Sinv, _ = transverse_system(p, mom, plane_point(m1, mP, L))
        ps = PoolingSector(p, P)
        r = ps.correction(m1, mP, Ht, gt, Sinv)
        gR, HR, SR = Rt.T @ gt, Rt.T @ Ht @ Rt, Rt.T @ Sinv @ Rt
        rest = gaussian_correction(HR, gR, SR, cov=True)
        gc = Ct.T @ gt
        col = ps.radial(m1, mP, np.linalg.norm(gc))
        assert r["rest"] == pytest.approx(rest[0], rel=1e-12)
        assert r["rel"] == pytest.approx(rest[6], rel=1e-12)
        assert r["column"] == pytest.approx(col["dS"], rel=1e-12)
        assert r["dS"] == pytest.approx(r["rest"] + r["column"], rel=1e-12)
        mean = r["mean"].ravel()
        np.testing.assert_allclose(Cb.T @ mean, -gc / np.linalg.norm(gc) * col["mean"], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose((T @ Rt).T @ mean, -rest[-1] @ gR, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(T @ (T.T @ mean), mean, atol=1e-14)           # transverse
        # the decoupled Gaussian reference: EK column curvature hE, the exact pooling-vector prior's column
        # curvature hI (Eq. (37)'s prior), plus the rest
        hE, hI = _curvatures(ps, m1, mP)
        decoupled = gaussian_correction(hE * np.eye(L - 1), gc, hI * np.eye(L - 1))[0] + rest[0]
        full = gaussian_correction(Ht, gt, Sinv)
        scale = abs(full[1]) + abs(full[2])                     # the size of Eq. (31)'s two terms
        res[d_k] = (abs(r["dS"] - decoupled) / scale, abs(r["dS"] - full[0]) / scale)
    # Eq. (37) − its Gaussian column block is the non-Gaussian remainder, O(1/d_k) (measured 3e-4 → 6e-5)
    assert res[10000][0] < 0.3 * res[1000][0] and res[10000][0] < 2e-4
    # against the full Eq. (31) at d_k = 1e4 the pooling split differs by ~3% of |logdet| + |grad| (measured
    # 0.021 at d_k = 1e3, 0.033 at 1e4): the equivalent-kernel instead of this dataset's column curvature, the
    # dropped column–row coupling of the large-deviation prior (Σ⁻¹_cR/Σ⁻¹_cc ≈ 0.13 here) and the pooling
    # vector's prior without its coupling to mP. All are O(1/d_k) like Eq. (31) itself, so this relative gap
    # does not close as d_k grows; 6% leaves a factor 2 of margin.
    assert res[10000][1] < 0.06


@pytest.mark.research   # long one-loop numerics
def test_dataset_means_adds_a_finite_pooling_variant_and_keeps_the_others():
    """dataset_means with the pooling sector: a finite ``pooling`` mean with weights in [0, 1], unstable on no
    more mass than Eq. (31) (the rest's Hessian is a principal block of the full one), and ``none``/``one_loop``
    equal to the call without it."""
    p = _params(L=4, V=3, d_k=12)
    P = 8
    tok = run_training_tokens(p, 0, P)
    on = dataset_means(p, P, tok, coarse=5, fine=41)
    off = dataset_means(p, P, tok, coarse=5, fine=41, pooling=False)
    assert "pooling" not in off
    assert set(on["pooling"]) == {"c1", "cG"}
    assert all(np.isfinite(v) for v in on["pooling"].values())
    for k in ("pooling_soft_weight", "pooling_unstable_weight", "pooling_near_unstable_weight"):
        assert 0.0 <= on[k] <= 1.0, k
    assert on["pooling_unstable_weight"] <= on["unstable_weight"] + 1e-15
    for v in ("none", "one_loop"):
        for k in ("c1", "cG"):
            assert on[v][k] == pytest.approx(off[v][k], rel=1e-12, abs=1e-15), (v, k)
    # the pooling sector changes the correction: its mean is not the one-loop one, but of the same size of shift
    shift = {v: np.hypot(on[v]["c1"] - on["none"]["c1"], on[v]["cG"] - on["none"]["cG"]) for v in ("one_loop", "pooling")}
    assert on["pooling"] != on["one_loop"]
    assert 0.2 < shift["pooling"] / shift["one_loop"] < 5


@pytest.mark.parametrize("L,d_k", [(5, 8), (5, 3)])
def test_pooling_vector_density_against_sampled_scores(L, d_k):
    """The prior of the pooling vector v = Mᵀ1̂ (M = QᵀK/d_k, rows of Q, K standard normal) is the spherical
    density ∝ R^ν K_ν(d_k R), ν = (d_k − L)/2, at any d_k (d_k < L included): its E R², E R⁴ and the share of
    R below the median equal the sampled ones (200 000 draws) within 4 standard errors."""
    rng = np.random.default_rng(1)
    n = 200_000
    a = rng.standard_normal((n, d_k))                      # 1̂·q_i
    k = rng.standard_normal((n, d_k, L))
    R = np.linalg.norm(np.einsum("ni,nil->nl", a, k) / d_k, axis=1)
    r = np.linspace(1e-6, R.max() * 1.5, 200_001)
    w = np.exp(-(pooling_vector_nlp(r, L, d_k, 1.0) - pooling_vector_nlp(r, L, d_k, 1.0).min())) * r ** (L - 1)
    w /= w.sum()
    for power in (2, 4):
        se = (R**power).std() / np.sqrt(n)
        assert abs(float(w @ r**power) - (R**power).mean()) < 4 * se, power
    med = np.median(R)
    assert abs(float(w[r < med].sum()) - 0.5) < 4 * 0.5 / np.sqrt(n)
    assert float(w @ r**2) == pytest.approx(L / d_k, rel=2e-3)      # E|v|² = L c/d_k exactly
