"""The research package's one-loop workflow (workflow/one_loop.smk) and its commands
(``python -m research one-loop predict|figure|dataset-figure|remainder-figure|page``, :mod:`research.cli`): every
product records its provenance, with the code fingerprint of its research concern (one_loop, one_loop_figures,
one_loop_page; copyhead.fingerprint.CODE_ROOTS) and the sha256 of each input."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from copyhead import provenance as prov
from copyhead.provenance import read_dataset, sha256_file, sidecar_path
from research.cli import main
from research.one_loop.figures import CONCERN

ROOT = Path(__file__).resolve().parents[2]

# tests of the research package (src/research/one_loop): -m research
pytestmark = pytest.mark.research


def test_every_one_loop_rule_runs_one_research_command_with_its_code_fingerprint(research_rules):
    found = research_rules("workflow/one_loop.smk", "one-loop", ("one_loop", "one_loop_figures", "one_loop_page"))
    assert len(found) >= 5


def test_the_one_loop_page_records_its_research_concern(tmp_path):
    """The page (research.one_loop.page) is made with the one_loop_page concern and records every input."""
    d = ROOT / "docs/one_loop"
    ins = {k: str(d / f"{f}.nc") for k, f in (("finite_size", "finite_size"), ("finite_L", "finite_L"),
                                               ("check", "finite_size_coarse9"), ("converged", "converged"),
                                               ("softmax", "finite_size_softmax"))}
    out = tmp_path / "one_loop.md"
    assert main(["one-loop", "page", *[x for k, f in ins.items() for x in (f"--{k.replace('_', '-')}", f)],
                 "--out", str(out)]) == 0
    rec = json.loads(sidecar_path(out).read_text())
    assert rec["concern"] == "one_loop_page" and rec["code_fingerprint"] == prov.code_fingerprint("one_loop_page")
    assert {r: v["sha256"] for r, v in rec["inputs"].items()} == {r: sha256_file(p) for r, p in ins.items()}


def test_one_loop_figure_gets_a_sidecar(tmp_path, figure_sidecar):
    d = ROOT / "docs/one_loop"
    fs, fl = str(d / "finite_size.nc"), str(d / "finite_L.nc")
    out = tmp_path / "fig_one_loop_gaps.png"
    assert main(["one-loop", "figure", "--finite-size", fs, "--finite-L", fl, "--out", str(out)]) == 0
    figure_sidecar(out, {"finite_size": fs, "finite_L": fl}, concern=CONCERN)


@pytest.mark.parametrize("name", ["converged", "finite_size_softmax"])
def test_one_loop_dataset_figure_gets_a_sidecar(tmp_path, name, figure_sidecar):
    pred = str(ROOT / "docs/one_loop" / f"{name}.nc")
    out = tmp_path / "fig.png"
    assert main(["one-loop", "dataset-figure", "--predictions", pred, "--out", str(out)]) == 0
    figure_sidecar(out, {"predictions": pred}, concern=CONCERN)


# long one-loop numerics (the per-dataset one loop of the side study, ~15 s)
def test_one_loop_predict_writes_its_provenance(tmp_path):
    """`python -m research one-loop predict` at one planted point of a tiny finite-size study: a netCDF of kind
    one_loop with the code fingerprint of its concern and the sha256 of each input file."""
    rows = [{"curve": "closed_mean", "recipe": "hmc", "P": 24.0, "param": p, "theory": 0.2} for p in ("c1", "cG")]
    study = {"name": "L4_dk16", "L": 4, "V": 4, "d_k": 16, "sigma2": 0.1, "attentions": {"linear": {"rows": rows}}}
    gaps = [{"attention": "linear", "recipe": "hmc", "ratio": 1.35, "param": p,
             "points": [{"x": 16, "P": 24.0, "experiment": 0.25, "error": 0.01, "theory": 0.2, "gap": 0.05}]}
            for p in ("c1", "cG")]
    studies = {"studies": [study], "finite_size": {"by": "d_k", "gaps": gaps,
                                                   "agreement": [{"attention": "linear", "x": 16, "name": "L4_dk16"}]}}
    files = {"studies": tmp_path / "studies.json", "base": tmp_path / "base.yaml", "spec": tmp_path / "spec.yaml"}
    files["studies"].write_text(json.dumps(studies))
    files["base"].write_text(yaml.safe_dump({"model": {"g_Q": 1.0, "g_K": 1.0, "g_O": 1.0},
                                             "theory": {"prior": "large_deviation"}}))
    files["spec"].write_text(yaml.safe_dump({"seeds": [0]}))
    out = tmp_path / "finite_size.nc"
    args = ["one-loop", "predict", "--study", "finite_size", "--coarse", "5", "--out", str(out)]
    assert main(args + [x for k, f in files.items() for x in (f"--{k}", str(f))]) == 0
    ds = read_dataset(out)
    assert ds.attrs["copyhead_kind"] == "one_loop" and ds.attrs["code_fingerprint"] == prov.code_fingerprint("one_loop")
    assert json.loads(ds.attrs["inputs_json"]) == {str(f): sha256_file(f) for f in files.values()}
    assert float(ds["P"].sel(ratio=1.35, x=16)) == 24.0 and ds.attrs["setting_coarse"] == 5
    assert float(ds["gap"].sel(ratio=1.35, x=16, param="cG")) == 0.05
    # the per-dataset one loop of the spec's seeds: its own uncorrected mean and a finite corrected one
    assert np.isfinite(ds["mean_one_loop_dataset"].sel(ratio=1.35, x=16)).all()
    assert float(ds["seconds_dataset"].sel(ratio=1.35, x=16)) > 0


def test_one_loop_predict_refuses_missing_inputs(capsys):
    assert main(["one-loop", "predict", "--study", "converged", "--out", "x.nc"]) == 2
    assert "--results" in capsys.readouterr().err


def test_one_loop_remainder_figure_gets_a_sidecar(tmp_path, figure_sidecar):
    d = ROOT / "docs/one_loop"
    ins = {"finite_size": str(d / "finite_size.nc"), "finite_L": str(d / "finite_L.nc"),
           "converged": str(d / "converged.nc")}
    out = tmp_path / "fig_one_loop_remainder.png"
    assert main(["one-loop", "remainder-figure", "--finite-size", ins["finite_size"], "--finite-L", ins["finite_L"],
                 "--converged", ins["converged"], "--out", str(out)]) == 0
    figure_sidecar(out, ins, concern=CONCERN)


def test_the_audit_makes_a_page_recorded_as_a_copyhead_command_again_with_the_research_package(tmp_path):
    """The one-loop figure's record from before the move says `copyhead one-loop figure ...`: the audit's
    Regenerator runs it as `python -m research one-loop figure ...` in its scratch copy, and its numbers are the
    committed figure's."""
    from copyhead.audit.numbers import Regenerator
    png = ROOT / "docs/one_loop/fig_one_loop_gaps.png"
    rec = json.loads(sidecar_path(png).read_text())
    old = dict(rec, argv=["/venv/bin/copyhead", *rec["argv"][1:]])
    assert old["argv"][1:3] == ["one-loop", "figure"]
    regen = Regenerator(ROOT)
    try:
        diffs, new = regen.check(png, old)
    finally:
        regen.close()
    assert diffs == [] and new["concern"] == CONCERN
