"""Training loops: SGLD samples the right posterior (closed form with Q, K frozen), Adam descends U,
the softmax copy solution is stable at large P, the record grid is as documented."""
import math

import numpy as np
import pytest
import torch

from copyhead import order_params as op
from copyhead.model import CopyAttention
from copyhead.task import make_data
from copyhead.train import new_state, record_steps, run_chain, sample_steps


def test_record_steps_log_spaced():
    for steps, n in [(10000, 40), (4000, 40), (100, 7), (5, 40), (1, 2)]:
        r = record_steps(steps, n)
        assert r[0] == 0 and r[-1] == steps and np.all(np.diff(r) > 0)
        assert len(r) == min(n, steps + 1)


def _sgld_W_samples(model, theta, eta, steps, burn_in, thin, seed):
    recipe = dict(method="sgld", steps=steps, burn_in=burn_in, thin=thin, eta=eta, temperature=1.0,
                  log_points=2)
    gen = torch.Generator().manual_seed(seed)
    mask = torch.zeros_like(theta)
    mask[model.sW] = 1.0
    out = []
    st = new_state(model, recipe, theta, gen)
    run_chain(model, recipe, st, gen, mask=mask,
              on_sample=lambda s, th: out.append(th[model.sW].view(model.V, -1).clone()))
    return torch.stack(out).numpy()  # (n, V, D)


def _batch_se(x, n_batches=20):
    """Standard error of the mean of a correlated series by batch means (axis 0)."""
    b = np.array_split(x, n_batches)
    means = np.stack([bb.mean(0) for bb in b])
    return means.std(0, ddof=1) / math.sqrt(n_batches)


def test_sgld_matches_gaussian_readout_posterior():
    data = make_data(0, 3, 4, 2, 2)
    m = CopyAttention(data, "linear", dict(scores="position", d_k=4, g_Q=1.0, g_K=1.0, g_O=0.25,
                                           sigma2=1.0))
    theta = m.init_prior(torch.Generator().manual_seed(0))
    mean, cov = (x.numpy() for x in m.readout_posterior(theta))
    lam = np.linalg.eigvalsh(np.linalg.inv(cov))
    eta = 0.04 / lam.max()                       # discretisation bias of the covariance ~ eta*lam/2 <= 2%
    tau = 1.0 / (eta * lam.min())
    steps = int(400 * tau)
    W = _sgld_W_samples(m, theta, eta, steps, burn_in=int(10 * tau), thin=5, seed=1)
    # mean: within 5 standard errors in every entry
    z = (W.mean(0) - mean) / _batch_se(W)
    assert np.abs(z).max() < 5, np.abs(z).max()
    # covariance: each row of W has covariance Σ; pool the V rows; Monte-Carlo error by batch means
    Wc = W - mean
    outer = np.einsum("nvi,nvj->nij", Wc, Wc) / W.shape[1]          # (n, D, D), E = Σ
    C = outer.mean(0)
    zC = (C - cov) / _batch_se(outer)
    assert np.abs(zC).max() < 5, np.abs(zC).max()
    assert np.linalg.norm(C - cov) / np.linalg.norm(cov) < 0.15
    # halving eta does not change the averages beyond their error
    W2 = _sgld_W_samples(m, theta, eta / 2, 2 * steps, burn_in=int(20 * tau), thin=10, seed=2)
    z2 = (W2.mean(0) - W.mean(0)) / np.sqrt(_batch_se(W) ** 2 + _batch_se(W2) ** 2)
    assert np.abs(z2).max() < 5
    v1, v2 = W.var(0).mean(), W2.var(0).mean()
    assert abs(v1 - v2) / v1 < 0.08


def test_adam_lowers_energy():
    data = make_data(0, 4, 6, 10, 8)
    m = CopyAttention(data, "softmax", dict(scores="position", d_k=6, g_Q=1.0, g_K=1.0, g_O=1.0,
                                            sigma2=0.1))
    recipe = dict(method="adam", steps=200, lr=0.01, schedule="cosine", warmup=10, log_points=10)
    gen = torch.Generator().manual_seed(0)
    st = run_chain(m, recipe, new_state(m, recipe, m.init_prior(gen), gen), gen)
    U = st.curves[:, 0].numpy()
    assert np.all(np.isfinite(U)) and U[-1] < 0.5 * U[0]
    assert st.samples.shape[0] == 1 and np.all(np.isfinite(st.samples.numpy()))


def test_softmax_copy_solution_stable_at_large_P():
    """From M = 3 I the SGLD chain at large P keeps the copy pattern (cG stays near its start)."""
    V, L = 6, 8
    data = make_data(0, V, L, 60, 16)
    m = CopyAttention(data, "softmax", dict(scores="position", d_k=L, g_Q=1.0, g_K=1.0, g_O=1.0,
                                            sigma2=0.1))
    gen = torch.Generator().manual_seed(0)
    theta = m.init_copy(gen, beta=3.0)
    cG0 = float(op.copy_overlap(m.attention_of(theta)))
    recipe = dict(method="sgld", steps=1500, burn_in=1000, thin=50, eta=1e-3, temperature=1.0,
                  log_points=5)
    st = run_chain(m, recipe, new_state(m, recipe, theta, gen), gen)
    cG = st.samples[:, 1].numpy()
    assert np.all(cG > 0.6 * cG0), (cG0, cG)
    assert np.all(st.samples[:, 6].numpy() < 0.5)          # test loss stays low (it copies)


def test_linear_gauge_records_are_invariant():
    """(Q, K, W) → (−Q, K, −W) leaves f unchanged: recorded losses and sign-fixed order parameters agree,
    and the recorded test loss is the direct one."""
    data = make_data(0, 4, 6, 10, 8)
    m = CopyAttention(data, "linear", dict(scores="position", d_k=6, g_Q=1.0, g_K=1.0, g_O=1.0,
                                           sigma2=0.1))
    theta = m.init_prior(torch.Generator().manual_seed(0))
    flipped = theta.clone()
    flipped[m.sQ] *= -1
    flipped[m.sW] *= -1
    recipe = dict(method="adam", steps=0, lr=0.01, log_points=2)
    rows = []
    for th in (theta, flipped):
        gen = torch.Generator().manual_seed(0)
        st = run_chain(m, recipe, new_state(m, recipe, th, gen), gen)
        rows.append(st.samples[0].numpy())
        assert rows[-1][6] == pytest.approx(float(m.mean_loss(th, m.T_test)), rel=1e-12)
        assert rows[-1][0] >= 0
    assert np.allclose(rows[0], rows[1], rtol=1e-12, atol=1e-14)


def test_prior_warmup_ramps_the_prior_gradient():
    """At step 0 the warmed-up prior has weight 0 (same update as prior_weight 0); at step s it has
    weight s/prior_warmup: the recorded energy is always the full U."""
    data = make_data(0, 4, 6, 10, 8)
    cfg = dict(scores="position", d_k=6, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1)
    full, none = CopyAttention(data, "softmax", cfg), CopyAttention(data, "softmax", cfg, prior_weight=0.0)
    theta = full.init_prior(torch.Generator().manual_seed(0))
    rec = dict(method="adam", steps=1, lr=0.01, schedule="constant", log_points=2)
    out = []
    for m, extra in ((full, {"prior_warmup": 10}), (none, {})):
        r = dict(rec, **extra)
        gen = torch.Generator().manual_seed(0)
        out.append(run_chain(m, r, new_state(m, r, theta, gen), gen))
    assert torch.equal(out[0].theta, out[1].theta)
    assert float(out[0].curves[0, 0]) == pytest.approx(float(full.energy_autograd(theta)))
    # halfway through the warm-up, the gradient used is data + prior/2 (SGD-like check via lr→0 Adam
    # is awkward, so check the ramp through one Adam step from identical moments)
    m = full
    r = dict(rec, steps=6, prior_warmup=10)
    gen = torch.Generator().manual_seed(0)
    st = new_state(m, r, theta, gen)
    st5 = run_chain(m, dict(r, steps=5), st, gen)
    th5, m5, v5 = st5.theta.clone(), st5.m.clone(), st5.v.clone()
    g = m.energy_grad(th5)[3].clone() - 0.5 * th5 * m._prec
    m5.mul_(0.9).add_(g, alpha=0.1)
    v5.mul_(0.999).addcmul_(g, g, value=0.001)
    expect = th5 - 0.01 / (1 - 0.9 ** 6) * m5 / ((v5 / (1 - 0.999 ** 6)).sqrt() + 1e-8)
    st5.step = 5
    st6 = run_chain(m, r, st5, gen)
    assert torch.allclose(st6.theta, expect, rtol=0, atol=1e-12)
