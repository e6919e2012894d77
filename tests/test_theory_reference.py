"""The design's reference behaviour (model-and-theory.md, Sec. 6), recomputed: see
``copyhead reference`` for the table. Tolerances: 1% on onsets and P*, 3% on crossovers
and spinodals (the spinodal is where a shallow minimum vanishes; our values are checked on a
200 001-point β grid, docs/theory.md Sec. 8), 0.003-0.03 absolute on order parameters."""
import pytest

from copyhead.theory.reference import check, reference_table

# the design's stored reference numbers, within physics tolerances (far wider than any kernel's spread)
pytestmark = pytest.mark.stored_numbers

ROWS = reference_table()


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_reference_behaviour(row):
    assert check(row), row
