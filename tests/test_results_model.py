"""The typed results model (copyhead.analysis.results_model) reads the committed results.json's summary
and studies.json files and writes them back key for key; a file without a required key is named with it."""
import copy
import json
from pathlib import Path

import pytest

from copyhead.analysis.results_model import ResultsFormatError, Summary
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
