"""The theory's side workflows (workflow/phase_map.smk, workflow/one_loop.smk) go through the one front door:
every rule runs one `copyhead` command with its code fingerprint in params, and every product records its
provenance (netCDF attributes with the sha256 of each input; a <name>.provenance.json beside each figure and
page)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from copyhead import provenance as prov
from copyhead.cli import main
from copyhead.provenance import read_dataset, sha256_file, sidecar_path

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
        assert "copyhead " in shell and "python" not in shell, (name, shell)
        assert re.search(r"code=CODE\[\"\w+\"\]", text), name
    source = (ROOT / smk).read_text()
    assert "code_fingerprint" in source and "hashlib" not in source


def test_no_workflow_file_calls_a_module_directly():
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow").rglob("*.smk"))]
    assert not [f for f in files if "python -m copyhead" in f.read_text()]


def _check_figure_sidecar(png: Path, inputs: dict):
    rec = json.loads(sidecar_path(png).read_text())
    assert rec["kind"] == "figure" and rec["product"] == png.stem and rec["concern"] == "figures"
    assert rec["code_fingerprint"] == prov.code_fingerprint("figures")
    assert {r: v["sha256"] for r, v in rec["inputs"].items()} == {r: sha256_file(p) for r, p in inputs.items()}
    assert rec["outputs"]["png"]["sha256"] == sha256_file(png)


def test_phase_map_figures_and_page_get_provenance_records(tmp_path):
    d = ROOT / "docs/phase_map"
    m, e, p = (str(d / f) for f in ("map.nc", "exact.nc", "prior_check.nc"))
    assert main(["phase-map", "figures", "--map", m, "--exact", e, "--prior", p, "--out-dir", str(tmp_path)]) == 0
    _check_figure_sidecar(tmp_path / "fig_phase_map.png", {"map": m, "exact": e})
    _check_figure_sidecar(tmp_path / "fig_prior_check.png", {"prior": p})
    page = tmp_path / "phase_map.md"
    assert main(["phase-map", "page", "--map", m, "--exact", e, "--prior", p, "--out", str(page)]) == 0
    rec = json.loads(sidecar_path(page).read_text())
    assert rec["kind"] == "page" and rec["concern"] == "results" and set(rec["inputs"]) == {"map", "exact", "prior"}
    assert rec["outputs"]["phase_map.md"]["sha256"] == sha256_file(page)
    assert rec["inputs"]["map"]["kind"] == "phase_map"
    assert page.read_text().startswith("# Phase map: where softmax attention copies first\n")


def test_one_loop_figure_gets_a_sidecar(tmp_path):
    d = ROOT / "docs/one_loop"
    fs, fl = str(d / "finite_size.nc"), str(d / "finite_L.nc")
    out = tmp_path / "fig_one_loop_gaps.png"
    assert main(["one-loop", "figure", "--finite-size", fs, "--finite-L", fl, "--out", str(out)]) == 0
    _check_figure_sidecar(out, {"finite_size": fs, "finite_L": fl})


@pytest.mark.parametrize("name", ["converged", "finite_size_softmax"])
def test_one_loop_dataset_figure_gets_a_sidecar(tmp_path, name):
    pred = str(ROOT / "docs/one_loop" / f"{name}.nc")
    out = tmp_path / "fig.png"
    assert main(["one-loop", "dataset-figure", "--predictions", pred, "--out", str(out)]) == 0
    _check_figure_sidecar(out, {"predictions": pred})


@pytest.mark.research   # long one-loop numerics (the per-dataset one loop of the side study, ~15 s)
def test_one_loop_predict_writes_its_provenance(tmp_path):
    """`copyhead one-loop predict` at one planted point of a tiny finite-size study: a netCDF of kind
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


def test_one_loop_remainder_figure_gets_a_sidecar(tmp_path):
    d = ROOT / "docs/one_loop"
    ins = {"finite_size": str(d / "finite_size.nc"), "finite_L": str(d / "finite_L.nc"),
           "converged": str(d / "converged.nc")}
    out = tmp_path / "fig_one_loop_remainder.png"
    assert main(["one-loop", "remainder-figure", "--finite-size", ins["finite_size"], "--finite-L", ins["finite_L"],
                 "--converged", ins["converged"], "--out", str(out)]) == 0
    _check_figure_sidecar(out, ins)
