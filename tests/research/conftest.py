"""Tests of the research package (src/research): each file is marked ``research`` (run with -m research)."""
import importlib

import pytest


@pytest.fixture
def research_script():
    """The research measurement ``research.benchmarks.<name>`` as a module (it imports benchmarks/common.py
    from the checkout), for tests of what it computes from its measurements."""
    return lambda name: importlib.import_module(f"research.benchmarks.{name}")
