"""One-loop transverse correction (docs/theory.md, Sec. 13): Hessians against finite differences of the
independent numpy evidence and prior, the permutation blocks, the Gaussian identity, the instability flag."""
import numpy as np
import pytest

from copyhead.config import ActionParams
from copyhead.theory.action import closed_form_nle, order_to_coeffs, population_moments
from copyhead.theory.evidence import neg_log_evidence, neg_log_evidence_from_stats
from copyhead.theory.prior import neg_log_prior_matrix
from research.one_loop.prior import saddle_correction
from research.one_loop.blocks import block_decompose, isotypic_bases, transverse_basis
from research.one_loop.correction import ek_blocks, gaussian_correction, grad_term_blocks, one_loop, one_loop_ek
from research.one_loop.evidence import copy_weight, evidence_dataset, evidence_ek, grad_hessian, hvp
from research.one_loop.prior import prior_prefactor, prior_rate_hessian
from research.one_loop.softmax import one_loop_softmax, softmax_point

# tests of the research package (src/research/one_loop): -m research
pytestmark = pytest.mark.research


def ap(V, L, d_k=4, g_O=1.0, sigma2=0.5):
    """The action's parameters of a test (g_Q = g_K = 1, large-deviation prior)."""
    return ActionParams(V=V, L=L, d_k=d_k, g_Q=1.0, g_K=1.0, g_O=g_O, sigma2=sigma2, prior="large_deviation")


def fd_hessian(f, x, h=1e-4):
    """Central-difference gradient and Hessian of a numpy function of a flat vector."""
    n = len(x)
    E = np.eye(n) * h
    g = np.array([(f(x + E[i]) - f(x - E[i])) / (2 * h) for i in range(n)])
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            H[i, j] = H[j, i] = (f(x + E[i] + E[j]) - f(x + E[i] - E[j]) - f(x - E[i] + E[j])
                                 + f(x - E[i] - E[j])) / (4 * h * h)
    return g, H


def attention_np(M, attention):
    if attention == "linear":
        return M / M.shape[0]
    e = np.exp(M - M.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def plane(m1, mP, L):
    return m1 * np.ones((L, L)) + mP * np.eye(L)


@pytest.mark.parametrize("prior", ["large_deviation", "gaussian"])
@pytest.mark.parametrize("L,m1,mP", [(3, 0.0, 0.0), (3, 0.4, 1.1), (4, -0.5, 0.3), (4, 0.2, -1.3),
                                     (4, -0.25, 1.0)])          # last: L m1 + mP = 0 (one zero σ)
def test_prior_rate_hessian_matches_finite_differences(prior, L, m1, mP):
    c = 0.7
    M = plane(m1, mP, L)
    _, Hfd = fd_hessian(lambda v: neg_log_prior_matrix(v.reshape(L, L), 1, c, 1.0, prior), M.ravel())
    H = prior_rate_hessian(M, c, prior)
    assert np.abs(H - Hfd).max() < 2e-6 * max(1.0, np.abs(H).max())
    assert np.linalg.eigvalsh(H).min() > 0          # the rate is convex: Σ = (d_k H_I⊥)⁻¹ exists


@pytest.mark.parametrize("attention", ["linear", "softmax"])
@pytest.mark.parametrize("form", ["dataset", "ek"])
@pytest.mark.parametrize("L,V,P", [(3, 3, 4), (4, 3, 3)])
def test_evidence_gradient_and_hessian_match_finite_differences(attention, form, L, V, P):
    rng = np.random.default_rng(L * 10 + V)
    tok = rng.integers(0, V, (P, L))
    g_O, s2 = 1.3, 0.4
    if form == "dataset":
        E = evidence_dataset(tok, ap(V, L, g_O=g_O, sigma2=s2), attention)
        f = lambda v: neg_log_evidence(tok, attention_np(v.reshape(L, L), attention), V, g_O, s2)
    else:
        N = P * L
        E = evidence_ek(ap(V, L, g_O=g_O, sigma2=s2), P, attention)

        def f(v):
            Gb, Bb, yy = population_moments(attention_np(v.reshape(L, L), attention), V)
            return float(neg_log_evidence_from_stats(N * Gb, N * Bb, N * yy, N, g_O, s2))
    for M in (rng.normal(size=(L, L)), plane(0.3, 0.9, L)):
        assert E(M) == pytest.approx(f(M.ravel()), rel=1e-12)
        gfd, Hfd = fd_hessian(f, M.ravel())
        g, H = grad_hessian(E, M)
        scale = max(1.0, np.abs(Hfd).max())
        assert np.abs(g - gfd).max() < 1e-6 * max(1.0, np.abs(g).max())
        assert np.abs(H - Hfd).max() < 1e-5 * scale
        d = rng.normal(size=(2, L, L))
        assert np.allclose(hvp(E, M, d), d.reshape(2, -1) @ H, atol=1e-9 * scale)


def test_ek_evidence_on_the_plane_is_the_closed_form():
    """On M = m1 J + mP I the equivalent-kernel evidence is Eq. (12)."""
    V, L, P = 5, 4, 7
    E = evidence_ek(ap(V, L, sigma2=0.3), P)
    for m1, mP in [(0.0, 0.0), (0.2, 0.7), (-0.3, 1.5)]:
        assert E(plane(m1, mP, L)) == pytest.approx(
            float(closed_form_nle(m1, mP, P, V, L, 1.0, 0.3)), rel=1e-12)


@pytest.mark.parametrize("L", [3, 4, 5, 7])
def test_isotypic_bases_are_invariant_and_complete(L):
    b = isotypic_bases(L)
    std = b["standard"].transpose(1, 0, 2).reshape(L * L, -1)
    assert [b["trivial"].shape[1], std.shape[1], b["sym22"].shape[1], b["anti211"].shape[1]] == \
        [2, 3 * (L - 1), L * (L - 3) // 2, (L - 1) * (L - 2) // 2]
    full = np.concatenate([b["trivial"], std, b["sym22"], b["anti211"]], 1)
    assert np.abs(full.T @ full - np.eye(L * L)).max() < 1e-12          # orthonormal and complete
    T = transverse_basis(L)
    assert np.abs(T.T @ np.eye(L).ravel()).max() < 1e-12 and np.abs(T.T @ np.ones(L * L)).max() < 1e-12
    rng = np.random.default_rng(L)
    Pi = np.eye(L)[rng.permutation(L)]
    R = np.kron(Pi, Pi)                                                  # vec(Π M Πᵀ) = (Π⊗Π) vec(M)
    for B in (b["trivial"], std, b["sym22"], b["anti211"]):
        if B.shape[1]:
            RB = R @ B
            assert np.abs(RB - B @ (B.T @ RB)).max() < 1e-12              # the subspace is invariant
    # the copies carry the same w: Π acts on each copy by the same (L−1)×(L−1) matrix
    reps = [b["standard"][i].T @ R @ b["standard"][i] for i in range(3)]
    assert np.allclose(reps[0], reps[1], atol=1e-12) and np.allclose(reps[0], reps[2], atol=1e-12)


def test_averaged_hessian_is_block_diagonal_and_dataset_hessian_is_not():
    L, V, P = 5, 4, 6
    M = plane(0.15, 0.8, L)
    _, Hek = grad_hessian(evidence_ek(ap(V, L), P), M)
    rng = np.random.default_rng(3)
    Pi = np.eye(L)[rng.permutation(L)]
    R = np.kron(Pi, Pi)
    assert np.abs(R @ Hek - Hek @ R).max() < 1e-10 * np.abs(Hek).max()   # commutes with permutations
    bd = block_decompose(Hek, L)
    assert bd["off_block"] < 1e-12 and bd["dims"] == [2, 12, 5, 6]
    bp = block_decompose(prior_rate_hessian(M, 1.0), L)
    assert bp["off_block"] < 1e-12
    tok = rng.integers(0, V, (P, L))
    _, Hd = grad_hessian(evidence_dataset(tok, ap(V, L)), M)
    assert block_decompose(Hd, L)["off_block"] > 1e-3                # one dataset breaks the symmetry


def test_block_form_equals_full_transverse_projection():
    """Eq. (31) (five Hessian-vector products, block multiplicities) = Eq. (27) on full L²×L² Hessians."""
    L, V, P, d_k = 5, 4, 6, 5
    for m1, mP in [(0.0, 0.0), (0.1, 0.9), (0.3, 0.2)]:
        M = plane(m1, mP, L)
        E = evidence_ek(ap(V, L), P)
        g, H = grad_hessian(E, M)
        T = transverse_basis(L)
        assert np.abs(T.T @ g).max() < 1e-10 * max(1.0, np.abs(g).max())  # g⊥ = 0 for the EK evidence
        full = one_loop(H, g, prior_rate_hessian(M, 1.0), d_k)
        blk = one_loop_ek(ap(V, L, d_k), P, m1, mP)
        assert full.stable and blk.stable
        assert blk.dS == pytest.approx(full.dS, rel=1e-10)
        assert blk.min_eig == pytest.approx(full.min_eig, rel=1e-8)
        assert blk.min_rel_eig == pytest.approx(full.min_rel_eig, rel=1e-8)


def test_dataset_gradient_term_in_block_form_equals_the_full_projection():
    """Eq. (34): a dataset's transverse gradient with the equivalent-kernel curvature, in block form
    (isotypic projections of g), equals −½ g⊥ᵀ(H_E⊥ + d_k H_I⊥)⁻¹ g⊥ on full L²×L² Hessians, for a random g
    and for a real dataset's gradient (which has a large transverse part); NaN where unstable."""
    L, V, P, d_k = 5, 4, 7, 6
    rng = np.random.default_rng(3)
    for m1, mP in [(0.3, 0.8), (0.1, 0.9), (0.05, 0.1)]:
        M = plane(m1, mP, L)
        E = evidence_ek(ap(V, L, sigma2=0.1), P)
        _, H = grad_hessian(E, M)
        HIf = prior_rate_hessian(M, 1.0)
        _, HE, HI, _ = ek_blocks(ap(V, L, d_k, sigma2=0.1), P, m1, mP, E=E)
        gd = evidence_dataset(rng.integers(0, V, (P, L)), ap(V, L, sigma2=0.1)).grad(M)
        assert np.linalg.norm(transverse_basis(L).T @ gd) > 0.1 * np.linalg.norm(gd)
        for g in (rng.normal(size=L * L), gd):
            full = one_loop(H, g, HIf, d_k)
            if (m1, mP) == (0.05, 0.1):                                    # pooling regime: a column mode
                assert not full.stable and np.isnan(grad_term_blocks(g, HE, HI, L))
                continue
            assert full.stable and full.grad_term < 0
            assert grad_term_blocks(g, HE, HI, L) == pytest.approx(full.grad_term, rel=1e-10)


def test_gaussian_identity_by_quadrature():
    """−ln ∫ N(x; 0, Σ) exp(−gᵀx − ½ xᵀHx) dx = Eq. (27), 2-D quadrature, H indefinite but Σ⁻¹ + H > 0."""
    Sig = np.array([[0.8, 0.3], [0.3, 0.5]])
    H = np.array([[0.9, -0.4], [-0.4, -0.7]])
    g = np.array([0.6, -1.1])
    assert np.linalg.eigvalsh(H).min() < 0 < np.linalg.eigvalsh(np.linalg.inv(Sig) + H).min()
    x = np.linspace(-14, 14, 1401)
    X = np.stack(np.meshgrid(x, x, indexing="ij"), -1)
    Si = np.linalg.inv(Sig)
    logN = -0.5 * np.einsum("...i,ij,...j", X, Si, X) - np.log(2 * np.pi) - 0.5 * np.log(np.linalg.det(Sig))
    integrand = np.exp(logN - X @ g - 0.5 * np.einsum("...i,ij,...j", X, H, X))
    exact = -np.log(integrand.sum() * (x[1] - x[0]) ** 2)
    dS, ld, gr, ok, _, _, rel = gaussian_correction(H, g, Si)
    assert ok and dS == pytest.approx(exact, abs=1e-8)
    assert rel == pytest.approx(np.linalg.eigvals(np.eye(2) + Sig @ H).real.min(), rel=1e-10)
    assert ld == pytest.approx(0.5 * np.log(np.linalg.det(np.eye(2) + Sig @ H)), rel=1e-12)
    assert gr == pytest.approx(-0.5 * g @ np.linalg.solve(H + Si, g), rel=1e-12)
    # the naive "½ ln det of the total Hessian" differs from it by ½ ln det Σ⁻¹ (the prior's own
    # normalisation, which the plane prior already carries) and misses the gradient term
    naive = 0.5 * np.log(np.linalg.det(Si + H))
    assert abs(naive - exact) > 0.1


def test_instability_flag_planted():
    H = np.diag([1.0, -3.0, 0.5])
    Sinv = np.eye(3)
    dS, _, _, ok, lmin, bad, rel = gaussian_correction(H, np.zeros(3), Sinv)
    assert not ok and np.isnan(dS) and lmin == pytest.approx(-2.0) and rel == pytest.approx(-2.0)
    assert bad.shape == (3, 1) and abs(abs(bad[1, 0]) - 1) < 1e-12


def test_column_mode_unstable_in_the_pooling_regime():
    """L = V = 4, d_k = 4, σ² = 0.1, P = 8 at (c1, cG) = (0.1, 0): d_k H_I⊥ + H_E⊥ has one negative
    direction, a column mode M = 1 wᵀ (w ⊥ 1: every query attends to the same keys); at P = 32 it is stable."""
    L = V = 4
    m1, mP = map(float, order_to_coeffs(0.1, 0.0, L))
    r = one_loop_ek(ap(V, L, 4, sigma2=0.1), 8, m1, mP)
    assert not r.stable and np.isnan(r.dS) and r.min_eig < 0
    u = r.unstable_dirs[:, 0].reshape(L, L)
    col = np.ones((L, 1)) * u.mean(0, keepdims=True)
    assert np.sum(col**2) / np.sum(u**2) > 1 - 1e-10 and abs(u.sum()) < 1e-10
    E = evidence_ek(ap(V, L, sigma2=0.1), 8)
    g, H = grad_hessian(E, plane(m1, mP, L))
    full = one_loop(H, g, prior_rate_hessian(plane(m1, mP, L), 1.0), 4)
    assert not full.stable and full.min_eig == pytest.approx(r.min_eig, rel=1e-8)
    assert one_loop_ek(ap(V, L, 4, sigma2=0.1), 32, m1, mP).stable


def test_plane_block_of_prior_hessian_is_the_2d_rate_curvature():
    """The trivial block of Eq. (28) = the Hessian of the plane rate Eq. (9) in orthonormal plane
    coordinates (I/√L, (J−I)/√(L(L−1))); ΔS_pref of Eq. (30) is its −½ ln det (constant for Gaussian)."""
    from copyhead.theory.prior import neg_log_prior_family
    L, c = 5, 0.8
    a, b = 1 / np.sqrt(L), 1 / np.sqrt(L * (L - 1))

    def f(u):
        m1, mP = u[1] * b, u[0] * a - u[1] * b
        return float(neg_log_prior_family(m1, mP, L, 1, c, 1.0))
    for m1, mP in [(0.0, 0.0), (0.3, 1.2), (-0.4, 0.5)]:
        u = np.array([(mP + m1) / a, m1 / b])
        _, Hfd = fd_hessian(f, u)
        bd = block_decompose(prior_rate_hessian(plane(m1, mP, L), c), L)
        assert np.abs(bd["trivial"] - Hfd).max() < 1e-6
        assert prior_prefactor(m1, mP, L, c) == pytest.approx(-0.5 * np.log(np.linalg.det(Hfd)), abs=1e-5)
    assert prior_prefactor(0.3, 1.2, L, c, "gaussian") == pytest.approx(prior_prefactor(0, 0, L, c,
                                                                                             "gaussian"))


def test_transverse_prior_law_of_eq27_matches_sampled_scores():
    """The covariance of M = QᵀK/d_k off the plane, sampled (brute-force Q, K tilted to the
    plane point), equals Σ = (d_k H_I⊥)⁻¹ of the large-deviation rate block by block (standard 3×3,
    sym22, anti211) within the sampling error, at d_k = 16 and at a copy-like and a pooling-like point;
    the Gaussian rate's Σ = c/d_k is off by more than a factor 2 at the copy-like point (and right at the
    origin, where the two rates agree); the transverse means vanish."""
    from research.prior_check.sampling import transverse_covariance

    def flat(d):
        return np.concatenate([d["standard"][np.triu_indices(3)], [d["sym22"], d["anti211"]]])
    for (m1, mP), gauss_off in (((0.1, 0.8), 2.0), ((0.3, 0.1), 0.3), ((0.0, 0.0), None)):
        r = transverse_covariance(m1, mP, 5, 16, 20000, np.random.default_rng(1))
        s, ld, g = flat(r["sampled"]), flat(r["large_deviation"]), flat(r["gaussian"])
        scale = np.abs(ld).max()
        assert np.abs(s - ld).max() < 0.03 * scale, (m1, mP, s, ld)
        assert r["mean_abs"] < 0.05
        if gauss_off is None:
            assert np.abs(g - ld).max() < 1e-12
        else:
            assert np.abs(s - g).max() > gauss_off * np.abs(g).max() * 0.5


def test_softmax_observable_term_in_block_form_equals_the_full_projection():
    """Eq. (35) for âG = mP/L of softmax_b M at the softmax expansion point M = β(I − J/L): the block form
    (five Hessian-vector products of E and of âG) equals ½ tr[(H_E⊥ + d_k H_I⊥)⁻¹ ∇²âG] on full L²×L²
    Hessians, and ΔS_EK equals Eq. (31) there; âG at the point is the softmax theory's mP/L."""
    from copyhead.theory.action import softmax_coeffs
    L, V, P, d_k = 5, 4, 9, 6
    for beta in (0.4, 1.3, 3.0):
        m1, mP = softmax_point(beta, L)
        M = plane(m1, mP, L)
        E = evidence_ek(ap(V, L, sigma2=0.1), P, "softmax")
        _, H = grad_hessian(E, M)
        _, Ho = grad_hessian(copy_weight, M)
        HIf = prior_rate_hessian(M, 1.0)
        T = transverse_basis(L)
        full = 0.5 * np.trace(np.linalg.solve(T.T @ H @ T + d_k * T.T @ HIf @ T, T.T @ Ho @ T))
        r, obs = one_loop_softmax(ap(V, L, d_k, sigma2=0.1), P, beta, E=E)
        assert obs == pytest.approx(full, rel=1e-9, abs=1e-14)
        assert r.dS == pytest.approx(one_loop(H, np.zeros(L * L), HIf, d_k).dS, rel=1e-10)
        aG = copy_weight(M)
        assert aG == pytest.approx(float(softmax_coeffs(beta, L)[1]) / L, rel=1e-12)


def test_the_saddle_point_correction_is_the_rates_hessian_and_splits_into_the_plane_prefactor():
    """Legendre duality, ∇²Λ(G*) = (∇²R(M))⁻¹: ΔR(M) = −½ ln det(d_k ∇²I(M)) − ½ L² ln(c/d_k) with ∇²I Eq. (28)
    (one_loop.prior.prior_rate_hessian), at plane points and random symmetric M. On the plane the Hessian is block
    diagonal (Eq. (29)), so ΔR = ΔS_pref (Eq. (30)) − ½ ln det H_I⊥ + const: the density of Eq. (27) at x = 0
    is e^{−R − ΔR}, i.e. the one loop of Eq. (31) with ΔS_pref already holds the prior's next order (its
    transverse part is the transverse prior determinant that cancels against the Gaussian integral)."""
    L, g_Q, g_K = 5, 1.0, 1.5
    c, T = g_Q * g_K, transverse_basis(L)
    rng = np.random.default_rng(3)
    sym = [0.5 * (a + a.T) for a in 0.6 * rng.standard_normal((3, L, L))]
    plane = [(0.1, 0.8), (0.3, 0.1), (-0.05, 0.4)]
    const = -0.5 * L * L * np.log(c)                              # at d_k = 1: ΔR + ½ ln det ∇²I
    for M in sym + [m1 * np.ones((L, L)) + mP * np.eye(L) for m1, mP in plane]:
        H = prior_rate_hessian(M, c)
        assert np.isclose(saddle_correction(M, g_Q, g_K) + 0.5 * np.linalg.slogdet(H)[1], const, atol=1e-9)
    for m1, mP in plane:
        M = m1 * np.ones((L, L)) + mP * np.eye(L)
        H = prior_rate_hessian(M, c)
        transverse = 0.5 * np.linalg.slogdet(T.T @ H @ T)[1]
        assert np.isclose(saddle_correction(M, g_Q, g_K), prior_prefactor(m1, mP, L, c) - transverse + const,
                          atol=1e-9)
