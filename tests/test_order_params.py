"""Order parameters and coverage on constructed attention patterns (design file, section 4)."""
import math

import numpy as np
import pytest
import torch

from copyhead import order_params as op

L = 7


def _J():
    return np.ones((L, L))


def test_pure_pooling():
    d = op.order_parameters(_J() / L)
    assert d["c1"] == pytest.approx(1.0)
    assert d["cG"] == pytest.approx(0.0, abs=1e-14)
    assert d["m1"] == pytest.approx(1.0) and d["mP"] == pytest.approx(0.0, abs=1e-14)
    assert d["coverage_ratio"] == pytest.approx(1.0) and d["coverage_cosine"] == pytest.approx(1.0)


def test_pure_self_attention():
    d = op.order_parameters(np.eye(L))
    # I = J/L + (I - J/L): c1 = 1, cG = ||I - J/L||_F = sqrt(L-1); in the (J, I)/L basis m1 = 0, mP = L
    assert d["c1"] == pytest.approx(1.0)
    assert d["cG"] == pytest.approx(math.sqrt(L - 1))
    assert d["m1"] == pytest.approx(0.0, abs=1e-12) and d["mP"] == pytest.approx(L)
    assert d["coverage_ratio"] == pytest.approx(1.0)


@pytest.mark.parametrize("m1,mP", [(0.3, 2.0), (-0.5, 0.7), (1.2, -3.0)])
def test_mixture_recovers_coefficients(m1, mP):
    A = (m1 * _J() + mP * np.eye(L)) / L
    d = op.order_parameters(A)
    assert d["m1"] == pytest.approx(m1) and d["mP"] == pytest.approx(mP)
    assert d["c1"] == pytest.approx(m1 + mP / L)
    assert d["cG"] == pytest.approx(mP * math.sqrt(L - 1) / L)
    # brute force: the same numbers from the definitions (Frobenius projections on unit directions)
    e1 = _J() / L
    eG = (np.eye(L) - _J() / L) / math.sqrt(L - 1)
    assert d["c1"] == pytest.approx(np.sum(A * e1)) and d["cG"] == pytest.approx(np.sum(A * eG))
    assert d["coverage_ratio"] == pytest.approx(1.0) and d["coverage_cosine"] == pytest.approx(1.0)


def test_softmax_pattern_with_row_shift():
    beta = 1.7
    shift = np.arange(L)[:, None] * 0.9          # a row constant does not change the softmax
    S = beta * np.eye(L) + shift
    A = torch.softmax(torch.tensor(S), dim=-1).numpy()
    d = op.order_parameters(A)
    e = math.exp(beta)
    assert d["c1"] == pytest.approx(1.0)
    assert d["m1"] == pytest.approx(L / (e + L - 1))                 # design file, section 5.3
    assert d["mP"] == pytest.approx(L * (e - 1) / (e + L - 1))
    assert d["coverage_ratio"] == pytest.approx(1.0)


def test_coverage_off_span():
    rng = np.random.default_rng(0)
    A = (0.4 * _J() + 2.0 * np.eye(L)) / L + 0.05 * rng.standard_normal((L, L))
    ratio, cosine = op.coverage(A)
    assert 0.5 < ratio < 1.0 and cosine == pytest.approx(ratio)
    # brute force: least-squares fit on the flattened (J, I) basis
    B = np.stack([_J().ravel(), np.eye(L).ravel()], 1)
    coef, *_ = np.linalg.lstsq(B, A.ravel(), rcond=None)
    PA = (B @ coef).reshape(L, L)
    assert ratio == pytest.approx(np.linalg.norm(PA) / np.linalg.norm(A))
    assert np.allclose(op.projection(A), PA)
    # a matrix orthogonal to the span has zero coverage
    N = rng.standard_normal((L, L))
    N -= op.projection(N)
    assert op.coverage(N)[0] == pytest.approx(0.0, abs=1e-12)


def test_sign_fix_and_torch_agree():
    A = -(0.5 * _J() + np.eye(L)) / L
    M = 3.0 * A
    Af, Mf = op.sign_fix(A, M)
    assert op.pooling(Af) > 0 and np.allclose(Mf, -M)
    At = torch.tensor(A)
    v = op.order_parameter_vector(op.sign_fix(At))
    ref = op.order_parameters(-A)
    assert np.allclose(v.numpy(), [ref[k] for k in op.NAMES])
    # batch axes
    batch = np.stack([A, -A])
    assert np.allclose(op.pooling(op.sign_fix(batch)), op.pooling(-A))
