"""docs/one_loop.md judges by the effect size first (issue 49): every verdict row of the page's answer gives
the largest |Δ| = |measured − theory| against the tolerance fixed in advance (copyhead's agreement tolerance,
copyhead.analysis.summary.AGREE_TOLERANCE) before its significance (z); and research.one_loop.compare's
largest |Δ| on a planted study."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from copyhead.analysis.summary import AGREE_TOLERANCE
from copyhead.provenance import read_dataset
from research.one_loop import compare as cmp
from research.one_loop.page import render

ROOT = Path(__file__).resolve().parents[2]
# a verdict row: a line of the answer that states a significance (an RMS z or a z with its number, or 2σ)
SIGNIFICANCE = re.compile(r"RMS z[^.;]*?\d|\(z = [−+-]?\d|within 2σ")

# tests of the research package (src/research/one_loop): -m research
pytestmark = pytest.mark.research


def verdict_rows(text: str) -> list[str]:
    answer = text.split("## Answer\n\n", 1)[1].split("\n\n", 1)[0]
    return [ln for ln in answer.splitlines() if ln.lstrip().startswith("- ") and SIGNIFICANCE.search(ln)]


def _effect_size_first(text: str) -> None:
    rows = verdict_rows(text)
    assert len(rows) >= 10, rows
    tolerance = f"|Δ| ≤ {AGREE_TOLERANCE:g}"
    for row in rows:
        assert "|Δ|" in row and tolerance in row, row
        first = SIGNIFICANCE.search(row).start()
        assert row.index("|Δ|") < first and row.index(tolerance) < first, row


def test_every_verdict_row_of_the_published_page_gives_delta_and_the_tolerance_first():
    _effect_size_first((ROOT / "docs/one_loop.md").read_text())


def test_every_verdict_row_the_page_renders_gives_delta_and_the_tolerance_first():
    d = ROOT / "docs/one_loop"
    read = {k: read_dataset(d / f"{k}.nc") for k in ("finite_size", "finite_L", "finite_size_coarse9", "converged",
                                                     "finite_size_softmax")}
    _effect_size_first(render(read["finite_size"], read["finite_L"], check=read["finite_size_coarse9"],
                              converged=read["converged"], softmax=read["finite_size_softmax"]))


def test_the_tolerance_is_copyheads_agreement_tolerance():
    assert cmp.TOLERANCE == AGREE_TOLERANCE == 0.02


def test_largest_delta_is_the_worst_counted_point_relative_to_its_theory_value():
    """Two sizes, two P, two parameters: |Δ| = |gap − shift| at the worst point the RMS z counts (a flagged
    point is not counted), Δ relative to measured − Δ (the corrected theory there); NaN where nothing counts."""
    dims = ("ratio", "x", "param")
    gap = np.array([[[0.05, -0.01], [0.30, 0.30]], [[0.02, -0.03], [0.01, 0.002]]])     # (ratio, x, param)
    shift = np.array([[[0.01, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])
    exp = np.full(gap.shape, 0.5)
    soft = np.array([[0.0, 1.0], [0.0, 1.0]])                                          # x = 32 flagged everywhere
    ds = xr.Dataset({"gap": (dims, gap), "experiment": (dims, exp), "error": (dims, np.full(gap.shape, 0.01)),
                     "mean_none": (dims, np.zeros(gap.shape)), "mean_one_loop": (dims, shift),
                     "soft_weight": (("ratio", "x"), soft), "near_unstable_weight": (("ratio", "x"), 0 * soft)},
                    coords={"ratio": [1.0, 2.0], "x": [16, 32], "param": ["c1", "cG"]}, attrs={"setting_flag": 0.5})
    a, r = cmp.largest_delta(ds, "one_loop")
    assert float(a.sel(x=16)) == pytest.approx(0.04) and float(r.sel(x=16)) == pytest.approx(0.04 / 0.46)
    assert np.isnan(float(a.sel(x=32))) and np.isnan(float(r.sel(x=32)))
    a0, _ = cmp.largest_delta(ds)
    assert float(a0.sel(x=16)) == pytest.approx(0.05)
