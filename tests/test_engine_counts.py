"""The energy from co-occurrence counts (copyhead.suffstats) equals the direct products: U, ∇U, the sum of
squared errors and the test loss in float64 to 1e-12 on random θ (both attentions, sizes with P = 1,
V = 3, L > P, d_k < L), and in float32 at the copy solution (where the counts' terms cancel most) within
a stated error; chains of different P share one batch without changing each other's numbers; the cost
rule picks the direct path at long context; a packed group writes the per-P jobs' files number for number."""
import numpy as np
import pytest
import torch

from copyhead import config as cfgmod
from copyhead.model import CopyAttention
from copyhead.run import points, train_job, train_points
from copyhead.schedules import cheapest_energy
from copyhead.task import make_data

CFG = dict(scores="position", g_Q=1.3, g_K=0.7, g_O=0.9, sigma2=0.4)
SIZES = [(3, 4, 1, 5), (3, 6, 2, 3), (5, 9, 4, 16), (4, 12, 40, 6), (16, 32, 48, 32)]  # (V, L, P, d_k)


def _pair(V, L, P, d_k, att, kind, seeds=(0, 1, 2), dtype=torch.float64, n_test=7):
    datas = [make_data(s, V, L, P, n_test) for s in seeds]
    cfg = dict(CFG, d_k=d_k)
    return (CopyAttention(datas, att, cfg, dtype=dtype, prior_weight=0.8, energy="direct"),
            CopyAttention(datas, att, cfg, dtype=dtype, prior_weight=0.8, energy=kind))


def _rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("att", ["linear", "softmax"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "V{}-L{}-P{}-dk{}".format(*s))
def test_counts_equal_direct_float64(size, att, kind):
    direct, counts = _pair(*size, att, kind)
    assert counts.energy_kind == kind and direct.energy_kind == "direct"
    th = torch.stack([direct.init_prior(torch.Generator().manual_seed(s), scale=1.5) for s in range(3)])
    U0, sse0, A0, g0 = direct.energy_grad(th)
    U, sse, A, g = counts.energy_grad(th)
    assert torch.equal(A, A0)
    assert _rel(U, U0) <= 1e-12 and _rel(sse, sse0) <= 1e-12
    assert _rel(g, g0) <= 1e-12
    assert direct.counts_test is None and counts.test_kind == kind
    assert _rel(counts.mean_loss(th, counts.T_test), direct.mean_loss(th, direct.T_test)) <= 1e-12


@pytest.mark.parametrize("kind", ["direct", "dense", "sparse"])
@pytest.mark.parametrize("att", ["linear", "softmax"])
def test_energy_skipped_between_checks_leaves_the_gradient_unchanged(att, kind):
    """``with_energy=False`` (what the loop uses between record and check steps) skips U and the sum of
    squares and returns the same A and ∇U, bit for bit on this machine."""
    _, m = _pair(5, 9, 4, 16, att, kind)
    th = torch.stack([m.init_prior(torch.Generator().manual_seed(s), scale=1.5) for s in range(3)])
    U, sse, A, g = m.energy_grad(th)
    U2, sse2, A2, g2 = m.energy_grad(th, with_energy=False)
    assert U2 is None and sse2 is None and torch.isfinite(U).all()
    assert torch.equal(A, A2) and torch.equal(g, g2)


def test_counts_float32_at_the_copy_solution():
    """At the copy solution (softmax, β = 8, W the posterior mean) the SSE (≈ 0.026) is a difference of
    terms of order P·L = 1536: float32 counts get it to ≈ 6e-4 relative (the direct float32 path: 2e-5),
    ∇U to ≈ 6e-6 of its largest entry (direct: 3e-6); U itself (prior-dominated) to 1.5e-8. The float64
    direct result is the reference."""
    V, L, P, d_k = 16, 32, 48, 32
    ref, _ = _pair(V, L, P, d_k, "softmax", "dense", seeds=(0,))
    th64 = ref.init_copy(torch.Generator().manual_seed(0), beta=8.0)
    U_ref, sse_ref, _, g_ref = ref.energy_grad(th64)
    assert float(sse_ref) < 1e-4 * P * L                # the copy solution: SSE far below its terms
    th32 = th64.float()
    direct32, _ = _pair(V, L, P, d_k, "softmax", "dense", seeds=(0,), dtype=torch.float32)
    sse_d = direct32.energy_grad(th32)[1]
    assert abs(float(sse_d) - float(sse_ref)) < 1e-4 * float(sse_ref)
    for kind in ("dense", "sparse"):
        _, counts32 = _pair(V, L, P, d_k, "softmax", kind, seeds=(0,), dtype=torch.float32)
        U, sse, _, g = counts32.energy_grad(th32)
        assert abs(float(U) - float(U_ref)) < 1e-7 * abs(float(U_ref))
        assert abs(float(sse) - float(sse_ref)) < 3e-3 * float(sse_ref)
        assert _rel(g.double(), g_ref) < 3e-5


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_chains_of_different_P_do_not_depend_on_their_batch(kind):
    """One batch of chains with P = 3, 7, 12 gives each chain bit for bit what it gets alone."""
    V, L, d_k = 5, 8, 6
    Ps, seeds = [3, 7, 12], [4, 5, 6]
    datas = [make_data(s, V, L, P, 9) for s, P in zip(seeds, Ps)]
    mixed = CopyAttention(datas, "softmax", dict(CFG, d_k=d_k), energy=kind)
    assert mixed.P is None
    th = torch.stack([mixed.init_prior(torch.Generator().manual_seed(s)) for s in seeds])
    out = mixed.energy_grad(th)
    test = mixed.mean_loss(th, mixed.T_test)
    for k, d in enumerate(datas):
        alone = CopyAttention(d, "softmax", dict(CFG, d_k=d_k), energy=kind)
        for a, b in zip(alone.energy_grad(th[k]), out):
            assert torch.equal(a, b[k])
        assert torch.equal(alone.mean_loss(th[k], alone.T_test), test[k])
    with pytest.raises(ValueError, match="different P"):
        CopyAttention(datas, "softmax", dict(CFG, d_k=d_k), energy="direct")


def test_cost_rule():
    """Counts where they save work (the default size, the paper's P = 300, L 16 at d_k 256), the direct
    path at long context with few sequences and at tiny P; dense counts only when P ≫ V²."""
    assert cheapest_energy(16, 32, 48) == "sparse" and cheapest_energy(16, 32, 300) == "sparse"
    assert cheapest_energy(16, 16, 80) == "sparse"
    assert cheapest_energy(16, 128, 24) == "direct" and cheapest_energy(16, 256, 30) == "direct"
    assert cheapest_energy(16, 32, 4) == "direct"
    assert cheapest_energy(16, 32, 2000) == "dense"


@pytest.mark.parametrize("name", ["adam", "sgld"])
def test_packed_group_equals_per_P_jobs(tmp_path, name, default_cfg):
    """A packed group (P = 12 on the direct path, P = 20 and 24 as one counts batch) writes, number for
    number, the files of the three per-P jobs."""
    rc = cfgmod.run_config(default_cfg, "softmax", name)
    rc["task"]["n_test"] = 16
    rc["recipe"].update(steps=40, log_points=5, **({"burn_in": 20, "thin": 5, "checkpoint_every": 0}
                                                    if name == "sgld" else {"prior_warmup": 20}))
    Ps, seeds = [12, 20, 24], [0, 3]
    kinds = {cheapest_energy(16, 32, P) for P in Ps}
    assert kinds == {"direct", "sparse"}
    outs = [tmp_path / f"g_P{P}_s{s}.nc" for P in Ps for s in seeds]
    quiet = lambda line: None
    packed = train_points(rc, points(Ps, seeds, outs), log=quiet)
    alone = [ds for P in Ps for ds in train_job(rc, P, seeds, [tmp_path / f"j_P{P}_s{s}.nc" for s in seeds],
                                                   log=quiet)]
    assert len(packed) == len(alone) == 6
    for a, b in zip(packed, alone):
        assert (a.attrs["P"], a.attrs["seed"], a.attrs["batch_chain"]) == (b.attrs["P"], b.attrs["seed"],
                                                                           b.attrs["batch_chain"])
        assert a.attrs["packed_P"] == "12 20 24" and b.attrs["packed_P"] == str(b.attrs["P"])
        for v in b.data_vars:
            x, y = a[v].values, b[v].values
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), v
    assert all(o.exists() for o in outs)


@pytest.fixture
def default_cfg():
    from pathlib import Path
    cfg = cfgmod.load(Path(__file__).resolve().parents[1] / "config.yaml")
    cfg["numerics"]["device"] = "cpu"
    return cfg
