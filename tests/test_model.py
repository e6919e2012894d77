"""The network and its energy: hand-written ∇U against finite differences and autograd (float64)."""

import numpy as np
import pytest
import torch

from copyhead.model import CopyAttention
from copyhead.task import make_data

CFG = dict(scores="position", d_k=5, g_Q=1.3, g_K=0.7, g_O=0.9, sigma2=0.4)


def _model(att, scores="position", pw=0.8):
    return CopyAttention(make_data(1, 3, 4, 5, 6), att, dict(CFG, scores=scores), prior_weight=pw)


@pytest.mark.parametrize("att", ["linear", "softmax"])
def test_gradient_matches_finite_differences(att):
    m = _model(att)
    th = m.init_prior(torch.Generator().manual_seed(0), scale=1.5)
    U, sse, A, g = m.energy_grad(th)
    g = g.clone()
    h = 1e-6
    fd = torch.empty_like(th)
    for i in range(th.numel()):
        e = torch.zeros_like(th)
        e[i] = h
        fd[i] = (m.energy_grad(th + e)[0] - m.energy_grad(th - e)[0]) / (2 * h)
    assert torch.allclose(g, fd, rtol=1e-6, atol=1e-6)
    assert float(U) == pytest.approx(float(m.energy_autograd(th)), rel=1e-12)


@pytest.mark.parametrize("att", ["linear", "softmax"])
def test_token_position_option_gradcheck(att):
    m = _model(att, scores="token+position")
    th = m.init_prior(torch.Generator().manual_seed(2)).requires_grad_(True)
    assert torch.autograd.gradcheck(m.energy_autograd, (th,))
    g = m.energy_grad(th.detach())[3]
    th.grad = None
    m.energy_autograd(th).backward()
    assert torch.allclose(g, th.grad)


def test_energy_matches_brute_force_sum():
    """U from an explicit per-token loop with the (V+L)-dim inputs x_a = e_t ⊕ e_a."""
    m = _model("softmax", pw=1.0)
    th = m.init_prior(torch.Generator().manual_seed(1))
    Q, K, W = (x.numpy() for x in m.split(th))
    tokens = make_data(1, 3, 4, 5, 6).train
    V, L = 3, 4
    S = Q.T @ K / CFG["d_k"]
    A = np.exp(S) / np.exp(S).sum(1, keepdims=True)
    U = 0.0
    for seq in tokens:
        X = np.zeros((L, V + L))
        X[np.arange(L), seq] = 1
        X[np.arange(L), V + np.arange(L)] = 1
        for a in range(L):
            f = W @ (A[a] @ X)
            U += np.sum((f - np.eye(V)[seq[a]]) ** 2) / (2 * CFG["sigma2"])
    U += (Q ** 2).sum() / (2 * CFG["g_Q"]) + (K ** 2).sum() / (2 * CFG["g_K"]) + (W ** 2).sum() / (2 * CFG["g_O"])
    assert float(m.energy_grad(th)[0]) == pytest.approx(U, rel=1e-12)


def test_copy_init_is_copy_solution():
    data = make_data(0, 4, 6, 40, 10)
    m = CopyAttention(data, "softmax", dict(CFG, d_k=8, sigma2=0.05))
    th = m.init_copy(torch.Generator().manual_seed(0), beta=3.0)
    M = m.score_matrix(th)
    assert torch.allclose(M, 3.0 * torch.eye(6, dtype=M.dtype), atol=1e-12)
    # W is the ridge solution: ∂U/∂W = 0 there
    gW = m.split(m.energy_grad(th)[3])[2]
    assert float(gW.abs().max()) < 1e-9
    # and predicts the copy targets well
    assert float(m.mean_loss(th, m.T_test)) < 0.5


def test_readout_posterior_is_ridge_regression():
    m = _model("linear", pw=1.0)
    th = m.init_prior(torch.Generator().manual_seed(3))
    mean, cov = m.readout_posterior(th)
    W = m.split(th)[2]
    W.copy_(mean)
    assert float(m.split(m.energy_grad(th)[3])[2].abs().max()) < 1e-10
    # covariance = inverse Hessian of U in each output row of W
    H = torch.autograd.functional.hessian(lambda w: m.energy_autograd(torch.cat([th[:m.sW.start], w])),
                                          th[m.sW].clone())
    D = m.layout.D
    assert torch.allclose(torch.linalg.inv(H[:D, :D]), cov, atol=1e-10)


@pytest.mark.parametrize("att", ["linear", "softmax"])
def test_test_loss_fast_path_matches_direct(att):
    m = _model(att)
    th = m.init_prior(torch.Generator().manual_seed(4))
    R = m.predict(th, m.T_test) - m.T_test
    direct = float((R * R).sum(-1).mean())
    assert float(m.mean_loss(th, m.T_test)) == pytest.approx(direct, rel=1e-12)
    assert float(m.mean_loss(th, m.T_test.clone())) == pytest.approx(direct, rel=1e-12)
