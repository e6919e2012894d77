"""Tolerances of the tests that compare with numbers stored on one machine (tests/data/, pinned literals).

Floating point differs between CPUs and BLAS kernels (OpenBLAS picks its kernels by CPU: SSE, AVX2,
AVX-512), so a number computed here and stored elsewhere agrees only to what its computation allows:
a closed form to a few ulps times its condition, an iterated or fitted value to far less (a rounding
difference at one step of an optimiser, a bisection or a least-squares fit moves the result by the
problem's conditioning). Each tolerance below says which computations it is for and why; every test
that uses one carries the pytest marker ``stored_numbers`` (tests/test_stored_numbers.py enforces it),
and ``benchmarks/cross_kernel.sh`` reruns exactly those tests under other OpenBLAS kernels — run it
before you store or change stored numbers. Measured deviations between kernels are written next to each
tolerance (machine default = SkylakeX, Haswell, Prescott with ATEN_CPU_CAPABILITY=default; AMD EPYC,
2026-12-02; ``python benchmarks/stored_deviations.py`` under each, as cross_kernel.sh runs it).

A tolerance must still catch a real change: a changed formula, step, grid, seed or schedule moves
these numbers by far more (each test module shows that its tolerance rejects such a change).
"""
import numpy as np
import pytest

# the tolerances themselves live in the package (copyhead.tolerances), where the audit of published pages uses them
from copyhead.tolerances import CLOSED_FORM, EXACT, FIT, ITERATED

__all__ = ["CLOSED_FORM", "EXACT", "FIT", "ITERATED", "approx", "assert_same_across_machines"]


def approx(want, rel, abs_=0.0):
    """``pytest.approx`` with NaN equal to NaN (a stored NaN means: not defined at this point)."""
    return pytest.approx(want, rel=rel, abs=abs_, nan_ok=True)


def assert_same_across_machines(old, new, integer=False, name="", rtol=ITERATED):
    """``new`` equals ``old`` up to differences between machines: exactly for integers, NaN at the same
    places, and within ``rtol`` of the variable's largest magnitude for floats (an array of a run: its
    small entries carry the rounding of its large ones)."""
    old, new = np.asarray(old), np.asarray(new)
    assert (np.isnan(old) == np.isnan(new)).all(), (name, "NaN at other places")
    if integer:
        assert (old == new).all(), name          # integers: exact on every machine
        return
    ok = ~np.isnan(old)
    scale = np.max(np.abs(old[ok]), initial=0.0)
    err = np.max(np.abs(old[ok] - new[ok]), initial=0.0)
    assert err <= rtol * scale, (name, err, scale)
