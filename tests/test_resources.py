"""copyhead.resources: the scheduler estimate of one training run.

Checked against things that do not come from the estimate itself: the engine's measured wall time per
step (the estimate must bound it from above, without being absurdly loose), the config's own sizes
(monotone in each size that costs work), Snakemake's attempt semantics, and the device choice.
"""
import copy
import math
import time
from pathlib import Path

import pytest
import torch

import copyhead.config as c
from copyhead import resources as R

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def default_cfg():
    return c.load(ROOT / "config.yaml")


def _sizes(**over):
    s = dict(V=16, L=32, n_test=512, d_k=32, P=48, steps=10000, method="sgld", burn_in=5000, thin=50,
             log_points=40, dtype="float64", device="auto")
    s.update(over)
    return s


def test_keys_and_types(default_cfg):
    for att, opt, P, _ in c.runs(default_cfg):
        r = R.train_resources(default_cfg, att, opt, P)
        assert set(r) == {"runtime", "mem_mb", "gpu"}
        assert all(isinstance(v, int) for v in r.values())
        assert r["runtime"] >= R.MIN_RUNTIME_MIN and r["mem_mb"] >= 1000


@pytest.mark.parametrize("key, small, large", [("P", 8, 4000), ("L", 16, 256), ("V", 8, 512),
                                               ("steps", 1000, 2_000_000), ("n_test", 64, 200_000)])
def test_monotone_in_every_size(key, small, large):
    lo = R.estimate(_sizes(**{key: small}))
    hi = R.estimate(_sizes(**{key: large}))
    assert hi["runtime"] >= lo["runtime"] and hi["mem_mb"] >= lo["mem_mb"]
    # the large sizes are large enough that the estimate must actually grow
    assert hi["runtime"] > lo["runtime"] or hi["mem_mb"] > lo["mem_mb"]


def test_step_work_closed_form():
    # P·L·(V+L)² + d_k·L², by hand for V=2, L=3, d_k=4, P=5: 5·3·25 + 4·9 = 411
    assert R.step_work(V=2, L=3, d_k=4, P=5) == 411


def test_sgld_samples_cost_memory():
    # an SGLD chain recording every step keeps (steps - burn_in + 1) samples of two L×L matrices
    few = R.estimate(_sizes(L=256, d_k=256, steps=200_000, burn_in=100_000, thin=100_000))
    many = R.estimate(_sizes(L=256, d_k=256, steps=200_000, burn_in=100_000, thin=1))
    expected_mb = 2 * (100_001 - 2) * 2 * 256 * 256 * 8 / 2**20  # the factor-2 headroom included
    assert many["mem_mb"] - few["mem_mb"] == pytest.approx(expected_mb, abs=200)


def test_attempt_scales_runtime_only():
    one, three = R.estimate(_sizes(), attempt=1), R.estimate(_sizes(), attempt=3)
    assert three["runtime"] == 3 * one["runtime"]
    assert three["mem_mb"] == one["mem_mb"] and three["gpu"] == one["gpu"]


@pytest.mark.parametrize("device, gpu", [("auto", 1), ("cuda", 1), ("cpu", 0)])
def test_gpu_follows_the_configured_device(default_cfg, device, gpu):
    cfg = copy.deepcopy(default_cfg)
    cfg["numerics"]["device"] = device
    assert R.train_resources(cfg, "softmax", "sgld", 16)["gpu"] == gpu


def test_float32_needs_less_memory():
    big = dict(P=20000, L=64, d_k=64, V=64)
    assert R.estimate(_sizes(dtype="float32", **big))["mem_mb"] < R.estimate(_sizes(dtype="float64", **big))["mem_mb"]


def test_paper_config_is_bigger_than_default(default_cfg):
    paper = c.load(ROOT / "config/cluster_L32_dk64.yaml")
    # predicted seconds, not the requested minutes (those are floored at MIN_RUNTIME_MIN per job); the
    # default also runs the HMC reference chains (its bulk ESS >= 400 per training set, 1600 iterations of
    # 8 leapfrog steps), which the paper config has not: 23 440 s against 4 809 s predicted on 2026-12-04
    assert R.sweep_seconds(paper, "cpu") > 4 * R.sweep_seconds(default_cfg, "cpu")
    assert all(R.train_resources(paper, a, o, P)["gpu"] == 1 for a, o, P, _ in c.runs(paper))


# A wall-clock measurement: true on a quiet machine of the kinds measured, but not a property of the
# code (a loaded or slower CPU fails it: seen at load 9, 1.8-3.9 ms against a 0.9 ms budget). So it is
# not in the default suite; run it where the resource model is calibrated: pytest -m slow -k step_cost.
@pytest.mark.slow
@pytest.mark.parametrize("V, L, d_k, P", [(16, 32, 32, 48), (8, 16, 16, 400), (32, 48, 48, 200)])
def test_cpu_step_cost_bounds_the_measured_engine(V, L, d_k, P):
    """The per-step budget on CPU (overhead + work / RATE) is an upper bound of the engine's measured
    full-batch step (energy + gradient + SGLD update, one thread), and within a factor 100 of it."""
    from copyhead.run import train_run

    cfg = c.load(ROOT / "config.yaml")
    cfg["task"].update(V=V, L=L, n_test=16)
    cfg["model"]["d_k"] = d_k
    cfg["numerics"]["device"] = "cpu"
    steps = 300
    rc = c.run_config(cfg, "softmax", "sgld", P, 0)
    rc["recipe"].update(steps=steps, burn_in=steps - 1, thin=1, checkpoint_every=0, log_points=2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            rc_short = copy.deepcopy(rc)
            rc_short["recipe"].update(steps=2, burn_in=1)

            def best_of_3(run_cfg, name):  # the least disturbed of three (other processes may run)
                times = []
                for k in range(3):
                    t0 = time.perf_counter()
                    train_run(run_cfg, Path(d) / f"{name}{k}.nc", device="cpu")
                    times.append(time.perf_counter() - t0)
                return min(times)

            fixed = best_of_3(rc_short, "a")
            total = best_of_3(rc, "b")
    finally:
        torch.set_num_threads(threads)
    measured = max(total - fixed, 1e-6) / (steps - 2)
    budget = R.STEP_OVERHEAD_S["cpu"] + R.step_work(V, L, d_k, P) / R.RATE["cpu"]
    assert measured <= budget, f"engine step {measured * 1e3:.3f} ms > budget {budget * 1e3:.3f} ms"
    assert budget <= 100 * measured + 1e-3, f"budget {budget * 1e3:.3f} ms is > 100x the measured step"
    assert not math.isnan(measured)


def test_sweep_seconds_sums_the_jobs_and_the_time_limit_covers_each(default_cfg):
    """The studies' cost table uses sweep_seconds: the sum of job_seconds over the sweep's jobs (all seeds
    of a job batched), and each job's Slurm time limit covers its own predicted seconds."""
    total = 0.0
    for att, recipes in default_cfg["sweep"].items():
        for opt, v in recipes.items():
            for P in v["P"]:
                sizes = R._sizes(c.run_config(default_cfg, att, opt), P, len(v["seeds"]))
                s = R.job_seconds(sizes, "cpu")
                assert R.train_resources(default_cfg, att, opt, P)["runtime"] * 60 >= s
                total += s
    assert R.sweep_seconds(default_cfg, "cpu") == pytest.approx(total)
    # the GPU estimate: at least every job's start-up (CUDA context) plus its per-step launch floor
    n_jobs = sum(len(v["P"]) for recipes in default_cfg["sweep"].values() for v in recipes.values())
    steps = sum(default_cfg["optimizers"][opt]["steps"] * len(v["P"])
                for recipes in default_cfg["sweep"].values() for opt, v in recipes.items())
    floor = n_jobs * R.STARTUP_S["gpu"] + steps * R.STEP_OVERHEAD_S["gpu"]
    assert floor <= R.sweep_seconds(default_cfg, "gpu") <= 3 * floor


def test_packed_process_needs_less_than_its_jobs_and_more_than_any(default_cfg):
    """One process for every P of a recipe: at most the per-P jobs' sum (one start-up, one footprint),
    at least the largest of them."""
    jobs = [R.train_resources(default_cfg, "softmax", "sgld", P) for P in default_cfg["sweep"]["softmax"]["sgld"]["P"]]
    packed = R.packed_resources(default_cfg, "softmax", "sgld")
    for key in ("runtime", "mem_mb"):
        assert max(j[key] for j in jobs) <= packed[key] <= sum(j[key] for j in jobs)
    assert packed["mem_mb"] < sum(j["mem_mb"] for j in jobs) and packed["gpu"] == jobs[0]["gpu"]


def test_validation_does_not_ask_slurm_the_sweep_check_does(default_cfg, monkeypatch):
    """config.validate never asks for the machines' memory (no sinfo in validation); check_sweep_fits, which
    the workflow and check-config call after it, refuses a point no machine can hold, naming it."""
    asked = []
    monkeypatch.setattr(R, "memory_limits", lambda: asked.append(1) or {"local": 64000, "slurm_node": 0})
    cfg = copy.deepcopy(default_cfg)
    cfg["sweep"]["linear"]["adam"]["P"] = [4, 1_000_000_000]
    cfg = c.validate(cfg)
    assert not asked
    with pytest.raises(c.ConfigError, match=r"^x\.yaml: invalid config:\n  - 'sweep\.linear\.adam\.P': "
                                            r"P = 1000000000 needs about [0-9.]+ TiB"):
        R.check_sweep_fits(cfg, "x.yaml")
    assert asked and R.check_sweep_fits(default_cfg) is default_cfg
