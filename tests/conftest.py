"""Settings of every test session.

The tests do not ask the host's SLURM for its largest node (``sinfo``, when the workflow or check-config
checks that the sweep fits: ``copyhead.resources.memory_limits``). Its answer would make an outcome depend on
the machine the tests run on (whether a large point is refused), and where Slurm's client tools are installed without a reachable
controller each query takes about 9 s to fail, once per process (docs/workflow.md, "Failures"): the suite
took 27 min instead of 6 on such a machine. ``COPYHEAD_MAX_NODE_MEM_MB=0`` means "no SLURM node known":
this machine's RAM is the limit, as on a machine without sinfo. A value set outside is kept. The query
itself is tested with a stand-in sinfo (tests/test_workflow.py), and the real-Slurm tests (``-m slurm``)
read the node size through sinfo for their submissions (``copyhead.resources.submission_cap``).

The suite runs in parallel (``pytest -n auto``, README; pytest-xdist, ``--dist worksteal`` in pyproject's
addopts). The tests on the tiny DAG (fixture ``pipeline``, tests/test_workflow.py) come first: the worker
that takes the first tests builds the DAG (one for the whole session, every worker reads it) while the others
start on the rest of the suite, and a worker that runs dry takes work from the others' queues. Each worker
computes on one thread (OMP/OpenBLAS/MKL thread variables at 1, unless set outside; its subprocesses inherit
them; the workflow's training and theory jobs set their own): with one worker per core, torch's and BLAS's
thread pools of every worker spinning on every core made the in-process torch tests up to 40 times slower
(test_hmc, test_train: 9 CPU-s -> 77 CPU-s for one test). Training runs on one thread anyway
(copyhead.run: COPYHEAD_THREADS, default 1); the stored-number tolerances cover other BLAS kernels.
"""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
if os.environ.get("PYTEST_XDIST_WORKER"):       # before numpy and torch load (they read these once)
    for _var in THREAD_VARS:
        os.environ.setdefault(_var, "1")


def pytest_configure(config):
    os.environ.setdefault("COPYHEAD_MAX_NODE_MEM_MB", "0")
    # the tests' workflows train one job per P (the mode whose job granularity they check; the default,
    # one packed job per recipe, is tested where a test sets COPYHEAD_TRAIN_PACK=recipe itself)
    os.environ.setdefault("COPYHEAD_TRAIN_PACK", "point")
    if os.environ.get("PYTEST_XDIST_WORKER") and "torch" in sys.modules:    # loaded already by a plugin
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def pytest_collection_modifyitems(config, items):
    """The tests that use the tiny DAG first, in their own order, then the others in theirs (a stable
    reordering: every xdist worker collects the same order)."""
    uses = ["pipeline" in getattr(item, "fixturenames", ()) for item in items]
    items[:] = [i for i, u in zip(items, uses) if u] + [i for i, u in zip(items, uses) if not u]


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory) -> Path:
    """A folder every process of this test session shares: under pytest-xdist the common parent of the
    workers' own temporary folders, else the session's temporary folder. What a fixture builds here once
    is seen by all workers (build it under a lock: see tests/test_workflow.py's ``pipeline``)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture
def bench_script():
    """A loader of benchmarks/<name>.py as a module (benchmarks/ is scripts, not a package), for tests of
    what a benchmark computes from its measurements."""
    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    return load


@pytest.fixture
def figure_sidecar():
    """Checks a figure's provenance sidecar: kind figure, its concern and that concern's current fingerprint,
    the sha256 of each input and of the png (the side workflows' figures, copyhead's and the research
    package's)."""
    import json

    from copyhead.provenance import code_fingerprint, sha256_file, sidecar_path

    def check(png: Path, inputs: dict, concern: str = "figures") -> dict:
        rec = json.loads(sidecar_path(png).read_text())
        assert rec["kind"] == "figure" and rec["product"] == png.stem and rec["concern"] == concern
        assert rec["code_fingerprint"] == code_fingerprint(concern)
        assert {r: v["sha256"] for r, v in rec["inputs"].items()} == {r: sha256_file(p) for r, p in inputs.items()}
        assert rec["outputs"]["png"]["sha256"] == sha256_file(png)
        return rec
    return check
