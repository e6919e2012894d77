"""The theory's side workflows (workflow/phase_map.smk; the research package's workflow/one_loop.smk, its
products' tests in tests/research/test_one_loop_workflow.py) go through the one front door: every rule runs
one command (`copyhead ...`, or the research package's `python -m research ...`) with its code fingerprint in
params, and every product records its provenance (netCDF attributes with the sha256 of each input; a
<name>.provenance.json beside each figure and page)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from copyhead.cli import main
from copyhead.provenance import sha256_file, sidecar_path

ROOT = Path(__file__).resolve().parents[1]
SIDE = ["workflow/phase_map.smk", "workflow/one_loop.smk"]


def rules(path):
    """{rule name: its text} of a Snakemake file."""
    parts = re.split(r"^rule (\w+):\n", (ROOT / path).read_text(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.mark.parametrize("smk", SIDE)
def test_every_rule_runs_one_copyhead_command_with_its_code_fingerprint(smk):
    found = rules(smk)
    assert len(found) >= 5
    for name, text in found.items():
        if name == "all":
            continue
        shell = text.split("shell:", 1)[1]
        commands = shell.count("copyhead ") + shell.count("python -m research ")
        assert commands == 1 and shell.count("python") == shell.count("python -m research "), (name, shell)
        assert re.search(r"code=CODE\[\"\w+\"\]", text), name
    source = (ROOT / smk).read_text()
    assert "code_fingerprint" in source and "hashlib" not in source


def test_no_workflow_file_calls_a_module_directly():
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow").rglob("*.smk"))]
    assert not [f for f in files if "python -m copyhead" in f.read_text()]


def test_phase_map_figures_and_page_get_provenance_records(tmp_path, figure_sidecar):
    d = ROOT / "docs/phase_map"
    m, e = (str(d / f) for f in ("map.nc", "exact.nc"))
    assert main(["phase-map", "figures", "--map", m, "--exact", e, "--out-dir", str(tmp_path)]) == 0
    figure_sidecar(tmp_path / "fig_phase_map.png", {"map": m, "exact": e})
    assert not (tmp_path / "fig_prior_check.png").exists()        # the research package's (docs/prior_check.md)
    page = tmp_path / "phase_map.md"
    assert main(["phase-map", "page", "--map", m, "--exact", e, "--out", str(page)]) == 0
    rec = json.loads(sidecar_path(page).read_text())
    assert rec["kind"] == "page" and rec["concern"] == "results" and set(rec["inputs"]) == {"map", "exact"}
    assert "[prior_check.md](prior_check.md)" in page.read_text()
    assert rec["outputs"]["phase_map.md"]["sha256"] == sha256_file(page)
    assert rec["inputs"]["map"]["kind"] == "phase_map"
    assert page.read_text().startswith("# Phase map: where softmax attention copies first\n")
