"""Cluster resources of one training job (the K seeds of one (attention, recipe, P) trained as one batch
of chains): wall time, memory and GPUs from the run size and the number of chains.

This module owns the estimate the workflow hands to the scheduler (``resources:`` of ``rule train``;
SLURM via ``snakemake --profile slurm``, see docs/slurm.md). It is a pure function of the config: the
sizes that drive the cost are the vocabulary ``V``, the sequence length ``L``, the key dimension ``d_k``,
the number of training sequences ``P``, the test set ``n_test`` and the number of ``steps``.

Cost model (calibrated on the engine's full-batch loop, float64, one CPU thread; see
``tests/test_resources.py`` for the properties it must keep):

- per step the engine touches every training token's value features against every other:
  work ``w = P·L·(V+L)²  +  d_k·L²`` multiply-adds; measured 0.2-0.4 ms/step at the default sizes
  (V=16, L=32, d_k=32, P≤64) and 160 ms/step at V=L=64, P=1000 on one CPU core. We budget
  ``STEP_OVERHEAD_S + w / RATE`` seconds per step, with a rate that is an upper bound on those
  measurements (CPU) or a conservative fp64 GPU rate plus a kernel-launch floor (GPU);
- a fixed start-up (interpreter, torch import, CUDA context, data, netCDF write);
- a job of K chains does K times the work per step (batched: one step floor, K times the multiply-adds)
  and holds K times the per-chain memory;
- the estimate is multiplied by ``SAFETY`` and by the attempt number (a job killed at its time limit
  is resubmitted by Snakemake's ``retries`` with a longer limit, and resumes from its checkpoint).

Memory: a fixed host footprint of Python + torch (+ the CUDA context on GPU nodes), plus the data
(one-hot values of the training and test sets), the per-step temporaries (a few copies of the P·L·(V+L)
features) and the recorded samples (two L×L matrices per SGLD sample), with a factor of two for headroom.

GPU: one GPU when the run's device is ``auto`` or ``cuda``, none when the config pins ``cpu``.
"""
from __future__ import annotations

import math
import os
import subprocess
from functools import lru_cache
from types import SimpleNamespace
from typing import Any, Mapping

from .config import ConfigError, RunConfig, run_config
from .schedules import sample_steps

STARTUP_S = {"cpu": 30.0, "gpu": 90.0}  # interpreter + imports + data + write (+ CUDA context on GPU)
STEP_OVERHEAD_S = {"cpu": 2e-4, "gpu": 1e-3}  # per-step floor (Python loop; kernel launches on GPU)
RATE = {"cpu": 5e9, "gpu": 1e11}  # multiply-adds per second, float64 (upper bound of measured cost)
SAFETY = 2.0  # multiplies the estimated wall time
MIN_RUNTIME_MIN = 3  # shortest time limit requested (schedulers round tiny limits up anyway)
BASE_MEM_MB = {"cpu": 1000, "gpu": 2500}  # Python + torch (+ CUDA host-side context) resident memory
BYTES = {"float32": 4, "float64": 8}


def _sizes(run_cfg: Mapping[str, Any], P: int, n_chains: int = 1) -> dict:

    rc = RunConfig.from_dict(run_cfg)
    r = rc.recipe
    return {"V": rc.task.V, "L": rc.task.L, "n_test": rc.task.n_test, "d_k": rc.model.d_k, "P": int(P),
            "steps": r.steps, "method": r.method, "burn_in": r.burn_in, "thin": r.thin,
            "log_points": r.log_points, "dtype": rc.dtype, "device": rc.device, "chains": int(n_chains),
            "n_leapfrog": r.n_leapfrog if r.method == "hmc" else 1}


def step_work(V: int, L: int, d_k: int, P: int) -> float:
    """Multiply-adds of one full-batch step (energy and gradient): ``P·L·(V+L)² + d_k·L²``."""
    return float(P) * L * (V + L) ** 2 + float(d_k) * L * L


def n_samples(sizes: Mapping[str, Any]) -> int:
    """Recorded samples per chain (:func:`copyhead.schedules.sample_steps`)."""
    recipe = SimpleNamespace(method=sizes["method"], steps=int(sizes["steps"]),
                             burn_in=int(sizes.get("burn_in", 0)), thin=int(sizes.get("thin", 1)))
    return len(sample_steps(recipe))


def job_seconds(sizes: Mapping[str, Any], kind: str) -> float:
    """Predicted wall seconds of one job on a ``kind`` ("cpu" or "gpu") device, without the safety
    factor: start-up, training steps, and test-loss evaluations (a forward pass over n_test at each log
    point and each recorded sample). An HMC iteration is ``n_leapfrog`` gradient evaluations (key
    ``n_leapfrog``, default 1). An upper bound on CPU by construction of RATE; on GPU an estimate."""
    V, L, d_k, P = (int(sizes[k]) for k in ("V", "L", "d_k", "P"))
    n_test, steps, K = int(sizes["n_test"]), int(sizes["steps"]), int(sizes.get("chains", 1))
    step_s = STEP_OVERHEAD_S[kind] + K * step_work(V, L, d_k, P) / RATE[kind]
    eval_s = STEP_OVERHEAD_S[kind] + K * step_work(V, L, d_k, n_test) / RATE[kind] / 2
    n_evals = int(sizes["log_points"]) + n_samples(sizes)
    grads = steps * int(sizes.get("n_leapfrog", 1))
    return STARTUP_S[kind] + grads * step_s + n_evals * eval_s


def estimate(sizes: Mapping[str, Any], attempt: int = 1) -> dict:
    """Resources of one job from its sizes (keys V, L, n_test, d_k, P, steps, method, burn_in, thin,
    log_points, dtype, device, and ``chains``, default 1). Returns ``{"runtime": minutes, "mem_mb": MB,
    "gpu": 0 or 1}``."""
    gpu = 1 if sizes.get("device", "auto") in ("auto", "cuda") else 0
    kind = "gpu" if gpu else "cpu"
    V, L, d_k, P = (int(sizes[k]) for k in ("V", "L", "d_k", "P"))
    n_test, K = int(sizes["n_test"]), int(sizes.get("chains", 1))
    seconds = job_seconds(sizes, kind)
    runtime = max(MIN_RUNTIME_MIN, math.ceil(SAFETY * seconds / 60.0)) * max(1, int(attempt))

    b = BYTES.get(sizes.get("dtype", "float64"), 8)
    features = (P + n_test) * L * (V + L) * b  # one-hot values of train and test sets
    temporaries = 4 * max(P, n_test) * L * (V + L) * b  # features, outputs, residuals, gradients
    samples = n_samples(sizes) * 2 * L * L * b  # attention and score matrices per sample
    params = 4 * (2 * d_k * L + V * (V + L)) * b  # θ, Adam moments, gradient
    mem_mb = BASE_MEM_MB[kind] + 2 * K * (features + temporaries + samples + params) / 2**20
    mem_mb = int(math.ceil(mem_mb / 100.0) * 100)
    return {"runtime": int(runtime), "mem_mb": mem_mb, "gpu": gpu}


def sweep_seconds(cfg: Mapping[str, Any], kind: str) -> float:
    """Predicted summed job seconds of a validated config's training sweep on ``kind`` (:func:`job_seconds`)."""

    return sum(job_seconds(_sizes(run_config(cfg, att, opt), P, len(v["seeds"])), kind)
               for att, recipes in cfg["sweep"].items() for opt, v in recipes.items() for P in v["P"])


def train_resources(cfg: Mapping[str, Any], attention: str, optimizer: str, P: int,
                    attempt: int = 1, n_chains: int | None = None) -> dict:
    """Resources of the training job (attention, optimizer recipe, P) of a validated config, which
    trains ``n_chains`` seeds as one batch (default: the number of seeds the sweep lists for it):
    ``{"runtime": minutes, "mem_mb": MB, "gpu": 0|1}``.

    ``attempt`` is Snakemake's attempt number (1 on first submission): the time limit grows with it,
    so a job killed at its limit is resubmitted with more time and resumes from its checkpoint."""

    if n_chains is None:
        n_chains = len(cfg["sweep"][attention][optimizer]["seeds"])
    return estimate(_sizes(run_config(cfg, attention, optimizer), P, n_chains), attempt=attempt)


def packed_resources(cfg: Mapping[str, Any], attention: str, optimizer: str, attempt: int = 1) -> dict:
    """Resources of ONE process training every P of (attention, recipe) (``COPYHEAD_TRAIN_PACK=recipe``,
    :func:`copyhead.run.train_points`): the per-P jobs' budgets without their repeated start-up (one
    interpreter, one CUDA context) and their memory on one host footprint; ``{"runtime", "mem_mb", "gpu"}``."""
    Ps = cfg["sweep"][attention][optimizer]["P"]
    jobs = [train_resources(cfg, attention, optimizer, P, attempt) for P in Ps]
    gpu = jobs[0]["gpu"]
    kind = "gpu" if gpu else "cpu"
    startup_min = SAFETY * STARTUP_S[kind] / 60.0 * max(1, int(attempt))
    runtime = max(MIN_RUNTIME_MIN, math.ceil(sum(j["runtime"] for j in jobs) - (len(jobs) - 1) * startup_min))
    mem_mb = sum(j["mem_mb"] for j in jobs) - (len(jobs) - 1) * BASE_MEM_MB[kind]
    return {"runtime": int(runtime), "mem_mb": int(mem_mb), "gpu": gpu}


SUBMISSION_CAPS = {  # resource -> (environment variable, sinfo field of the node size, fallback)
    "cpus": ("COPYHEAD_SLURM_CPUS_PER_SUBMISSION", "%c", 8),
    "mem_mb": ("COPYHEAD_SLURM_MEM_MB_PER_SUBMISSION", "%m", 32000),
}


def submission_cap(resource: str) -> int:
    """Cap of one packed SLURM submission (slurm/config.yaml): the environment variable if set, else the
    smallest node's CPUs or memory (MB) as ``sinfo`` reports them, else a fallback (8 CPUs, 32000 MB), so
    that a packed group laid out under it always fits a node."""
    import os
    import subprocess

    var, field, fallback = SUBMISSION_CAPS[resource]
    if os.environ.get(var):
        return int(os.environ[var])
    try:
        out = subprocess.run(["sinfo", "-h", "-o", field], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return fallback
    vals = [int(v.rstrip("+")) for v in out.stdout.split() if v.rstrip("+").isdigit()]
    return min(vals) if out.returncode == 0 and vals else fallback


# ---------------------------------------------------------------- what a job may ask for

def _local_mem_mb() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20)
    except (ValueError, OSError, AttributeError):
        return 0


@lru_cache(maxsize=1)
def memory_limits() -> dict:
    """The memory a training job can get, in MB: this machine's (physical RAM), and the largest SLURM
    node's (``sinfo``; COPYHEAD_MAX_NODE_MEM_MB overrides it, e.g. on a login node without sinfo); 0
    where unknown."""
    node = os.environ.get("COPYHEAD_MAX_NODE_MEM_MB", "")
    if not node.isdigit():
        try:
            out = subprocess.run(["sinfo", "-h", "-o", "%m"], capture_output=True, text=True, timeout=20)
            vals = [int(v.rstrip("+")) for v in out.stdout.split() if v.rstrip("+").isdigit()]
            node = max(vals) if out.returncode == 0 and vals else 0
        except (OSError, subprocess.SubprocessError):
            node = 0
    return {"local": _local_mem_mb(), "slurm_node": int(node)}


def _size(mb: float) -> str:
    for unit, f in (("TiB", 2**20), ("GiB", 2**10)):
        if mb >= f:
            return f"{mb / f:.1f} {unit}"
    return f"{mb:.0f} MiB"


def memory_problem(run_cfg: Mapping[str, Any], P: int, n_chains: int, where: str) -> str:
    """'' if one training job of ``n_chains`` chains at ``P`` fits the largest memory on offer
    (:func:`memory_limits`), else one line saying what it needs and what there is (before any compute)."""
    need = estimate(_sizes(run_cfg, P, n_chains))["mem_mb"]
    lim = memory_limits()
    have = max(lim["local"], lim["slurm_node"])
    if have <= 0 or need <= have:
        return ""
    node = (f"the largest SLURM node {_size(lim['slurm_node'])}" if lim["slurm_node"]
            else "no SLURM node is known (sinfo; or set COPYHEAD_MAX_NODE_MEM_MB)")
    return (f"{where}: P = {P} needs about {_size(need)} of memory for one training job ({n_chains} chain(s)); "
            f"this machine has {_size(lim['local'])} and {node}")


def sweep_memory_problems(cfg: Mapping[str, Any]) -> list[str]:
    """:func:`memory_problem` for every (attention, recipe, P) of a validated config's sweep."""

    out = []
    for att, recipes in cfg["sweep"].items():
        for opt, v in recipes.items():
            rc = run_config(cfg, att, opt)
            out += [m for P in v["P"] if (m := memory_problem(rc, int(P), len(v["seeds"]), f"'sweep.{att}.{opt}.P'"))]
    return out


def check_sweep_fits(cfg: Mapping[str, Any], where: str = "") -> Mapping[str, Any]:
    """``cfg`` (a validated config) if every point of its sweep fits the largest memory on offer, else
    ConfigError listing each point that does not (:func:`sweep_memory_problems`): a point no machine can
    hold is refused before any job. Asked right after validation by the workflow (workflow/rules/common.smk)
    and ``copyhead check-config``; ``where`` (a file name) leads the message."""
    msgs = sweep_memory_problems(cfg)
    if msgs:
        lead = f"{where}: " if where else ""
        raise ConfigError(lead + "invalid config:\n  - " + "\n  - ".join(msgs))
    return cfg
