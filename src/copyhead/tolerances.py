"""Tolerances for numbers computed on one machine and compared on another (stored test numbers, published
pages checked by ``copyhead audit --docs``).

Floating point differs between CPUs and BLAS kernels (OpenBLAS picks its kernels by CPU: SSE, AVX2,
AVX-512), so a number computed here and stored elsewhere agrees only to what its computation allows:
a closed form to a few ulps times its condition, an iterated or fitted value to far less (a rounding
difference at one step of an optimiser, a bisection or a least-squares fit moves the result by the
problem's conditioning). Measured deviations between kernels are written next to each tolerance
(machine default = SkylakeX, Haswell, Prescott with ATEN_CPU_CAPABILITY=default; AMD EPYC, 2026-12-02;
``python benchmarks/stored_deviations.py`` under each, as benchmarks/cross_kernel.sh runs it).

A tolerance must still catch a real change: a changed formula, step, grid, seed or schedule moves
these numbers by far more.
"""

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

# A fitted value (a fit of a transition, bootstrap resamples of such fits, least-squares
# slopes): the optimiser stops at its tolerance, and the point where it stops follows the last bits of
# every residual. Measured on the logistic fit of the softmax jump (the results tables' estimator before
# the steepest-rise bracket): midpoint 23.7336376 (Prescott) / 23.7336596 (Haswell, where it was stored)
# / 23.7336998 (SkylakeX): 1.7e-6 relative; the fitter's own tolerance is ~1e-5 relative on the midpoint.
FIT = 1e-4
