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

# Integers and random draws specified bit-exactly (numpy's SeedSequence + PCG64): exact on every machine.
EXACT = 0.0

# A closed form evaluated in float64 (sums, products, a few special functions): a few ulps times its
# condition number.
CLOSED_FORM = 1e-9

# Iterated to convergence on a fixed grid (theory: bisection/brent root finding and quadrature on
# refined grids; a run of many Adam steps): the iteration carries rounding differences forward, and a
# root near a flat crossing moves by (rounding of the function) / (its slope). Measured: pinned theory
# numbers 0 to 2.1e-13 relative between kernels; golden Adam runs 0 (AVX2, AVX-512) to 3.5e-11
# (Prescott, torch at its baseline kernels) of each variable's largest magnitude: 1e-8 leaves ~300×.
ITERATED = 1e-8

# A fitted value (a logistic fit of a transition, bootstrap resamples of such fits, least-squares
# slopes): the optimiser stops at its tolerance, and the point where it stops follows the last bits of
# every residual. Measured: the softmax jump's logistic midpoint 23.7336376 (Prescott) / 23.7336596
# (Haswell, where it was stored) / 23.7336998 (SkylakeX): 1.7e-6 relative; the fitter's own tolerance
# is ~1e-5 relative on the midpoint.
FIT = 1e-4


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
