"""The collapsed posterior of (Q, K) (copyhead.collapsed) against brute force at a tiny size: the (V+L)
statistics against dense features, the likelihood against the dense marginal Gaussian of each output
column, the joint energy minus its exact W integral, the W conditional against
``CopyAttention.readout_posterior``, the gradient against finite differences. Every energy path
(direct products, dense and sparse counts), both attentions."""
import math

import numpy as np
import pytest
import torch

from copyhead.collapsed import CollapsedPosterior
from copyhead.model import CopyAttention
from copyhead.task import make_data

MODEL = {"d_k": 3, "g_Q": 1.0, "g_K": 1.3, "g_O": 0.8, "sigma2": 0.3}


def tiny(attention="softmax", energy="direct", P=5, seeds=(0, 1), V=3, L=4):
    data = [make_data(s, V, L, P, 7) for s in seeds]
    model = CopyAttention(data, attention, MODEL, energy=energy)
    gen = torch.Generator().manual_seed(11)
    theta = torch.stack([model.init_prior(gen, scale=1.5) for _ in seeds])
    return model, CollapsedPosterior(model), theta


def dense_features(model, A, k):
    X = model._X(model.T[k])                                        # (P, L, D)
    return (A[k] @ X).reshape(-1, model.layout.D), model.T[k].reshape(-1, model.V)


CASES = [(att, en) for att in ("linear", "softmax") for en in ("direct", "dense", "sparse")]


@pytest.mark.parametrize("attention,energy", CASES)
def test_statistics_and_likelihood_equal_the_dense_marginal_gaussian(attention, energy):
    model, post, theta = tiny(attention, energy)
    q = theta[:, :post.n_qk]
    A = post.attention(q)
    ZZ, ZY = post.stats(A)
    nll = post.neg_log_lik(q)
    for k in range(theta.shape[0]):
        Z, Y = dense_features(model, A, k)
        torch.testing.assert_close(ZZ[k], Z.T @ Z, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(ZY[k], Z.T @ Y, rtol=1e-12, atol=1e-12)
        cov = MODEL["g_O"] * Z @ Z.T + MODEL["sigma2"] * torch.eye(Z.shape[0], dtype=Z.dtype)
        mvn = torch.distributions.MultivariateNormal(torch.zeros(Z.shape[0], dtype=Z.dtype), cov)
        brute = -sum(mvn.log_prob(Y[:, v]) for v in range(model.V))
        assert float(nll[k]) == pytest.approx(float(brute), rel=1e-11)


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_joint_energy_minus_its_exact_readout_integral(attention):
    """−log ∫ exp(−U_joint) dW = U(Q, K) − (NV/2) log 2πσ² − (VD/2) log 2πg_O, with the integral of the
    quadratic U_joint in W done at its minimum (the conditional mean) with Hessian I_V ⊗ Σ."""
    model, post, theta = tiny(attention)
    q = theta[:, :post.n_qk]
    W = post.readout(q)
    U_joint = model.energy_autograd(post.full_theta(q, W))
    V, D, N = model.V, model.layout.D, model.P * model.L
    for k in range(theta.shape[0]):
        mean, cov = model.readout_posterior(theta[k], chain=k)
        torch.testing.assert_close(W[k], mean, rtol=1e-10, atol=1e-12)
        integral = float(U_joint[k]) - 0.5 * V * D * math.log(2 * math.pi) - 0.5 * V * float(torch.logdet(cov))
        want = float(post.energy(q)[k]) - 0.5 * N * V * math.log(2 * math.pi * MODEL["sigma2"]) \
            - 0.5 * V * D * math.log(2 * math.pi * MODEL["g_O"])
        assert integral == pytest.approx(want, rel=1e-11)


def test_readout_draws_have_the_conditional_covariance():
    """4000 draws of W given (Q, K): their mean and covariance are readout_posterior's within 5 standard
    errors (the error of an empirical covariance entry is about √((Σ_ii Σ_jj + Σ_ij²)/n))."""
    model, post, theta = tiny("softmax", seeds=(0,))
    q = theta[:, :post.n_qk]
    n = 4000
    xi = torch.randn(1, n, model.layout.D, model.V, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    draws = post.readout(q, xi)[0]                                   # (n, V, D): n draws at one (Q, K)
    mean, cov = model.readout_posterior(theta[0])
    torch.testing.assert_close(post.readout(q)[0], mean, rtol=1e-10, atol=1e-12)
    d = draws - mean                                                 # rows W_v are independent draws
    m = n * model.V
    emp = torch.einsum("nvi,nvj->ij", d, d) / m
    se = torch.sqrt((cov.diagonal()[:, None] * cov.diagonal()[None] + cov ** 2) / m)
    assert float(((emp - cov).abs() / se).max()) < 5
    assert float(((d.mean((0, 1))).abs() / torch.sqrt(cov.diagonal() / m)).max()) < 5


@pytest.mark.parametrize("attention,energy", [("linear", "sparse"), ("softmax", "dense"), ("softmax", "direct")])
def test_gradient_matches_finite_differences(attention, energy):
    model, post, theta = tiny(attention, energy)
    q = theta[:, :post.n_qk].clone()
    U, g = post.energy_grad(q)
    rng = np.random.default_rng(0)
    for _ in range(5):
        d = torch.tensor(rng.standard_normal(q.shape))
        h = 1e-5
        fd = (post.energy(q + h * d) - post.energy(q - h * d)) / (2 * h)
        torch.testing.assert_close((g * d).sum(1), fd, rtol=1e-6, atol=1e-7)


def test_chains_of_different_P_in_one_counts_batch_equal_each_alone():
    data = [make_data(0, 3, 4, P, 7) for P in (3, 6)]
    both = CollapsedPosterior(CopyAttention(data, "softmax", MODEL, energy="dense"))
    q = torch.randn(2, both.n_qk, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    for k, d in enumerate(data):
        alone = CollapsedPosterior(CopyAttention([d], "softmax", MODEL, energy="dense"))
        assert float(both.energy(q)[k]) == pytest.approx(float(alone.energy(q[k:k + 1])[0]), rel=1e-13)


@pytest.mark.parametrize("attention,energy", CASES)
def test_the_hand_gradient_equals_autograd(attention, energy):
    model, post, theta = tiny(attention, energy, P=6, seeds=(0, 1, 2))
    q = theta[:, :post.n_qk]
    U, g = post.energy_grad(q)
    U_ref, g_ref = post.energy_grad_autograd(q)
    torch.testing.assert_close(U, U_ref, rtol=1e-13, atol=1e-10)
    torch.testing.assert_close(g, g_ref, rtol=1e-10, atol=1e-11)


def test_a_chain_whose_statistics_overflow_gets_an_infinite_energy_and_leaves_the_others():
    model, post, theta = tiny("linear", "dense")
    q = theta[:, :post.n_qk].clone()
    q[1] *= 1e80                                                     # A ~ 1e160: Σ is not factorable
    U, g = post.energy_grad(q)
    assert torch.isinf(U[1]) and torch.isfinite(U[0])
    torch.testing.assert_close(g[0], post.energy_grad_autograd(q)[1][0])
