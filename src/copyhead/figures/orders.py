"""fig3/fig4: the order parameters against P with residuals, test loss and R̂ (``fig_order_params``),
and the reading of the results model's transitions (``results_summary``) that fig3, fig4 and fig8 mark."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..analysis import sequence_length
from ..analysis.convergence import RHAT_MAX
from ..analysis.curves import CURVES
from ..analysis.experiments import KEYS, recipes
from ..analysis.tables import figure_statistics
from ..attention import ATTENTIONS, variant
from ..order_params import paper_order_parameters
from ..provenance import read_dataset
from .style import (C1_COLOR, CG_COLOR, EXACT_MEAN_LS, OPT_COLORS, WIDE, annotate_status, errorbar_points,
                    hollow_points, log_P_axis, mark_nonfinite, mark_transitions, op_names, opt_label, opt_marker,
                    pyplot, residual_axis, rhat_panel)


def results_summary(inputs) -> dict | None:
    """The ``summary`` of the results JSON given as the ``results`` input (copyhead.analysis.summary), or None."""
    path = inputs.get("results")
    return json.loads(Path(path).read_text()).get("summary") if path else None


def experiment_transition(summary, attention: str, kind: str, method: str = "sgld") -> dict | None:
    """The summary's (estimate, ci_lo, ci_hi, recipe, theory) of one transition kind and method, or None."""
    if not summary:
        return None
    rows = summary["attentions"].get(attention, {}).get("transitions", [])
    cell = next((r.get(method) for r in rows if r["kind"] == kind), None)
    est = cell and cell.get("estimate")
    return cell if est is not None and np.isfinite(est) else None


def _recipes(ag, options):
    """Recipes of the aggregate with method and start (options["recipes"] from the config, else inferred)."""
    spec = options.get("recipes")
    return recipes(ag, {"optimizers": spec} if spec else None)


def _optional(inputs, role):
    return read_dataset(inputs[role]) if inputs.get(role) else None


MARKED = {a: v.marked for a, v in ATTENTIONS.items()}   # the results' kinds marked per attention


LABEL_BOX = dict(boxstyle="square,pad=0.05", fc="white", ec="none", alpha=0.75)   # text over the P* lines


def _mark_experimental_transitions(ax, summary, attention):
    """The results model's transitions (analysis.summary) as horizontal 95% CI bars in a strip at the top of
    ``ax``, one row per (kind, method), beside the theory's vertical lines; the hysteresis window of the
    SGLD starts as a bar from its lower to its upper edge. Returns the number of bars drawn."""
    if not summary:
        return 0
    rows = {r["kind"]: r for r in summary["attentions"].get(attention, {}).get("transitions", [])}
    y, n = 0.955, 0
    tr = ax.get_xaxis_transform()
    for kind in MARKED[attention]:
        for method in ("hmc", "sgld", "adam"):
            c = rows.get(kind, {}).get(method)
            if not c or c["estimate"] is None:
                continue
            lo, hi = c["ci_lo"], c["ci_hi"]
            color = OPT_COLORS.get(c["recipe"], "k")
            if lo is not None and hi is not None:
                ax.plot([lo, hi], [y, y], "-", color=color, lw=1.6, transform=tr, solid_capstyle="butt", zorder=6)
            ax.plot([c["estimate"]], [y], opt_marker(c["recipe"]), color=color, ms=3.5, mec="k", mew=0.4,
                    transform=tr, zorder=7)
            ax.text(hi if hi is not None else c["estimate"], y, f" {opt_label(c['recipe'])} {rows[kind]['label'].split()[0]}",
                    transform=tr, fontsize=5, va="center", ha="left", color=color, clip_on=True, zorder=9,
                    bbox=LABEL_BOX)
            y -= 0.055
            n += 1
    lo_, hi_ = rows.get("hysteresis_lower", {}).get("sgld"), rows.get("hysteresis_upper", {}).get("sgld")
    if lo_ and hi_ and lo_["estimate"] is not None and hi_["estimate"] is not None:
        ax.plot([lo_["estimate"], hi_["estimate"]], [y, y], "-", color=OPT_COLORS["sgld_copy"], lw=1.6,
                transform=tr, zorder=6)
        ax.text(hi_["estimate"], y, " SGLD starts disagree", transform=tr, fontsize=5, va="center",
                color=OPT_COLORS["sgld_copy"], clip_on=True, zorder=9, bbox=LABEL_BOX)
        n += 1
    return n


def fig_order_params(inputs, options, attention):
    """fig3 (linear: ĉ1, ĉG) / fig4 (softmax: â1, âG, incl. copy-initialised SGLD for the hysteresis) vs P:
    experiments as markers (the aggregate's mean ± sem over seeds; no bar with one seed; hollow where the
    chains' split-R̂ exceeds the threshold, copyhead.analysis.convergence.flagged_points), theory as lines (styles in the
    caption; ĉ1/ĉG labelled directly), the theory's transitions as named vertical lines and the results
    model's experimental transitions (analysis.summary, from ``inputs["results"]``) as 95% CI bars at the top;
    below, the residuals z = (experiment − theory)/error against the theory curve named on the panel
    (copyhead.analysis.agreement: SGLD against the posterior mean, Adam against the minimiser, of the same-dataset theory
    if given, else the exact dataset average, else the closed form); right: test loss and R̂ vs P."""
    plt = pyplot()
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    th = read_dataset(inputs[f"theory_{attention}"])
    same = _optional(inputs, f"datasets_{attention}")
    L = sequence_length(ag)
    n1, nG = op_names(attention)
    recs = _recipes(ag, options)
    rhat_max = options.get("rhat_max", RHAT_MAX)
    stats = figure_statistics(ag, th, same, attention, recs, rhat_max)
    fig, axs = plt.subplots(2, 2, figsize=(WIDE, 3.9), sharex="col",
                            gridspec_kw={"width_ratios": [1.5, 1], "height_ratios": [2.2, 1], "wspace": 0.3,
                                         "hspace": 0.25})
    (ax, axl), (axz, axr) = axs
    # theory: minimiser (dashed), posterior mean (dotted), dataset-averaged exact minimiser (dash-dot)
    t1, tG = paper_order_parameters(th, attention, L, "_saddle")
    for y, color in ((t1, C1_COLOR), (tG, CG_COLOR)):
        ax.plot(th["P"], y, "--", color=color, lw=1)
    if "c1_mean" in th:
        for y, color in zip(paper_order_parameters(th, attention, L, "_mean"), (C1_COLOR, CG_COLOR)):
            ax.plot(th["P"], y, ":", color=color, lw=1)
    if "P_exact" in th.coords and "c1_saddle_exact" in th:
        for y, color in zip(paper_order_parameters(th, attention, L, "_saddle_exact"), (C1_COLOR, CG_COLOR)):
            ax.plot(th["P_exact"], y, "-.", color=color, lw=0.8, alpha=0.8)
        if "c1_mean_exact" in th and stats["reference"].get("sgld") == "exact_mean":
            for y, color in zip(paper_order_parameters(th, attention, L, "_mean_exact"), (C1_COLOR, CG_COLOR)):
                ax.plot(th["P_exact"], y, ls=EXACT_MEAN_LS, color=color, lw=0.8, alpha=0.7)
    if same is not None:  # same-dataset theory: mean over the seeds at the runs' P (x minimiser, + mean)
        for kind, mk in (("saddle", "x"), ("mean", "+")):
            for y, color in zip(paper_order_parameters(same, attention, L, f"_{kind}_same"), (C1_COLOR, CG_COLOR)):
                ax.plot(same["P"], y.mean("seed"), mk, color=color, ms=3.5, mew=0.7, ls="none")
    P = ag["P"].values
    Pmax = float(P.max()) * 1.25
    for name, y, color in ((n1, t1, C1_COLOR), (nG, tG, CG_COLOR)):
        yy = np.interp(np.log(Pmax), np.log(th["P"].values), np.asarray(y, float))
        ax.annotate(name, (Pmax, yy), fontsize=7, color=color, va="center", ha="left", annotation_clip=False)
    # experiments: the aggregate's mean ± sem over seeds (SGLD: each seed is one chain's posterior mean)
    means, sems = (paper_order_parameters(ag, attention, L, s) for s in ("_mean", "_sem"))
    flags = stats["flags"]
    for opt in ag["optimizer"].values:
        opt = str(opt)
        for key, mean, sem, color, name in zip(KEYS[attention], means, sems, (C1_COLOR, CG_COLOR), (n1, nG)):
            y = mean.sel(optimizer=opt)
            # the leading "_" keeps these out of the legend (one entry per recipe, below)
            errorbar_points(ax, P, y, sem.sel(optimizer=opt), fmt=opt_marker(opt), color=color, ms=3,
                            capsize=2.5, elinewidth=1.0, capthick=0.8, lw=0.8, zorder=4,
                            label=f"_{name} {opt_label(opt)}")
            bad = np.array([flags.get((opt, float(p), key), False) for p in P]) & np.isfinite(y.values)
            hollow_points(ax, P[bad], y.values[bad], opt_marker(opt), color, ms=3)
            rz = [(p, z) for p, z in ((r["P"], r["z"]) for r in stats["residuals"].get(opt, []) if r["param"] == key)
                  if np.isfinite(z)]
            if rz:
                zp, zv = (np.array(v, float) for v in zip(*rz))
                axz.plot(zp, zv, opt_marker(opt), color=color, ms=3, ls="none")
                badz = np.array([flags.get((opt, float(p), key), False) for p in zp])
                hollow_points(axz, zp[badz], zv[badz], opt_marker(opt), color, ms=3)
        errorbar_points(axl, P, ag["test_loss_final_mean"].sel(optimizer=opt),
                        ag["test_loss_final_sem"].sel(optimizer=opt), fmt=opt_marker(opt) + "-",
                        color=OPT_COLORS.get(opt, "k"), ms=3, capsize=2, lw=0.8, label=opt_label(opt))
        ax.plot([], [], opt_marker(opt), color="0.35", ms=4, ls="none", label=opt_label(opt))
        mark_nonfinite(ax, ag, opt)
    summary = results_summary(inputs)
    _mark_experimental_transitions(ax, summary, attention)
    if summary is None:
        ax.text(0.01, 0.99, "no results JSON: experimental transitions not drawn", transform=ax.transAxes,
                fontsize=5, va="top", color="0.4")
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi + 0.3 * (hi - lo))   # room for the transition strip above the data
    residual_axis(axz, {m: CURVES[c][0] for m, c in stats["reference"].items() if c})
    rhat_panel(axr, stats["convergence"], KEYS[attention], (C1_COLOR, CG_COLOR), rhat_max)
    for a in (axz, axr):
        log_P_axis(a, P)
    mark_transitions(ax, th, variant(attention).theory_marks)
    for a in (ax, axl):
        a.set_xlabel("")
        a.tick_params(labelbottom=False)
    ax.set_ylabel("order parameter")
    ax.set_title(f"{attention} attention: order parameters (open markers: split-$\\hat R$ > {rhat_max:g})")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=6, ncol=len(labels), loc="upper center", bbox_to_anchor=(0.5, 0.02))
    axl.set_ylabel("test loss per token")
    axl.set_yscale("log")
    axl.set_title("test loss")
    axl.legend(fontsize=5.5, loc="lower left", frameon=False, handlelength=1.8)   # ≤ 4 recipes: the colour key
    annotate_status(axl, ag)
    return fig
