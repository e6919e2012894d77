"""fig3/fig4 residual panels and hollow (not converged) markers, fig6 with plain-MAP Adam runs: synthetic
aggregates of tests/test_results.py (the variable layout of copyhead.aggregate)."""
import json
from pathlib import Path

import numpy as np
import pytest

from copyhead import config as c
from copyhead.analysis.agreement import agreement_table
from copyhead.analysis.experiments import recipes
from copyhead.figures import FIGURES
from copyhead.provenance import read_dataset, write_dataset
from test_results import L, fake_aggregate, fake_theory, hysteresis_sweep, known_posterior


def _points(ax, hollow: bool):
    """(x, y) of the marker-only lines on ``ax`` that are white-filled (hollow) or not."""
    out = []
    for line in ax.lines:
        if line.get_linestyle() not in ("None", "none", "") or line.get_marker() in ("None", "", None):
            continue
        is_hollow = line.get_markerfacecolor() == "white"
        if is_hollow == hollow:
            out += list(zip(np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)))
    return out


@pytest.fixture(scope="module")
def softmax_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fig4")
    ag, _ = hysteresis_sweep(n_draws=80)
    th = fake_theory("softmax", np.geomspace(4, 100, 80), {"saddle": (lambda P: 1 - P / 300, lambda P: P / 300),
                                                          "mean": (lambda P: 1 - P / 300, lambda P: P / 300)},
                     scalars={"P_star": 18.0, "P_spinodal_low": 11.0, "P_spinodal_high": 22.0})
    return {"aggregate_softmax": str(write_dataset(ag, d / "ag.nc")),
            "theory_softmax": str(write_dataset(th, d / "th.nc"))}, ag


def test_points_with_large_rhat_are_drawn_hollow(softmax_files):
    import matplotlib.pyplot as plt
    files, ag = softmax_files
    fig = FIGURES["fig4_softmax_order_params"].draw(files, {})
    ax = fig.axes[0]
    hollow = _points(ax, True)
    # prior- and copy-started chains disagree at P = 12, 16, 20 (pooled/paired R̂ > 1.05): both recipes hollow
    aG = ag["mP_mean"] / L
    for P in (12, 16, 20):
        for opt in ("sgld", "sgld_copy"):
            y = float(aG.sel(optimizer=opt, P=P))
            assert any(x == P and yy == pytest.approx(y) for x, yy in hollow), (opt, P)
    assert not any(x in (8.0, 24.0, 32.0, 48.0) for x, _ in hollow)  # converged points stay filled
    assert "open markers: split" in ax.get_title()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(labels) <= 4 and "SGLD" in labels   # one legend entry per recipe, nothing else
    plt.close(fig)


def test_residual_panel_shows_z_against_the_named_curve(softmax_files):
    import matplotlib.pyplot as plt
    files, _ = softmax_files
    fig = FIGURES["fig4_softmax_order_params"].draw(files, {})
    axz, axr = fig.axes[2], fig.axes[3]
    assert "SGLD vs closed form, posterior mean" in axz.get_title()
    ag, th = read_dataset(files["aggregate_softmax"]), read_dataset(files["theory_softmax"])
    rows = [r for r in agreement_table(ag, th, None, "softmax", recipes(ag))
            if r["curve"] == "closed_mean" and r["recipe"] == "sgld" and r["param"] == "aG"]
    drawn = _points(axz, False) + _points(axz, True)
    for r in rows:
        assert any(x == r["P"] and y == pytest.approx(r["z"]) for x, y in drawn)
    assert axr.get_ylabel().startswith("split-")
    assert any(line.get_ydata()[0] == 1.05 for line in axr.lines if len(line.get_ydata()) == 2)
    plt.close(fig)


def test_same_dataset_theory_is_the_residual_reference_when_given(tmp_path):
    import matplotlib.pyplot as plt
    ag, th, same = known_posterior(n_seeds=3, n_draws=40)
    files = {"aggregate_linear": str(write_dataset(ag, tmp_path / "ag.nc")),
             "theory_linear": str(write_dataset(th, tmp_path / "th.nc")),
             "datasets_linear": str(write_dataset(same, tmp_path / "same.nc"))}
    fig = FIGURES["fig3_linear_order_params"].draw(files, {})
    assert "same dataset, posterior mean" in fig.axes[2].get_title()
    # the same-dataset theory is drawn (× minimiser, + posterior mean; named in the caption, not the legend)
    marks = {ln.get_marker() for ln in fig.axes[0].lines if ln.get_linestyle() in ("None", "none")
             and np.array_equal(np.asarray(ln.get_xdata(), float), same["P"].values.astype(float))}
    assert {"x", "+"} <= marks
    plt.close(fig)


def test_loss_curves_include_plain_map_adam_runs(tmp_path):
    import matplotlib.pyplot as plt
    rng = np.random.default_rng(0)
    Ps = [4, 8]
    x = rng.uniform(0, 0.1, (2, 2, 1))
    ag = fake_aggregate("linear", {"adam": (x, x), "adam_map": (x, x), "sgld": (x, x)}, Ps, [0, 1])
    ag = ag.assign_coords(step=[0, 10, 100])
    ag["test_loss"] = (("optimizer", "P", "seed", "step"), rng.uniform(0.5, 1.5, (3, 2, 2, 3)))
    path = str(write_dataset(ag, tmp_path / "ag.nc"))
    opts = {"recipes": {"adam": {"method": "adam", "init": "prior"}, "adam_map": {"method": "adam", "init": "prior"},
                        "sgld": {"method": "sgld", "init": "prior"}}}
    fig = FIGURES["fig6_linear_loss_curves"].draw({"aggregate_linear": path}, opts)
    panels = [ax for ax in fig.axes if ax.get_title()]   # one panel per Adam recipe (the colour bar has none)
    assert [ax.get_title().splitlines()[1] for ax in panels] == ["Adam (4 runs)", "Adam (plain MAP) (4 runs)"]
    for ax in panels:   # per P one median line over the seeds, and its band (range over seeds)
        y = np.asarray(ag["test_loss"].sel(optimizer="adam" if "plain" not in ax.get_title() else "adam_map").values)
        lines = [line for line in ax.lines if len(line.get_xdata())]
        assert len(lines) == 2 and len(ax.collections) >= 2
        for line, P in zip(lines, range(2)):
            np.testing.assert_allclose(line.get_ydata(), np.median(y[P], axis=0)[1:])
    plt.close(fig)


def test_registry_options_and_optional_inputs():
    cfg = c.load(Path(__file__).resolve().parents[1] / "tests/configs/tiny.yaml")
    f = FIGURES["fig3_linear_order_params"]
    assert f.optional == (("datasets", "linear"),)
    assert all(kind in ("aggregate", "theory") for kind, _ in f.needs)  # what figures.smk builds today
    opts = f.options(cfg)
    json.dumps(opts)
    assert opts["recipes"]["sgld"] == {"method": "sgld", "init": "prior"}
    assert FIGURES["fig4_softmax_order_params"].options(cfg)["recipes"]["sgld_copy"]["init"] == "copy"


def test_method_colours_never_reuse_the_order_parameter_colours():
    """One colour meaning per figure: blue/orange are ĉ1/â1 and ĉG/âG; no method is drawn in them."""
    from matplotlib.colors import to_rgb
    from copyhead.figures.style import C1_COLOR, CG_COLOR, OPT_COLORS
    params = {to_rgb(C1_COLOR), to_rgb(CG_COLOR)}
    assert not params & {to_rgb(c) for c in OPT_COLORS.values()}
    assert len({to_rgb(c) for c in OPT_COLORS.values()}) == len(OPT_COLORS)
