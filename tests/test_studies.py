"""The studies: spec and generated configs (copyhead.studies.spec), the studies' tables (copyhead.studies.tables
with copyhead.analysis.finite_size, .scaling, .twins), and the page rendered from studies.json alone
(copyhead.studies.report) on synthetic studies with known answers; the published pages against their
committed inputs."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from copyhead import config as cfgmod
from copyhead.analysis.finite_size import finite_size, ratio_verdict
from copyhead.analysis.results_model import (ChainMixing, FiniteSize, InputFile, ResultsTables, ScalingRow, Study, Twin,
                                             read_studies)
from copyhead.analysis.results_tables import jsonable
from copyhead.analysis.scaling_claims import scaling_rows
from copyhead.analysis.twins import compare_twins
from copyhead.cli import main
from copyhead.config import ConfigError
from copyhead.provenance import DataFileError, sha256_file, sidecar_path
from copyhead.results.findings import headline
from copyhead.results.page import _studies
from copyhead.studies import report as R
from copyhead.studies import tables as T
from copyhead.studies.conclude import collapse_verdict, conclude_finite_size
from copyhead.publish import MANIFEST, PublishError, check_published, publish
from copyhead.studies.spec import load_spec, reference_transitions, action_params, study_config, write_study_config
from copyhead.studies.tables import _theory_curve
from copyhead.theory.output import write_theory

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "config/studies.yaml"


@pytest.fixture(scope="module")
def spec():
    return load_spec(SPEC)


def test_every_study_config_is_valid_and_its_grid_sits_on_its_own_transitions(spec):
    for name, s in spec["studies"].items():
        cfg, notes = study_config(spec, name)
        assert cfgmod.validate(cfg) == cfg
        assert cfg["task"]["L"] == s["L"] and cfg["model"]["d_k"] == s["d_k"]
        for att in ("linear", "softmax"):
            grid = cfg["sweep"][att][cfg["figures"]["stage_optimizer"]]["P"]
            assert set(grid) <= set(cfg["theory"]["exact"]["P"])
            assert cfg["theory"]["P_max"] >= max(grid)
            if s.get("P"):   # a listed grid (the dense fixed-d_k studies) is taken as listed
                assert grid == sorted(set(s["P"][att]))
            elif not s.get("P_like"):
                P_ref = notes["reference"][att]["P"]
                assert grid == sorted({max(2, round(r * P_ref)) for r in spec["ratios"][att]})
                assert grid[0] < P_ref < grid[-1]          # the grid brackets the transition


def test_sigma2_study_samples_its_twin_at_equal_P_over_sigma2(spec):
    twin, _ = study_config(spec, "L16_dk32")
    s1, notes = study_config(spec, "L16_dk32_s1")
    assert notes["P_like"] == "L16_dk32"
    assert list(s1["sweep"]["linear"]) == list(spec["recipes"])     # the studies' recipes (not pinned here)
    for att in ("linear", "softmax"):
        for recipe in spec["recipes"]:
            a = np.array(s1["sweep"][att][recipe]["P"]) / s1["model"]["sigma2"]
            b = np.array(twin["sweep"][att][recipe]["P"]) / twin["model"]["sigma2"]
            np.testing.assert_allclose(a, b)
    # the theory's transitions scale exactly with sigma^2 (docs/theory.md Sec. 6)
    r1 = reference_transitions(action_params(s1))
    r0 = reference_transitions(action_params(twin))
    for att in r1:
        assert r1[att][1] == pytest.approx(10 * r0[att][1], rel=1e-6)


def test_recipe_override_reaches_the_study_config(spec):
    cfg, _ = study_config(spec, "L16_dk256")
    assert cfg["optimizers"]["sgld"]["eta"] == 0.0005 and cfg["optimizers"]["sgld_copy"]["init"] == "copy"


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(bogus=1), "unknown key 'bogus'"),
    (lambda s: s["studies"]["L16_dk16"].update(P_like="nope"), "studies.L16_dk16.P_like = 'nope' is not a study"),
    (lambda s: s["ratios"].update(linear=[0.5, -1]), "ratios.linear must be a non-empty list of positive numbers"),
    (lambda s: s["studies"]["L16_dk16"].update(dk=3), "studies.L16_dk16: unknown key 'dk'"),
    (lambda s: s["groups"].update(extra=["L16_dk999"]), "groups.extra: 'L16_dk999' is not a study"),
    (lambda s: s["studies"].update({"bad/name": {"L": 16}}), "studies.bad/name: a study name is a folder name"),
    (lambda s: s["groups"].update({"study": []}), "groups.study: a group name is a Snakemake target"),
    (lambda s: s["studies"]["L16_dk16"].update(P={"linear": [4, 8]}), "studies.L16_dk16.P must map every attention"),
    (lambda s: s["studies"]["L16_dk16"].update(P={"linear": [4, 8], "softmax": [1.5]}),
     "studies.L16_dk16.P.softmax must be a non-empty list of integers >= 2"),
])
def test_bad_spec_is_refused_naming_the_key(tmp_path, edit, message):
    s = yaml.safe_load(SPEC.read_text())
    s["base"] = str(ROOT / s["base"])
    edit(s)
    p = tmp_path / "studies.yaml"
    p.write_text(yaml.safe_dump(s))
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_spec(p)


def test_written_config_is_checked_and_unchanged_text_keeps_its_mtime(tmp_path):
    out = tmp_path / "L16_dk16" / "config.yaml"
    write_study_config(SPEC, "L16_dk16", out)
    assert cfgmod.load(out)["model"]["d_k"] == 16
    assert "Closed-form transitions" in out.read_text()
    before = out.stat().st_mtime_ns
    write_study_config(SPEC, "L16_dk16", out)
    assert out.stat().st_mtime_ns == before
    with pytest.raises(ConfigError, match="unknown study 'nope'"):
        write_study_config(SPEC, "nope", out)


# ---------------------------------------------------------------- synthetic studies with known answers

def _study_json(root: Path, name: str, L: int, d_k: int, sigma2: float, gap, trans: dict, P_ref: dict, grids: dict):
    """A minimal results JSON + theory files of one study: theory 0.5 everywhere, experiment = 0.5 +
    gap(att, P, d_k) with error 0.01; transitions trans[att] with CI ±5%."""
    folder = root / name
    (folder / "results/docs").mkdir(parents=True)
    (folder / "results/theory").mkdir(parents=True)
    cfg = cfgmod.merge_overrides(cfgmod.load_yaml(ROOT / "config/studies/base.yaml"),
                                 {"task": {"L": L}, "model": {"d_k": d_k, "sigma2": sigma2}})
    cfg["sweep"] = {att: {r: {"P": grids[att], "seeds": [0, 1]} for r in ("sgld", "sgld_copy")} for att in grids}
    atts, inputs = {}, {}
    for att, grid in grids.items():
        Pth = np.geomspace(1, 1000, 50)
        # theory 0.5 for every plotted order parameter (softmax âG = mP/L)
        xr.Dataset({v: ("P", np.full(50, 0.5 * (L if v == "mP_mean_gaussian" else 1)))
                    for v in ("c1_mean_gaussian", "cG_mean_gaussian", "m1_mean_gaussian", "mP_mean_gaussian")},
                   coords={"P": Pth}).to_netcdf(folder / f"results/theory/{att}.nc")
        inputs[f"theory_{att}"] = {"path": f"results/theory/{att}.nc"}
        p1, pG = ("c1", "cG") if att == "linear" else ("a1", "aG")
        rows = []
        for recipe in ("sgld", "sgld_copy"):
            for P in grid:
                for param in (p1, pG):
                    exp = 0.5 + gap(att, P / P_ref[att], d_k)
                    for curve in ("same_mean", "closed_mean"):
                        rows.append({"P": float(P), "attention": att, "away": True, "curve": curve, "error": 0.01,
                                     "experiment": exp, "method": "sgld", "name": param, "param": param,
                                     "recipe": recipe, "theory": 0.5, "theory_error": 0.0, "z": (exp - 0.5) / 0.01})
        name_t, key = T.TRANSITION[att]
        est = trans[att]
        atts[att] = _attention_tables(att, rows, {"recipe": "sgld", "transition": name_t, "estimate": est,
                                                  "ci_lo": 0.95 * est, "ci_hi": 1.05 * est},
                                      {key: P_ref[att], key + "_gaussian": 1.1 * P_ref[att], key + "_exact": None})
    d = {"settings": {"n_boot": 100, "away_factor": 1.5, "rhat_max": 1.05, "bootstrap_seed": 0},
         "attentions": atts, "config": {"hash": "test", "json": json.dumps(cfg)},
         "inputs": {k: {"path": v["path"], "sha256": "", "config_hash": "", "kind": "theory"} for k, v in inputs.items()}}
    ResultsTables.from_dict(d, "fixture")      # the shape copyhead results writes (strict: the study reader's)
    path = folder / "results/docs/results.json"
    path.write_text(json.dumps(d))
    return path


def _attention_tables(att: str, rows: list[dict], transition: dict, points: dict) -> dict:
    """One attention type of a results JSON: the given agreement rows, transition and theory points, one
    mixed convergence row, every other table empty."""
    conv = {"attention": att, "recipe": "sgld", "starts": "prior", "P": rows[0]["P"], "param": rows[0]["param"],
            "name": rows[0]["name"], "n_chains": 2, "n_draws": 400, "mean": 0.5, "rhat": 1.01, "rhat_flag": False,
            "rhat_within_max": 1.005, "ess_bulk": 300.0, "ess_sum": 600.0, "ess_chain_min": 150.0, "err_mcse": 0.01,
            "err_spread": 0.01, "error": 0.01, "error_basis": "mcse"}
    tr = dict(transition, attention=att, method="sgld", level=0.95, n_boot=100, n_valid=100, resolved=True, note="",
              theory=[])
    return {"recipes": {}, "sweep": {}, "convergence": [conv], "agreement": rows, "agreement_summary": [],
            "transitions": [tr], "adam": {"position": [], "landscape": [], "map_vs_prior_warmup": []},
            "theory": {"config": {}, "prior": "large_deviation", "exact_n_datasets": 0, "config_hash": "",
                       "code_version": "", **points},
            "scaling": {}, "samplers": [], "sampler_summary": [], "same_dataset": False, "nonfinite": [],
            "aggregate": {k: None for k in ("n_runs", "n_diverged", "n_absent", "code_version", "config_hash",
                                            "run_code_fingerprints", "mixed_code")} | {"run_config_hashes": []}}


def test_finite_size_fit_recovers_a_closing_and_a_persisting_gap(tmp_path):
    # linear: gap = 2/d_k (closes); softmax: gap = 0.05 + 1/d_k (does not close)
    gap = lambda att, ratio, d_k: (2.0 / d_k) if att == "linear" else (0.05 + 1.0 / d_k)
    paths, studies = [], []
    for d_k in (16, 32, 64, 128):
        P_ref = {"linear": 10.0 * (d_k / 16) ** 0.5, "softmax": 20.0 * (d_k / 16) ** 0.8}
        grids = {att: sorted({round(r * P_ref[att]) for r in (0.5, 2.0)}) for att in P_ref}
        # transitions: linear tends to its theory (ratio 1 + 4/d_k), softmax does not (ratio 1.3)
        trans = {"linear": P_ref["linear"] * (1 + 4.0 / d_k), "softmax": 1.3 * P_ref["softmax"]}
        paths.append(_study_json(tmp_path, f"L16_dk{d_k}", 16, d_k, 0.1, gap, trans, P_ref, grids))
        studies.append(T.load_study(paths[-1]))
    fs = finite_size(studies, {"linear": [0.5, 2.0], "softmax": [0.5, 2.0]})
    assert fs["values"] == [16, 32, 64, 128] and fs["by"] == "d_k"
    for r in fs["gaps"]:
        assert len(r["points"]) == 4
        if r["attention"] == "linear":
            assert r["fit"]["a"] == pytest.approx(0.0, abs=1e-9) and r["fit"]["b"] == pytest.approx(2.0)
            assert r["closes"] is True
        else:
            assert r["fit"]["a"] == pytest.approx(0.05) and r["closes"] is False and r["param"] == "aG"
    tr = {(t["attention"], t["prior"]): t for t in fs["transitions"]}
    assert tr[("linear", "large_deviation")]["fit"]["a"] == pytest.approx(1.0)
    assert tr[("linear", "large_deviation")]["tends_to_theory"] is True
    assert tr[("softmax", "large_deviation")]["tends_to_theory"] is False
    assert tr[("softmax", "gaussian")]["points"][0]["ratio"] == pytest.approx(1.3 / 1.1)
    records = tuple(Study.from_dict(jsonable(s, drop=("config",)), "study") for s in studies)   # as studies.json holds them
    text = "\n".join(conclude_finite_size(FiniteSize.from_dict(jsonable(fs)), records))
    # effect size first, against the tolerance; significance beside it (issue 49)
    assert "within |Δ| ≤ 0.02 of 0 at 8 of 12 (attention, recipe, P/P_ref, parameter) rows; within 2σ of 0 at 8 of them" in text
    assert ("linear: largest |Δ| against the same-dataset posterior mean at d_k = 16, 32, 64, 128: "
            "0.125, 0.0625, 0.0312, 0.0156 (tolerance |Δ| ≤ 0.02); RMS z beside it: ") in text
    assert "largest |Δ| against the closed-form posterior mean" in text
    verdicts = [line.split("→ ∞: ", 1)[1] for line in text.splitlines() if "experiment/theory →" in line]
    assert verdicts[0].startswith("agrees within tolerance: |r_∞ − 1| = 0.000 (0.0 %), 95% interval [0.954, 1.05]")
    assert verdicts[2].startswith("deviates by 0.300 (30.0 %): 95% interval [1.24, 1.36] outside 1 ± 0.1; 10.5σ")
    for line in text.splitlines():
        if "experiment/theory →" in line:   # the extrapolated transition: effect size against 1 ± 0.1, σ beside
            assert ("agrees within tolerance: |r_∞ − 1| = " in line or "deviates by " in line
                    or "not resolved: |r_∞ − 1| = " in line) and "1 ± 0.1" in line and "σ from 1" in line, line
        assert "RMS z" not in line or "|Δ|" in line, line


@pytest.mark.parametrize("a, err, outcome", [(0.979, 0.017, "agrees"), (1.126, 0.012, "deviates"),
                                              (0.903, 0.045, "not resolved"), (0.641, 0.196, "not resolved"),
                                              (1.0, 0.0, "agrees"), (float("nan"), 0.1, "–")])
def test_an_extrapolated_transition_is_judged_by_its_distance_from_1_against_the_tolerance(a, err, outcome):
    """Effect size first (issue 49): r_∞'s 95% interval inside 1 ± 0.1 agrees, wholly outside deviates, else the
    error is too large to tell; a 36 % miss with a large error is never called agreement."""
    word, words = ratio_verdict(a, err)
    assert word == outcome
    if outcome != "–":
        assert f"{abs(a - 1):.3f} ({100 * abs(a - 1):.1f} %)" in words and "1 ± 0.1" in words


def test_sigma2_collapse_pairs_equal_P_over_sigma2_and_scaling_rows(tmp_path):
    gap = lambda att, ratio, d_k: 0.1 * ratio
    P_ref = {"linear": 10.0, "softmax": 18.0}
    grids = {"linear": [5, 20], "softmax": [9, 36]}
    a = T.load_study(_study_json(tmp_path, "A", 16, 32, 0.1, gap, {"linear": 11.0, "softmax": 19.0}, P_ref, grids))
    P_ref1 = {k: 10 * v for k, v in P_ref.items()}
    b = T.load_study(_study_json(tmp_path, "B", 16, 32, 1.0, gap, {"linear": 110.0, "softmax": 190.0}, P_ref1,
                                 {k: [10 * P for P in v] for k, v in grids.items()}))
    c = compare_twins(b, a)
    assert c["n"] == 16 and c["n_within_2"] == 16            # identical values at equal P/σ²
    assert c["differs"] == "σ²" and compare_twins(a, a)["differs"] == "nothing"
    assert {r["P_over_sigma2"] for r in c["rows"]} == {50.0, 200.0, 90.0, 360.0}
    assert c["transitions"]["softmax"]["value"] == pytest.approx(190.0) == c["transitions"]["softmax"]["value_ref"]
    assert c["transitions"]["softmax"]["overlap"] is True and c["n_within_2_theory"] == 16
    twin = Twin.from_dict(jsonable(c))     # as studies.json holds it
    assert collapse_verdict(twin)[0].startswith("- Verdict: the order parameters collapse at equal P/σ² (largest |Δ| = 0 ")
    assert "16 of 16 pairs within |Δ| ≤ 0.02); significance: 16 of 16 equal within 2σ" in collapse_verdict(twin)[0]
    # a twin whose values differ by what its own theory predicts: not collapsed, but explained
    shifted = dict(c, rows=[dict(r, value=r["value"] + 0.1, theory=r["theory"] + 0.1, z=10.0, z_vs_theory=0.0)
                            for r in c["rows"]], n_within_2=0, rms_z=10.0)
    v = collapse_verdict(Twin.from_dict(jsonable(shifted)))[0]
    assert ("The same-dataset theory predicts the differences (largest |Δ − Δ_theory| 0 against the largest |Δ| 0.1; "
            "16 of 16 within 0.02") in v
    # the theory's difference off by more than the tolerance at one pair, and larger than the twins' own: not accounted for
    off = dict(shifted, rows=[dict(r, theory=r["theory"] + (0.3 if i == 0 else 0.0)) for i, r in enumerate(shifted["rows"])])
    assert "does not account for the differences (largest |Δ − Δ_theory| 0.3 against the largest |Δ| 0.1; 15 of 16" in \
        collapse_verdict(Twin.from_dict(jsonable(off)))[0]
    rows = scaling_rows([a])
    assert rows[0]["ratio"]["experiment"] == pytest.approx(11.0 / 19.0)
    assert rows[0]["sqrt_LV"] == pytest.approx(16.0)


def _spec(tmp_path: Path, studies: dict, groups: dict) -> Path:
    s = yaml.safe_load(SPEC.read_text())
    s["base"] = str(ROOT / s["base"])
    s["studies"], s["groups"] = studies, groups
    spec = tmp_path / "studies.yaml"
    spec.write_text(yaml.safe_dump(s))
    return spec


def _size_studies(root: Path):
    """Three studies (d_k 16, 32 at L = 16; d_k 48 at L = 24): a finite-size and a scaling group."""
    gap = lambda att, ratio, d_k: 1.0 / d_k
    paths = []
    for d_k, L in ((16, 16), (32, 16), (48, 24)):
        P_ref = {"linear": 10.0 * d_k / 16, "softmax": 18.0 * d_k / 16}
        grids = {att: sorted({round(r * P_ref[att]) for r in (0.5, 2.0)}) for att in P_ref}
        paths.append(_study_json(root, f"S{d_k}", L, d_k, 0.1, gap, {k: 1.1 * v for k, v in P_ref.items()}, P_ref,
                                 grids))
    studies = {"S16": {"L": 16, "V": 16, "d_k": 16}, "S32": {"L": 16, "V": 16, "d_k": 32},
               "S48": {"L": 24, "V": 16, "d_k": 48}}
    return paths, studies, {"finite_size": ["S16", "S32"], "scaling": ["S32", "S48"]}


def _twin_studies(root: Path):
    """A σ² twin pair (A at σ² = 0.1, B at σ² = 1 on the same P/σ² grid) with equal values at equal P/σ²."""
    gap = lambda att, ratio, d_k: 0.1 * ratio
    P_ref, grids = {"linear": 10.0, "softmax": 18.0}, {"linear": [5, 20], "softmax": [9, 36]}
    a = _study_json(root, "A", 16, 32, 0.1, gap, {"linear": 11.0, "softmax": 19.0}, P_ref, grids)
    b = _study_json(root, "B", 16, 32, 1.0, gap, {"linear": 110.0, "softmax": 190.0},
                    {k: 10 * v for k, v in P_ref.items()}, {k: [10 * P for P in v] for k, v in grids.items()})
    return [a, b], {"A": {"L": 16, "V": 16, "d_k": 32}, "B": {"L": 16, "V": 16, "d_k": 32, "sigma2": 1.0, "P_like": "A"}}


def _records_match(folder: Path, tables: Path, converged: Path | None = None) -> list[str]:
    """Every page and figure in ``folder`` has a provenance record whose inputs are ``tables`` (and
    ``converged``) with their current sha256 and whose outputs are the files as they are."""
    products = sorted(folder.glob("*.png")) + sorted(folder.glob("*.md"))
    assert products
    for p in products:
        rec = json.loads(sidecar_path(p).read_text())
        assert rec["concern"] == "studies" and rec["kind"] == ("figure" if p.suffix == ".png" else "page")
        assert rec["inputs"]["studies"]["path"] == str(tables)
        assert rec["inputs"]["studies"]["sha256"] == sha256_file(tables)
        if converged is not None and p.suffix == ".md":
            assert rec["inputs"]["converged"]["sha256"] == sha256_file(converged)
        else:
            assert "converged" not in rec["inputs"]
        assert [o["sha256"] for o in rec["outputs"].values()] == [sha256_file(p)]
    return [p.name for p in products]


def test_tables_then_page_from_studies_json_alone(tmp_path):
    """studies-report computes studies.json from the studies' results only; studies-page renders the page and
    its figures from studies.json alone (the studies' results gone), each with a provenance record."""
    paths, studies, groups = _size_studies(tmp_path / "studies")
    spec = _spec(tmp_path, studies, groups)
    tables = tmp_path / "report" / "studies.json"
    tables.parent.mkdir()                  # copyhead writes into an existing folder (it never makes an --out's)
    assert main(["studies-report", str(spec), *map(str, paths), "--out", str(tables)]) == 0
    rec = json.loads(sidecar_path(tables).read_text())
    assert set(rec["inputs"]) == {"spec", "study_S16", "study_S32", "study_S48"}
    assert all(v["sha256"] == sha256_file(v["path"]) for v in rec["inputs"].values())
    data = json.loads(tables.read_text())
    assert data["finite_size"]["values"] == [16, 32] and [r["L"] for r in data["scaling"]["rows"]] == [16, 24]
    assert "twins" not in data and "conclusion" not in data["finite_size"]      # numbers only: the page words them
    assert all(s["cost"]["train_jobs"] == 8 for s in data["studies"])
    shutil.rmtree(tmp_path / "studies")                      # the page needs nothing but studies.json
    out = tables.with_name("studies.md")
    assert main(["studies-page", str(tables), "--out", str(out)]) == 0
    text = out.read_text()
    for fig in ("fig9_finite_size.png", "fig8_scaling_experiment.png", "fig9b_gap_vs_L.png"):
        assert (out.parent / fig).stat().st_size > 10_000 and f"]({fig})" in text
    assert text.startswith("# Studies: finite d_k, scaling in L and V\n") and "issue" not in text.lower()
    assert "## 1. Finite d_k at L = 16" in text and "## 2. Scaling in L and V along d_k = 2·L" in text
    assert "## 3." not in text                              # no σ² pair in this spec
    assert "## 2b. The gap against L at fixed d_k/L = 2" in text
    assert "closest form" in text and "√(LV)" in text and "Order parameters: the extrapolated gap" in text
    assert "| S16 | 16 | 16 | 16 | 0.1 | 8 |" in text and "'–' in the model columns" not in text
    assert _records_match(out.parent, tables) == ["fig8_scaling_experiment.png", "fig9_finite_size.png",
                                                  "fig9b_gap_vs_L.png", "studies.md"]
    # publishing copies the folder and renders it again there: the records name the published tables;
    # docs/results.md has one writer (results_doc)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "results.md").write_text("# Results\n\nbody\n")
    for _ in range(2):
        assert main(["publish-studies", str(out.parent), "--docs", str(docs)]) == 0
    assert (docs / "results.md").read_text() == "# Results\n\nbody\n"
    pub = docs / "studies"
    assert json.loads((pub / "studies.json").read_text()) == data
    assert (pub / "studies.md").read_text() == text
    _records_match(pub, pub / "studies.json")
    manifest = json.loads((pub / MANIFEST).read_text())["files"]
    assert manifest == {p.name: sha256_file(p) for p in pub.iterdir() if p.name != MANIFEST}
    check_published(pub)


def test_the_paper_scale_table_quotes_the_converged_study_given_to_the_page(tmp_path):
    """A σ² twin pair: the page puts the converged study on the paper's σ² = 1 scale from the results JSON
    given to studies-page (the current one, not one the tables were computed with); without it the page
    says how to add it, and its record lists no converged input."""
    paths, studies = _twin_studies(tmp_path / "studies")
    spec = _spec(tmp_path, studies, {"sigma2": ["A", "B"]})
    tables = tmp_path / "report" / "studies.json"
    T.write_tables(spec, paths, tables)
    assert json.loads(tables.read_text())["sigma2_collapse"]["transitions_collapse"] is True
    out = tables.with_name("studies.md")
    R.write_page(tables, out)
    text = out.read_text()
    assert "## 3. Twin studies" in text and "### On the paper's scale" in text
    assert "No converged study given" in text and "| quantity | paper |" not in text
    _records_match(out.parent, tables)
    gap = lambda att, ratio, d_k: 0.0
    conv = _study_json(tmp_path / "conv", "converged", 32, 32, 0.1, gap, {"linear": 15.4, "softmax": 21.8},
                       {"linear": 13.1, "softmax": 18.6}, {"linear": [7, 26], "softmax": [9, 37]})
    R.write_page(tables, out, converged=conv)
    text = out.read_text()
    assert "| linear crossover ĉG = ĉ1 | P ≈ 322–400 | 154 [146, 162] | 131 | 2.1–2.6 |" in text
    assert "| softmax first-order jump | P ≈ 300 | 218 [207, 229] | 186 | 1.4 |" in text
    assert "(L = 32, V = 16, d_k = 32, σ² = 0.1)" in text and "No converged study given" not in text
    assert f"the converged study's transitions from `{conv}`" in text
    _records_match(out.parent, tables, conv)
    found = headline(R.load_report(tables))
    collapse = [x for x in found if x.startswith("At equal P/σ² the σ² twins' transition points")]
    assert len(collapse) == 1 and collapse[0] in text                  # effect size first (issue 49)
    assert collapse[0].count("|r − 1| = ") == 2 and collapse[0].count("against 1 ± 0.1") == 2, collapse[0]


def test_a_render_into_a_published_folder_keeps_its_manifest(tmp_path):
    """A published folder is rendered in place only while it holds what its manifest lists; the manifest then
    lists the rendered files (a later publish can replace the folder)."""
    paths, studies, groups = _size_studies(tmp_path / "studies")
    tables = tmp_path / "report" / "studies.json"
    T.write_tables(_spec(tmp_path, studies, groups), paths, tables)
    docs = tmp_path / "docs"
    pub = publish(tables.parent, docs)                      # the tables only: no page yet
    assert sorted(json.loads((pub / MANIFEST).read_text())["files"]) == ["studies.json", "studies.json.provenance.json"]
    R.write_page(pub / "studies.json", pub / "studies.md")
    files = json.loads((pub / MANIFEST).read_text())["files"]
    assert files == {p.name: sha256_file(p) for p in pub.iterdir() if p.name != MANIFEST}
    assert "studies.md" in files and "fig9_finite_size.png" in files
    (pub / "studies.md").write_text("edited by hand\n")
    with pytest.raises(PublishError, match="studies.md was changed after it was published"):
        R.write_page(pub / "studies.json", pub / "studies.md")
    assert (pub / "studies.md").read_text() == "edited by hand\n"


@pytest.mark.parametrize("folder", ["studies", "studies_fixed_dk16"])
def test_the_committed_pages_are_rendered_from_their_committed_inputs(folder):
    """docs/studies*/studies.md is what studies-page renders from the committed studies.json (and, where the
    page has σ² twins, the committed docs/results.json) with this code; the records name those inputs with
    their current sha256 and the publish manifest lists every file unchanged. Rerender:
    `snakemake -s workflow/studies.smk --cores 1 docs_studies`."""
    pub = ROOT / "docs" / folder
    rep = R.load_report(pub / "studies.json")
    conv = ROOT / "docs/results.json" if rep.twins else None
    text = "\n".join(R.render(rep, "studies.json", T.load_transitions(conv) if conv else None,
                              "docs/results.json" if conv else "")) + "\n"
    assert (pub / "studies.md").read_text() == text
    for p in sorted(pub.glob("*.png")) + [pub / "studies.md"]:
        rec = json.loads(sidecar_path(p).read_text())
        assert rec["inputs"]["studies"]["sha256"] == sha256_file(pub / "studies.json"), p
        assert rec["outputs"][next(iter(rec["outputs"]))]["sha256"] == sha256_file(p), p
        if conv is not None and p.suffix == ".md":
            assert rec["inputs"]["converged"]["sha256"] == sha256_file(conv)
    tables = json.loads(sidecar_path(pub / "studies.json").read_text())      # made outside the checkout
    assert tables["data"] is True and tables["outputs"]["studies.json"]["sha256"] == sha256_file(pub / "studies.json")
    check_published(pub)
    assert "issue" not in text.lower()


def test_studies_workflow_dry_run_plans_one_nested_study_per_member(tmp_path):
    """`snakemake -s workflow/studies.smk -n GROUP` in a fresh copy: one study_config and one study job
    per member of the group, and the report needs every study."""
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    for name in ("config", "workflow"):
        shutil.copytree(ROOT / name, tmp_path / name)
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs/results.json", tmp_path / "docs/results.json")   # the converged study, published
    spec = load_spec(SPEC)

    def plan(*targets):
        out = subprocess.run(["snakemake", "-s", "workflow/studies.smk", "-n", "--cores", "2", *targets],
                             cwd=tmp_path, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        counts = {}
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit() and not parts[0].endswith(":"):
                counts[parts[0]] = int(parts[1])
        return counts

    n_fs = len(spec["groups"]["finite_size"])
    assert plan("finite_size") == {"study_config": n_fs, "study": n_fs, "finite_size": 1, "total": 2 * n_fs + 1}
    everything = plan()
    assert everything["study"] == len(spec["studies"])
    assert everything["studies_tables"] == 1 and everything["studies_report"] == 1
    # the published pages, rendered from their committed studies.json (+ docs/results.json where twins)
    for folder in ("studies", "studies_fixed_dk16"):
        (tmp_path / "docs" / folder).mkdir()
        shutil.copy(ROOT / "docs" / folder / "studies.json", tmp_path / "docs" / folder / "studies.json")
    assert plan("docs_studies") == {"docs_studies_page": 2, "docs_studies": 1, "total": 3}
    out = subprocess.run(["snakemake", "-s", "workflow/studies.smk", "-n", "-p", "--cores", "1", "docs_studies"],
                         cwd=tmp_path, capture_output=True, text=True)
    cmds = sorted(x[x.index("copyhead"):].strip() for x in out.stdout.splitlines() if "copyhead studies-page" in x)
    assert cmds == ["copyhead studies-page docs/studies/studies.json --converged docs/results.json --out "
                    "docs/studies/studies.md > studies/logs/docs_studies_page.log 2>&1",
                    "copyhead studies-page docs/studies_fixed_dk16/studies.json --out "
                    "docs/studies_fixed_dk16/studies.md > studies/logs/docs_studies_fixed_dk16_page.log 2>&1"], out.stdout


def test_missing_or_corrupt_results_file_is_named(tmp_path):
    bad = tmp_path / "results.json"
    bad.write_text("{")
    (tmp_path / "r").mkdir()               # the --out folder exists: refused for the input, not for the folder
    for path, what in ((tmp_path / "none.json", "no such results file"), (bad, "not a results JSON")):
        with pytest.raises(Exception, match=what):
            T.load_study(path)
        assert main(["studies-report", str(SPEC), str(path), "--out", str(tmp_path / "r" / "s.json")]) == 2
    assert not (tmp_path / "r" / "s.json").exists()
    shape = tmp_path / "shape.json"      # JSON, but not the results model's shape: the key is named
    shape.write_text(json.dumps({"attentions": {}, "config": {"hash": "", "json": "{}"}}))
    with pytest.raises(DataFileError, match="missing key 'settings'"):
        T.load_study(shape)
    assert main(["studies-page", str(tmp_path / "none.json"), "--out", str(tmp_path / "r" / "s.md")]) == 2
    assert main(["studies-page", str(bad), "--out", str(tmp_path / "r" / "s.md")]) == 2
    assert not (tmp_path / "r" / "s.md").exists()


def test_a_group_rerun_a_few_studies_at_a_time_carries_the_rest_and_the_page_says_so(tmp_path):
    """studies-report --carry: the studies given are read fresh, the rest of the published report joins them
    unchanged (each marked with the commit it came from), the tables are the ones all three studies give, every
    study is marked current or not against the spec's recipe, and the page names the studies that are not."""
    paths, studies, groups = _size_studies(tmp_path / "studies")
    first = tmp_path / "first" / "studies.json"
    first.parent.mkdir()
    full = T.write_tables(_spec(tmp_path, studies, groups), paths, first)
    assert [s["current"] for s in full["studies"]] == [True] * 3 and "carried" not in full["studies"][0]
    assert R.recipe_lines(R.load_report(first).studies)[0].startswith("**Recipes.** Every study was sampled")
    # the spec now gives S16 a longer chain; S32 is rerun, S16 and S48 are carried
    studies["S16"] = dict(studies["S16"], optimizers={"sgld": {"steps": 80000}})
    spec = _spec(tmp_path, studies, groups)
    second = tmp_path / "second" / "studies.json"
    second.parent.mkdir()
    sidecar_path(paths[1]).write_text(json.dumps({"code_version": "c0ffee123456"}))   # what made S32's results
    assert main(["studies-report", str(spec), str(paths[1]), "--carry", str(first), "--out", str(second)]) == 0
    data, rec = json.loads(second.read_text()), json.loads(sidecar_path(second).read_text())
    commit = json.loads(sidecar_path(first).read_text())["git_commit"][:12]
    by = {s["name"]: s for s in data["studies"]}
    assert [by[n].get("carried") for n in ("S16", "S32", "S48")] == [commit, None, commit]
    assert [by[n]["current"] for n in ("S16", "S32", "S48")] == [False, True, True]
    assert by["S32"]["code_version"] == "c0ffee123456"       # from the results' provenance record
    assert by["S32"]["sampler"] == {"steps": 40000, "eta": 0.001, "burn_in": 10000, "thin": 75}
    assert set(rec["inputs"]) == {"spec", "study_S32"}
    assert rec["options"]["carried"] == {"path": str(first), "sha256": sha256_file(first), "git_commit": commit,
                                         "studies": ["S16", "S48"]}
    ref = json.loads(first.read_text())
    assert all(data[k] == ref[k] for k in ("finite_size", "finite_L", "scaling"))      # the same numbers
    text = "\n".join(R.render(R.load_report(second)))
    assert (f"**Recipes mixed.** 2 of 3 studies sampled with the recipe the spec gives them now; 1 not "
            f"(S16, carried from the report made at commit {commit}: sampler 40000 steps, η 0.001, burn-in 10000, "
            "thin 75)") in text
    assert f"| S16 | sgld | 40000 steps, η 0.001, burn-in 10000, thin 75 | **no** | carried ({commit}) |" in text
    assert "Not classified per point" not in text        # the fixture's studies have no convergence rows: no points
    # the results page quotes the mix under the report's findings, and says nothing when every study is current
    assert sum("**Recipes mixed.** 2 of 3" in x for x in _studies([("studies", R.load_report(second))])) == 1
    assert not any("Recipes" in x for x in _studies([("studies", R.load_report(first))]))
    # a carried file that is not a studies report is refused, naming it, before anything is written
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"studies": [{"name": "S16"}]}))
    out = tmp_path / "second" / "again.json"
    assert main(["studies-report", str(spec), "--carry", str(bad), "--out", str(out)]) == 2
    with pytest.raises(DataFileError, match="bad.json: not a studies.json"):
        T.carry_studies(bad)
    assert not out.exists()


def test_a_fixed_head_dimension_group_gets_its_own_section_findings_and_ordering(tmp_path):
    """A group `fixed_dk*` is compared along its own path (d_k fixed, L growing: rank-deficient where
    d_k < L). The findings name the path and the L at which softmax copies first in experiment
    (ratio − 2σ > 1); the results page quotes them with the report's link."""
    gap = lambda att, ratio, d_k: 0.0
    paths = []
    for L, lin, sm in ((16, 10.0, 18.0), (32, 14.0, 16.0), (64, 24.0, 15.0)):   # ratio 0.56, 0.88, 1.6
        P_ref = {"linear": lin, "softmax": sm}
        grids = {att: sorted({round(r * P_ref[att]) for r in (0.5, 2.0)}) for att in P_ref}
        paths.append(_study_json(tmp_path / "studies", f"L{L}_dk16", L, 16, 0.1, gap, P_ref, P_ref, grids))
    studies = {f"L{L}_dk16": {"L": L, "V": 16, "d_k": 16, "recipes": ["sgld"]} for L in (16, 32, 64)}
    spec = _spec(tmp_path, studies, {"fixed_dk16": list(studies)})
    tables = tmp_path / "report" / "studies.json"
    rep = T.write_tables(spec, paths, tables)
    fx = rep["fixed_dk"][0]
    assert fx["group"] == "fixed_dk16" and fx["theory_lines"]["label"] == "d_k = 16"
    assert fx["theory_lines"]["d_k"] == 16 and "scaling" not in rep
    out = tables.with_name("studies.md")
    R.write_page(tables, out, converged=ROOT / "docs/results.json")     # no σ² twins: not used, not recorded
    text = out.read_text()
    assert text.startswith("# Studies: scaling in L at a fixed head dimension\n")
    assert "## 2c. Scaling in L at a fixed head dimension, d_k = 16" in text
    assert (out.parent / "fig8_fixed_dk16.png").stat().st_size > 10_000
    assert _records_match(out.parent, tables) == ["fig8_fixed_dk16.png", "studies.md"]
    assert "| L64_dk16 | 64 | 16 | 16 (< L) |" in text
    found = headline(read_studies(tables))
    assert any("along d_k = 16" in x and "softmax copies first at L = 64 on this path" in x for x in found)
    assert "L64_dk16 (L = 64, d_k = 16, rank-deficient: d_k < L)" in text and "softmax copies first." in text
    assert "- " + found[0] in text                         # the report's own Findings section
    lines = _studies([("studies_fixed_dk16", read_studies(tables))])
    assert lines[0].startswith("From [docs/studies_fixed_dk16/studies.md](studies_fixed_dk16/studies.md) (L16_dk16")
    assert any("softmax copies first at L = 64" in x for x in lines)
    publish(out.parent, tmp_path / "docs", "studies_fixed_dk16")
    assert (tmp_path / "docs" / "studies_fixed_dk16" / "studies.md").read_text() == text


def test_the_gaussian_prior_softmax_curve_is_read_as_a_hat_not_as_c(tmp_path):
    """The studies once read the Gaussian-prior softmax posterior mean from the theory file's
    Frobenius coordinates (c1, cG) and stored them as (â1, âG) (âG = 1.0155 = 0.1279·√63 at L = 64).
    Now: every stored â lies in [0, 1], âG equals mP/L = cG/√(L−1) of the same file, and â1 equals m1;
    where the copy direction is populated the old reading (cG) is √(L−1) times larger."""
    cfg = {"task": {"V": 4, "L": 6},
           "model": {"d_k": 8, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0, "sigma2": 0.5},
           "theory": {"prior": "large_deviation", "P_min": 1.0, "P_max": 200.0, "n_P": 30, "grid_n": 41,
                      "landscape_P": {"linear": [], "softmax": []},
                      "exact": {"n_datasets": 0, "P": [], "seed": 0}, "scaling": {"L": [6]}}}
    write_theory(cfg, "softmax", tmp_path / "softmax.nc")
    inputs = {"theory_softmax": InputFile(path="softmax.nc", sha256="", config_hash="", kind="theory")}
    L = 6
    with xr.open_dataset(tmp_path / "softmax.nc") as ds:
        cG, mP, m1 = (ds[v].values for v in ("cG_mean_gaussian", "mP_mean_gaussian", "m1_mean_gaussian"))
    for prior in ("gaussian", "large_deviation"):
        for param in ("a1", "aG"):
            P, y = _theory_curve(tmp_path, inputs, "softmax", param, prior, L)
            assert len(P) == 30 and np.all((y >= -1e-12) & (y <= 1 + 1e-12)), (prior, param)
    _, aG = _theory_curve(tmp_path, inputs, "softmax", "aG", "gaussian", L)
    _, a1 = _theory_curve(tmp_path, inputs, "softmax", "a1", "gaussian", L)
    assert np.allclose(aG, mP / L, rtol=1e-12) and np.allclose(aG, cG / np.sqrt(L - 1), rtol=1e-9)
    assert np.allclose(a1, m1, rtol=1e-12)
    big = aG > 0.05
    assert big.any() and np.all(cG[big] > 2 * aG[big])   # the old reading, √5 = 2.24 times too large
    # an independent quadrature at one P: âG = ∫ (mP(β)/L) e^{−S(β)} dβ / ∫ e^{−S(β)} dβ, uniform in β over the
    # file's grid range, with S the closed-form action under the Gaussian prior (scipy.integrate.quad)
    from scipy.integrate import quad
    from copyhead.config import ActionParams
    from copyhead.theory.action import action_softmax, softmax_coeffs
    with xr.open_dataset(tmp_path / "softmax.nc") as ds:
        lo, hi = json.loads(ds.attrs["grid_range"])
        Ps = ds["P"].values
    i = int(np.argmin(np.abs(Ps - 40.0)))
    p = ActionParams(V=4, L=L, d_k=8, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.5, prior="gaussian")
    S0 = min(float(action_softmax(np.array([b]), Ps[i], p)[0]) for b in np.linspace(lo, hi, 401))
    w = lambda b: np.exp(-(float(action_softmax(np.array([b]), Ps[i], p)[0]) - S0))
    num = quad(lambda b: float(softmax_coeffs(np.array([b]), L)[1][0]) / L * w(b), lo, hi, limit=200)[0]
    den = quad(w, lo, hi, limit=200)[0]
    assert aG[i] == pytest.approx(num / den, abs=1e-4) and 0 <= num / den <= 1


def test_who_copies_first_says_not_mixed_before_reading_an_interval_from_unmixed_chains():
    """The crossover / jump ratio is an interval; its verdict is 'not mixed' when the study's chains have
    not mixed on their training sets (a chain's halves R̂ > 1.01 or one chain's bulk ESS < 100)."""
    from copyhead.analysis.scaling_claims import mixing, who_copies_first
    from copyhead.studies.conclude import verdict
    def row(softmax_ess):
        return ScalingRow(name="L16", L=16, V=16, d_k=32, sigma2=1.0, method="SGLD", sqrt_LV=16.0, ln2L=7.7,
                          mixing={} if softmax_ess is None else
                          {"linear": ChainMixing(rhat_within_max=1.004, ess_chain_min=400.0),
                           "softmax": ChainMixing(rhat_within_max=1.004, ess_chain_min=softmax_ess)})
    assert mixing(row(250.0))[0] is True and verdict(row(250.0), 1.06, 1.31) == "softmax copies first"
    assert who_copies_first(0.4, 1.07).startswith("neither") and who_copies_first(0.4, 0.9).startswith("linear")
    assert mixing(row(8.0))[0] is False
    assert verdict(row(8.0), 1.06, 1.31).startswith("not mixed (") and verdict(row(8.0), 1.06, 1.31).endswith(
        "softmax copies first")
    assert mixing(row(None))[0] is None and verdict(row(None), 1.06, 1.31) == "softmax copies first"   # unknown


def test_prior_and_copy_started_chains_are_compared_effect_size_first_for_sgld_and_hmc(tmp_path):
    """The start comparison (a prior- against a copy-started chain on the same training set) leads with the
    largest |difference| and the points within the tolerance, and pairs the HMC reference's recipes
    (hmc, hmc_copy) as it pairs SGLD's."""
    from copyhead.analysis.twins import start_agreement
    from copyhead.studies.conclude import _start_line
    paths, _, _ = _size_studies(tmp_path)
    s = T.load_study(paths[0])
    rows = s["attentions"]["linear"]["rows"]
    moved = next(r for r in rows if r["recipe"] == "sgld_copy" and r["curve"] == "same_mean" and r["param"] == "cG")
    moved["experiment"] += 0.05
    for recipe in ("sgld", "hmc"):
        for a in s["attentions"].values():
            for r in a["rows"]:
                r["recipe"] = r["recipe"].replace("sgld", recipe)
        study = Study.from_dict(jsonable(s, drop=("config",)), "study")
        sa = start_agreement([study])
        assert sa["n"] == 6 and sa["max_delta"] == pytest.approx(0.05) and sa["n_within_tol"] == 5   # ĉ1, ĉG, âG × 2 P
        assert sa["n_within_2"] == 5
        line = _start_line([study])[0]
        assert "largest |Δ| = 0.05, 5 of 6" in line and line.index("|Δ|") < line.index("significance: 5 of 6")


def test_each_point_is_mixed_metastable_or_not_mixed_by_its_chains_not_across_training_sets():
    """point_status: a chain that fails within itself is 'not mixed'; chains each mixed whose two starts on one
    training set disagree are 'metastable' (two branches); otherwise 'mixed'. A prior-only point is never
    metastable (it cannot show a second branch); point_mixing takes the worst parameter per P."""
    from types import SimpleNamespace as NS
    from copyhead.analysis.convergence import point_status
    from copyhead.analysis.results_model import PointStatus
    from copyhead.studies.conclude import mixing_line, point_mixing

    def one(recipe, P, param, within=1.004, ess=200.0, paired=None):
        return {"recipe": recipe, "P": P, "param": param, "rhat_within_max": within, "ess_chain_min": ess,
                "rhat_paired_max": paired}
    rows = [one("hmc", 8, "cG"), one("hmc_copy", 8, "cG", ess=150.0), one("hmc+hmc_copy", 8, "cG", paired=1.3),
            one("hmc", 10, "cG"), one("hmc_copy", 10, "cG"), one("hmc+hmc_copy", 10, "cG", paired=1.005),
            one("hmc", 12, "cG", within=1.05), one("hmc_copy", 12, "cG"), one("hmc+hmc_copy", 12, "cG", paired=1.001),
            one("hmc", 12, "c1"), one("hmc_copy", 12, "c1", ess=40.0), one("hmc+hmc_copy", 12, "c1", paired=1.5),
            one("hmc", 10, "c1"), one("hmc_copy", 10, "c1"), one("hmc+hmc_copy", 10, "c1", paired=1.02)]
    st = {(p["P"], p["param"]): p for p in point_status(rows)}
    assert {k: v["status"] for k, v in st.items()} == {
        (8.0, "cG"): "metastable", (10.0, "cG"): "mixed", (12.0, "cG"): "not mixed", (12.0, "c1"): "not mixed",
        (10.0, "c1"): "metastable"}
    assert st[(8.0, "cG")]["ess_chain"] == 150.0 and st[(8.0, "cG")]["rhat_paired"] == 1.3
    prior_only = point_status([one("hmc", 8, "cG"), one("hmc", 9, "cG", ess=50.0)])
    assert [(p["status"], p["paired"]) for p in prior_only] == [("mixed", False), ("not mixed", False)]
    # per P, the worst parameter; the page's line counts points and states its rule
    pts = tuple(PointStatus.from_dict(p, "point") for p in point_status(rows))
    study = NS(name="S", attentions={"linear": NS(points=pts)})
    (r,) = point_mixing([study])
    assert (r["mixed"], r["metastable"], r["not mixed"], r["rhat_paired"]) == ([], [8.0, 10.0], [12.0], {8.0: 1.3, 10.0: 1.02})
    assert r["within"] == {12.0: (1.05, 40.0)}       # the worst chain of the worst parameter's training sets
    line = mixing_line([study])[0]
    assert "0 of 3 mixed, 2 metastable, 1 not mixed" in line and "split-R̂ ≤ 1.01) with bulk ESS ≥ 100" in line
    assert "umbrella" in line


def test_figures_fade_the_points_and_transitions_whose_chains_have_not_mixed():
    """unsettled: a (study, attention, P, param) not mixed or metastable is faded, and so is its study's
    transition; a table without per-point status falls back to the verdicts' rule on its worst chain. The
    scaling figure fades exactly those transitions (one legend key says so); a mixed study stays solid."""
    import math
    from types import SimpleNamespace as NS
    import matplotlib.pyplot as plt
    from copyhead.analysis.results_model import PointStatus, read_studies
    from copyhead.attention import ATTENTIONS
    from copyhead.figures.studies import FADED_ALPHA, FADED_LABEL, draw_scaling
    from copyhead.studies.conclude import unsettled

    def pt(P, status):
        return PointStatus(P=P, param="cG", status=status, paired=False, rhat_within=1.0, ess_chain=500.0,
                           rhat_paired=math.nan)
    studies = [NS(name="A", attentions={"linear": NS(points=(pt(8.0, "mixed"), pt(9.0, "not mixed")))}),
               NS(name="B", attentions={"linear": NS(points=(pt(8.0, "mixed"), pt(9.0, "metastable")))}),
               NS(name="C", attentions={"linear": NS(points=(pt(8.0, "mixed"),))}),
               NS(name="D", attentions={"linear": NS(points=None, rhat_within_max=1.02, ess_chain_min=500.0)}),
               NS(name="E", attentions={"linear": NS(points=None, rhat_within_max=1.005, ess_chain_min=500.0)})]
    points, transitions = unsettled(studies)
    assert points == {("A", "linear", 9.0, "cG"), ("B", "linear", 9.0, "cG")}
    assert transitions == {("A", "linear"), ("B", "linear"), ("D", "linear")}
    rep = read_studies(ROOT / "docs/studies_fixed_dk16/studies.json")
    fx = rep.fixed_dk[0]
    faded = unsettled(rep.studies)
    fig = draw_scaling(fx.rows, fx.theory_lines, faded)
    ax = fig.axes[0]
    for att in ("linear", "softmax"):
        want = sorted(float(r.L) for r in fx.rows if r.transition(att) and (r.name, att) in faded[1])
        got = sorted(float(x) for c in ax.containers if c.lines[0].get_alpha() == FADED_ALPHA
                     and c.lines[0].get_color() == ATTENTIONS[att].color for x in c.lines[0].get_xdata())
        assert got == want
    assert faded[1] and FADED_LABEL in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)


def test_an_edit_to_another_studys_entry_leaves_a_report_current(tmp_path, monkeypatch):
    """A studies report records the part of the spec it read (its studies' entries, the shared keys and the base
    config: spec_view): the audit passes it after an edit to a study outside the report, with a line that says
    so, and calls it older than its spec after an edit to one of its own studies."""
    from copyhead.audit import audit_published

    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True)
    (root / ".gitignore").write_text("studies/\n")
    monkeypatch.chdir(root)
    paths, studies, groups = _size_studies(root / "studies")
    spec = _spec(root, studies, groups)
    (root / "docs").mkdir()
    T.write_tables(Path("studies.yaml"), paths, Path("docs/studies.json"))
    (rep,) = audit_published([Path("docs/studies.json")], root)
    assert rep.ok and not rep.warnings, rep.warnings + rep.problems
    other = {**studies, "S99": {"L": 64, "V": 16, "d_k": 16, "optimizers": {"sgld": {"steps": 80000}}}}
    spec.write_text(_spec(tmp_path, other, groups).read_text())          # a study the report does not hold
    (rep,) = audit_published([Path("docs/studies.json")], root)
    assert rep.ok and not rep.warnings, rep.warnings + rep.problems
    assert [i["view"]["studies"] for i in rep.inputs if i.get("view_unchanged")] == [["S16", "S32", "S48"]]
    mine = {**other, "S16": dict(studies["S16"], optimizers={"sgld": {"steps": 80000}})}
    spec.write_text(_spec(tmp_path, mine, groups).read_text())           # one of the report's own studies
    (rep,) = audit_published([Path("docs/studies.json")], root)
    assert any("older than its committed input studies.yaml" in w for w in rep.warnings), rep.warnings
