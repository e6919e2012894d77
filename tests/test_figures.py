"""Figures: the registry the Snakefile imports stays light; drawings plot the aggregate's seed statistics;
make_figure writes the outputs and the provenance sidecar. Synthetic aggregate/theory files (no training)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from copyhead.figures import FIGURES, make_figure
from copyhead.provenance import sha256_file, write_dataset

ROOT = Path(__file__).resolve().parents[1]
L = 6


def synthetic_aggregate(attention="linear", seeds=(0, 1)):
    """An aggregate-shaped dataset (copyhead.aggregate's variables) whose stored ``_mean``/``_sem`` differ
    on purpose from the statistics of its per-seed values, so a test sees which ones a figure plots."""
    rng = np.random.default_rng(0)
    opts, Ps, steps = ["adam", "sgld"], [4, 8], [1, 10, 100]
    grid = (len(opts), len(Ps), len(seeds))
    dims = ("optimizer", "P", "seed")
    ds = xr.Dataset(coords={"optimizer": opts, "P": Ps, "seed": list(seeds), "step": steps,
                            "query": range(L), "key": range(L)})
    A = rng.uniform(0, 1, grid + (L, L))
    A /= A.sum(-1, keepdims=True)
    ds["attention"] = (dims + ("query", "key"), A)
    ds["test_loss"] = (dims + ("step",), rng.uniform(0.5, 1.5, grid + (len(steps),)))
    status = np.full(grid, "ok", dtype="<U8")
    status[1, :, 1:] = "absent"  # sgld: one seed only
    ds["status"] = (dims, status)
    for i, v in enumerate(("c1", "cG", "m1", "mP", "coverage_ratio", "test_loss_final")):
        ds[v] = (dims, rng.uniform(0.1, 0.9, grid))
        ds[f"{v}_mean"] = (dims[:2], 0.1 + 0.05 * i + 0.01 * np.arange(4).reshape(2, 2))
        sem = np.full((2, 2), 0.02 + 0.001 * i)
        sem[1] = np.nan  # one seed: no error bar
        ds[f"{v}_sem"] = (dims[:2], sem)
    ds.attrs.update(copyhead_kind="aggregate", attention=attention, config_hash="agg",
                    config_json=json.dumps({"task": {"L": L}}))
    return ds


def synthetic_theory():
    P = np.geomspace(1, 50, 12)
    ds = xr.Dataset(coords={"P": P})
    for v, y in (("c1", 0.3 + 0 * P), ("cG", P / 60), ("m1", 1 - P / 60), ("mP", L * P / 60)):
        ds[f"{v}_saddle"] = ("P", y)
    ds["P_onset"], ds["P_crossover"] = 2.0, 18.0
    ds.attrs.update(copyhead_kind="theory", config_hash="th")
    return ds


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("figdata")
    return {"aggregate_linear": str(write_dataset(synthetic_aggregate(), d / "agg_linear.nc")),
            "theory_linear": str(write_dataset(synthetic_theory(), d / "th_linear.nc"))}


def _errorbars(fig):
    """label -> (x, y, half-width of each bar, NaN where no bar) of every errorbar on the figure."""
    out = {}
    for ax in fig.axes:
        for c in ax.containers:
            data_line, _, (bars,) = c.lines[0], c.lines[1], c.lines[2]
            x, y = data_line.get_xdata(), data_line.get_ydata()
            half = np.array([(s[1, 1] - s[0, 1]) / 2 if s.size else np.nan for s in bars.get_segments()])
            out[c.get_label()] = (np.asarray(x, float), np.asarray(y, float), half)
    return out


def test_registry_imports_neither_matplotlib_nor_torch():
    code = ("import sys, copyhead.figures as f; f.FIGURES['fig3_linear_order_params'].available(['linear']); "
            "print(sorted(m for m in ('matplotlib', 'torch', 'xarray') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


def test_registry_entries_resolve():
    from copyhead import config as c
    cfg = c.load(ROOT / "tests/configs/tiny.yaml")
    assert list(FIGURES) == ["fig1_stages", "fig2_landscapes", "fig3_linear_order_params",
                             "fig3b_linear_diagnostics", "fig4_softmax_order_params", "fig4b_softmax_diagnostics",
                             "fig5_coverage", "fig6_linear_loss_curves", "fig7_softmax_loss_curves", "fig8_scaling"]
    for name in FIGURES:   # every figure has its caption for the Snakemake report (figures.smk)
        assert (ROOT / f"workflow/report/{name}.rst").read_text().strip(), name
    for main, diag in (("fig3_linear_order_params", "fig3b_linear_diagnostics"),
                       ("fig4_softmax_order_params", "fig4b_softmax_diagnostics")):   # the same inputs
        assert (FIGURES[diag].needs, FIGURES[diag].optional) == (FIGURES[main].needs, FIGURES[main].optional)
        assert FIGURES[diag].options(cfg) == FIGURES[main].options(cfg)
    for name, f in FIGURES.items():
        assert f.name == name and callable(f.draw)
        assert all(kind in ("aggregate", "theory") and att in ("linear", "softmax") for kind, att in f.needs)
        json.dumps(f.options(cfg))  # options are JSON (the rule's params)
    assert FIGURES["fig1_stages"].options(cfg)["stages"]["linear"] == [["pooling", 4], ["copy", 8]]
    assert FIGURES["fig3_linear_order_params"].available(["linear"])
    assert not FIGURES["fig5_coverage"].available(["linear"])


def test_names_of_the_former_module_still_resolve():
    import copyhead.figures as f
    ag = synthetic_aggregate()
    ag["status"][0, 0, 0] = "diverged"
    assert f._status_note(ag) == "1 diverged run(s) excluded"
    with pytest.raises(AttributeError):
        f.no_such_name


def test_order_parameter_figure_plots_the_aggregates_mean_and_sem(files):
    import matplotlib.pyplot as plt
    ag = synthetic_aggregate()
    fig = FIGURES["fig3_linear_order_params"].draw(files, {})
    bars = _errorbars(fig)
    for opt, label in (("adam", "Adam"), ("sgld", "SGLD")):
        for var, name in (("c1", "$\\hat c_1$"), ("cG", "$\\hat c_G$")):
            x, y, half = bars[f"_{name} {label}"]
            np.testing.assert_array_equal(x, [4, 8])
            np.testing.assert_allclose(y, ag[f"{var}_mean"].sel(optimizer=opt).values)
            np.testing.assert_allclose(half, ag[f"{var}_sem"].sel(optimizer=opt).values)  # NaN for sgld
    plt.close(fig)
    fig = FIGURES["fig3b_linear_diagnostics"].draw(files, {})   # the test loss moved to the diagnostics
    bars = _errorbars(fig)
    for opt, label in (("adam", "Adam"), ("sgld", "SGLD")):
        _, y, half = bars[label]  # test-loss panel
        np.testing.assert_allclose(y, ag["test_loss_final_mean"].sel(optimizer=opt).values)
        np.testing.assert_allclose(half, ag["test_loss_final_sem"].sel(optimizer=opt).values)
    assert np.isnan(bars["SGLD"][2]).all()  # one seed: no bar at all (not a zero-length one)
    plt.close(fig)


def test_make_figure_writes_pdf_png_and_provenance(files, tmp_path):
    out = tmp_path / "figs" / "fig6_linear_loss_curves.pdf"
    rec = make_figure("fig6_linear_loss_curves", {"aggregate_linear": files["aggregate_linear"]}, out, {})
    side = json.loads(out.with_suffix(".provenance.json").read_text())
    assert side == json.loads(json.dumps(rec))
    assert side["inputs"]["aggregate_linear"] == {
        "path": files["aggregate_linear"], "sha256": sha256_file(files["aggregate_linear"]),
        "kind": "aggregate", "config_hash": "agg", "code_version": ""}
    for ext in ("pdf", "png"):
        assert side["outputs"][ext]["sha256"] == sha256_file(out.with_suffix("." + ext))
    with pytest.raises(ValueError, match="unknown figure 'fig9'"):
        make_figure("fig9", {}, tmp_path / "x.pdf")


def test_transition_outside_the_swept_range_leaves_no_stray_label(files):
    import matplotlib.pyplot as plt
    fig = FIGURES["fig3_linear_order_params"].draw(files, {})  # theory onset at P=2, sweep P=4, 8
    ax, strip = fig.axes[0], fig.axes[1]
    # the named lines are the ticks of an axis on top of the strip above the panel (one per transition)
    (top,) = strip.child_axes
    names = dict(zip(top.xaxis.get_major_formatter().seq, top.xaxis.get_majorticklocs()))
    assert names == {"onset 2": 2.0, "crossover 18": 18.0}
    lo, hi = ax.get_xlim()
    assert not lo <= names["onset 2"] <= hi              # out of the panel's view: line and name not drawn
    assert not ax.child_axes and not any(t.get_text().startswith(("onset", "crossover")) for t in ax.texts)
    assert {ln.get_xdata()[0] for ln in ax.lines if len(ln.get_xdata()) == 2} >= {2.0, 18.0}   # lines continue
    # without a results JSON the experimental transitions are not drawn, and the strip says so
    assert "no results JSON: experimental transitions not drawn" in {t.get_text() for t in strip.texts}
    plt.close(fig)


def test_landscape_levels_are_round_numbers():
    """fig2's shared colour scale: contour levels (and so the colour-bar ticks) at a round step from 0."""
    from copyhead.figures.draw import _round_levels
    lv = _round_levels(1377.2)
    assert lv[0] == 0 and lv[-1] <= 1377.2 and 6 <= len(lv) <= 14
    step = lv[1] - lv[0]
    assert step in (100, 200, 250, 500) and np.allclose(np.diff(lv), step)
    assert all(f"{v:g}" == f"{int(v)}" for v in lv)   # plain numbers: 0, 200, …, not 917.9, 1147


def _scaling_theory(attention):
    """A theory file with the scaling scan fig8 draws (P_*_vs_L at L = 8..64; the run's L = 32)."""
    Ls = np.array([8, 16, 32, 64])
    ds = xr.Dataset(coords={"P": np.geomspace(1, 50, 12), "scaling_L": Ls})
    for k, base in (("P_onset_vs_L", 5.0), ("P_crossover_vs_L", 10.0), ("P_star_vs_L", 18.0)):
        ds[k] = ("scaling_L", base * (Ls / 32.0) ** 0.3)
    ds.attrs.update(copyhead_kind="theory", config_hash="th", attention=attention,
                    config_json=json.dumps({"task": {"L": 32}}))
    return ds


def test_fig8_draws_the_results_models_transitions_with_their_cis(tmp_path):
    """fig8's experimental marks are the summary's numbers (the estimator of the results page), with bars."""
    import matplotlib.pyplot as plt
    from summaries import cell, summary
    res = tmp_path / "results.json"
    res.write_text(json.dumps({"summary": summary({
        "linear": [{"kind": "crossover", "sgld": cell("sgld", 15.4, 14.6, 16.2)}],
        "softmax": [{"kind": "jump", "sgld": cell("sgld", 24.3, 20.2, 26.0)}]})}))
    inputs = {f"theory_{a}": str(write_dataset(_scaling_theory(a), tmp_path / f"th_{a}.nc"))
              for a in ("linear", "softmax")}
    fig = FIGURES["fig8_scaling"].draw(dict(inputs, results=str(res)), {})
    bars = _errorbars(fig)
    for label, (e, lo, hi) in (("SGLD crossover at $L=32$, 95% CI", (15.4, 14.6, 16.2)),
                               ("SGLD jump at $L=32$, 95% CI", (24.3, 20.2, 26.0))):
        x, y, _ = bars[label]
        assert y == pytest.approx([e])
        assert list(x) == [32.0]    # at the run's L itself, not offset "for legibility"
        seg = fig.axes[0].containers[[c.get_label() for c in fig.axes[0].containers].index(label)].lines[2][0]
        assert sorted(seg.get_segments()[0][:, 1]) == pytest.approx([lo, hi])
    marks = [c.lines[0].get_marker() for c in fig.axes[0].containers]
    assert len(set(marks)) == 2   # told apart by marker (and colour), not by position
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("paper" in s and "L\\ln^2L" in s for s in labels) and len(labels) <= 4
    assert {"onset", "crossover", "$P^*$"} <= {t.get_text() for t in fig.axes[0].texts}   # named directly
    plt.close(fig)
    fig = FIGURES["fig8_scaling"].draw(inputs, {})   # no results JSON: said on the panel, nothing made up
    assert not _errorbars(fig)
    assert any("no results JSON" in t.get_text() for t in fig.axes[0].texts)
    plt.close(fig)


def test_studies_finite_size_figure_colours_by_P_instead_of_a_legend_entry_per_curve():
    """fig9/fig9b of the studies: one colour bar for P/P_ref and a marker key, not 12 legend entries."""
    import matplotlib.pyplot as plt
    from copyhead.analysis.results_model import FiniteSize
    from copyhead.figures.studies import draw_finite_size
    at = {"d_k": 16, "L": 16, "experiment": 0.0, "theory": 0.0}
    fit = {"a_err": 0.1, "b_err": 0.1, "chi2_dof": 1.0, "n": 3}
    pts = [dict(at, x=x, P=10.0, gap=-1.0 / x, error=0.01, z=0.0, study=f"S{x}") for x in (16, 32, 64)]
    params = {"linear": (("c1", "ĉ1"), ("cG", "ĉG")), "softmax": (("aG", "âG"),)}
    gaps = [{"attention": att, "recipe": "hmc", "ratio": r, "param": p, "name": n, "points": pts,
             "fit": dict(fit, a=0.0, b=-1.0), "closes": True}
            for att, ps in params.items() for r in (0.5, 0.7, 0.75, 1.0, 1.35, 1.4, 2.0) for p, n in ps]
    transitions = [{"attention": "linear", "transition": "crossover", "prior": "large_deviation",
                    "fit": dict(fit, a=1.0, b=0.5), "tends_to_theory": True,
                    "points": [dict(at, x=x, ci_lo=0.0, ci_hi=0.0, ratio=1.0 + 0.5 / x, error=0.05)
                               for x in (16, 32, 64)]}]
    fs = FiniteSize.from_dict({"by": "d_k", "values": [16, 32, 64], "L": 16, "d_k_over_L": None, "gaps": gaps,
                               "transitions": transitions, "agreement": []})
    fig = draw_finite_size(fs, "synthetic", (frozenset({("S16", "linear", 10.0, "cG")}), frozenset()))
    sizes = [len(ax.get_legend().get_texts()) for ax in fig.axes if ax.get_legend()]
    assert sizes and max(sizes) <= 4          # (a): ĉ1, ĉG, the faded key; (b): âG; (c): one per transition series
    from copyhead.figures.studies import FADED_ALPHA, FADED_LABEL
    faded = [c for c in fig.axes[0].containers if c.lines[0].get_alpha() == FADED_ALPHA]
    assert len(faded) == 7 and all(list(c.lines[0].get_xdata()) == [1 / 16] for c in faded)   # ĉG at d_k = 16, each P
    assert FADED_LABEL in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert not any(c.lines[0].get_alpha() for ax in fig.axes[1:] for c in ax.containers)
    (cbar,) = [a for ax in fig.axes for a in ax.child_axes if "P / P_ref" in a.get_ylabel()]
    ticks = [t.get_text() for t in cbar.get_yticklabels()]
    assert "0.5" in ticks and "2" in ticks and len(ticks) < 7   # 0.7/0.75 and 1.35/1.4: one tick each
    plt.close(fig)
