"""What the benchmark scripts share: the machine's name, the writer of their published pages, and exact
posterior samples of the attention (HMC on the collapsed posterior of (Q, K), the pipeline's reference)."""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import torch

from copyhead.provenance import code_version, product_record, write_product

# the size of the research pages that measure "at the default size" (default_size_main): d_k = L = 32, V = 16,
# σ² = 0.1, where the theory's finite-d_k corrections are largest; pinned here so that a change of the
# quickstart's config.yaml does not silently move their question
RESEARCH_SIZE = "config/dk_equals_L.yaml"
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")    # BLAS and OpenMP thread counts


def cpu_name() -> str:
    """The CPU model of this machine (``/proc/cpuinfo``), else what :mod:`platform` says."""
    info = Path("/proc/cpuinfo")
    if info.exists():
        for ln in info.read_text().splitlines():
            if ln.startswith("model name"):
                return ln.split(":", 1)[1].strip()
    return platform.processor()


def write_benchmark_page(path: Path, lines: list[str], name: str, options: dict, concern: str = "train"):
    """Write a benchmark's markdown page with its provenance record: a measurement of this machine and of
    the code it ran (``concern`` of copyhead.provenance.CODE_MODULES, default the training code; the audit
    names that code and warns when it has changed since)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rec = product_record(name, concern, {}, kind="benchmark", options=options)
    write_product({path: "\n".join(lines) + "\n"}, dict(rec, scripts=script_record()))


def script_record() -> dict:
    """The benchmark scripts that ran (the main script and this module): path relative to the checkout ->
    sha256. They are outside the package's code paths, so the code version does not cover them; the audit
    compares these checksums with the scripts as they are now."""
    from copyhead.datafiles import sha256_file
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    root = Path(__file__).resolve().parents[1]
    out = {}
    for f in ([Path(main).resolve()] if main else []) + [Path(__file__).resolve()]:
        # a script outside the checkout: named by its absolute path (the audit cannot check it)
        out[str(f.relative_to(root)) if f.is_relative_to(root) else str(f)] = sha256_file(f)
    return out


def stamp() -> str:
    """Where and with what a measurement ran: commit, date, CPU, one thread, torch."""
    ver = code_version()
    commit = (ver["git_commit"][:7] or "unknown") + ("-dirty" if ver["git_dirty"] else "")
    return f"commit {commit}, {time.strftime('%Y-%m-%d')}, {cpu_name()}, one thread, torch {torch.__version__}"


def mean_se(vals) -> tuple[float, float]:
    """(mean, standard error of the mean) of a sequence of per-set values (NaN error for one value)."""
    import numpy as np
    v = np.asarray(vals, float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")


def pm(m, e, fmt=".3f") -> str:
    """"m ± e" in one format."""
    return f"{m:{fmt}} ± {e:{fmt}}"


def collapsed_attention_samples(data, attention, d_k, sigma2, seed, *, chains=4, iters=3000, burn=500, n_leapfrog=8,
                                thin=1, record=None, qk=False):
    """Exact posterior draws of the attention on one training set ``data`` (copyhead.task.make_data): HMC on the
    collapsed posterior of (Q, K) (copyhead.collapsed: the readout W integrated out exactly), ``chains`` chains
    from prior draws, the step adapted during ``burn`` warm-up iterations, then every ``thin``-th iteration
    recorded as ``record(A)`` (A: (chains, L, L) float64 tensor; with ``qk``: ``record(A, Q, K)``, Q and K
    (chains, d_k, L), M = QᵀK/d_k). Returns (list of records, the HMC object)."""
    from copyhead.collapsed import CollapsedPosterior
    from copyhead.hmc import HMC
    from copyhead.model import CopyAttention
    model = CopyAttention([data] * chains, attention, {"scores": "position", "d_k": d_k, "g_Q": 1.0, "g_K": 1.0,
                                                       "g_O": 1.0, "sigma2": sigma2}, torch.float64, "cpu", 1.0)
    post = CollapsedPosterior(model)
    gen = torch.Generator().manual_seed(int(seed))
    q0 = torch.randn(chains, post.n_qk, generator=gen, dtype=torch.float64)
    gens = [torch.Generator().manual_seed(int(torch.randint(2**31, (1,), generator=gen))) for _ in range(chains)]
    h = HMC(post.energy_grad, q0, gens, n_leapfrog=n_leapfrog, step_size=0.05, target_accept=0.7)
    rec = []
    for it in range(iters):
        h.step(adapt=it < burn)
        if it + 1 == burn:
            h.end_warmup()
        if it + 1 > burn and (it + 1 - burn) % thin == 0:
            if qk:
                rec.append(record(post.attention(h.q), h.q[:, model.sQ].unflatten(-1, (d_k, -1)),
                                  h.q[:, model.sK].unflatten(-1, (d_k, -1))))
            else:
                rec.append(record(post.attention(h.q)))
    return rec, h


def default_size_main(doc, name, measure, markdown, options, argv=None, concern="one_loop") -> int:
    """The command line of a benchmark page at the config's size: ``--config`` (default :data:`RESEARCH_SIZE`),
    ``--md`` (write the page with its provenance record), ``--out`` (the measured rows as JSON, default
    results/benchmarks/<name>.json), ``--render JSON`` (no measurement: the page from rows this command saved,
    with that measurement's stamp, size and options); one thread (torch's, and BLAS's: a command line without
    the thread variables at 1 starts again with them); ``measure(cfg, log)`` -> (params, rows),
    ``markdown(params, rows, seconds, when)`` -> lines; ``options`` (the script's settings) go into the record."""
    import dataclasses
    import json

    from copyhead.config import ActionParams, load_yaml
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--config", default=RESEARCH_SIZE,
                    help=f"the size measured (task, model, theory.prior); default {RESEARCH_SIZE}, the d_k = L "
                         "size these pages ask about (config.yaml's size before the quickstart moved to d_k = 256)")
    ap.add_argument("--md", help="write the page here (with its provenance record)")
    ap.add_argument("--out", default=f"results/benchmarks/{name}.json", help="the measured rows (JSON)")
    ap.add_argument("--render", metavar="JSON", help="no measurement: render the page from rows --out saved")
    a = ap.parse_args(argv)
    if argv is None and not a.render and any(os.environ.get(k) != "1" for k in THREAD_VARS):
        # "one thread" must hold for numpy's BLAS too, whose thread count is fixed when it loads (already done
        # here): the command starts again with the variables set
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **{k: "1" for k in THREAD_VARS}})
    if a.render:
        saved = json.loads(Path(a.render).read_text())
        if saved.get("benchmark") != name:
            raise SystemExit(f"{a.render}: rows of {saved.get('benchmark')!r}, not of {name!r}")
        if saved.get("options") != options:
            raise SystemExit(f"{a.render}: measured with options {saved.get('options')}, this script has {options}")
        p, rows, seconds, when = ActionParams(**saved["params"]), saved["rows"], saved["seconds"], saved["stamp"]
        rec_options = {"config": saved["config"], **options, "rendered_from": a.render}
    else:
        torch.set_num_threads(1)
        t0 = time.perf_counter()
        p, rows = measure(load_yaml(a.config), log=lambda s: print(s, file=sys.stderr, flush=True))
        seconds, when = time.perf_counter() - t0, stamp()
        out = Path(a.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps({"benchmark": name, "config": a.config, "params": dataclasses.asdict(p),
                                   "options": options, "seconds": seconds, "stamp": when, "rows": rows}, indent=1,
                                  default=lambda o: o.tolist()))    # numpy numbers and arrays
        tmp.replace(out)
        rec_options = {"config": a.config, **options}
    lines = markdown(p, rows, seconds, when)
    if a.md:
        write_benchmark_page(Path(a.md), lines, name, rec_options, concern=concern)
    print("\n".join(lines))
    return 0
