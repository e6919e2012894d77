"""The batched chain engine: SGLD samples the right posterior (closed form with Q, K frozen), Adam descends
U, the softmax copy solution is stable at large P, the record grid is as documented, a chain's numbers do
not depend on its batch, a diverging chain is frozen while the others go on, and a batch resumes
bit-identically."""
import math

import numpy as np
import pytest
import torch

from copyhead import order_params as op
from copyhead.config import Recipe
from copyhead.model import CopyAttention
from copyhead.schedules import record_steps
from copyhead.task import make_data, noise_seed
from copyhead.train import NoiseStreams, new_state, run_chains


def recipe(**kw) -> Recipe:
    kw.setdefault("log_points", 2)
    return Recipe(name="test", **kw)


def noise_for(model, seeds):
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    return NoiseStreams(gens, model.layout.n, model.dtype, model.device)


def test_record_steps_log_spaced():
    for steps, n in [(10000, 40), (4000, 40), (100, 7), (5, 40), (1, 2)]:
        r = record_steps(steps, n)
        assert r[0] == 0 and r[-1] == steps and np.all(np.diff(r) > 0)
        assert len(r) == min(n, steps + 1)


def _sgld_W_samples(model, theta, eta, steps, burn_in, thin, seed):
    rec = recipe(method="sgld", steps=steps, burn_in=burn_in, thin=thin, eta=eta, temperature=1.0)
    mask = torch.zeros_like(theta)
    mask[model.sW] = 1.0
    out = []
    st = new_state(model, rec, theta.unsqueeze(0))
    run_chains(model, rec, st, noise_for(model, [seed]), mask=mask,
               on_sample=lambda s, th: out.append(th[0, model.sW].view(model.V, -1).clone()))
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
    rec = recipe(method="adam", steps=200, lr=0.01, schedule="cosine", warmup=10, log_points=10)
    gen = torch.Generator().manual_seed(0)
    st = run_chains(m, rec, new_state(m, rec, m.init_prior(gen).unsqueeze(0)))
    U = st.curves["energy"][0].numpy()
    assert np.all(np.isfinite(U)) and U[-1] < 0.5 * U[0]
    for v in st.samples.values():
        assert v.shape == (1, 1) and np.all(np.isfinite(v.numpy()))


def test_softmax_copy_solution_stable_at_large_P():
    """From M = 3 I the SGLD chain at large P keeps the copy pattern (cG stays near its start)."""
    V, L = 6, 8
    data = make_data(0, V, L, 60, 16)
    m = CopyAttention(data, "softmax", dict(scores="position", d_k=L, g_Q=1.0, g_K=1.0, g_O=1.0,
                                            sigma2=0.1))
    gen = torch.Generator().manual_seed(0)
    theta = m.init_copy(gen, beta=3.0)
    cG0 = float(op.copy_overlap(m.attention_of(theta)))
    rec = recipe(method="sgld", steps=1500, burn_in=1000, thin=50, eta=1e-3, temperature=1.0, log_points=5)
    st = run_chains(m, rec, new_state(m, rec, theta.unsqueeze(0)), noise_for(m, [0]))
    cG = st.samples["cG"][0].numpy()
    assert np.all(cG > 0.6 * cG0), (cG0, cG)
    assert np.all(st.samples["test_loss"][0].numpy() < 0.5)          # test loss stays low (it copies)


def test_linear_gauge_records_are_invariant():
    """(Q, K, W) → (−Q, K, −W) leaves f unchanged: recorded losses and sign-fixed order parameters agree,
    and the recorded test loss is the direct one."""
    data = make_data(0, 4, 6, 10, 8)
    m = CopyAttention([data, data], "linear", dict(scores="position", d_k=6, g_Q=1.0, g_K=1.0, g_O=1.0,
                                                   sigma2=0.1))   # two chains on the same data
    theta = m.init_prior(torch.Generator().manual_seed(0))
    flipped = theta.clone()
    flipped[m.sQ] *= -1
    flipped[m.sW] *= -1
    rec = recipe(method="adam", steps=0, lr=0.01)
    st = run_chains(m, rec, new_state(m, rec, torch.stack([theta, flipped])))
    rows = np.stack([st.samples[k][:, 0].numpy() for k in st.samples], 1)   # (chain, variable)
    for k, th in enumerate((theta, flipped)):
        assert st.samples["test_loss"][k, 0] == pytest.approx(float(m.mean_loss(th, m.T_test[k])), rel=1e-12)
        assert st.samples["c1"][k, 0] >= 0
    assert np.allclose(rows[0], rows[1], rtol=1e-12, atol=1e-14)


def test_prior_warmup_ramps_the_prior_gradient():
    """At step 0 the warmed-up prior has weight 0 (same update as prior_weight 0); at step s it has
    weight s/prior_warmup: the recorded energy is always the full U."""
    data = make_data(0, 4, 6, 10, 8)
    cfg = dict(scores="position", d_k=6, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1)
    full, none = CopyAttention(data, "softmax", cfg), CopyAttention(data, "softmax", cfg, prior_weight=0.0)
    theta = full.init_prior(torch.Generator().manual_seed(0)).unsqueeze(0)
    rec = recipe(method="adam", steps=1, lr=0.01, schedule="constant")
    out = []
    for m, extra in ((full, {"prior_warmup": 10}), (none, {})):
        r = recipe(**{**{k: getattr(rec, k) for k in ("method", "steps", "lr", "schedule")}, **extra})
        out.append(run_chains(m, r, new_state(m, r, theta)))
    assert torch.equal(out[0].theta, out[1].theta)
    assert float(out[0].curves["energy"][0, 0]) == pytest.approx(float(full.energy_autograd(theta[0])))
    # halfway through the warm-up, the gradient used is data + prior/2: check one Adam step from the
    # state after 5 steps
    m = full
    r = recipe(method="adam", steps=6, lr=0.01, schedule="constant", prior_warmup=10)
    r5 = recipe(method="adam", steps=5, lr=0.01, schedule="constant", prior_warmup=10)
    st5 = run_chains(m, r5, new_state(m, r, theta))
    th5, m5, v5 = st5.theta[0].clone(), st5.m[0].clone(), st5.v[0].clone()
    g = m.energy_grad(th5)[3].clone() - 0.5 * th5 * m._prec
    m5.mul_(0.9).add_(g, alpha=0.1)
    v5.mul_(0.999).addcmul_(g, g, value=0.001)
    expect = th5 - 0.01 / (1 - 0.9 ** 6) * m5 / ((v5 / (1 - 0.999 ** 6)).sqrt() + 1e-8)
    st6 = run_chains(m, r, st5)
    assert torch.allclose(st6.theta[0], expect, rtol=0, atol=1e-12)


# ---- the batch ------------------------------------------------------------------------------------
CFG = dict(scores="position", d_k=6, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1)


def _batch(seeds, att="softmax", scores="position", rec=None, scale=None, dtype=torch.float64,
           energy="auto", Ps=None, eta=None):
    """Run chains of ``seeds`` (each its own data, init and noise; P = 8 unless ``Ps``) as one batch;
    returns the state."""
    rec = rec or recipe(method="sgld", steps=300, burn_in=100, thin=20, eta=2e-3, log_points=6)
    Ps = Ps or [8] * len(seeds)
    m = CopyAttention([make_data(s, 4, 6, P, 8) for s, P in zip(seeds, Ps)], att, dict(CFG, scores=scores),
                      dtype=dtype, energy=energy)
    theta = torch.stack([m.init_prior(torch.Generator().manual_seed(s)) for s in seeds])
    if scale is not None:
        theta = theta * torch.tensor(scale, dtype=dtype)[:, None]
    noise = noise_for(m, [noise_seed(s, "prior") for s in seeds]) if rec.sgld else None
    return run_chains(m, rec, new_state(m, rec, theta), noise, eta=eta)


def _chain(state, k):
    return {**{f"curve_{n}": t[k] for n, t in state.curves.items()},
            **{f"sample_{n}": t[k] for n, t in state.samples.items()},
            "theta": state.theta[k], "A_sum": state.A_sum[k], "M_sum": state.M_sum[k]}


@pytest.mark.parametrize("att,scores,method,energy", [
    ("softmax", "position", "sgld", "direct"), ("linear", "position", "adam", "direct"),
    ("softmax", "position", "sgld", "sparse"), ("linear", "position", "adam", "dense"),
    ("linear", "token+position", "sgld", "auto"), ("softmax", "token+position", "adam", "auto")])
def test_a_chain_does_not_depend_on_its_batch(att, scores, method, energy):
    """Seed 3 trained alone and among 7 others (in another position; with counts, of other P too):
    bit-identical in float64 on CPU."""
    rec = (recipe(method="sgld", steps=300, burn_in=100, thin=20, eta=2e-3, log_points=6) if method == "sgld"
           else recipe(method="adam", steps=300, lr=0.01, log_points=6))
    alone = _chain(_batch([3], att, scores, rec, energy=energy), 0)
    Ps = [5, 12, 8, 3, 8, 9, 1, 20] if energy in ("dense", "sparse") else None
    among = _chain(_batch([5, 0, 3, 1, 2, 7, 6, 4], att, scores, rec, energy=energy, Ps=Ps), 2)
    for k in alone:
        assert torch.equal(alone[k], among[k]) or (
            torch.isnan(alone[k]).equal(torch.isnan(among[k])) and
            float((alone[k] - among[k]).nan_to_num().abs().max()) <= 1e-12), k


def test_noise_streams_are_per_chain_and_per_init():
    assert noise_seed(0, "prior") != noise_seed(0, "copy") != noise_seed(1, "copy")
    m = CopyAttention([make_data(s, 4, 6, 8, 8) for s in (0, 1)], "linear", CFG)
    a = noise_for(m, [11, 12])
    b = noise_for(m, [12])
    assert torch.equal(a.at(0)[1], b.at(0)[0]) and not torch.equal(a.at(0)[0], a.at(0)[1])
    # noise across a block boundary continues the same per-chain stream
    for s in range(1, 2 * a.block + 3):
        assert torch.equal(a.at(s)[1], b.at(s)[0])


def test_a_diverging_chain_is_frozen_and_the_others_go_on():
    rec = recipe(method="sgld", steps=400, burn_in=200, thin=20, eta=5e-3, log_points=8)
    alone = _batch([0, 2], "linear", rec=rec)
    mixed = _batch([0, 1, 2], "linear", rec=rec, scale=[1.0, 10.0, 1.0])  # chain 1 starts far out: blows up
    assert mixed.diverged_step[1] >= 0 and mixed.diverged_step[0] == mixed.diverged_step[2] == -1
    for k_alone, k_mixed in ((0, 0), (1, 2)):
        a, b = _chain(alone, k_alone), _chain(mixed, k_mixed)
        assert all(torch.equal(a[n], b[n]) for n in a)
    d = mixed.diverged_step[1]
    frozen = _chain(mixed, 1)
    rec_steps = record_steps(rec.steps, rec.log_points)
    assert torch.isnan(frozen["curve_energy"][rec_steps >= d]).all()
    assert torch.isnan(frozen["sample_cG"]).all()


def test_divergence_bound_catches_finite_blow_up():
    """Adam with an absurd learning rate stays finite but moves θ by orders of magnitude: diverged."""
    rec = recipe(method="adam", steps=200, lr=1e6, log_points=6)
    st = _batch([0], rec=rec)
    assert st.diverged_step[0] > 0


def test_each_chain_has_its_own_step_size():
    """A chain run with η = 1e-3 among chains with other η equals the chain run alone with that η."""
    rec = recipe(method="sgld", steps=200, burn_in=100, thin=20, eta=1e-3, log_points=6)
    alone = _chain(_batch([1], rec=rec, energy="sparse"), 0)
    among = _batch([0, 1, 2], rec=rec, energy="sparse", Ps=[4, 8, 16], eta=[4e-3, 1e-3, 2.5e-4])
    assert all(torch.equal(alone[n], _chain(among, 1)[n]) for n in alone)
    assert not torch.equal(_chain(among, 0)["theta"], _chain(_batch([0], rec=rec, energy="sparse", Ps=[4]), 0)["theta"])


@pytest.mark.parametrize("energy", ["direct", "sparse", "dense"])
def test_batch_resumes_bit_identically(tmp_path, energy):
    from copyhead.train import BatchState, Interrupted
    rec = recipe(method="sgld", steps=400, burn_in=100, thin=20, eta=2e-3, log_points=8, checkpoint_every=50)
    full = _batch([0, 1, 2], rec=rec, energy=energy)
    m = CopyAttention([make_data(s, 4, 6, 8, 8) for s in (0, 1, 2)], "softmax", CFG, energy=energy)
    theta = torch.stack([m.init_prior(torch.Generator().manual_seed(s)) for s in (0, 1, 2)])
    saved = {}
    with pytest.raises(Interrupted):
        run_chains(m, rec, new_state(m, rec, theta), noise_for(m, [noise_seed(s, "prior") for s in (0, 1, 2)]),
                   checkpoint=lambda d: saved.update(d=d), checkpoint_every=50, stop_after=150)
    torch.save(saved["d"], tmp_path / "c.pt")
    st = BatchState.from_dict(torch.load(tmp_path / "c.pt", weights_only=False), "cpu")
    assert st.step == 150
    resumed = run_chains(m, rec, st, noise_for(m, [noise_seed(s, "prior") for s in (0, 1, 2)]))
    for k in range(3):
        a, b = _chain(full, k), _chain(resumed, k)
        assert all(torch.equal(a[n], b[n]) or torch.isnan(a[n]).all() for n in a), k
