"""Pinned theory numbers: a refactor of copyhead.theory must leave the netCDF numbers unchanged.

The values were written by the code before the predict.py split (commit 39fdb2b) on a reduced copy of the
default config (V = 16, L = 32, d_k = 32, σ² = 0.1; coarser grids so that it runs in about a second).
A change of method, grid or refinement moves these numbers by far more. The tolerance is tests/stored.py's ITERATED (root finding
and refined quadrature on fixed grids). test_theory_reference.py checks the physics (1-3 %), this file
checks that nothing moved.
"""
import numpy as np
import pytest

from copyhead.config import theory_params
from copyhead.theory.output import compute_theory
from stored import ITERATED

pytestmark = pytest.mark.stored_numbers


def pinned_cfg():
    return {"task": {"V": 16, "L": 32},
            "model": {"d_k": 32, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0, "sigma2": 0.1},
            "theory": {"prior": "large_deviation", "P_min": 2.0, "P_max": 60.0, "n_P": 40, "grid_n": 61,
                       "landscape_P": {"linear": [], "softmax": []},
                       "exact": {"n_datasets": 2, "P": [4, 16, 24], "seed": 0},
                       "scaling": {"L": []}}}


PINNED = {
    "linear": {
        # weak first-order onset (negative Landau quartic), crossover; Gaussian prior: no jump
        "P_onset": 7.8733975926492885, "P_crossover": 13.115727808258617, "P_star": 7.644739748909817,
        "P_spinodal_low": 7.5820818817212645, "P_spinodal_high": 7.8733975926492885,
        "P_star_gaussian": np.nan,
        "P_onset_exact": 7.211877257347781, "P_star_exact": np.nan, "P_crossover_exact": 12.571022727272727,
        "cG_saddle_exact": [0.0, 0.2231805778120041, 0.3065970809051046],
    },
    "softmax": {
        "P_star": 18.580579435385697, "P_spinodal_low": 16.26604378221029,
        "P_spinodal_high": 25.28856465551526, "P_star_gaussian": 29.23605437736922,
        "P_onset": np.nan, "P_star_exact": 12.947831674003856,
        "cG_saddle_exact": [0.0011190728090568571, 0.49826225859500484, 0.9744638459399969],
    },
}


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_theory_numbers_are_pinned(attention):
    ds = compute_theory(theory_params(pinned_cfg()), attention, log=lambda *a: None)
    for name, want in PINNED[attention].items():
        got = np.atleast_1d(ds[name].values)
        assert np.allclose(got, np.atleast_1d(want), rtol=ITERATED, atol=1e-12, equal_nan=True), (name, got, want)
