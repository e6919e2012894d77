"""fig3/fig4: the order parameters against P in the paper's style (``fig_order_params``), their diagnostics
fig3b/fig4b (``fig_diagnostics``: residuals, test loss, split-R̂ of every recipe), and the reading of the
results model's transitions (``results_summary``) that fig3, fig4 and fig8 mark."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..analysis import sequence_length
from ..analysis.convergence import MIXED_ESS, MIXED_RHAT, RHAT_MAX
from ..analysis.curves import CURVES
from ..analysis.experiments import KEYS, recipes
from ..analysis.results_model import Cell, Summary
from ..analysis.results_tables import figure_statistics
from ..attention import ATTENTIONS, variant
from ..format import ok, sampler_name
from ..order_params import paper_order_parameters
from ..provenance import read_dataset
from .style import (C1_COLOR, CG_COLOR, OPT_COLORS, WIDE, annotate_status, errorbar_points, hollow_points,
                    log_P_axis, mark_nonfinite, mark_transitions, op_names, opt_label, opt_marker, pyplot)


def results_summary(inputs) -> Summary | None:
    """The ``summary`` of the results JSON given as the ``results`` input (copyhead.analysis.summary), or None."""
    path = inputs.get("results")
    if not path:
        return None
    d = json.loads(Path(path).read_text())
    return Summary.from_dict(d["summary"], f"{path}: summary") if "summary" in d else None


def experiment_transition(summary: Summary | None, attention: str, kind: str, method: str = "sgld") -> Cell | None:
    """The summary's (estimate, ci_lo, ci_hi, recipe, theory) of one transition kind and method, or None."""
    sa = summary.attentions.get(attention) if summary else None
    row = sa.transition(kind) if sa else None
    cell = row.cell(method) if row else None
    return cell if cell and ok(cell.estimate) else None


def _estimate(c: Cell | None) -> float | None:
    """A cell's estimate, None where it has none."""
    return c.estimate if c and ok(c.estimate) else None


def _recipes(ag, options):
    """Recipes of the aggregate with method and start (options["recipes"] from the config, else inferred)."""
    spec = options.get("recipes")
    return recipes(ag, {"optimizers": spec} if spec else None)


def _optional(inputs, role):
    return read_dataset(inputs[role]) if inputs.get(role) else None


MARKED = {a: v.marked for a, v in ATTENTIONS.items()}   # the results' kinds marked per attention
LABEL_BOX = dict(boxstyle="square,pad=0.05", fc="white", ec="none", alpha=0.8)   # text over the P* lines
METHOD_ORDER = ("hmc", "sgld", "adam")                  # the reference sampler first
MAX_MAIN = 4                                            # method entries of fig3/fig4's legend, at most


def main_recipes(recs: dict) -> list[str]:
    """The recipes fig3/fig4 show (at most ``MAX_MAIN``), in this order: the prior-started recipe of each
    method (HMC, the reference posterior; SGLD; Adam: the recipe named like the method, else its first
    prior-started one), and right after the first sampler's, its copy-started twin (the hysteresis check:
    prior- and copy-started chains side by side). Every other recipe (plain-MAP Adam, SGLD's half step, a
    second copy-started sampler) is drawn in the diagnostics figure (:func:`fig_diagnostics`)."""
    out, copy_added = [], False
    for m in METHOD_ORDER:
        prior = sorted((r for r in recs.values() if r.method == m and r.init != "copy"),
                       key=lambda r: (r.name != m, r.name))
        if not prior:
            continue
        out.append(prior[0].name)
        copies = sorted(r.name for r in recs.values() if r.method == m and r.init == "copy"
                        and r.twin in ("", prior[0].name))
        if copies and not copy_added and m != "adam":
            out.append(copies[0])
            copy_added = True
    known = [r for r in recs if r not in out and recs[r].method not in METHOD_ORDER]   # unknown methods last
    return (out + sorted(known))[:MAX_MAIN]


def theory_curves(th, same, attention: str, L: int) -> list[tuple[str, object, tuple, dict]]:
    """The theory drawn in fig3/fig4, as (legend label, P, (y1, yG), line style): the closed form's posterior
    mean on its dense grid (the paper's curve), and the most specific theory the residuals compare with — the
    same-dataset theory (each run's own training set, averaged over the seeds, at the runs' P) if given,
    else the dataset-averaged exact action. Posterior means (the samplers' reference): the minimisers
    (Adam's) differ from them by less than the line width except for linear ĉ1 just above the onset
    (fig3b/fig4b compare Adam with the minimiser)."""
    out = []
    kind = "_mean" if "c1_mean" in th else "_saddle"
    out.append(("theory, closed form", th["P"].values, paper_order_parameters(th, attention, L, kind),
                dict(ls="-", lw=1.0, alpha=0.85)))
    if same is not None:
        k = "_mean_same" if "c1_mean_same" in same else "_saddle_same"
        ys = tuple(y.mean("seed") for y in paper_order_parameters(same, attention, L, k))
        out.append(("theory, same training sets", same["P"].values, ys, dict(ls=(0, (3, 1.5)), lw=1.0)))
    elif "P_exact" in th.coords and "c1_saddle_exact" in th:
        k = "_mean_exact" if "c1_mean_exact" in th else "_saddle_exact"
        out.append(("theory, exact dataset average", th["P_exact"].values,
                    paper_order_parameters(th, attention, L, k), dict(ls=(0, (3, 1.5)), lw=1.0)))
    return out


def _short(recipe: str) -> str:
    """'HMC', 'SGLD', 'Adam' for a method's recipe (the transition strip's row names)."""
    return opt_label(recipe).split(" (")[0]


def _transition_strip(ax, summary, attention: str, shown: list[str], recs: dict) -> int:
    """The results model's experimental transitions (analysis.summary) in a strip above the order
    parameters, one row per method of the main figure: the 95% bootstrap CI over seeds as a bar in the
    colour of the order parameter that carries the transition (onset of ĉ1: blue; crossover, jump of âG:
    orange), the method's marker at the estimate, the kind named beside it; a last row for the
    prior- vs copy-start window (hysteresis) of the copy-started sampler shown. Returns the bars drawn."""
    ax.set_ylim(-0.6, 0.4)
    for s in ax.spines.values():
        s.set_visible(False)
    ax.tick_params(axis="x", which="both", bottom=False, labelbottom=False)
    ax.tick_params(axis="y", length=0, labelsize=5.5, pad=1)
    if not summary:
        ax.set_yticks([])
        ax.text(0.01, 0.5, "no results JSON: experimental transitions not drawn", transform=ax.transAxes,
                fontsize=5.5, va="center", color="0.4")
        return 0
    sa = summary.attentions.get(attention)
    rows = {r.kind: r for r in (sa.transitions if sa else ())}
    methods = [m for m in METHOD_ORDER if any(recs[r].method == m and recs[r].init != "copy" for r in shown)]
    copy = next((r for r in shown if recs[r].init == "copy"), None)
    names, n, y = [], 0, 0.0
    for m in methods:
        found = False
        for kind in MARKED[attention]:
            c = rows[kind].cell(m) if kind in rows else None
            if not c or not ok(c.estimate):
                continue
            color = C1_COLOR if kind == "onset" else CG_COLOR
            lo, hi = c.ci_lo, c.ci_hi
            if ok(lo) and ok(hi):
                ax.plot([lo, hi], [y, y], "-", color=color, lw=2.2, solid_capstyle="butt", zorder=3)
            mk = opt_marker(c.recipe)
            ax.plot([c.estimate], [y], mk, color=color, ms=5.5 if mk == "*" else 4, mec="k", mew=0.4,
                    zorder=4)
            ax.annotate(kind, (hi if ok(hi) else c.estimate, y), xytext=(2, 0),
                        textcoords="offset points", fontsize=5, va="center", color="0.25", bbox=LABEL_BOX,
                        zorder=5)
            found, n = True, n + 1
        if not found:
            ax.text(0.01, y, "no transition found", transform=ax.get_yaxis_transform(), fontsize=5,
                    va="center", color="0.4")
        names.append(_short(m))
        y -= 1.0
    if copy is not None and "hysteresis_lower" in rows:
        m = recs[copy].method
        lo, hi = (_estimate(rows[k].cell(m)) if k in rows else None for k in ("hysteresis_lower", "hysteresis_upper"))
        if lo is not None or hi is not None:
            x0 = lo if lo is not None else ax.get_xlim()[0]
            x1 = hi if hi is not None else ax.get_xlim()[1]
            ax.plot([x0, x1], [y, y], "-", color="0.4", lw=2.2, solid_capstyle="butt", zorder=3)
            ax.annotate(f"{_short(m)}, prior and copy starts differ", (x1, y), xytext=(2, 0),
                        textcoords="offset points",
                        fontsize=5, va="center", color="0.25")
            n += 1
        else:
            ax.text(0.01, y, f"{_short(m)}, prior vs copy start: no window found",
                    transform=ax.get_yaxis_transform(), fontsize=5, va="center", color="0.25")
        names.append("hysteresis")
        y -= 1.0
    ax.set_ylim(y + 0.4, 0.6)
    ax.set_yticks(-np.arange(len(names)), names)
    return n


def fig_order_params(inputs, options, attention):
    """fig3 (linear: ĉ1, ĉG) / fig4 (softmax: â1, âG) against P in the paper's style: one panel, colour =
    order parameter (named at the right end of its curves), marker = method (:func:`main_recipes`: HMC
    prior- and copy-started, SGLD, Adam; one legend entry each, at most four), the aggregate's mean ± 1
    standard error over seeds (no bar with one seed; hollow where the chains have not mixed by the verdicts'
    rule, copyhead.analysis.convergence.mixing_status); the theory as lines named in the legend
    (:func:`theory_curves`). Above the panel, a strip with the theory's transitions (vertical lines, named
    on its top edge) and the results model's experimental ones with their 95% CIs (:func:`_transition_strip`),
    so no mark covers a point and the y axis holds only the data. Residuals, test loss, R̂ and the other
    recipes: :func:`fig_diagnostics`."""
    plt = pyplot()
    from matplotlib.lines import Line2D
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    th = read_dataset(inputs[f"theory_{attention}"])
    same = _optional(inputs, f"datasets_{attention}")
    L = sequence_length(ag)
    n1, nG = op_names(attention)
    recs = _recipes(ag, options)
    shown = main_recipes(recs)
    rhat_max = options.get("rhat_max", RHAT_MAX)
    flags = figure_statistics(ag, th, same, attention, recs, rhat_max)["flags"]
    summary = results_summary(inputs)
    n_rows = 1 + (len({recs[r].method for r in shown}) if summary else 0)
    fig = plt.figure(figsize=(4.9, 3.45 + 0.12 * n_rows))
    gs = fig.add_gridspec(2, 1, height_ratios=[0.16 * n_rows + 0.06, 2.6], hspace=0.04)
    ax = fig.add_subplot(gs[1])
    strip = fig.add_subplot(gs[0], sharex=ax)
    P = ag["P"].values
    handles = []
    # experiments: the aggregate's mean ± 1 standard error over seeds (HMC, SGLD: each seed one chain's mean)
    means, sems = (paper_order_parameters(ag, attention, L, s) for s in ("_mean", "_sem"))
    for z, opt in enumerate(shown):
        mk = opt_marker(opt)
        # copy-started chains: a larger marker under the prior-started one, so a point where both starts agree
        # shows both (the triangle framing the star)
        ms = _ms(mk, 3.8) if recs[opt].init != "copy" else 6.2
        zo = 4 if recs[opt].init == "copy" else 8 - z   # the first (reference) on top, copy starts at the bottom
        for key, mean, sem, color, name in zip(KEYS[attention], means, sems, (C1_COLOR, CG_COLOR), (n1, nG)):
            y = mean.sel(optimizer=opt)
            # the leading "_" keeps these out of the legend (one neutral entry per recipe, below)
            errorbar_points(ax, P, y, sem.sel(optimizer=opt), fmt=mk, color=color, ms=ms, mec="k", mew=0.35,
                            capsize=2.0, elinewidth=0.9, capthick=0.8, lw=0.8, zorder=zo,
                            label=f"_{name} {opt_label(opt)}")
            bad = np.array([flags.get((opt, float(p), key), False) for p in P]) & np.isfinite(y.values)
            hollow_points(ax, P[bad], y.values[bad], mk, color, ms=ms, zorder=zo + 0.5)
        handles.append(Line2D([], [], marker=mk, color="0.45", mec="k", mew=0.35, ms=ms, ls="none",
                              label=opt_label(opt)))
        mark_nonfinite(ax, ag, opt)
    # theory: lines, each named in the legend (grey there: the colour is the order parameter's)
    curves = theory_curves(th, same, attention, L)
    for label, Pt, ys, style in curves:
        for y, color in zip(ys, (C1_COLOR, CG_COLOR)):
            # labelled with the legend's name (the legend takes its handles below; the record names the lines)
            ax.plot(Pt, np.asarray(y, float), color=color, zorder=2, label=label, **style)
        handles.append(Line2D([], [], color="0.35", label=label, **style))
    log_P_axis(ax, P)
    Pmax = ax.get_xlim()[1]
    Pt, ys = curves[0][1], curves[0][2]
    for name, y, color in zip((n1, nG), ys, (C1_COLOR, CG_COLOR)):
        yy = np.interp(np.log(Pmax), np.log(np.asarray(Pt, float)), np.asarray(y, float))
        ax.annotate(name, (Pmax, yy), xytext=(2, 0), textcoords="offset points", fontsize=8, color=color,
                    va="center", ha="left", annotation_clip=False)
    ax.set_ylabel(f"order parameter ({n1}, {nG})")
    # transitions: the theory's as vertical lines through strip and panel, named on the strip's top edge
    _transition_strip(strip, summary, attention, shown, recs)
    mark_transitions(strip, th, variant(attention).theory_marks, also=(ax,))
    strip.set_title(f"{attention} attention\n(open markers: chains not mixed, split-$\\hat R$ > {MIXED_RHAT:g} "
                    f"or bulk ESS < {MIXED_ESS:g} on a training set)", fontsize=7.5)
    annotate_status(ax, ag)
    # below the panel, attached to it (so the record's figure_data lists the entries with the panel)
    ax.legend(handles=handles, fontsize=6.5, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.15),
              handlelength=2.6, columnspacing=1.2)
    return fig


def _ms(marker: str, size: float) -> float:
    """Marker size that looks as large as the others for ``marker`` (a star at the same size looks small)."""
    return size * 1.5 if marker == "*" else size


def _rhat_rows(rows) -> dict:
    """(recipe, basis) -> sorted [(P, max split-R̂ over the order parameters)] of the convergence rows (a row's
    ``rhat_plot`` where it has one: HMC within chain and per dataset, never across seeds)."""
    by: dict = {}
    for r in rows:
        v = r.get("rhat_plot", r["rhat"])
        if v is not None and np.isfinite(v):
            d = by.setdefault((r["recipe"], r.get("rhat_basis", "")), {})
            d[r["P"]] = max(d.get(r["P"], -np.inf), v)
    return {k: sorted(d.items()) for k, d in by.items()}


def _rhat_label(recipe: str, basis: str) -> str:
    """'HMC, prior vs copy start (per dataset)', 'SGLD, half step (across seeds)'."""
    pooled = "+" in recipe
    name = _short(recipe.split("+")[0]) + (", prior vs copy start" if pooled else "")
    if not pooled:
        name = opt_label(recipe).split(" (")[0]
    return f"{name} ({basis or 'across seeds'})"


def fig_diagnostics(inputs, options, attention):
    """fig3b (linear) / fig4b (softmax): what fig3/fig4 rest on, for every recipe of the sweep (colour and
    marker: recipe). (a, b) Residuals of each order parameter, experiment − theory, against the theory curve
    each method is compared with (copyhead.analysis.agreement: HMC, SGLD against the posterior mean, Adam
    against the minimiser, of the same-dataset theory if given, else the exact dataset average, else the
    closed form), bars ± 2σ with σ the error of z = (experiment − theory)/σ, so a bar that misses zero is
    |z| > 2; (c) test loss per token (mean ± 1 standard error over seeds); (d) split-R̂ (the larger of the
    two order parameters') per sampling recipe and P, and of prior- against copy-started chains."""
    plt = pyplot()
    from matplotlib.lines import Line2D
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    th = read_dataset(inputs[f"theory_{attention}"])
    same = _optional(inputs, f"datasets_{attention}")
    names = op_names(attention)
    recs = _recipes(ag, options)
    rhat_max = options.get("rhat_max", RHAT_MAX)
    stats = figure_statistics(ag, th, same, attention, recs, rhat_max)
    shown = main_recipes(recs)
    # the main figure's recipes last (on top), the reference sampler uppermost
    order = [str(o) for o in ag["optimizer"].values if str(o) not in shown] + shown[::-1]
    fig, axs = plt.subplots(2, 2, figsize=(WIDE, 4.4), sharex=True,
                            gridspec_kw={"hspace": 0.32, "wspace": 0.28})
    (a1, a2), (al, ar) = axs
    P = ag["P"].values
    ref = {m: CURVES[c][0] for m, c in stats["reference"].items() if c}
    by: dict[str, list[str]] = {}
    for m, c in ref.items():
        by.setdefault(c, []).append(sampler_name(m))
    what = "; ".join(f"{', '.join(ms)} vs {c}" for c, ms in by.items()) or "no theory curve with errors"
    for ax, key, name in zip((a1, a2), KEYS[attention], names):
        ax.axhline(0, color="0.3", lw=0.6, zorder=0)
        for opt in order:
            rows = [r for r in stats["residuals"].get(opt, []) if r["param"] == key and np.isfinite(r["z"])]
            if not rows:
                continue
            x = np.array([r["P"] for r in rows])
            d = np.array([r["experiment"] - r["theory"] for r in rows])
            s = np.array([np.hypot(r["error"], r["theory_error"] or 0.0) for r in rows])
            ax.errorbar(x, d, yerr=2 * s, fmt=opt_marker(opt), color=OPT_COLORS.get(opt, "k"),
                        ms=_ms(opt_marker(opt), 3), capsize=1.5,
                        elinewidth=0.8, lw=0, label=f"_{name} {opt_label(opt)}")
        ax.set_ylabel(f"{name}: experiment − theory")
        ax.set_title(f"({'ab'[key == KEYS[attention][1]]}) residual of {name} (bars ±2σ of $z$)", fontsize=7)
    for opt in order:
        errorbar_points(al, P, ag["test_loss_final_mean"].sel(optimizer=opt),
                        ag["test_loss_final_sem"].sel(optimizer=opt), fmt=opt_marker(opt) + "-",
                        color=OPT_COLORS.get(opt, "k"), ms=_ms(opt_marker(opt), 3), capsize=2, lw=0.8,
                        label=opt_label(opt))
    al.set_yscale("log")
    al.set_ylabel("test loss per token")
    al.set_title("(c) final test loss (samplers: mean over draws), ± 1 s.e. over seeds", fontsize=7)
    annotate_status(al, ag)
    extra = []
    top = rhat_max
    for (recipe, basis), pts in _rhat_rows(stats["convergence"]).items():
        x, R = zip(*pts)
        pooled = "+" in recipe
        base = recipe.split("+")[-1]
        color = OPT_COLORS.get(base, "k")
        ax_kw = dict(color=color, ms=_ms(opt_marker(base), 3.5 if pooled else 3), lw=0.9 if pooled else 0.6,
                     ls="-" if pooled else ":", mec="k" if pooled else color, mew=0.7 if pooled else 0.5)
        ar.plot(x, R, opt_marker(base), **ax_kw)
        top = max(top, max(R))
        if pooled:   # the recipes themselves are in the legend already (colour and marker)
            extra.append(Line2D([], [], marker=opt_marker(base), label=_rhat_label(recipe, basis), **ax_kw))
    ar.axhline(rhat_max, color="k", ls="--", lw=0.7)
    if top > 5:
        ar.set_yscale("log")
    ar.set_ylim(min(0.98, ar.get_ylim()[0]), max(top * 1.08, rhat_max * 1.03))
    ar.set_ylabel("split-$\\hat R$ (larger of the two)")
    ar.set_title(f"(d) convergence (dashed: {rhat_max:g})", fontsize=7)
    for a in axs.ravel():
        log_P_axis(a, P)
    for a in (a1, a2):
        a.set_xlabel("")
    fig.suptitle(f"{attention} attention, every recipe: residuals ({what}), test loss, split-$\\hat R$",
                 fontsize=7.5, y=0.995)
    # the legend: the main figure's recipes first, in its order, then the others, then the pooled R̂ rows
    rank = {opt_label(o): i for i, o in enumerate(shown + [o for o in order if o not in shown])}
    handles, labels = zip(*sorted(zip(*al.get_legend_handles_labels()), key=lambda hl: rank.get(hl[1], 99)))
    # one legend for the figure, below it, attached to panel (c) (the record lists it with that panel)
    al.legend(list(handles) + extra, list(labels) + [h.get_label() for h in extra], fontsize=6, ncol=4,
              loc="upper left", bbox_to_anchor=(0.0, -0.25), columnspacing=1.0)
    return fig
