"""Theory formulas against independent computations (docs/theory.md, Sec. 7).

Each test compares with something the code under test does not use: the brute-force N×N GP marginal
likelihood, Monte-Carlo moments of sampled data, the exact density of a projection of QᵀK/d_k, numerical
Legendre transforms and minimisations, symmetries, and planted transition families.
"""
import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar
from scipy.special import gammaln, kve

from copyhead.theory import action as act
from copyhead.theory import evidence as ev
from copyhead.theory import prior as pr
from copyhead.theory.data import copy_task_tokens, one_hot_targets
from copyhead.config import ActionParams
from copyhead.theory.models import LinearModel, canon_even, hess_origin
from copyhead.theory.scan import analyse


def softmax_rows(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def brute_force_nle(tokens, A, V, g_O, sigma2, Y):
    """Eq. (3) with the kernel of Eq. (2), K^{αβ}_{ab} = g_O Σ_cd A_ac A_bd x^α_c·x^β_d, built entry by entry."""
    P, L = tokens.shape
    X = np.concatenate([np.eye(V)[tokens], np.broadcast_to(np.eye(L), (P, L, L))], axis=-1)
    XX = np.einsum("pcd,qed->pcqe", X, X)                          # x^α_c · x^β_e
    K = g_O * np.einsum("ac,bd,pcqd->paqb", A, A, XX).reshape(P * L, P * L)
    C = K + sigma2 * np.eye(P * L)
    Yf = Y.reshape(P * L, -1)
    sign, logdet = np.linalg.slogdet(C)
    assert sign > 0
    n = P * L
    return (0.5 * np.sum(Yf * np.linalg.solve(C, Yf)) + 0.5 * Yf.shape[1] * logdet
            + 0.5 * n * Yf.shape[1] * np.log(2 * np.pi))


# ----------------------------------------------------------------------------- Eq. (4): exact evidence
@pytest.mark.parametrize("attention", ["linear", "softmax"])
@pytest.mark.parametrize("case", range(4))
def test_exact_evidence_equals_bruteforce_gp(attention, case):
    rng = np.random.default_rng(100 + case)
    V, L, P = [(3, 4, 5), (5, 3, 4), (2, 6, 3), (4, 4, 6)][case]
    g_O, sigma2 = rng.uniform(0.3, 2.0), rng.uniform(0.05, 1.5)
    tokens = rng.integers(0, V, size=(P, L))
    s = rng.normal(scale=1.5, size=(L, L))
    A = s / L if attention == "linear" else softmax_rows(s)
    centred = bool(case % 2)
    Y = one_hot_targets(tokens, V, centred)
    bf = brute_force_nle(tokens, A, V, g_O, sigma2, Y)
    assert ev.neg_log_evidence(tokens, A, V, g_O, sigma2, Y=Y) == pytest.approx(bf, abs=1e-8)


def test_family_statistics_match_direct_evidence():
    """Eq. (5) (statistics quadratic in m) and Eq. (22) (row-wise grid) equal Eq. (4) with A built."""
    rng = np.random.default_rng(1)
    V, L, P, g_O, s2 = 4, 5, 7, 1.3, 0.3
    tokens = rng.integers(0, V, size=(P, L))
    for centred in (False, True):
        st = ev.family_statistics(tokens, V, centred)
        Y = one_hot_targets(tokens, V, centred)
        m1r, mPr = rng.normal(size=(3, 6)), rng.normal(size=3)
        grid = ev.family_nle_grid(st, m1r, mPr, g_O, s2)
        for r in range(3):
            for k in range(6):
                A = (m1r[r, k] * np.ones((L, L)) + mPr[r] * np.eye(L)) / L
                direct = ev.neg_log_evidence(tokens, A, V, g_O, s2, Y=Y)
                assert ev.family_nle(st, m1r[r, k], mPr[r], g_O, s2) == pytest.approx(direct, abs=1e-9)
                assert grid[r, k] == pytest.approx(direct, abs=1e-8)


def test_nested_datasets_and_seeding():
    a = copy_task_tokens(3, 7, 5, 20, n_datasets=3)
    b = copy_task_tokens(3, 7, 5, 8, n_datasets=3)
    assert np.array_equal(a[:, :8], b)
    assert not np.array_equal(a[0], a[1])
    assert a.min() >= 0 and a.max() < 7


# ----------------------------------------------------------------------------- Eqs. (11)-(13)
@pytest.mark.parametrize("centred", [False, True])
def test_population_moments_equal_monte_carlo(centred):
    """Ḡ, B̄ of Eq. (11) vs the average of per-sequence empirical moments over many sampled sequences."""
    rng = np.random.default_rng(7)
    V, L, n = 3, 4, 40000
    A = rng.normal(size=(L, L)) / L
    tokens = rng.integers(0, V, size=(n, L))
    Z = ev.features(tokens, A, V)                                   # (n, L, D)
    Y = one_hot_targets(tokens, V, centred)
    Gs = np.einsum("pad,pae->pde", Z, Z) / L                        # per-sequence moments
    Bs = np.einsum("pad,pav->pdv", Z, Y) / L
    Gb, Bb, yy = act.population_moments(A, V, centred)
    for samples, pop in ((Gs, Gb), (Bs, Bb)):
        mean, se = samples.mean(0), samples.std(0, ddof=1) / np.sqrt(n)
        z = np.abs(mean - pop) / np.maximum(se, 1e-12)
        assert np.all((z < 5) | (np.abs(mean - pop) < 1e-12)), z.max()
    assert np.mean(np.sum(Y**2, axis=(1, 2)) / L) == pytest.approx(yy)


@pytest.mark.parametrize("centred", [False, True])
def test_closed_form_is_evidence_of_population_moments(centred):
    """Eq. (12)/(13) equals Eq. (4) evaluated with G = N Ḡ, B = N B̄ (the equivalent-kernel statement)."""
    rng = np.random.default_rng(3)
    for V, L in ((16, 32), (5, 3), (32, 16)):
        for _ in range(3):
            m1, mP = rng.normal(size=2)
            P, g_O, s2 = rng.uniform(1, 300), rng.uniform(0.5, 2), rng.uniform(0.05, 2)
            A = (m1 * np.ones((L, L)) + mP * np.eye(L)) / L
            Gb, Bb, yy = act.population_moments(A, V, centred)
            N = P * L
            ref = ev.neg_log_evidence_from_stats(N * Gb, N * Bb, N * yy, N, g_O, s2)
            assert act.closed_form_nle(m1, mP, P, V, L, g_O, s2, centred) == pytest.approx(ref, rel=1e-11)


def test_closed_form_agrees_with_dataset_average_when_N_large():
    """Differences S(m) - S(m_ref) of the averaged exact action and of the closed form: their mismatch is
    O(D V) in absolute terms (finite-dataset overfitting), so the relative mismatch falls like 1/N and is
    < 1% at N = P L = 16000 ≫ (V+L)² = 64; the minimisers agree there."""
    p = ActionParams(V=4, L=4, d_k=8, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=1.0, prior="large_deviation")
    ex = act.ExactAverage(p, 3, 4000, seed=0)
    rng = np.random.default_rng(0)
    c = rng.uniform(-0.6, 0.6, size=(12, 2))
    m1, mP = act.order_to_coeffs(c[:, 0], c[:, 1], p.L)
    rel = {}
    for P in (250, 4000):
        exact = ex.nle_points(P, m1, mP).mean(0)
        cf = act.closed_form_nle(m1, mP, P, p.V, p.L, p.g_O, p.sigma2)
        d_ex, d_cf = exact - exact[0], cf - cf[0]
        rel[P] = np.max(np.abs(d_ex - d_cf)) / np.max(np.abs(d_cf))
    assert rel[4000] < 0.01
    assert rel[4000] < rel[250] / 5
    lin_cf = LinearModel(p, 61, 1.0)
    lin_ex = LinearModel(p, 61, 1.0, exact=ex)
    x_cf = analyse(lin_cf, [4000], continuous=False)[0]["x"][0]
    x_ex = analyse(lin_ex, [4000], continuous=False)[0]["x"][0]
    assert np.linalg.norm(x_cf - x_ex) < 0.02


# ----------------------------------------------------------------------------- priors, Eqs. (6)-(9)
def test_large_deviation_rate_is_legendre_transform():
    """Eq. (7): sup_G [Tr GᵀM - (1/d_k)·(-d_k/2) ln det(I - c GᵀG)] (numerically) = Σ φ(σ_i(M))."""
    rng = np.random.default_rng(2)
    L, c = 3, 0.8
    M = rng.normal(scale=0.7, size=(L, L))

    def neg(h):
        H = h.reshape(L, L)
        sign, ld = np.linalg.slogdet(np.eye(L) - c * H.T @ H)
        return 1e6 if sign <= 0 else -(np.sum(H * M) + 0.5 * ld)

    best = min((minimize(neg, rng.normal(scale=0.1, size=L * L), method="BFGS") for _ in range(3)),
               key=lambda r: r.fun)
    assert -best.fun == pytest.approx(pr.neg_log_prior_matrix(M, 1.0, 1.0, c), rel=1e-6)
    # the family form Eq. (9) is the matrix form on M = m1 J + mP I
    for prior in pr.PRIORS:
        m1, mP, Lf, d_k = 0.3, -0.8, 6, 12.0
        Mf = m1 * np.ones((Lf, Lf)) + mP * np.eye(Lf)
        assert pr.neg_log_prior_family(m1, mP, Lf, d_k, 1.1, 0.9, prior) == pytest.approx(
            pr.neg_log_prior_matrix(Mf, d_k, 1.1, 0.9, prior), rel=1e-12)


def test_large_deviation_rate_matches_exact_density_of_a_projection():
    """y = Tr(M)/L is a sum of n = L d_k Gaussian products: its exact density (Bessel K) gives
    -(1/n) ln p(y)/p(0) → φ(y) (Eq. (7) along M = y I); the Gaussian prior y²/2c is visibly worse."""
    L, d_k, c = 4, 64, 1.0
    n = L * d_k
    nu = (n - 1) / 2

    def logpdf(y):  # z = n y/√c is a sum of n products of standard normals
        z = np.abs(n * y / np.sqrt(c))
        return nu * np.log(z) + np.log(kve(nu, z)) - z - nu * np.log(2) - 0.5 * np.log(np.pi) - gammaln(n / 2)

    logpdf0 = -np.log(2) + gammaln(nu) - 0.5 * np.log(np.pi) - gammaln(n / 2)   # z^ν K_ν(z) → 2^(ν-1) Γ(ν)
    for y in (0.3, 0.7, 1.2):
        exact = -(logpdf(y) - logpdf0) / n
        ld = float(pr.phi(y, c))
        gauss = y**2 / (2 * c)
        assert abs(ld - exact) < 0.03 * exact + 2 * np.log(n) / n   # O(ln n / n) prefactor corrections
        if y >= 0.7:
            assert abs(ld - exact) < 0.25 * abs(gauss - exact)
    # and the Bessel density itself against sampling, at small n
    rng = np.random.default_rng(0)
    n_s = 8
    z = np.sum(rng.normal(size=(200000, n_s)) * rng.normal(size=(200000, n_s)), axis=1)
    counts, edges = np.histogram(z, bins=np.linspace(-6, 6, 25))
    hist = counts / (len(z) * (edges[1] - edges[0]))
    nu_s = (n_s - 1) / 2
    sub = edges[:-1, None] + (np.arange(40) + 0.5)[None, :] / 40 * (edges[1] - edges[0])   # bin averages
    a = np.abs(sub)
    dens = np.exp(nu_s * np.log(a) + np.log(kve(nu_s, a)) - a - nu_s * np.log(2) - 0.5 * np.log(np.pi)
                  - gammaln(n_s / 2)).mean(1)
    se = np.sqrt(dens / (200000 * (edges[1] - edges[0])))
    assert np.all(np.abs(hist - dens) < 5 * se + 1e-4)


def test_gaussian_prior_is_leading_cumulant_of_large_deviation():
    lam = np.array([1e-3, 2e-3])
    assert np.allclose(pr.phi(lam, 0.7), lam**2 / (2 * 0.7), rtol=1e-5)


# ----------------------------------------------------------------------------- symmetries
def test_linear_action_is_even():
    p = ActionParams(V=5, L=6, d_k=8, g_Q=1.0, g_K=1.2, g_O=0.9, sigma2=0.3, prior="large_deviation")
    rng = np.random.default_rng(4)
    c = rng.normal(scale=0.3, size=(10, 2))
    for prior in pr.PRIORS:
        q = p.replace(prior=prior)
        assert np.allclose(act.action_linear(c[:, 0], c[:, 1], 40, q),
                           act.action_linear(-c[:, 0], -c[:, 1], 40, q), rtol=1e-13)
    ex = act.ExactAverage(p, 2, 9, seed=1)
    m1, mP = act.order_to_coeffs(c[:, 0], c[:, 1], p.L)
    assert np.allclose(ex.nle_points(9, m1, mP), ex.nle_points(9, -m1, -mP), rtol=1e-12)


def test_softmax_gauge_and_family():
    rng = np.random.default_rng(6)
    V, L = 4, 5
    tokens = rng.integers(0, V, size=(6, L))
    s = rng.normal(size=(L, L))
    a = ev.neg_log_evidence(tokens, softmax_rows(s), V, 1.0, 0.2)
    b = ev.neg_log_evidence(tokens, softmax_rows(s + 3.7), V, 1.0, 0.2)
    assert a == pytest.approx(b, abs=1e-9)
    for beta in (-0.7, 0.0, 0.4, 2.5, 30.0):
        m1, mP = act.softmax_coeffs(beta, L)
        for u in (0.0, -1.3, 2.0):
            A = softmax_rows(u * np.ones((L, L)) + beta * np.eye(L))
            assert np.allclose(A, (m1 * np.ones((L, L)) + mP * np.eye(L)) / L, atol=1e-13)
    # Eq. (15): the gauge u removes the eigenvalue L u + β from the prior
    for prior in pr.PRIORS:
        for beta in (0.3, 1.7):
            f = lambda u: pr.neg_log_prior_matrix(u * np.ones((L, L)) + beta * np.eye(L), 16, 1.0, 1.0, prior)
            r = minimize_scalar(f, bounds=(-3, 3), method="bounded", options={"xatol": 1e-10})
            assert r.fun == pytest.approx(float(pr.neg_log_prior_softmax(beta, L, 16, 1.0, 1.0, prior)),
                                          rel=1e-8)


# ----------------------------------------------------------------------------- classifier
class FunctionModel:
    """Any action S(x; P) on a grid (1-D, or 2-D with x -> -x symmetry), as a models.ActionModel for the
    scan driver: ``f(P, x)`` takes points x of shape (..., dim); the order parameters c1 and cG are the
    first and last coordinates of x."""

    def __init__(self, f, axes, symmetric=False):
        self.f, self.axes = f, tuple(np.asarray(a, float) for a in axes)
        self.dim, self.symmetric = len(self.axes), symmetric
        self.spacing = min(float(a[1] - a[0]) for a in self.axes)

    def grid(self, P):
        return self.f(P, np.stack(np.meshgrid(*self.axes, indexing="ij"), axis=-1))

    def points(self, P, x):
        return self.f(P, np.asarray(x, float))

    def order_params(self, x):
        x = np.asarray(x, float)
        m1, mP = act.order_to_coeffs(x[..., 0], x[..., -1], 2)
        return {"c1": x[..., 0], "cG": x[..., -1], "m1": m1, "mP": mP}

    def canon(self, x):
        return canon_even(x) if self.symmetric else np.asarray(x, float)

    def weights_mask(self):
        return np.ones(tuple(len(a) for a in self.axes))

    def hess_origin(self, P, h=None):
        return hess_origin(self, P, h)


def test_classifier_double_well_is_first_order():
    """S = (x² - 1)² - (P - 5) x: first-order at P* = 5, spinodals 5 ∓ 8/(3√3)."""
    f = lambda P, x: (x[..., 0] ** 2 - 1) ** 2 - (P - 5.0) * x[..., 0]
    m = FunctionModel(f, [np.linspace(-2, 2, 401)])
    tr = analyse(m, np.linspace(1, 9, 81))[2]
    h = 8 / (3 * np.sqrt(3))
    assert [t["kind"] for t in tr["transitions"]] == ["first_order"]
    assert tr["transitions"][0]["classification"] == "first-order"
    assert tr["P_star"] == pytest.approx(5.0, abs=1e-4)
    assert tr["P_spinodal_low"] == pytest.approx(5 - h, abs=0.02)
    assert tr["P_spinodal_high"] == pytest.approx(5 + h, abs=0.02)
    assert np.isnan(tr["P_onset"])


@pytest.mark.parametrize("theta", [0.3, 1.2])
def test_classifier_symmetric_quartic_is_second_order(theta):
    """S = (Pc - P)(n·x)² + (n⊥·x)² + |x|⁴ with Pc = 3: second-order onset at 3 along n."""
    n = np.array([np.cos(theta), np.sin(theta)])
    w = np.array([-n[1], n[0]])
    f = lambda P, x: (3.0 - P) * (x @ n) ** 2 + (x @ w) ** 2 + np.sum(x**2, -1) ** 2
    ax = np.linspace(-1.5, 1.5, 121)
    m = FunctionModel(f, [ax, ax], symmetric=True)
    tr = analyse(m, np.linspace(1, 6, 51))[2]
    onset = [t for t in tr["transitions"] if t["kind"] == "onset"]
    assert len(onset) == 1 and onset[0]["classification"] == "second-order"
    assert not [t for t in tr["transitions"] if t["kind"] == "first_order"]
    assert tr["P_onset"] == pytest.approx(3.0, abs=1e-6)
    v = np.array(tr["onset_direction"])
    assert abs(abs(v @ n) - 1) < 1e-6


def test_classifier_tricritical_sign():
    """A symmetric family with negative quartic and positive sextic jumps before the instability."""
    f = lambda P, x: (3.0 - P) * x[..., 0] ** 2 + x[..., 1] ** 2 - x[..., 0] ** 4 + 0.5 * x[..., 0] ** 6
    ax = np.linspace(-2, 2, 161)
    tr = analyse(FunctionModel(f, [ax, ax], symmetric=True), np.linspace(1, 5, 81))[2]
    # minima at x² = (2 ± sqrt(4 - 6(3-P)))/3; coexistence with 0 when S(x*) = 0: (3-P) = 1/2
    assert tr["P_onset"] == pytest.approx(3.0, abs=1e-6)
    assert tr["P_star"] == pytest.approx(2.5, abs=2e-3)
    assert tr["P_spinodal_low"] == pytest.approx(3 - 2 / 3, abs=0.02)
    assert tr["P_spinodal_high"] == pytest.approx(3.0, abs=1e-6)


# ----------------------------------------------------------------------------- posterior mean, scaling
def test_posterior_mean_of_a_gaussian_action():
    """Eq. (18) on S = (x - 0.3)²/(2·0.05²): the mean is 0.3 and the saddle 0.3."""
    f = lambda P, x: (x[..., 0] - 0.3) ** 2 / (2 * 0.05**2) + 0 * P
    m = FunctionModel(f, [np.linspace(-1, 1, 801)])
    sc = analyse(m, [1.0, 2.0])[0]
    assert sc["mean"]["c1"][0] == pytest.approx(0.3, abs=1e-6)
    assert sc["x"][0, 0] == pytest.approx(0.3, abs=1e-5)


def test_scaling_with_sigma2_and_d_k():
    """Every P is proportional to σ² (N enters only as N/σ²); softmax P* grows with d_k."""
    from copyhead.theory.scaling import scaling
    p = ActionParams(V=8, L=8, d_k=16, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=1.0, prior="gaussian")
    a = scaling(p, "linear", L=[6, 8], grid_n=81, n_P=60)["L"]
    b = scaling(p.replace(sigma2=0.25), "linear", L=[6, 8], grid_n=81, n_P=60)["L"]
    assert np.allclose(np.array(b["P_onset"]), 0.25 * np.array(a["P_onset"]), rtol=1e-6)
    q = p.replace(V=16, L=32, sigma2=0.1, prior="large_deviation")
    s = scaling(q, "softmax", d_k=[32, 128], grid_n=121, n_P=80)["d_k"]
    assert np.all(np.isfinite(s["P_star"])) and s["P_star"][1] > 2.5 * s["P_star"][0]


def test_cli_theory_with_json_config(tmp_path):
    import json

    import xarray as xr

    from copyhead.cli import main
    cfg = {"task": {"V": 4, "L": 4}, "model": {"d_k": 8, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0, "sigma2": 1.0},
           "theory": {"prior": "gaussian", "P_min": 1.0, "P_max": 100.0, "n_P": 20, "grid_n": 31,
                      "landscape_P": {"linear": [], "softmax": []},
                      "exact": {"n_datasets": 0, "P": [], "seed": 0}, "scaling": {"L": []}}}
    out = tmp_path / "softmax.nc"
    assert main(["theory", "--attention", "softmax", "--theory-config", json.dumps(cfg), "--out", str(out)]) == 0
    ds = xr.open_dataset(out)
    assert ds.attrs["prior"] == "gaussian" and "beta_saddle" in ds and "P_exact" not in ds.coords
