"""Phase map (docs/theory.md Sec. 12): the copy-point helpers on planted curves; the σ² invariance of the
closed-form ratio. (The prior check by sampling is research: tests/research/test_prior_check.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from copyhead.config import ActionParams
from copyhead.results.phase_map_page import first_L_above_one
from copyhead.theory.phase_map import copy_points, softmax_copy_point


def test_copy_point_helpers_on_planted_curves():
    P = np.geomspace(1, 100, 400)
    aG = 1 / (1 + np.exp(-(P - 30) / 3))
    L = 16
    op = {"m1": 1 - aG, "mP": L * aG}
    assert abs(softmax_copy_point(op, P, L) - 30) < 0.3
    Ls = [16, 32, 64, 128]
    assert first_L_above_one(Ls, [0.5, 0.8, 1.25, 1.5]) == pytest.approx(np.exp((np.log(32) + np.log(64)) / 2))
    assert np.isnan(first_L_above_one(Ls, [0.5, 1.2, 0.9, 0.8]))
    assert first_L_above_one(Ls, [1.1, 1.2, 1.3, 1.4]) == 16


def test_closed_form_ratio_is_sigma2_invariant_and_matches_the_sec6_table():
    p = ActionParams(V=16, L=32, d_k=32, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1, prior="large_deviation")
    a = copy_points(p, 81, 60)
    b = copy_points(p.replace(sigma2=1.0), 81, 60)
    assert a["P_crossover"] / a["P_copy"] == pytest.approx(b["P_crossover"] / b["P_copy"], rel=0.01)
    # docs/theory.md Sec. 6 (grid_n 161, 120 P): crossover 13.1, P* 18.6 at L = 32, d_k = 32, sigma2 = 0.1
    assert a["P_crossover"] == pytest.approx(13.1, rel=0.01) and a["P_copy"] == pytest.approx(18.6, rel=0.01)
    assert a["softmax_jump"] == 1.0
