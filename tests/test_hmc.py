"""The batched HMC kernel (copyhead.hmc) on targets with known answers, and its bookkeeping."""
import math

import pytest
import torch

from copyhead.hmc import HMC

MU = torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0], dtype=torch.float64)
SD = torch.tensor([0.5, 1.0, 2.0, 0.1, 1.0], dtype=torch.float64)


def gaussian(q):
    z = (q - MU) / SD
    return 0.5 * (z * z).sum(1), z / SD


def chains(seeds, q0=None, **kw):
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    q0 = torch.zeros(len(seeds), 5, dtype=torch.float64) if q0 is None else q0
    return HMC(gaussian, q0, gens, **{"n_leapfrog": 8, "step_size": 0.5, "target_accept": 0.7, **kw})


def run(h, n_warm, n_samp):
    for _ in range(n_warm):
        h.step(adapt=True)
    h.end_warmup()
    out = []
    for _ in range(n_samp):
        h.step(adapt=False)
        out.append(h.q.clone())
    return torch.stack(out, 1)          # (K, n, 5)


def test_hmc_samples_a_gaussian_with_the_target_acceptance():
    h = chains([0, 1, 2, 3])
    x = run(h, 300, 3000)
    mean, sd = x.mean((0, 1)), x.std((0, 1))
    n = x.shape[0] * x.shape[1]
    assert ((mean - MU).abs() / SD < 6 / math.sqrt(n / 4)).all(), (mean, MU)   # ESS ≥ n/4 here
    assert ((sd / SD - 1).abs() < 0.06).all(), sd
    rate = h.accept_rate()     # dual averaging's ε̄ (a mean of log ε) runs at or above the target
    assert ((rate > 0.6) & (rate < 0.95)).all(), rate
    assert int(h.n_divergent.sum()) == 0


def test_a_chain_alone_equals_the_chain_in_a_batch_and_resumes_bit_identically():
    a = run(chains([5]), 50, 40)
    b = run(chains([7, 5, 9]), 50, 40)
    assert torch.equal(a[0], b[1])
    h = chains([5, 6])
    ref = run(h, 30, 30)
    h1 = chains([5, 6])
    for _ in range(30):
        h1.step(adapt=True)
    h1.end_warmup()
    for _ in range(10):
        h1.step(adapt=False)
    d = h1.state_dict()
    h2 = chains([5, 6], q0=torch.full((2, 5), 9.0, dtype=torch.float64))   # another start: all replaced
    h2.load_state_dict(d, "cpu")
    rest = []
    for _ in range(20):
        h2.step(adapt=False)
        rest.append(h2.q.clone())
    assert torch.equal(torch.stack(rest, 1), ref[:, 10:])


def test_a_divergent_trajectory_is_rejected_and_counted():
    h = chains([0], step_size=50.0)            # far too large: every trajectory blows up
    q = h.q.clone()
    for _ in range(5):
        assert not bool(h.step(adapt=False)[0])
    assert torch.equal(h.q, q) and int(h.n_divergent[0]) == 5


# ---------------------------------------------------------------- on the collapsed posterior

def _tiny_model(attention, n_chains, P=3, seed=0):
    from copyhead.model import CopyAttention
    from copyhead.task import make_data
    data = make_data(seed, 2, 3, P, 8)
    return CopyAttention([data] * n_chains, attention, {"d_k": 2, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0,
                                                         "sigma2": 0.5}, energy="dense")


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_hmc_on_the_collapsed_posterior_matches_importance_sampling_from_the_prior(attention):
    """At a tiny size (V = 2, L = 3, d_k = 2: 12 parameters of (Q, K)) the posterior means of the order
    parameters by HMC equal an importance-sampling estimate (100 000 prior draws weighted by the exact
    likelihood of copyhead.collapsed) within 4 combined standard errors."""
    from copyhead import order_params as op
    from copyhead.analysis import convergence as cv
    from copyhead.collapsed import CollapsedPosterior
    B = 100_000
    post = CollapsedPosterior(_tiny_model(attention, B))
    q = torch.randn(B, post.n_qk, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    logw = -post.neg_log_lik(q)
    w = torch.exp(logw - logw.max())
    w = w / w.sum()
    A = post.attention(q)
    if attention == "linear":
        A = op.sign_fix(A)
    ops = op.order_parameters(A)
    names = ("c1", "cG") if attention == "linear" else ("mP",)
    is_mean = {k: float((w * ops[k]).sum()) for k in names}
    is_se = {k: float(torch.sqrt((w ** 2 * (ops[k] - is_mean[k]) ** 2).sum())) for k in names}
    assert 1 / float((w ** 2).sum()) > 2500                   # the importance sampler is usable here
    K, n_warm, n = 4, 200, 1200
    post4 = CollapsedPosterior(_tiny_model(attention, K))
    gens = [torch.Generator().manual_seed(10 + k) for k in range(K)]
    h = HMC(post4.energy_grad, torch.randn(K, post4.n_qk, generator=torch.Generator().manual_seed(1),
                                           dtype=torch.float64), gens, n_leapfrog=5, step_size=0.3, target_accept=0.7)
    draws = run(h, n_warm, n)                                  # (K, n, 12)
    Ad = post4.attention(draws.reshape(K * n, -1))             # the attention needs no data: any batch
    if attention == "linear":
        Ad = op.sign_fix(Ad)
    od = op.order_parameters(Ad)
    for k in names:
        x = od[k].view(K, n).numpy()
        assert cv.split_rhat(x) < 1.01, k
        z = (x.mean() - is_mean[k]) / math.hypot(cv.mcse_mean(x), is_se[k])
        assert abs(z) < 4, (k, x.mean(), is_mean[k], z)


# ---------------------------------------------------------------- recipe method: hmc, one file per seed

def _hmc_run_cfg(attention="softmax", init="prior", steps=40, **kw):
    from copyhead import config as cfgmod
    from test_run import tiny_config
    cfg = tiny_config()
    cfg["optimizers"]["hmc"] = {"method": "hmc", "init": init, "init_scale": 1.0, "copy_beta": 3.0, "steps": steps,
                                "n_leapfrog": 4, "step_size": 0.1, "target_accept": 0.7, "burn_in": 10, "thin": 2,
                                "checkpoint_every": 10, "log_points": 6, **kw}
    return cfgmod.run_config(cfgmod.validate(cfg), attention, "hmc")


def test_an_hmc_run_writes_the_sgld_layout_resumes_and_is_batch_independent(tmp_path):
    from copyhead.provenance import read_dataset
    from copyhead.run import Interrupted, checkpoint_path, train_job
    from test_run import SAMPLE_VARS, SCALARS, STEP_VARS, data_equal
    rc = _hmc_run_cfg()
    quiet = lambda line: None
    alone = train_job(rc, 8, [1], [tmp_path / "alone.nc"], log=quiet)[0]
    both = train_job(rc, 8, [0, 1], [tmp_path / "b0.nc", tmp_path / "b1.nc"], log=quiet)
    assert data_equal(alone, both[1]) and not data_equal(both[0], both[1])
    ds = read_dataset(tmp_path / "b1.nc")
    for v in (*STEP_VARS, *SAMPLE_VARS, *SCALARS, "hmc_accept_rate", "hmc_divergent", "hmc_step_size"):
        assert v in ds, v
    assert ds.sizes["sample"] == 15 and ds.attrs["method"] == "hmc" and ds.attrs["status"] == "ok"
    assert 0 < float(ds["hmc_accept_rate"]) <= 1 and float(ds["hmc_step_size"]) > 0
    out = [tmp_path / "r0.nc", tmp_path / "r1.nc"]
    with pytest.raises(Interrupted):
        train_job(rc, 8, [0, 1], out, _stop_after=20, log=quiet)
    assert checkpoint_path(out).exists()
    lines = []
    res = train_job(rc, 8, [0, 1], out, log=lines.append)
    assert any("resuming from checkpoint" in ln for ln in lines)
    assert all(data_equal(a, b) for a, b in zip(res, both))


def test_hmc_needs_position_scores():
    from copyhead import config as cfgmod
    from test_run import tiny_config
    cfg = tiny_config()
    cfg["model"]["scores"] = "token+position"
    cfg["optimizers"]["hmc"] = {"method": "hmc", "init": "prior", "init_scale": 1.0, "copy_beta": 3.0, "steps": 40,
                                "n_leapfrog": 4, "step_size": 0.1, "target_accept": 0.7, "burn_in": 10, "thin": 2,
                                "checkpoint_every": 0, "log_points": 6}
    with pytest.raises(cfgmod.ConfigError, match="method hmc samples the collapsed posterior of position-only"):
        cfgmod.validate(cfg)


@pytest.mark.research   # a research benchmark (benchmarks/)
def test_the_mixing_target_is_judged_per_training_set_and_leaves_out_metastable_ones(bench_script):
    """benchmarks/hmc_targets.py: R̂ and bulk ESS of one training set's prior- and copy-started chains
    (never across seeds); independent draws meet ESS ≥ 400 and R̂ ≤ 1.01, slow chains do not, and a
    training set whose two chains sit on different branches is named metastable and left out of the
    target (its point is judged on the other training sets)."""
    import numpy as np
    from test_results import ar1, fake_aggregate
    mod = bench_script("hmc_targets")
    rng = np.random.default_rng(1)
    Ps, seeds, n = [8, 16, 24], [0, 1], 2000
    series = {}
    for recipe, shift in (("hmc", 0.0), ("hmc_copy", 1.0)):
        a = 0.05 + 0.001 * rng.standard_normal((3, 2, n))
        b = 0.10 + 0.001 * rng.standard_normal((3, 2, n))
        b[1, 1] += 0.02 * shift                                   # P = 16, seed 1: the copy chain on another branch
        b[2, 0] = 0.10 + 0.001 * ar1(rng, n, rho=0.995)           # P = 24, seed 0: a slow chain (ESS ≪ 400)
        series[recipe] = (a, b)
    ag = fake_aggregate("linear", series, Ps, seeds)
    rows = mod.point_rows(ag, "linear", "hmc", "hmc_copy", split=4.0)
    assert {(r["P"], r["seed"], r["param"]) for r in rows} == {(P, s, k) for P in Ps for s in seeds for k in ("c1", "cG")}
    pts = {p["P"]: p for p in mod.summarise(rows, 400, 1.01)}
    assert pts[8]["met"] and not pts[8]["metastable"] and pts[8]["ess"] > 1000 and pts[8]["rhat"] < 1.01
    assert pts[16]["metastable"] == [1] and pts[16]["met"]          # judged on seed 0 alone
    assert not pts[24]["metastable"] and not pts[24]["met"] and pts[24]["ess"] < 400
    assert pts[24]["worst"]["seed"] == 0 and pts[24]["worst"]["param"] == "cG"


def test_the_rhat_null_chains_have_the_ess_asked_for_and_the_rule_flags_short_ones(bench_script):
    """benchmarks/rhat_null.py: its AR(1) chains are stationary with the bulk ESS asked for (within 15 %), and
    the studies' rule fails a good share of such chains at ESS 200 but almost none at ESS 800: the page's
    answer comes from these rows."""
    import numpy as np
    mod = bench_script("rhat_null")
    rng = np.random.default_rng(3)
    x = mod.ar1_chains(mod.rho_for(200, 1300), 1300, 400, rng)
    assert abs(x.mean()) < 0.02 and abs(x.var() - 1.0) < 0.05          # stationary, unit variance
    short, long = mod.null_row(200, 1300, 300, rng), mod.null_row(800, 1300, 300, rng)
    assert abs(short["ess_median"] / 200 - 1) < 0.15 and abs(long["ess_median"] / 800 - 1) < 0.15
    assert short["p_rhat"] > 0.15 and long["p_rhat"] < 0.02 and short["q99"] > long["q99"]
    assert short["p_max_8"] == 1 - (1 - short["p_rule"]) ** 8
