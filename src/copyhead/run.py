"""One training job → one netCDF file per seed (the ``train`` rules of the workflow and ``copyhead train``).

:func:`train_job` trains every seed of one (attention, recipe, P) as ONE batch of chains
(:mod:`copyhead.train`): it builds each seed's data (:mod:`copyhead.task`), the batched network
(:mod:`copyhead.model`), each chain's initial state (prior draw or copy solution) and noise stream, runs
the batch with periodic checkpoints next to the outputs (a restarted job resumes from it bit-identically,
but only under the same code, config, seeds and device, and only when its content matches the sha256 it
carries: a damaged one is moved aside to ``<name>.corrupt``; the checkpoint is deleted once every output
exists), prints progress lines to its log, and writes one Dataset per seed (documented in
``docs/engine.md``) atomically with its provenance attributes. A diverged chain is not an error: its file
has ``status = "diverged"`` and the step at which divergence was seen. :func:`train_run` is the
single-run form (one seed, one file). With a run store (``COPYHEAD_RUN_STORE``, :mod:`copyhead.run_store`;
the workflow's jobs have one) a chain whose identical run is stored is linked from there instead of
trained, and each file written is kept there (:func:`run_identity` says what "identical" means).

Packed groups: :func:`train_points` trains many points (P, seeds) of one (attention, recipe) in ONE process,
the same command given several P:

    copyhead train --run-config '<json>' --P 8 12 16 --seeds 0 1 2 3 --out <P-major files>

(``--out`` lists one file per (P, seed), P-major: every seed of the first P, then of the next;
:func:`points` splits them). The chains whose energy uses co-occurrence counts form one batch across P
(every tensor has the same shape whatever P is), chains on the direct path one batch per P, and each file
equals, number for number, the file the per-P job writes (tests/test_engine_counts.py). The workflow runs
it when ``COPYHEAD_TRAIN_PACK=recipe`` is set (workflow/rules/train.smk, docs/slurm.md); both modes make
the same files with the same recorded params, so switching modes reruns nothing.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import torch
import xarray as xr

from . import order_params as op
from .attention import variant
from .config import ConfigError, RunConfig, canonical_json, config_hash
from .datafiles import config_source
from .hmc import run_hmc
from .model import CopyAttention, energy_kind
from .resources import memory_problem
from .provenance import atomic_write, code_fingerprint, now_iso, provenance_attrs, write_dataset
from .run_store import run_store
from .schedules import record_steps, sample_steps, step_size
from .task import hmc_seed, make_data, noise_seed, torch_seed
from .train import SAMPLE_VARS, BatchState, Interrupted, NoiseStreams, new_state, run_chains, state_sha256

__all__ = ["train_job", "train_points", "points", "train_run", "resolve_device", "checkpoint_path", "run_identity",
           "Interrupted"]

DTYPES = {"float32": torch.float32, "float64": torch.float64}
CHECKSUM = "state_sha256"   # the key of a checkpoint's checksum of everything else it holds (train.state_sha256)


def resolve_device(name: str | None) -> str:
    name = name or "auto"
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but CUDA is not available")
    return name


def checkpoint_path(outs) -> Path:
    """The checkpoint of a job: ``<out>.ckpt`` for one output, ``.batch-<hash of the output paths>.ckpt`` beside the
    first output for a batch (named by its output files, so two jobs never share one)."""
    outs = [Path(outs)] if isinstance(outs, (str, Path)) else [Path(o) for o in outs]
    if len(outs) == 1:
        return outs[0].with_name(outs[0].name + ".ckpt")
    return outs[0].with_name(f".batch-{config_hash([str(o) for o in outs])}.ckpt")


def _long_names(attention: str) -> dict:
    return {**variant(attention).run_names,
            "coverage_ratio": "coverage: projected-norm ratio ||ΠĀ||_F/||Ā||_F onto span{J, I−J/L}",
            "coverage_cosine": "coverage: cosine similarity <Ā, ΠĀ>_F/(||Ā||_F ||ΠĀ||_F)",
            "test_loss": "test loss: mean over sequences and positions of ||f_a − y_a||²",
            "train_loss": "training loss: mean over sequences and positions of ||f_a − y_a||²"}


def _init_theta(model: CopyAttention, recipe, seed: int, chain: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(torch_seed(seed))
    if recipe.init == "copy":
        return model.init_copy(gen, recipe.copy_beta, chain=chain)
    return model.init_prior(gen, recipe.init_scale)


def _dataset(rc: RunConfig, model: CopyAttention, state: BatchState, k: int, status: str) -> xr.Dataset:
    """The Dataset of chain ``k`` of the batch."""
    recipe, att = rc.recipe, rc.attention
    names = _long_names(att)
    sign_gauge = variant(att).sign_gauge
    steps = record_steps(recipe.steps, recipe.log_points)
    sstep = sample_steps(recipe)
    np64 = lambda t: t.detach().cpu().numpy().astype(np.float64)
    curves = {name: np64(t[k]) for name, t in state.curves.items()}
    samples = {name: np64(t[k]) for name, t in state.samples.items()}
    L = model.L
    ok = status == "ok"
    n = len(sstep)
    nan_LL = np.full((L, L), np.nan)
    A = np64(state.A_sum[k]) / n if ok else nan_LL
    M = np64(state.M_sum[k]) / n if ok else nan_LL

    def var(dims, data, long_name, units="1", **extra):
        return xr.Variable(dims, data, attrs={"long_name": long_name, "units": units, **extra})

    v = {}
    v["energy"] = var(("step",), curves["energy"], "posterior energy U (negative log posterior up to a constant)")
    v["train_loss"] = var(("step",), curves["train_loss"], names["train_loss"])
    v["test_loss"] = var(("step",), curves["test_loss"], names["test_loss"])
    for name in ("c1", "cG", "m1", "mP"):
        v[f"{name}_step"] = var(("step",), curves[name], names[name] + " (along training)")
    v["sample_step"] = var(("sample",), sstep, "step at which the sample was recorded")
    for name in SAMPLE_VARS:
        v[f"{name}_sample"] = var(("sample",), samples[name], names[name] + " (per sample)")
    for name in op.NAMES:
        col = samples[name]
        mean = col.mean() if ok else np.nan
        sd = (col.std(ddof=1) if n > 1 else 0.0) if ok else np.nan
        v[name] = var((), mean, names[name] + (" (mean over samples)" if n > 1 else " (final state)"))
        v[f"{name}_sd"] = var((), sd, names[name] + " (standard deviation over samples; 0 for Adam)")
    for name in ("train_loss", "test_loss"):
        v[f"{name}_final"] = var((), samples[name].mean() if ok else np.nan,
                                 names[name] + (" (mean over samples)" if n > 1 else " (final state)"))
    sign_note = " (Z2 sign fixed so that c1 >= 0)" if sign_gauge else ""
    tp = model.scores_kind != "position"
    v["attention"] = var(("query", "key"), A,
                         "attention matrix Ā" + (" (test-set average)" if tp else "")
                         + (" (mean over samples)" if n > 1 else " (final state)") + sign_note)
    v["scores"] = var(("query", "key"), M,
                      "score matrix M = QᵀK/d_k" + (" (position-position block)" if tp else "")
                      + (" (mean over samples)" if n > 1 else " (final state)") + sign_note)
    v["status"] = var((), np.array(status, dtype=object), "run status: ok | diverged")
    if recipe.method == "hmc":   # the sampler's own record (copyhead.hmc)
        x = state.extra
        v["hmc_accept_rate"] = var((), x["accept_rate"][k], "HMC: mean acceptance probability after warm-up")
        v["hmc_divergent"] = var((), x["n_divergent"][k], "HMC: divergent trajectories after warm-up (rejected)")
        v["hmc_divergent_warmup"] = var((), x["n_divergent_warmup"][k],
                                        "HMC: divergent trajectories during warm-up (step-size search)")
        v["hmc_step_size"] = var((), x["step_size"][k], "HMC: leapfrog step size after warm-up (dual averaging)")
    extra_coords = {}
    if tp:  # token-aware scores: the pattern differs per sequence, so coverage per test sequence too
        with torch.no_grad():
            A_seq = model.attention_of(state.theta[k], model.T_test[k])
            if sign_gauge:  # the run's Z2 gauge (sign of the test-averaged pooling), for all sequences
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


def _check_outputs(outs: list[Path], seeds: list[int]):
    """Refuse before any compute what could only fail after training."""
    if len(outs) != len(seeds):
        raise ConfigError(f"{len(seeds)} seeds but {len(outs)} output files: give one --out per seed")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds must be distinct, got {seeds}")
    for o in outs:
        if o.is_dir():
            raise ConfigError(f"--out {o} is a directory; give the path of the .nc file to write")
        if o.parent.exists() and not o.parent.is_dir():
            raise ConfigError(f"--out {o}: {o.parent} is not a directory")


def train_job(run_cfg: dict, P: int, seeds, outs, device: str | None = None,
              _stop_after: int | None = None, log=None) -> list[xr.Dataset]:
    """Train the seeds ``seeds`` of one (attention, recipe) at training-set size ``P`` as one batch and
    write chain k to ``outs[k]``; return the Datasets. ``run_cfg`` is :func:`copyhead.config.run_config`
    (without P and seed); ``device`` overrides ``numerics.device``; ``log`` receives progress lines
    (default: stdout, i.e. the job's log); ``_stop_after`` (tests only) interrupts the job right after
    the first checkpoint at or beyond that step."""
    return train_points(run_cfg, [(P, seeds, outs)], device, _stop_after, log)


def points(Ps, seeds, outs) -> list:
    """``(P, seeds, outs)`` per P from P-major output files (one per (P, seed))."""
    Ps, seeds, outs = [int(P) for P in Ps], [int(s) for s in seeds], [Path(o) for o in outs]
    if len(set(Ps)) != len(Ps):
        raise ValueError(f"--P lists a training-set size twice: {Ps}")
    if len(outs) != len(Ps) * len(seeds):
        raise ValueError(f"{len(Ps)} P x {len(seeds)} seeds need {len(Ps) * len(seeds)} --out files, "
                         f"got {len(outs)}")
    n = len(seeds)
    return [(P, seeds, outs[i * n:(i + 1) * n]) for i, P in enumerate(Ps)]


def train_points(run_cfg: dict, points, device: str | None = None, _stop_after: int | None = None,
                 log=None) -> list[xr.Dataset]:
    """Train several points ``(P, seeds, outs)`` of one (attention, recipe) in this process and return
    the Datasets in the order given. Chains whose energy uses co-occurrence counts (the same kind) form
    ONE batch across P; chains on the direct path form one batch per P. Each file equals the one
    :func:`train_job` writes for its point alone (a chain's numbers do not depend on its batch), except
    the job attributes (times, ``packed_P``). With a run store (``COPYHEAD_RUN_STORE``) the chains found
    there intact are linked to their outputs and not trained; only the others are batched."""
    points = [(int(P), [int(s) for s in seeds], [Path(o) for o in outs]) for P, seeds, outs in points]
    for P, seeds, outs in points:
        if P < 1:
            raise ConfigError(f"P = {P} is impossible; it must be >= 1")
        if any(s < 0 for s in seeds):
            raise ConfigError(f"seeds must be >= 0, got {seeds}")
        _check_outputs(outs, seeds)
        too_big = memory_problem(run_cfg, P, len(seeds), "copyhead train")
        if too_big:
            raise ConfigError(too_big)
    rc = RunConfig.from_dict({k: run_cfg[k] for k in ("attention", "optimizer", "recipe", "task", "model",
                                                       "numerics")})
    recipe = rc.recipe
    if len(sample_steps(recipe)) == 0:
        raise ConfigError(f"recipe {rc.optimizer!r}: no sample would be recorded (steps = {recipe.steps}, "
                          f"burn_in = {recipe.burn_in}, thin = {recipe.thin}: it needs burn_in + thin <= steps)")
    if log is None:
        log = lambda line: print(line, flush=True)
    dev = resolve_device(device if device is not None else rc.device)
    task = rc.task
    threads_before = torch.get_num_threads()
    if dev == "cpu":  # small problems: extra threads only add overhead (COPYHEAD_THREADS)
        torch.set_num_threads(int(os.environ.get("COPYHEAD_THREADS", "1")))
    out: dict[tuple, xr.Dataset] = {}
    try:
        store = run_store()   # finished runs of the same identity are reused, not trained (copyhead.run_store)
        keep = None
        if store is not None:
            code = code_fingerprint("train")
            keep = lambda path, P, seed, seeds: store.put(path, run_identity(rc, P, seed, seeds, dev, code), log)
            for i, (P, seeds, outs) in enumerate(points):
                for k, seed in enumerate(seeds):
                    ds = store.fetch(run_identity(rc, P, seed, seeds, dev, code), outs[k], log)
                    if ds is not None:
                        out[(i, k)] = ds
            n = sum(len(seeds) for _, seeds, _ in points)
            log(f"run store {store.root}: {len(out)} of {n} chains reused, {n - len(out)} to train" + (
                " (a reused file is the stored run of the same run config, seeds, train code, device, dtype, "
                "torch and config files: its numbers and records are those of the run that made it)"
                if out else ""))
        batches: dict[tuple, list] = {}  # (energy kind, P or None) -> chains (point index, chain in point)
        for i, (P, seeds, _) in enumerate(points):
            kind = energy_kind(task.V, task.L, P, rc.model.scores, dev)
            todo = [(i, k) for k in range(len(seeds)) if (i, k) not in out]
            if todo:
                batches.setdefault((kind, P if kind == "direct" else None), []).extend(todo)
        trained = {i for chains in batches.values() for i, _ in chains}     # the points this process trains
        packed = " ".join(str(P) for i, (P, _, _) in enumerate(points) if i in trained)
        for (kind, _), chains in batches.items():
            out.update(_train_batch(rc, points, chains, kind, dev, packed, _stop_after, log, keep))
    finally:
        torch.set_num_threads(threads_before)
    return [out[(i, k)] for i, (_, seeds, _) in enumerate(points) for k in range(len(seeds))]


def run_identity(rc: RunConfig, P: int, seed: int, seeds, dev: str, code: str | None = None) -> dict:
    """What a run file is, for the run store (copyhead.run_store.RunStore): the run config with P and seed
    (the file's ``config_json``), the seeds of its point (``batch_seeds``: a file equals a fresh one in
    every record but the job's times and command), the train code fingerprint, and what can change a
    number without changing the config: device (and the GPU's name), dtype, torch version and threads;
    and the config file(s) the workflow read (``config_files``: so that the file's record stays true).
    ``code``: the train code fingerprint, when the caller has it already."""
    ident = {"copyhead_kind": "run", "config_json": canonical_json(dict(rc.as_dict(), P=int(P), seed=int(seed))),
             "P": int(P), "seed": int(seed), "batch_seeds": " ".join(str(int(s)) for s in seeds),
             "code_fingerprint": code or code_fingerprint("train"), "device": dev, "dtype": rc.dtype,
             "torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
             "device_name": torch.cuda.get_device_name(dev) if dev.startswith("cuda") else "cpu"}
    ident.update({k: json.dumps(v, sort_keys=True) for k, v in config_source().items()})
    return ident


def _train_batch(rc: RunConfig, points, chains, kind: str, dev: str, packed: str, stop_after, log,
                 keep=None) -> dict:
    """Train the chains ``(point index, chain in point)`` of ``points`` as one batch; write their files
    (and ``keep(path, P, seed, point seeds)`` each, the run store's)."""
    recipe, task = rc.recipe, rc.task
    start_time, t0 = now_iso(), time.perf_counter()
    Ps = [points[i][0] for i, _ in chains]
    seeds = [points[i][1][k] for i, k in chains]
    outs = [points[i][2][k] for i, k in chains]
    datas = [make_data(seed, task.V, task.L, P, task.n_test) for P, seed in zip(Ps, seeds)]
    prior_weight = recipe.prior_weight if recipe.method == "adam" else 1.0
    model = CopyAttention(datas, rc.attention, rc.model, DTYPES[rc.dtype], dev, prior_weight, energy=kind)
    where = f"P={Ps[0]}" if len(set(Ps)) == 1 else f"P in {sorted(set(Ps))}"
    log(f"copyhead train: {rc.attention} attention, recipe {rc.optimizer} ({recipe.method}), {where}, "
        f"seeds {seeds} as one batch of {len(seeds)} chains on {dev} ({rc.dtype}, energy: {kind}), "
        f"{recipe.steps} steps")
    state = _run_batch(rc, model, Ps, seeds, outs, dev, stop_after, log)
    wall = round(time.perf_counter() - t0, 3)
    done = {}
    for j, (i, k) in enumerate(chains):
        P, point_seeds, _ = points[i]
        seed, path = seeds[j], outs[j]
        dstep = int(state.diverged_step[j])
        status = "ok" if dstep < 0 else "diverged"
        ds = _dataset(rc, model, state, j, status)
        extra = {"status": status, "diverged_step": dstep, "device": dev, "dtype": rc.dtype,
                 "start_time": start_time, "end_time": now_iso(), "wall_time_s": wall,
                 "attention": rc.attention, "optimizer": rc.optimizer, "method": recipe.method,
                 "P": P, "seed": seed, "torch_version": torch.__version__, "scores": model.scores_kind,
                 "n_samples": int(len(ds.sample)), "torch_threads": torch.get_num_threads(),
                 "batch_seeds": " ".join(map(str, point_seeds)), "batch_chain": k,
                 "energy": kind, "packed_P": packed,
                 "noise_seed": noise_seed(seed, recipe.init) if recipe.sgld else
                 hmc_seed(seed, recipe.init, "sampler") if recipe.method == "hmc" else -1}
        run_k = dict(rc.as_dict(), P=P, seed=seed)
        ds.attrs = provenance_attrs(
            "run", run_k, title=f"copyhead run: {rc.attention} attention, {rc.optimizer} "
                                f"({recipe.method}), P={P}, seed={seed}", extra=extra)
        write_dataset(ds, path)
        log(f"P={P} seed {seed}: {status}" + (f" (diverged at step {dstep})" if dstep >= 0 else "")
            + f"; wrote {path}")
        if keep is not None:
            keep(path, P, seed, point_seeds)
        done[(i, k)] = ds
    checkpoint_path(outs).unlink(missing_ok=True)
    return done


def _run_batch(rc: RunConfig, model: CopyAttention, Ps, seeds, outs, dev, stop_after, log) -> BatchState:
    recipe = rc.recipe
    ckpt = checkpoint_path(outs)
    key = config_hash({"run": rc.as_dict(), "P": Ps, "seeds": seeds, "device": dev,
                      "code": code_fingerprint("train")})  # resume only under the same code
    state = _resume(ckpt, key, dev, log)
    if state is None:
        theta = torch.stack([_init_theta(model, recipe, s, k) for k, s in enumerate(seeds)])
        state = new_state(model, recipe, theta)

    def save(d: dict):
        d = dict(d, key=key)
        d[CHECKSUM] = state_sha256(d)   # verified on resume: a damaged checkpoint is never resumed from
        atomic_write(ckpt, lambda tmp: torch.save(d, tmp))

    every = dict(checkpoint=save, checkpoint_every=recipe.checkpoint_every, stop_after=stop_after, log=log)
    if recipe.method == "hmc":  # per chain: one generator for the sampler, one for the readout draws
        gens, wgens = ([torch.Generator().manual_seed(hmc_seed(s, recipe.init, use)) for s in seeds]
                       for use in ("sampler", "readout"))
        return run_hmc(model, recipe, state, gens, wgens, **every)
    noise = None
    if recipe.sgld:
        gens = [torch.Generator(device=dev).manual_seed(noise_seed(s, recipe.init)) for s in seeds]
        noise = NoiseStreams(gens, model.layout.n, model.dtype, dev)
    eta = [step_size(recipe, P) for P in Ps] if recipe.sgld else None
    return run_chains(model, recipe, state, noise, eta=eta, **every)


def _resume(ckpt: Path, key: str, dev, log) -> BatchState | None:
    """The state saved at ``ckpt`` when it was written under ``key`` (same code, config, seeds, device) and
    its content still matches the checksum it carries. An unreadable or damaged checkpoint is moved aside
    to ``<name>.corrupt`` (kept, not deleted) and named in one log line; the run then starts from step 0."""
    if not ckpt.exists():
        return None
    try:
        d = torch.load(ckpt, map_location="cpu", weights_only=True)  # tensors and plain data only; RNG on CPU
        if not isinstance(d, dict):
            raise TypeError(f"holds a {type(d).__name__}, not a checkpoint")
    except Exception as e:  # rewritten atomically, so rare: a damaged disk, a copy cut short, not ours
        _set_aside(ckpt, f"{type(e).__name__}: {e}", log, prefix="ignoring unreadable checkpoint")
        return None
    recorded = d.pop(CHECKSUM, None)
    if d.get("key") != key:   # an older or other job's checkpoint: not damaged, just not this run's
        log(f"ignoring checkpoint {ckpt}: written by other code, config, seeds or device")
        return None
    actual = state_sha256(d)
    if recorded != actual:
        why = ("it carries no sha256 of its state" if recorded is None else
               f"its state does not match the sha256 it carries ({actual[:12]} != recorded {str(recorded)[:12]})")
        _set_aside(ckpt, why, log, prefix="ignoring damaged checkpoint")
        return None
    state = BatchState.from_dict(d, dev)
    log(f"resuming from checkpoint {ckpt} at step {state.step}")
    return state


def _set_aside(ckpt: Path, why: str, log, prefix: str):
    """Move a checkpoint that cannot be resumed from to ``<name>.corrupt`` and say so in one line."""
    aside = ckpt.with_name(ckpt.name + ".corrupt")
    try:
        os.replace(ckpt, aside)
        kept = f"moved to {aside}"
    except OSError as e:
        kept = f"left in place ({e.strerror or e}); it is overwritten by the next checkpoint"
    log(f"{prefix} {ckpt}: {why}; {kept}; starting from step 0")


def train_run(run_cfg: dict, out: Path, device: str | None = None, _stop_after: int | None = None,
              log=None) -> xr.Dataset:
    """Train one run (``run_cfg`` = :func:`copyhead.config.run_config` with P and seed) and write
    ``out`` atomically; return the Dataset (the single-chain form of :func:`train_job`)."""
    return train_job(run_cfg, run_cfg["P"], [run_cfg["seed"]], [out], device=device,
                     _stop_after=_stop_after, log=log)[0]
