"""Tests of the research package (src/research): each file is marked ``research`` (run with -m research)."""
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def research_script():
    """The research measurement ``research.benchmarks.<name>`` as a module (it imports benchmarks/common.py
    from the checkout), for tests of what it computes from its measurements."""
    return lambda name: importlib.import_module(f"research.benchmarks.{name}")


@pytest.fixture
def research_rules():
    """Checks a research side workflow (workflow/<name>.smk): every rule but ``all`` runs one ``python -m research
    <command>`` (no copyhead command), carries the code fingerprint of one of ``concerns`` in its params and
    writes its log outside docs/; returns {rule name: its text}."""
    def check(smk: str, command: str, concerns: tuple[str, ...]) -> dict[str, str]:
        parts = re.split(r"^rule (\w+):\n", (ROOT / smk).read_text(), flags=re.M)
        found = dict(zip(parts[1::2], parts[2::2]))
        for name, text in found.items():
            if name == "all":
                continue
            shell = text.split("shell:", 1)[1]
            assert shell.count(f"python -m research {command}") == 1 and "copyhead " not in shell, (name, shell)
            assert re.search(r'code=CODE\["(' + "|".join(concerns) + r')"\]', text), name
            assert "docs/" not in text.split("log:", 1)[1], name            # logs and benchmarks outside docs/
        return found
    return check
