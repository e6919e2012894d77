"""Settings of every test session.

The tests do not ask the host's SLURM for its largest node (``sinfo``, in every config validation:
``copyhead.resources.memory_limits``). Its answer would make an outcome depend on the machine the tests run
on (whether a large point is refused), and where Slurm's client tools are installed without a reachable
controller each query takes about 9 s to fail, once per process (docs/workflow.md, "Failures"): the suite
took 27 min instead of 6 on such a machine. ``COPYHEAD_MAX_NODE_MEM_MB=0`` means "no SLURM node known":
this machine's RAM is the limit, as on a machine without sinfo. A value set outside is kept. The query
itself is tested with a stand-in sinfo (tests/test_workflow.py), and the real-Slurm tests (``-m slurm``)
read the node size through sinfo for their submissions (``copyhead.resources.submission_cap``).
"""
import importlib.util
import os
from pathlib import Path

import pytest


def pytest_configure(config):
    os.environ.setdefault("COPYHEAD_MAX_NODE_MEM_MB", "0")


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
