"""The typed results model (copyhead.analysis.results_model) reads the committed results.json's summary
and studies.json files and writes them back key for key (the studies' tables byte for byte, as
copyhead.studies.tables writes them); a file without a required key is named with it."""
import copy
import json
from pathlib import Path

import pytest

from copyhead.analysis.results_model import ResultsFormatError, ResultsTables, StudiesReport, Summary, read_studies
from copyhead.analysis.results_tables import jsonable
from copyhead.analysis.summary import build_summary
from copyhead.datafiles import json_text

ROOT = Path(__file__).resolve().parents[1]


def _results() -> dict:
    return json.loads((ROOT / "docs/results.json").read_text())


def test_the_summary_round_trips_key_for_key():
    tables = _results()
    for summ in (tables["summary"], jsonable(build_summary(tables))):   # as written, and as the pages make it
        s = Summary.from_dict(summ, "results.json: summary")
        assert s.to_dict() == summ and json_text(s.to_dict()) == json_text(summ)
        assert Summary.from_dict(s.to_dict()) == s


def test_the_whole_results_json_round_trips_byte_for_byte():
    raw = (ROOT / "docs/results.json").read_text()
    t = ResultsTables.from_dict(json.loads(raw), "docs/results.json")
    assert json_text(t.to_dict()) == raw                     # as copyhead.results.write_results writes it
    assert ResultsTables.from_dict(t.to_dict()) == t
    att = t.attentions["softmax"]
    assert att.theory.points["P_star"] == json.loads(raw)["attentions"]["softmax"]["theory"]["P_star"]
    assert all(r.transition for r in att.transitions) and att.agreement and t.summary.attentions["softmax"]


def test_fields_read_as_typed_records():
    s = Summary.from_dict(_results()["summary"])
    sa = s.attentions["softmax"]
    jump = sa.transition("jump")
    assert jump.kind == "jump" and jump.cell("hmc") is jump.hmc and jump.hmc.verdict.outcome
    assert isinstance(sa.reference.convergence.paired_points, tuple)
    assert s.attentions["linear"].transition("jump") is None


def test_a_missing_key_names_the_file_and_the_key():
    summ = copy.deepcopy(_results()["summary"])
    del summ["attentions"]["linear"]["transitions"][1]["label"]
    with pytest.raises(ResultsFormatError, match=r"results\.json: summary\.attentions\.linear\.transitions\[1\]: "
                                                 r"missing key 'label'"):
        Summary.from_dict(summ, "results.json: summary")
    summ = copy.deepcopy(_results()["summary"])
    summ["attentions"]["softmax"]["convergence"]["surprise"] = 1
    with pytest.raises(ResultsFormatError, match=r"convergence: unknown key\(s\) \['surprise'\]"):
        Summary.from_dict(summ, "results.json: summary")


def test_an_optional_key_reads_as_none_and_stays_absent():
    summ = copy.deepcopy(_results()["summary"])
    conv = summ["attentions"]["softmax"]["reference"]["convergence"]
    del conv["n_pairs_on_target"], conv["below_target_points"]
    del summ["scaling"]
    s = Summary.from_dict(summ)
    assert s.attentions["softmax"].reference.convergence.n_pairs_on_target is None and s.scaling is None
    assert s.to_dict() == summ


@pytest.mark.parametrize("folder", sorted(p.parent.name for p in (ROOT / "docs").glob("studies*/studies.json")))
def test_every_studies_report_round_trips_byte_for_byte(folder):
    path = ROOT / "docs" / folder / "studies.json"
    raw = path.read_text()
    rep = read_studies(path)
    assert json.dumps(rep.to_dict(), indent=1, sort_keys=True) + "\n" == raw   # studies.tables.write_tables
    assert StudiesReport.from_dict(rep.to_dict()) == rep
    assert rep.studies and all(s.attentions for s in rep.studies)


def test_a_studies_report_without_a_required_key_names_it():
    d = json.loads((ROOT / "docs/studies/studies.json").read_text())
    del d["studies"][2]["attentions"]["softmax"]["transition"]["estimate"]
    with pytest.raises(ResultsFormatError, match=r"studies\.json: studies\[2\]\.attentions\.softmax\.transition: "
                                                 r"missing key 'estimate'"):
        StudiesReport.from_dict(d, "docs/studies/studies.json")
