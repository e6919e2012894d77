"""copyhead.studies.finite_size: the 1/d_k fit recovers a known line, and the comparison table is built
from results JSON files of several studies (synthetic rows with a gap that closes as 1/d_k)."""
import json

import numpy as np
import pytest

from copyhead.studies.finite_size import finite_size_table, fit_inverse_dk, write_finite_size


def test_fit_recovers_a_known_line():
    dk = np.array([32, 64, 128, 256])
    gap = 0.05 - 3.2 / dk
    f = fit_inverse_dk(dk, gap, np.full(4, 0.01))
    assert f["a"] == pytest.approx(0.05, abs=1e-12) and f["b"] == pytest.approx(-3.2, abs=1e-9)
    assert f["n"] == 4 and f["a_err"] > 0


def _study(tmp_path, dk, gap_inf):
    rows = []
    for att, param in (("linear", "cG"), ("softmax", "mP")):
        for P in (16.0, 48.0):
            theory = 0.3
            rows.append({"attention": att, "recipe": "sgld", "P": P, "param": param, "name": param, "method": "sgld",
                         "curve": "same_mean", "experiment": theory + gap_inf - 4.0 / dk, "theory": theory,
                         "error": 0.005, "theory_error": 0.0, "z": 0.0})
    d = {"config": {"json": json.dumps({"model": {"d_k": dk}, "task": {"L": 32, "V": 16}})}, "config_name": f"dk{dk}",
         "attentions": {"linear": {"agreement": rows[:2]}, "softmax": {"agreement": rows[2:]}}}
    p = tmp_path / f"dk{dk}.json"
    p.write_text(json.dumps(d))
    return p


def test_table_and_document_from_study_files(tmp_path):
    paths = [_study(tmp_path, dk, 0.0) for dk in (32, 64, 128)]
    table = write_finite_size(paths, tmp_path / "fs.md")
    assert len(table) == 4 and all(r["gap_closes"] for r in table)
    assert all(abs(r["fit"]["a"]) < 1e-9 for r in table)
    assert (tmp_path / "fig9_finite_size.png").stat().st_size > 0
    text = (tmp_path / "fs.md").read_text()
    assert "compatible with zero at 4 of 4" in text
    # a gap that stays open is reported as such
    open_paths = [_study(tmp_path, dk, 0.1) for dk in (32, 64, 128)]
    from copyhead.studies.finite_size import load_study
    rows = finite_size_table([load_study(p) for p in open_paths])
    assert not any(r["gap_closes"] for r in rows)
