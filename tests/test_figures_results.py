"""fig3/fig4 (legend, theory lines, transition strip, hollow = not converged markers), their diagnostics
fig3b/fig4b (residuals, R̂), fig6 with plain-MAP Adam runs: synthetic aggregates of tests/test_results.py (the
variable layout of copyhead.aggregate)."""
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
    ag, _ = hysteresis_sweep(n_draws=1000)   # bulk ESS ~1000 per chain: the mixing rule's ESS >= 100 holds
    th = fake_theory("softmax", np.geomspace(4, 100, 80), {"saddle": (lambda P: 1 - P / 300, lambda P: P / 300),
                                                          "mean": (lambda P: 1 - P / 300, lambda P: P / 300)},
                     scalars={"P_star": 18.0, "P_spinodal_low": 11.0, "P_spinodal_high": 22.0})
    return {"aggregate_softmax": str(write_dataset(ag, d / "ag.nc")),
            "theory_softmax": str(write_dataset(th, d / "th.nc"))}, ag


def test_points_whose_chains_have_not_mixed_are_drawn_hollow(softmax_files):
    import matplotlib.pyplot as plt
    files, ag = softmax_files
    fig = FIGURES["fig4_softmax_order_params"].draw(files, {})
    ax = fig.axes[0]
    hollow = _points(ax, True)
    # prior- and copy-started chains disagree at P = 12, 16, 20 (paired R̂ > 1.01, the verdicts' mixing rule):
    # both recipes hollow
    aG = ag["mP_mean"] / L
    for P in (12, 16, 20):
        for opt in ("sgld", "sgld_copy"):
            y = float(aG.sel(optimizer=opt, P=P))
            assert any(x == P and yy == pytest.approx(y) for x, yy in hollow), (opt, P)
    assert not any(x in (8.0, 24.0, 32.0, 48.0) for x, _ in hollow)  # converged points stay filled
    assert "open markers: chains not mixed" in fig.axes[1].get_title()   # the strip above the panel
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:2] == ["SGLD", "SGLD, copy start"]   # one entry per recipe shown, then the theory
    assert all(t.startswith("theory") for t in labels[2:]) and len(labels) <= 6
    plt.close(fig)


def test_residual_panels_show_the_difference_to_the_named_curve(softmax_files):
    """fig4b: experiment − theory against each method's natural curve, bars ±2σ (so z = Δ/σ), and R̂."""
    import matplotlib.pyplot as plt
    files, _ = softmax_files
    fig = FIGURES["fig4b_softmax_diagnostics"].draw(files, {})
    axG, axr = fig.axes[1], fig.axes[3]
    assert "SGLD vs closed form, posterior mean" in fig._suptitle.get_text()
    ag, th = read_dataset(files["aggregate_softmax"]), read_dataset(files["theory_softmax"])
    rows = [r for r in agreement_table(ag, th, None, "softmax", recipes(ag))
            if r["curve"] == "closed_mean" and r["recipe"] == "sgld" and r["param"] == "aG" and np.isfinite(r["z"])]
    (c,) = [c for c in axG.containers if c.get_label() == "_$\\hat a_G$ SGLD"]
    x, y = (np.asarray(v, float) for v in c.lines[0].get_data())
    half = np.array([(seg[1, 1] - seg[0, 1]) / 2 for seg in c.lines[2][0].get_segments()])
    for r in rows:
        i = list(x).index(r["P"])
        assert y[i] == pytest.approx(r["experiment"] - r["theory"])
        assert y[i] / (half[i] / 2) == pytest.approx(r["z"], rel=1e-6)      # the bar is ±2σ of z
    assert axr.get_ylabel().startswith("split-")
    assert any(line.get_ydata()[0] == 1.05 for line in axr.lines if len(line.get_ydata()) == 2)
    legend = [t.get_text() for t in fig.axes[2].get_legend().get_texts()]   # every recipe, fig4's first
    assert legend[:2] == ["SGLD", "SGLD, copy start"] and "SGLD, prior vs copy start (across seeds)" in legend
    plt.close(fig)


def test_same_dataset_theory_is_drawn_named_and_the_residual_reference_when_given(tmp_path):
    import matplotlib.pyplot as plt
    ag, th, same = known_posterior(n_seeds=3, n_draws=40)
    files = {"aggregate_linear": str(write_dataset(ag, tmp_path / "ag.nc")),
             "theory_linear": str(write_dataset(th, tmp_path / "th.nc")),
             "datasets_linear": str(write_dataset(same, tmp_path / "same.nc"))}
    fig = FIGURES["fig3_linear_order_params"].draw(files, {})
    ax = fig.axes[0]
    # the same-dataset theory (mean over the seeds at the runs' P) is a line, named in the legend
    lines = [ln for ln in ax.lines if ln.get_label() == "theory, same training sets"]
    assert len(lines) == 2 and all(np.array_equal(np.asarray(ln.get_xdata(), float), same["P"].values.astype(float))
                                   for ln in lines)
    assert "theory, same training sets" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)
    fig = FIGURES["fig3b_linear_diagnostics"].draw(files, {})
    assert "same dataset, posterior mean" in fig._suptitle.get_text()
    plt.close(fig)


def _full_softmax_sweep(n_draws=20):
    """Softmax with every kind of recipe: HMC and SGLD from the prior and from the copy solution (prior
    starts copy from P = 24, copy starts from P = 12), Adam and plain-MAP Adam (one state per run)."""
    rng = np.random.default_rng(3)
    Ps = [8, 12, 16, 20, 24, 32]
    lev_p = np.where(np.array(Ps) >= 24, 0.6, 0.02)
    lev_c = np.where(np.array(Ps) >= 12, 0.6, 0.02)
    out = {}
    for name, lev, n in (("adam", lev_p, 1), ("adam_map", 0 * lev_p, 1), ("hmc", lev_p, n_draws),
                         ("hmc_copy", lev_c, n_draws), ("sgld", lev_p, n_draws), ("sgld_copy", lev_c, n_draws)):
        aG = lev[:, None, None] + 0.03 * rng.standard_normal((len(Ps), 4, n))
        out[name] = (1 - aG, aG)
    return fake_aggregate("softmax", out, Ps, range(4))


def test_main_recipes_are_the_reference_sampler_both_starts_sgld_and_adam():
    import xarray as xr
    from copyhead.figures.orders import main_recipes
    spec = {"adam": ("adam", "prior"), "adam_map": ("adam", "prior"), "hmc": ("hmc", "prior"),
            "hmc_copy": ("hmc", "copy"), "sgld": ("sgld", "prior"), "sgld_copy": ("sgld", "copy"),
            "sgld_half": ("sgld", "prior")}

    def recs(names):
        ag = xr.Dataset(coords={"optimizer": list(names)})
        return recipes(ag, {"optimizers": {n: {"method": spec[n][0], "init": spec[n][1]} for n in names}})
    assert main_recipes(recs(spec)) == ["hmc", "hmc_copy", "sgld", "adam"]
    assert main_recipes(recs(["adam", "adam_map", "sgld", "sgld_copy", "sgld_half"])) == ["sgld", "sgld_copy", "adam"]
    assert main_recipes(recs(["hmc", "sgld", "sgld_copy", "adam"])) == ["hmc", "sgld", "sgld_copy", "adam"]


def test_order_parameter_figure_legend_names_every_line_and_marks_stay_off_the_data(tmp_path):
    """fig4 as a referee reads it: ≤ 4 method entries and ≤ 6 entries in all, every theory line named in the
    legend, the transitions in a strip above the panel (the y axis holds the data and the theory only)."""
    from copyhead.figures import figure_data
    ag = _full_softmax_sweep()
    th = fake_theory("softmax", np.geomspace(4, 100, 60), {"saddle": (lambda P: 1 - P / 300, lambda P: P / 300),
                                                          "mean": (lambda P: 1 - P / 300, lambda P: P / 300)},
                     scalars={"P_star": 18.0, "P_spinodal_low": 11.0, "P_spinodal_high": 22.0})
    from summaries import cell, summary
    res = tmp_path / "results.json"
    res.write_text(json.dumps({"summary": summary({"softmax": [
        {"kind": "jump", "label": "jump of âG", "hmc": cell("hmc", 22.0, 20.0, 24.0),
         "sgld": cell("sgld", 22.0, 20.0, 24.0), "adam": cell("adam", 21.0, 16.0, 24.0)},
        {"kind": "hysteresis_lower", "hmc": cell("hmc+hmc_copy", 10.5, None, None)},
        {"kind": "hysteresis_upper", "hmc": cell("hmc+hmc_copy", 22.5, None, None)}]})}))
    files = {"aggregate_softmax": str(write_dataset(ag, tmp_path / "ag.nc")),
             "theory_softmax": str(write_dataset(th, tmp_path / "th.nc"))}
    fig = FIGURES["fig4_softmax_order_params"].draw(dict(files, results=str(res)), {})
    main, strip = figure_data(fig)["axes"][:2]   # what the provenance record (write_figure) says the figure shows
    legend = main["legend"]
    methods = [t for t in legend if not t.startswith("theory")]
    assert methods == ["HMC (reference)", "HMC, copy start", "SGLD", "Adam"] and len(legend) <= 6
    named = [t for t in legend if t.startswith("theory")]
    drawn = [a["line"] for a in main["artists"] if a.get("line")]   # the record names the theory's lines
    assert named == ["theory, closed form"] and drawn == named * 2       # one line per order parameter
    ax, st = fig.axes[:2]
    legend_names = {t.get_text() for t in ax.get_legend().get_texts()}
    for ln in ax.lines:
        x = np.asarray(ln.get_xdata(), float)
        if ln.get_linestyle() in ("None", "none", "") or (len(x) == 2 and x[0] == x[1]):
            continue   # markers, and the vertical transition lines (named on the strip's top edge)
        assert ln.get_label() in legend_names, ln.get_label()
    # the y axis holds the data (â in [0, 1]) and nothing above it; the marks are in the strip
    assert ax.get_ylim()[1] < 1.1
    assert [t.get_text() for t in st.get_yticklabels()] == ["HMC", "SGLD", "Adam", "hysteresis"]
    bars = sorted(tuple(ln.get_xdata()) for ln in st.lines if len(ln.get_xdata()) == 2 and ln.get_linestyle() == "-")
    assert (10.5, 22.5) in bars and (20.0, 24.0) in bars and (16.0, 24.0) in bars
    assert strip["ylim"] != main["ylim"]
    import matplotlib.pyplot as plt
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
