"""One training run → one netCDF file (the ``train`` rule of the workflow and ``copyhead train``).

:func:`train_run` builds the data (:mod:`copyhead.task`), the network (:mod:`copyhead.model`), the
initial state (prior draw or copy solution), runs the chain (:mod:`copyhead.train`) with periodic
checkpoints next to the output (``<out>.ckpt``; a restarted run resumes from it bit-identically and the
checkpoint is deleted once the output exists), and writes the Dataset documented in ``docs/engine.md``
atomically with its provenance attributes. A diverged run is not an error: it is written with
``status = "diverged"`` and the step at which the non-finite energy was seen.
"""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import torch
import xarray as xr

from . import order_params as op
from .config import ConfigError, config_hash
from .model import CopyAttention
from .provenance import atomic_write, now_iso, provenance_attrs, write_dataset
from .task import make_data, torch_seed
from .train import CURVES, SAMPLE_VARS, ChainState, Interrupted, new_state, record_steps, run_chain, \
    sample_steps

__all__ = ["train_run", "resolve_device", "checkpoint_path", "Interrupted"]

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def resolve_device(name: str | None) -> str:
    name = name or "auto"
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but CUDA is not available")
    return name


def checkpoint_path(out: Path) -> Path:
    return Path(out).with_name(Path(out).name + ".ckpt")


def _long_names(attention: str) -> dict:
    lin = attention == "linear"
    c1 = ("ĉ1: pooling order parameter 1ᵀĀ1/L" if lin
          else "pooling projection 1ᵀĀ1/L (identically 1 for softmax; the paper's â1 is m1)")
    cG = ("ĉG: " if lin else "") + "copy order parameter Tr(Ā(I−J/L))/√(L−1)"
    m1 = ("â1: " if not lin else "") + "uniform weight m1 of Ā ≈ (m1 J + mP I)/L"
    mP = "copy weight mP of Ā ≈ (m1 J + mP I)/L" + ("" if lin else " (the paper's âG is mP/L)")
    return {"c1": c1, "cG": cG, "m1": m1, "mP": mP,
            "coverage_ratio": "coverage: projected-norm ratio ||ΠĀ||_F/||Ā||_F onto span{J, I−J/L}",
            "coverage_cosine": "coverage: cosine similarity <Ā, ΠĀ>_F/(||Ā||_F ||ΠĀ||_F)",
            "test_loss": "test loss: mean over sequences and positions of ||f_a − y_a||²",
            "train_loss": "training loss: mean over sequences and positions of ||f_a − y_a||²"}


def _init_theta(model: CopyAttention, recipe: dict, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(torch_seed(seed))
    if recipe.get("init", "prior") == "copy":
        return model.init_copy(gen, float(recipe.get("copy_beta", 3.0)))
    return model.init_prior(gen, float(recipe.get("init_scale", 1.0)))


def _dataset(run_cfg: dict, model: CopyAttention, state: ChainState, status: str) -> xr.Dataset:
    recipe, att = run_cfg["recipe"], run_cfg["attention"]
    names = _long_names(att)
    steps = record_steps(int(recipe["steps"]), int(recipe["log_points"]))
    sstep = sample_steps(recipe)
    curves = state.curves.detach().cpu().numpy().astype(np.float64)
    samples = state.samples.detach().cpu().numpy().astype(np.float64)
    L = model.L
    ok = status == "ok"
    n = len(sstep)
    nan_LL = np.full((L, L), np.nan)
    A = state.A_sum.detach().cpu().numpy() / n if ok else nan_LL
    M = state.M_sum.detach().cpu().numpy() / n if ok else nan_LL

    def var(dims, data, long_name, units="1", **extra):
        return xr.Variable(dims, data, attrs={"long_name": long_name, "units": units, **extra})

    v = {}
    v["energy"] = var(("step",), curves[:, 0], "posterior energy U (negative log posterior up to a constant)")
    v["train_loss"] = var(("step",), curves[:, 1], names["train_loss"])
    v["test_loss"] = var(("step",), curves[:, 2], names["test_loss"])
    for j, k in enumerate(("c1", "cG", "m1", "mP")):
        v[f"{k}_step"] = var(("step",), curves[:, 3 + j], names[k] + " (along training)")
    v["sample_step"] = var(("sample",), sstep, "step at which the sample was recorded")
    for j, k in enumerate(SAMPLE_VARS):
        v[f"{k}_sample"] = var(("sample",), samples[:, j], names[k] + " (per sample)")
    for j, k in enumerate(op.NAMES):
        col = samples[:, j]
        mean = col.mean() if ok else np.nan
        sd = (col.std(ddof=1) if n > 1 else 0.0) if ok else np.nan
        v[k] = var((), mean, names[k] + (" (mean over samples)" if n > 1 else " (final state)"))
        v[f"{k}_sd"] = var((), sd, names[k] + " (standard deviation over samples; 0 for Adam)")
    for k, j in (("train_loss_final", 7), ("test_loss_final", 6)):
        base = k.replace("_final", "")
        v[k] = var((), samples[:, j].mean() if ok else np.nan,
                   names[base] + (" (mean over samples)" if n > 1 else " (final state)"))
    sign_note = " (Z2 sign fixed so that c1 >= 0)" if att == "linear" else ""
    tp = model.scores_kind != "position"
    v["attention"] = var(("query", "key"), A,
                         "attention matrix Ā" + (" (test-set average)" if tp else "")
                         + (" (mean over samples)" if n > 1 else " (final state)") + sign_note)
    v["scores"] = var(("query", "key"), M,
                      "score matrix M = QᵀK/d_k" + (" (position-position block)" if tp else "")
                      + (" (mean over samples)" if n > 1 else " (final state)") + sign_note)
    v["status"] = var((), np.array(status, dtype=object), "run status: ok | diverged")
    extra_coords = {}
    if tp:  # token-aware scores: the pattern differs per sequence, so coverage per test sequence too
        with torch.no_grad():
            A_seq = model.attention_of(state.theta, model.T_test)
            if att == "linear":  # the run's Z2 gauge (sign of the test-averaged pooling), for all sequences
                A_seq = A_seq * (1.0 if float(op.pooling(A_seq.mean(0))) >= 0 else -1.0)
            ratio_seq = op.coverage(A_seq)[0].detach().cpu().numpy().astype(np.float64)
        if not ok:
            ratio_seq = np.full_like(ratio_seq, np.nan)
        v["coverage_ratio_per_sequence"] = var(
            ("test_sequence",), ratio_seq, "coverage ||ΠA_α||_F/||A_α||_F of each test sequence's attention "
            "pattern (final state)", mean=float(np.mean(ratio_seq)), sd=float(np.std(ratio_seq, ddof=1)))
        extra_coords["test_sequence"] = ("test_sequence", np.arange(len(ratio_seq)),
                                         {"long_name": "test sequence index", "units": "1"})
    coords = {**extra_coords, "step": ("step", steps, {"long_name": "optimisation step (updates applied)", "units": "1"}),
              "sample": ("sample", np.arange(n), {"long_name": "sample index", "units": "1"}),
              "query": ("query", np.arange(L), {"long_name": "query position a", "units": "1"}),
              "key": ("key", np.arange(L), {"long_name": "key position b", "units": "1"})}
    return xr.Dataset(v, coords=coords)


def train_run(run_cfg: dict, out: Path, device: str | None = None, _stop_after: int | None = None
              ) -> xr.Dataset:
    """Train one run (``run_cfg`` = :func:`copyhead.config.run_config` with P and seed) and write
    ``out`` atomically; return the Dataset. ``device`` overrides ``numerics.device``. ``_stop_after``
    (tests only) interrupts the run right after the first checkpoint at or beyond that step."""
    out = Path(out)
    start_time, t0 = now_iso(), time.perf_counter()
    recipe = run_cfg["recipe"]
    if len(sample_steps(recipe)) == 0:
        raise ConfigError(f"recipe {run_cfg.get('optimizer')!r}: no sample would be recorded (steps = "
                          f"{recipe['steps']}, burn_in = {recipe['burn_in']}, thin = {recipe['thin']}: "
                          "it needs burn_in + thin <= steps)")
    num = run_cfg.get("numerics", {})
    dev = resolve_device(device if device is not None else num.get("device", "auto"))
    dtype_name = num.get("dtype", "float64")
    seed, P = int(run_cfg["seed"]), int(run_cfg["P"])
    task = run_cfg["task"]
    data = make_data(seed, int(task["V"]), int(task["L"]), P, int(task["n_test"]))
    prior_weight = float(recipe.get("prior_weight", 1.0)) if recipe["method"] == "adam" else 1.0
    model = CopyAttention(data, run_cfg["attention"], run_cfg["model"], DTYPES[dtype_name], dev, prior_weight)
    threads_before = torch.get_num_threads()
    if dev == "cpu":  # one small problem per process: extra threads only add overhead (COPYHEAD_THREADS)
        torch.set_num_threads(int(os.environ.get("COPYHEAD_THREADS", "1")))
    try:
        return _train(run_cfg, out, dev, dtype_name, model, data, seed, P, recipe, start_time, t0, _stop_after)
    finally:
        torch.set_num_threads(threads_before)


def _train(run_cfg, out, dev, dtype_name, model, data, seed, P, recipe, start_time, t0, _stop_after):
    noise_gen = torch.Generator(device=dev).manual_seed((torch_seed(seed) + 1) % (1 << 63))

    ckpt = checkpoint_path(out)
    key = config_hash({"run": run_cfg, "device": dev})
    state = None
    if ckpt.exists():
        try:
            d = torch.load(ckpt, map_location="cpu", weights_only=False)  # RNG state must stay on CPU
            if d.get("key") == key:
                state = ChainState.from_dict(d, dev)
        except Exception:  # an unreadable checkpoint is ignored (it is rewritten atomically, so rare)
            state = None
    if state is None:
        state = new_state(model, recipe, _init_theta(model, recipe, seed), noise_gen)

    def save(d: dict):
        d = dict(d, key=key)
        atomic_write(ckpt, lambda tmp: torch.save(d, tmp))

    every = int(recipe.get("checkpoint_every", 0) or 0)
    state = run_chain(model, recipe, state, noise_gen, checkpoint=save, checkpoint_every=every,
                      stop_after=_stop_after)
    status = "ok" if state.diverged_step < 0 else "diverged"
    ds = _dataset(run_cfg, model, state, status)
    end_time = now_iso()
    extra = {"status": status, "diverged_step": int(state.diverged_step), "device": dev,
             "dtype": dtype_name, "start_time": start_time, "end_time": end_time,
             "wall_time_s": round(time.perf_counter() - t0, 3), "attention": run_cfg["attention"],
             "optimizer": run_cfg["optimizer"], "method": recipe["method"], "P": P, "seed": seed,
             "torch_version": torch.__version__, "scores": model.scores_kind,
             "n_samples": int(len(ds.sample)), "torch_threads": torch.get_num_threads()}
    ds.attrs = provenance_attrs(
        "run", run_cfg,
        title=f"copyhead run: {run_cfg['attention']} attention, {run_cfg['optimizer']} "
              f"({recipe['method']}), P={P}, seed={seed}", extra=extra)
    write_dataset(ds, out)
    ckpt.unlink(missing_ok=True)
    return ds
