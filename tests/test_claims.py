"""The claims table answers each scaling claim on every path the studies ran (fixed d_k, d_k ∝ L) and says
in the verdict itself when the paths disagree (issue 49: a row that cited one path hid the other)."""
import math

from copyhead.analysis.results_model import (Ratio, ScalingRow, StudiesReport, StudyPath, StudyTransition,
                                             TheoryLines)
from copyhead.results.claims import _advantage, _both_ways, _scaling


def _part(rows):
    return StudiesReport(studies=(), scaling=StudyPath(group="scaling", rows=tuple(rows), theory_lines=TheoryLines()))


def _row(L, d_k, jump, V=16, ratio=None):
    jump_row = StudyTransition(name="jump", recipe="sgld", estimate=jump, ci_lo=jump * 0.9, ci_hi=jump * 1.1,
                               resolved=True, note="", theory={}, bracket=(jump * 0.9, jump * 1.1))
    return ScalingRow(name=f"L{L}", L=L, V=V, d_k=d_k, sigma2=1.0, method="SGLD", sqrt_LV=math.sqrt(L * V),
                      ln2L=math.log(L) ** 2, mixing={}, softmax=jump_row,
                      ratio=None if ratio is None else Ratio(experiment=ratio, lo=ratio * 0.9, hi=ratio * 1.1))


def test_both_ways_names_each_path_only_when_they_disagree():
    assert _both_ways([("d_k = 2L", "supported"), ("fixed d_k = 16", "supported")]) == "supported on every path"
    assert _both_ways([("d_k = 2L", "supported")]) == "supported"
    both = _both_ways([("d_k = 2L", "supported"), ("fixed d_k = 16", "not supported")])
    assert both.startswith("the evidence points both ways") and "d_k = 2L: supported" in both \
        and "fixed d_k = 16: not supported" in both


def test_scaling_and_advantage_rows_answer_every_path():
    grow = [_row(L, 2 * L, 5.0 * math.log(L) ** 2, ratio=0.5) for L in (16, 24, 32)]     # P* ∝ ln²L along d_k = 2L
    flat = [_row(L, 16, 20.0, ratio=1.4 + L / 1000) for L in (16, 32, 64)]               # P* flat at fixed d_k
    studies = [("studies", _part(grow)), ("studies_fixed", _part(flat))]
    row = _scaling(studies)
    assert "d_k = 2L: jumps" in row[1] and "fixed d_k = 16: jumps" in row[1]
    assert row[2].startswith("the evidence points both ways")
    assert "d_k = 2L: supported in tokens" in row[2] and "fixed d_k = 16: not supported" in row[2]
    assert "studies/studies.md" in row[4] and "studies_fixed/studies.md" in row[4]
    adv = _advantage(studies)
    assert "d_k = 2L: not shown" in adv[2] and "fixed d_k = 16: supported at L = 16, 32, 64" in adv[2]
