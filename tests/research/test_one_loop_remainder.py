"""research.one_loop.remainder_fit and the page's lines of research.one_loop.page_remainder
(docs/one_loop.md, Section 0b): the remainder of the measured ĉG gap
after the pooling-sector shift against L/d_k, on synthetic studies with a planted law
r/shift = a + b L/d_k — the fit recovers it, the d_k = L points stay out of the fit, the flags and the
duplicate size of the scaling study are respected, and the page's lines are rendered from it."""
import numpy as np
import pytest
import xarray as xr

from research.one_loop import compare as cmp
from research.one_loop import remainder_fit as rf
from research.one_loop import page_remainder as rem
from research.one_loop import posterior as lp

# tests of the research package (src/research/one_loop): -m research
pytestmark = pytest.mark.research

A, B = 0.07, 0.4          # the planted law r/shift = A + B L/d_k


def study(L, d_k, ratios, soft=None, tilt=1.0, by="d_k"):
    """A one-loop predictions file of the shape predict.compute writes, linear, with the pooling variant:
    shift −L/d_k × 0.05 (ĉG), remainder shift·(A + B L/d_k)·tilt, measured error 1e-4."""
    L, d_k, ratios = np.asarray(L), np.asarray(d_k), np.asarray(ratios, dtype=float)
    shape = (len(ratios), len(d_k), 2)
    shift = np.broadcast_to((-0.05 * L / d_k)[None, :, None], shape).copy()
    r = shift * (A + B * L / d_k)[None, :, None] * np.broadcast_to(np.asarray(tilt, dtype=float), d_k.shape)[None, :, None]
    base = np.full(shape, 0.1)
    soft = np.zeros((len(ratios), len(d_k))) if soft is None else soft
    ds = xr.Dataset({"gap": (("ratio", "x", "param"), shift + r), "error": (("ratio", "x", "param"), np.full(shape, 1e-4)),
                     "mean_none_dataset": (("ratio", "x", "param"), base),
                     f"mean_{cmp.POOLING}": (("ratio", "x", "param"), base + shift),
                     "P": (("ratio", "x"), 10.0 * ratios[:, None] * np.ones(len(d_k))),
                     "soft_weight_pooling_dataset": (("ratio", "x"), soft),
                     "near_unstable_weight_pooling_dataset": (("ratio", "x"), 0 * soft)},
                    coords={"ratio": ratios, "x": L if by == "L" else d_k, "param": ["c1", "cG"],
                            "d_k": ("x", d_k), "L": ("x", np.broadcast_to(L, d_k.shape).copy())})
    ds.attrs.update(setting_flag=lp.SETTINGS["flag"], by=by)
    return ds


def named(tilt_dup=1.0, soft_at=None):
    """The three linear studies; the scaling study's L = 16 point (the finite-size d_k = 32) off the law by
    ``tilt_dup``."""
    soft = np.zeros((2, 4))
    if soft_at is not None:
        soft[soft_at] = 0.99
    fs = study(16, [16, 32, 64, 128], [1.35, 2.0], soft=soft)
    fl = study([16, 24], [32, 48], [1.35, 2.0], tilt=[tilt_dup, 1.0], by="L")     # L = 16 is the finite-size d_k = 32
    cv = study(32, [32], [1.5, 2.5])
    return [("finite_size", fs, "d_k", ""), ("finite_L", fl, "L", ""), ("converged", cv, "d_k", "")]


def test_fit_recovers_the_planted_law_and_leaves_d_k_equal_L_out():
    rows = rf.points(named(tilt_dup=3.0))
    fit = rf.relative_fit(rows)
    assert fit["a"] == pytest.approx(A, abs=1e-9) and fit["b"] == pytest.approx(B, abs=1e-9)
    assert fit["at_1"] == pytest.approx(A + B, abs=1e-9)
    # d_k ≥ 2L at ratio 2: finite size 32, 64, 128 and L = 24 (the duplicate L = 16, d_k = 32 once, from the
    # finite-size study: its tilted copy would break the law)
    assert fit["n"] == 4 and all(p["d_k"] >= 2 * p["L"] for p in fit["points"])
    at_L = [p for p in rf.at_ratio(rows, 2.0) if p["d_k"] == p["L"]]
    assert [p["r_over_shift"] for p in at_L] == pytest.approx([A + B])
    lo, hi = rf.bracket(rows, 2.0, 32, 32)
    assert (lo["ratio"], hi["ratio"]) == (1.5, 2.5)


def test_a_flagged_point_is_not_fitted():
    rows = rf.points(named(soft_at=(1, 3)))                 # ratio 2, d_k = 128 soft-flagged
    fit = rf.relative_fit(rows)
    assert fit["n"] == 3 and all(p["d_k"] != 128 for p in fit["points"])
    assert rf.relative_fit(rf.points(named(soft_at=(1, slice(1, 4))))) is None      # L = 24 alone: no fit


def test_page_lines_read_the_fit():
    rows = rf.points(named())
    fit = rf.relative_fit(rows)
    line = rem.answer_line(rows, fit)[0]
    assert "Why the aim fails" in line and "0.07 ±" in line and "(0.4 ±" in line
    sec = rem.section(rows, fit)
    assert sec[0] == "## 0b. What the one loop leaves at d_k = L"
    assert any(s.startswith("| converged | 32 | 32 | 1 |") for s in sec)
    none = rf.points([("softmax", named()[0][1], "d_k", "")])             # no linear study: no rows, no section
    assert none == [] and rf.relative_fit(none) is None and rem.section(none, None) == []
    # r/shift's error is the measured error over |shift|, the fit's weight its inverse square
    assert all(p["q_err"] == pytest.approx(p["err"] / abs(p["shift"])) for p in rows if p["shift"])
