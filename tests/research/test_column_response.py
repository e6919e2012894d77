"""research/benchmarks/column_response.py: one training set's full transverse action (evidence + prior rate) at a plane
point — its gradient and Hessian against the one loop's transverse system, the exact saddle, and the one-loop
tadpole −½ C S‴[C] against the same contraction with the third-derivative tensor formed explicitly."""
import numpy as np
import pytest

from copyhead.config import ActionParams
from copyhead.theory.action import order_to_coeffs
from research.one_loop.correction import gaussian_correction, plane_point
from research.one_loop.dataset import DatasetMoments, transverse_system
from copyhead.theory.prior import neg_log_prior_matrix
from copyhead.theory.same_dataset import run_training_tokens

# tests of the research benchmark research/benchmarks/column_response.py: -m research
pytestmark = pytest.mark.research


def _setup(research_script, prior="large_deviation", L=5, V=3, d_k=10, P=12, seed=1, c=(0.1, 0.2)):
    mod = research_script("column_response")
    p = ActionParams(V=V, L=L, d_k=d_k, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1, prior=prior)
    tok = run_training_tokens(p, seed, P)
    mom = DatasetMoments(tok, p.V, p.g_O, p.sigma2)
    M0 = plane_point(*map(float, order_to_coeffs(*c, L)), L)
    Ht, gt, Sinv, T = transverse_system(p, mom, M0)
    return mod, p, mod.TransverseAction(p, tok, mom, M0, T), (Ht, gt, Sinv, T), M0


@pytest.mark.parametrize("prior", ["large_deviation", "gaussian"])
def test_the_action_at_the_plane_point_is_the_one_loops_transverse_system(research_script, prior):
    """At x = 0 the gradient is the evidence's g⊥ (the prior's is in the plane) and the Hessian is H⊥ + d_k H_I⊥;
    the prior gradient equals central differences of the prior rate at a general (non-symmetric) M."""
    mod, p, act, (Ht, gt, Sinv, T), M0 = _setup(research_script, prior)
    x0 = np.zeros(T.shape[1])
    np.testing.assert_allclose(act.grad(x0), gt, atol=1e-10 * np.abs(gt).max())
    np.testing.assert_allclose(act.grads(x0)[1], 0.0, atol=1e-10 * np.abs(gt).max())
    H = act.hessian(x0)
    np.testing.assert_allclose(H, Ht + Sinv, atol=1e-6 * np.abs(Ht + Sinv).max())
    M = M0 + 0.3 * np.random.default_rng(0).standard_normal(M0.shape)
    h, fd = 1e-6, np.zeros_like(M)
    for i in np.ndindex(M.shape):
        d = np.zeros_like(M)
        d[i] = h
        fd[i] = (neg_log_prior_matrix(M + d, p.d_k, 1.0, 1.0, prior)
                 - neg_log_prior_matrix(M - d, p.d_k, 1.0, 1.0, prior)) / (2 * h)
    np.testing.assert_allclose(act.prior_grad(M), fd, atol=1e-6 * np.abs(fd).max())


def test_the_saddle_is_a_minimum_next_to_the_gaussian_mean(research_script):
    """x* has zero gradient, a lower action than the Gaussian-order mean −C g⊥, and is near it for a small force."""
    mod, p, act, (Ht, gt, Sinv, T), M0 = _setup(research_script)
    C = gaussian_correction(Ht, gt, Sinv, cov=True)[-1]
    xg = -(C @ gt)
    xs = act.saddle(xg)
    assert np.abs(act.grad(xs)).max() < 1e-8 * np.abs(gt).max()
    assert act.value_grad(xs)[0] <= act.value_grad(xg)[0]
    assert np.linalg.norm(xs - xg) < 0.5 * np.linalg.norm(xg)


@pytest.mark.parametrize("prior", ["large_deviation", "gaussian"])
def test_tadpole_equals_the_contraction_with_the_explicit_third_derivative(research_script, prior):
    """−½ C S‴[C] from second differences along C's eigenvectors equals the contraction with S‴ formed from
    central differences of the Hessian; with the Gaussian prior (quadratic) the prior's part is 0."""
    mod, p, act, (Ht, gt, Sinv, T), M0 = _setup(research_script, prior)
    xs = act.saddle(-(gaussian_correction(Ht, gt, Sinv, cov=True)[-1] @ gt))
    tad_E, tad_P = act.tadpole(xs)
    H = act.hessian(xs)
    C = np.linalg.inv(H)
    k, h = len(xs), 1e-4
    S3 = np.empty((k, k, k))
    for i in range(k):
        e = np.zeros(k)
        e[i] = h
        S3[i] = (act.hessian(xs + e) - act.hessian(xs - e)) / (2 * h)
    want = -C @ (0.5 * np.einsum("jkl,kl->j", S3, C))
    np.testing.assert_allclose(tad_E + tad_P, want, atol=2e-3 * np.abs(want).max())
    assert np.abs(tad_E + tad_P).max() > 0
    if prior == "gaussian":
        assert np.abs(tad_P).max() < 1e-6 * np.abs(tad_E).max()


def test_a_page_renders_from_the_saved_rows_with_that_measurements_stamp(bench_script, tmp_path, capsys):
    """benchmarks/common.default_size_main: a measurement saves its rows (--out) with its stamp, size and
    options; --render makes the same page from them without measuring, and refuses rows measured with other
    options."""
    common = bench_script("common")
    calls = []

    def measure(cfg, log):
        calls.append(cfg["task"]["L"])
        return ActionParams(V=3, L=cfg["task"]["L"], d_k=7, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1,
                            prior="gaussian"), [{"P": 4, "x": np.float64(0.25)}]

    def markdown(p, rows, seconds, when):
        return [f"# L = {p.L}, d_k = {p.d_k}", f"measured: {when}", *(f"P {r['P']}: {r['x']:.3f}" for r in rows)]
    cfg = tmp_path / "c.yaml"
    cfg.write_text("task: {L: 5}\n")
    rows, page = tmp_path / "rows.json", tmp_path / "page.md"
    common.default_size_main("doc", "toy", measure, markdown, {"P": [4]},
                             ["--config", str(cfg), "--out", str(rows), "--md", str(page)])
    first = page.read_text()
    assert calls == [5] and "P 4: 0.250" in first and "# L = 5, d_k = 7" in first
    page.unlink()
    common.default_size_main("doc", "toy", measure, markdown, {"P": [4]}, ["--render", str(rows), "--md", str(page)])
    assert calls == [5] and page.read_text() == first             # not measured again; the same page
    with pytest.raises(SystemExit, match="measured with options"):
        common.default_size_main("doc", "toy", measure, markdown, {"P": [8]}, ["--render", str(rows)])
    with pytest.raises(SystemExit, match="rows of 'toy'"):
        common.default_size_main("doc", "other", measure, markdown, {"P": [4]}, ["--render", str(rows)])
    capsys.readouterr()
