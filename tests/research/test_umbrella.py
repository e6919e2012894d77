"""Umbrella sampling along the copy order parameter with MBAR (research.umbrella) on known answers."""
import math

import numpy as np
import pytest
import torch

from copyhead.hmc import HMC
from research.umbrella import mbar, sample, windows

# umbrella sampling (the metastability study of research/benchmarks/metastability.py), not the paper pipeline: -m research
pytestmark = pytest.mark.research

H, TILT = 30.0, 0.5          # a double well: barrier of 30 nats between minima at x = ±1, tilted


def well(x):
    return H * (x * x - 1) ** 2 + TILT * x


def exact():
    x = np.linspace(-3, 3, 200_001)
    p = np.exp(-(well(x) - well(x).min()))
    p /= p.sum()
    return float((p * x).sum()), float(p[x > 0].sum())


def _hmc_windows(centres, kappa, steps=1500, burn=300, start=-1.0, step_size=0.05, replicas=1):
    """HMC in each window (bias κ(x − c)²/2; κ = 0: none), ``replicas`` independent chains per window run
    side by side: (replicas, windows, draws)."""
    c, k = torch.tensor(np.tile(centres, replicas)), torch.tensor(np.tile(kappa, replicas))

    def energy_grad(q):
        x = q[:, 0]
        d = x - c
        U = H * (x * x - 1) ** 2 + TILT * x + 0.5 * k * d * d
        g = 4 * H * x * (x * x - 1) + TILT + k * d
        return U, g[:, None]
    gens = [torch.Generator().manual_seed(100 + i) for i in range(len(c))]
    h = HMC(energy_grad, torch.full((len(c), 1), start, dtype=torch.float64), gens, n_leapfrog=8,
            step_size=step_size, target_accept=0.7)
    x = torch.stack(sample(h, steps, burn, lambda q: {"x": q[:, 0].clone()})["x"], 1).numpy()
    return x.reshape(replicas, len(centres), -1)


def test_umbrella_windows_and_mbar_recover_a_double_well_that_plain_hmc_cannot_cross():
    """The windows' MBAR estimate of the mean and of the right well's weight against quadrature, within 5 of
    its standard errors, measured from 6 independent replicas of the windows. One replica's error is ~0.1 in
    the mean: the fixed tolerance 0.03 this test had passed or failed by the luck of one seed (it failed on a
    fresh clone on another machine, 0.054 off). Plain HMC, stuck in the left well, is many such errors away."""
    mean, right = exact()
    stuck = _hmc_windows(np.zeros(4), np.zeros(4), burn=0, step_size=0.02)[0]   # no bias, a fixed small step
    assert abs(stuck.mean() - (-1.0)) < 0.1 and abs(mean - stuck.mean()) > 0.3   # they never cross
    c, k = windows(-1.6, 1.6, 65)
    xs = _hmc_windows(c, k, replicas=6)
    fits = [mbar(list(x), c, k) for x in xs]
    assert min(f.overlap for f in fits) > 0.03
    for est, exact_value in (([f.mean() for f in fits], mean), ([f.weight_above(0.0) for f in fits], right)):
        se = np.std(est, ddof=1) / np.sqrt(len(est))
        assert 0 < se < 0.05, se                                                 # a measurement, not noise
        assert abs(np.mean(est) - exact_value) < 5 * se, (np.mean(est), exact_value, se)
    assert abs(np.mean([f.mean() for f in fits]) - stuck.mean()) > 0.3           # what plain HMC misses
    fit, x = fits[0], xs[0]
    assert np.exp(fit.logw).sum() == pytest.approx(1.0)
    # the free energies solve MBAR's self-consistent equation
    N = x.shape[1]
    b = 0.5 * k[:, None] * (fit.s[None, :] - c[:, None]) ** 2
    log_den = np.logaddexp.reduce(np.log(N) + fit.f[:, None] - b, axis=0)
    np.testing.assert_allclose(fit.f, -np.logaddexp.reduce(-b - log_den, axis=1) + np.logaddexp.reduce(
        -b[0] - log_den), atol=1e-8)


def test_mbar_of_unbiased_windows_is_the_plain_average():
    rng = np.random.default_rng(0)
    samples = [rng.normal(size=200) for _ in range(3)]
    fit = mbar(samples, np.zeros(3), np.zeros(3))
    assert np.allclose(fit.f, 0) and np.allclose(np.exp(fit.logw), 1 / 600)
    assert fit.mean() == pytest.approx(np.concatenate(samples).mean())


def test_windows_refuse_an_empty_range():
    with pytest.raises(ValueError, match="hi > lo"):
        windows(0.1, 0.1, 5)
    with pytest.raises(ValueError, match="must lie inside"):
        windows(0.0, 0.1, 5, dense=(0.05, 0.2, 4))


def test_dense_windows_replace_the_coarse_ones_between_the_branches():
    """--dense: the coarse windows inside the dense range give way to the dense ones, each window's κ the
    inverse square of its own grid's spacing, centres sorted."""
    c, k = windows(0.0, 0.2, 5, dense=(0.04, 0.12, 9))
    assert np.allclose(c, [0.0] + list(np.linspace(0.04, 0.12, 9)) + [0.15, 0.2])
    assert np.allclose(k, [1 / 0.05 ** 2] + [1 / 0.01 ** 2] * 9 + [1 / 0.05 ** 2] * 2)


def test_the_free_energy_of_a_branch_is_its_weight_in_nats():
    """ΔF = −log(weight above / weight below), also where the weight rounds to 1."""
    rng = np.random.default_rng(1)
    samples = [rng.normal(0.0, 1.0, 400), rng.normal(3.0, 1.0, 400)]
    fit = mbar(samples, np.zeros(2), np.zeros(2))                      # unbiased: plain counts
    n_above = sum(int((x > 1.5).sum()) for x in samples)
    assert fit.free_energy_above(1.5) == pytest.approx(-np.log(n_above / (800 - n_above)))
    far = mbar([np.full(10, 0.0), np.full(10, 1.0)], np.array([0.0, 1.0]), np.array([0.0, 0.0]))
    assert far.free_energy_above(0.5) == pytest.approx(0.0)
    assert fit.free_energy_above(100.0) == np.inf


def test_umbrella_on_the_collapsed_posterior_matches_importance_sampling():
    """At the tiny size of tests/test_hmc.py (softmax, V = 2, L = 3, d_k = 2) the MBAR mean of âG over
    windows spanning its posterior equals the importance-sampling mean (50 000 prior draws weighted by
    the exact likelihood) within 4 combined standard errors (the windows' error from two halves)."""
    from copyhead.collapsed import CollapsedPosterior
    from research.umbrella import copy_coordinate, run_windows
    from test_hmc import _tiny_model
    B = 50_000
    post = CollapsedPosterior(_tiny_model("softmax", B))
    q = torch.randn(B, post.n_qk, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    logw = -post.neg_log_lik(q)
    w = torch.exp(logw - logw.max())
    w = (w / w.sum()).numpy()
    s = copy_coordinate(post, q)[0].numpy()
    is_mean = float((w * s).sum())
    is_se = float(np.sqrt((w ** 2 * (s - is_mean) ** 2).sum()))
    order = np.argsort(s)
    cdf = np.cumsum(w[order])
    lo, hi = s[order][np.searchsorted(cdf, 0.01)], s[order][np.searchsorted(cdf, 0.99)]
    c, k = windows(lo, hi, 8)
    K = len(c)
    postK = CollapsedPosterior(_tiny_model("softmax", K))
    q0 = torch.randn(K, postK.n_qk, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    gens = [torch.Generator().manual_seed(20 + i) for i in range(K)]
    res = run_windows(postK, q0, c, k, gens, steps=600, burn_in=150, n_leapfrog=5, step_size=0.3)
    x = res["s"]
    fit = mbar(list(x), c, k)
    assert (res["accept"] > 0.5).all() and fit.overlap > 0.03
    est = fit.mean()
    n = x.shape[1] // 2
    halves = [mbar(list(x[:, :n]), c, k).mean(), mbar(list(x[:, n:]), c, k).mean()]
    se = abs(halves[0] - halves[1]) / 2 + 1e-3      # two halves: a rough standard error (floored)
    assert abs(est - is_mean) < 4 * math.hypot(se, is_se), (est, is_mean, se, is_se)
