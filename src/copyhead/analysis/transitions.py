"""Transition points read off experimental curves y(P) on a grid of training-set sizes P.

Pure numpy, array in / number out. Every estimator interpolates linearly in log P between the two grid
points that bracket the event and returns NaN when the grid does not bracket it (no extrapolation).
"""
from __future__ import annotations

import numpy as np


def _finite(P, *ys):
    """P and the ys restricted to the points where all of them are finite, sorted by P."""
    P = np.asarray(P, float)
    ys = [np.asarray(y, float) for y in ys]
    ok = np.isfinite(P) & np.all([np.isfinite(y) for y in ys], axis=0)
    order = np.argsort(P[ok], kind="stable")
    return (P[ok][order], *(y[ok][order] for y in ys))


def upward_crossings(P, d) -> np.ndarray:
    """Every P where ``d`` changes from negative to non-negative between neighbouring grid points
    (``d[i-1] < 0 <= d[i]``), interpolated linearly in log P; in increasing order."""
    P, d = _finite(P, d)
    out = []
    for i in range(1, len(P)):
        if d[i - 1] < 0 <= d[i]:
            t = -d[i - 1] / (d[i] - d[i - 1])
            out.append(float(np.exp(np.log(P[i - 1]) + t * (np.log(P[i]) - np.log(P[i - 1])))))
    return np.asarray(out)


def crossover_point(P, c1, cG) -> float:
    """Linear attention: the first P where ĉG overtakes ĉ1 (ĉG − ĉ1 crosses zero upwards), interpolated in
    log P. NaN if ĉG never overtakes ĉ1 on the grid."""
    x = upward_crossings(P, np.asarray(cG, float) - np.asarray(c1, float))
    return float(x[0]) if len(x) else float("nan")


def largest_jump_midpoint(P, y) -> float:
    """The geometric midpoint √(P_i P_{i+1}) of the neighbouring grid points between which ``y`` rises
    most (a grid reading of a jump, resolved only to the grid). NaN with fewer than two finite points."""
    P, y = _finite(P, y)
    if len(P) < 2:
        return float("nan")
    i = int(np.argmax(np.diff(y)))
    return float(np.sqrt(P[i] * P[i + 1]))
