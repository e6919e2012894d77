"""The drawing functions, one per paper figure: ``draw(inputs, options) -> matplotlib Figure``, with
``inputs`` role -> path of aggregate and theory netCDF files (the registry in ``copyhead.figures`` says
which roles and options each figure takes). Statistics come from ``copyhead.analysis``.
Naming: linear attention uses the orthonormal projections ĉ1, ĉG; softmax uses the coefficients of
Ā ≈ (m1 J + mP I)/L normalised as â1 = m1 (uniform weight) and âG = mP/L (copy weight), so â1 + âG = 1
for a softmax pattern in the span (docs/workflow.md, "Order-parameter names").
"""
from __future__ import annotations

import numpy as np

from ..analysis import ok_runs, seed_mean_sem, sequence_length, theory_pattern_cosine
from ..analysis.adam import local_minima_1d
from ..attention import ATTENTIONS, variant
from ..format import P_short, ok
from ..provenance import read_dataset
from .orders import _recipes, experiment_transition, results_summary
from .style import (COL, OPT_COLORS, WIDE, annotate_status, errorbar_points, fixed_ticks,
                    log_P_axis, opt_label, opt_marker, pyplot)


def fig_stages(inputs, options):
    """fig1: mean attention pattern Ā (mean over the ok seeds) at one P per stage (SGLD by default), one row
    per attention type with one colour scale per row (shared by its panels, one colourbar; linear: symmetric
    log, so the pooling stage's small entries show beside the copy stage's diagonal), query/key position
    ticks; every panel the same size, each row exactly its own stages (no empty slots)."""
    plt = pyplot()
    from matplotlib.colors import Normalize, SymLogNorm
    opt = options["stage_optimizer"]
    stages = options["stages"]
    rows = [a for a in ATTENTIONS if a in stages and f"aggregate_{a}" in inputs]
    ncol = max(len(stages[a]) for a in rows)
    fig = plt.figure(figsize=(WIDE, 2.05 * len(rows) + 0.1))
    subs = np.atleast_1d(fig.subfigures(len(rows), 1, hspace=0.04))
    for sub, att in zip(subs, rows):
        ag = read_dataset(inputs[f"aggregate_{att}"])
        L = sequence_length(ag)
        mats = [(stage, P, ok_runs(ag, "attention").sel(optimizer=opt, P=P).mean("seed").values)
                for stage, P in stages[att]]
        vmax = max(float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 0.0 for _, _, m in mats) or 1.0
        if variant(att).nonnegative:
            kw = dict(cmap="viridis", norm=Normalize(0, vmax))
        else:
            kw = dict(cmap="RdBu_r", norm=SymLogNorm(linthresh=vmax / 30, vmin=-vmax, vmax=vmax, base=10))
        pad = (ncol - len(mats)) / 2
        inner = sub.subfigures(1, 3, width_ratios=[pad + 1e-3, len(mats) + 0.35, pad + 1e-3], wspace=0)[1]
        axes = np.atleast_1d(inner.subplots(1, len(mats)))
        ticks = sorted({0, L // 2, L - 1})
        for c, (ax, (stage, P, m)) in enumerate(zip(axes, mats)):
            im = ax.imshow(m, origin="upper", **kw)
            ax.set_title(f"{stage}\n$P={P}$", fontsize=7)
            ax.set_xticks(ticks, [str(t + 1) for t in ticks])
            ax.set_yticks(ticks, [str(t + 1) for t in ticks] if c == 0 else [])
            ax.tick_params(labelsize=6, length=2)
            ax.set_xlabel("key position $b$", fontsize=6.5)
            if c == 0:
                ax.set_ylabel(f"{att}\nquery position $a$", fontsize=6.5)
        cb = inner.colorbar(im, ax=list(axes), shrink=0.85, pad=0.02, format="%.2g")
        cb.ax.tick_params(labelsize=5.5)
        cb.set_label(f"$\\bar A_{{ab}}$ ({opt_label(opt)})", fontsize=6.5)
    return fig


def _barrier_top(sm) -> float:
    """y limit that shows both softmax minima and the barrier between them (not the steep walls): 1.3 × the
    highest barrier top of the landscapes that have two local minima, else the 30th percentile of S."""
    tops = []
    for row in np.asarray(sm["action_landscape"].transpose("landscape_P", "beta_grid").values, float):
        mins = local_minima_1d(row)
        if len(mins) > 1:
            tops.append(float(np.nanmax(row[mins[0]:mins[-1] + 1])))
    return 1.3 * max(tops) if tops else float(np.nanpercentile(sm["action_landscape"].values, 30))


def _round_levels(top: float, n: int = 12) -> np.ndarray:
    """About ``n`` contour levels from 0 up to ``top`` at a round step (1, 2, 2.5 or 5 × 10^k), so the
    colourbar's ticks read 0, 200, 400, … instead of 917.9, 1147, 1377."""
    from matplotlib.ticker import MaxNLocator
    levels = MaxNLocator(nbins=n, steps=[1, 2, 2.5, 5, 10]).tick_values(0.0, top)
    return levels[(levels >= 0) & (levels <= top * (1 + 1e-9))]


def fig_landscapes(inputs, options):
    """fig2: linear S(ĉ1, ĉG) − min S at the theory's landscape P on one shared colour scale (one colourbar);
    softmax S(β; P) − min S across P* (one colour per P, named on a discrete colourbar), the y range showing
    both minima and the barrier between them."""
    plt = pyplot()
    from matplotlib.colors import BoundaryNorm, ListedColormap
    lin = read_dataset(inputs["theory_linear"])
    sm = read_dataset(inputs["theory_softmax"])
    Ps = lin["landscape_P"].values
    fig = plt.figure(figsize=(WIDE, 2.3))
    left, right = fig.subfigures(1, 2, width_ratios=[len(Ps) + 0.4, 1.9], wspace=0.02)
    axes = np.atleast_1d(left.subplots(1, len(Ps), sharey=True))
    c1, cG = lin["c1_grid"].values, lin["cG_grid"].values
    Svs = [np.asarray(lin["action_landscape"].sel(landscape_P=P).transpose("cG_grid", "c1_grid").values, float)
           for P in Ps]
    Svs = [S - np.nanmin(S) for S in Svs]
    top = min(float(np.nanquantile(S, 0.6)) for S in Svs)   # the same levels in every panel
    levels = _round_levels(top)   # round numbers (0, 200, 400, ...): the colourbar reads as plain values
    for ax, P, Sv in zip(axes, Ps, Svs):
        cs = ax.contourf(c1, cG, Sv, levels=levels, cmap="Blues_r", extend="max")
        ax.contour(c1, cG, Sv, levels=levels, colors="k", linewidths=0.3)
        # the linear action is Z2-symmetric; mark the minimum in the gauge c1 >= 0 used for the runs
        Sg = np.where(c1[None, :] >= 0, Sv, np.inf)
        i = np.unravel_index(np.nanargmin(Sg), Sg.shape)
        ax.plot(c1[i[1]], cG[i[0]], "r*", ms=7)
        ax.set_xlabel(r"$\hat c_1$")
        ax.set_title(f"linear, $P={P_short(P)}$")
        ax.set_aspect("equal")
    axes[0].set_ylabel(r"$\hat c_G$", labelpad=1)
    cb = left.colorbar(cs, ax=list(axes), shrink=0.8, pad=0.02, format="%g")
    cb.ax.tick_params(labelsize=5.5)
    cb.set_label("$S-\\min S$ (linear; nats)", fontsize=6)
    ax = right.subplots()
    beta = sm["beta_grid"].values
    sPs = np.asarray(sm["landscape_P"].values, float)
    colors = ["#1b9e77", "#7570b3", "k", "#d95f02", "#e7298a", "#66a61e", "#e6ab02"][:len(sPs)]
    b_copy = []
    for P, color in zip(sPs, colors):
        S = np.asarray(sm["action_landscape"].sel(landscape_P=P).values, float)
        ax.plot(beta, S, color=color, lw=1)
        k = np.nanargmin(S)
        ax.plot(beta[k], S[k], "o", color=color, ms=3)
        b_copy.append(beta[k])
    top = _barrier_top(sm)
    ax.set_ylim(-0.05 * top, top)
    ax.set_xlim(beta.min(), min(beta.max(), 1.4 * max(b_copy) + 0.2))
    ax.set_xlabel(r"copy logit $\beta$")
    ax.set_ylabel(r"$S(\beta;P)-\min S$ (nats)", labelpad=1)
    Pst = float(sm["P_star"]) if "P_star" in sm else float("nan")
    ax.set_title(f"softmax, $P^*={P_short(Pst)}$" if np.isfinite(Pst) else "softmax")
    edges = np.arange(len(sPs) + 1)
    sc = plt.cm.ScalarMappable(norm=BoundaryNorm(edges, len(sPs)), cmap=ListedColormap(colors))
    cb = right.colorbar(sc, ax=ax, shrink=0.85, pad=0.03, ticks=edges[:-1] + 0.5)
    cb.ax.set_yticklabels([P_short(P) for P in sPs], fontsize=5.5)
    cb.set_label("$P$ (softmax)", fontsize=6, labelpad=1)
    return fig


def fig_coverage(inputs, options):
    """fig5, one row per attention type: (left) coverage by span{J, I}: the projected-norm ratio ||ΠA||/||A||
    of each recorded attention matrix (a sampler's draws, Adam's final state), averaged over the draws (the
    runs' ``coverage_ratio``; for an orthogonal projection it equals the cosine between A and ΠA); (right)
    cosine similarity between the mean pattern Ā and the theory's predicted pattern (m1 J + mP I)/L at the
    same P. Colour and marker: recipe (one legend below)."""
    plt = pyplot()
    rows = [a for a in ATTENTIONS if f"aggregate_{a}" in inputs]
    fig, axes = plt.subplots(len(rows), 2, figsize=(WIDE, 1.9 * len(rows) + 0.4), squeeze=False, sharey=True,
                             gridspec_kw={"hspace": 0.55, "wspace": 0.12})
    labels = {}
    for r, att in enumerate(rows):
        ag = read_dataset(inputs[f"aggregate_{att}"])
        th = read_dataset(inputs[f"theory_{att}"])
        P = ag["P"].values
        # coverage from the aggregate's seed statistics; the cosine to the theory pattern is computed here
        series = ((ag["coverage_ratio_mean"], ag["coverage_ratio_sem"]),
                  seed_mean_sem(theory_pattern_cosine(ag, th)))
        for ax, (mean, sem) in zip(axes[r], series, strict=True):
            for opt in ag["optimizer"].values:
                opt = str(opt)
                errorbar_points(ax, P, mean.sel(optimizer=opt), sem.sel(optimizer=opt),
                                fmt=opt_marker(opt) + "-", color=OPT_COLORS.get(opt, "k"), ms=3, capsize=2,
                                lw=0.8, label=opt_label(opt))
            log_P_axis(ax, P)
            ax.set_ylim(-0.05, 1.05)
            if r < len(rows) - 1:
                ax.set_xlabel("")
        # the runs' coverage_ratio: per recorded state (a sampler's draw, Adam's final state), then averaged
        # over the draws — not the coverage of the chain's mean pattern Ā (caption)
        axes[r, 0].set_title(f"{att}: coverage $\\|\\Pi A\\|_F/\\|A\\|_F$ onto span$\\{{J, I\\}}$, mean over draws",
                             fontsize=7)
        axes[r, 1].set_title(f"{att}: $\\cos(\\bar A, A_{{\\rm theory}})$, $A_{{\\rm theory}}=(m_1J+m_PI)/L$",
                             fontsize=7)
        axes[r, 0].set_ylabel("ratio / cosine")
        for h, lab in zip(*axes[r, 0].get_legend_handles_labels()):
            labels.setdefault(lab, h)
    fig.legend(list(labels.values()), list(labels), fontsize=6, ncol=len(labels), loc="upper center",
               bbox_to_anchor=(0.5, 0.0))
    return fig


def fig_loss_curves(inputs, options, attention):
    """fig6 (linear) / fig7 (softmax): test loss vs training step, one panel per Adam recipe of the sweep
    (``adam``, plain-MAP ``adam_map``; or only ``options["loss_optimizer"]`` when given): per P the median over
    seeds (line, coloured by P) and the range over seeds (band), log axes — what a referee reads: where and
    how far the loss falls at each P, and how much the seeds differ."""
    plt = pyplot()
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    recs = _recipes(ag, options)
    opts = [n for n, r in recs.items() if r.method == "adam"]
    if options.get("loss_optimizer") in recs:
        opts = [options["loss_optimizer"]]
    if not opts:
        opts = [str(ag["optimizer"].values[0])]
    fig, axes = plt.subplots(1, len(opts), figsize=(COL * (1 + 0.45 * (len(opts) - 1)), 2.5), sharey=True,
                             squeeze=False)
    Ps = ag["P"].values
    cmap = plt.get_cmap("viridis")
    norm = plt.matplotlib.colors.LogNorm(vmin=Ps.min(), vmax=max(Ps.max(), Ps.min() + 1))
    steps = ag["step"].values
    for ax, opt in zip(axes[0], opts):
        loss = ok_runs(ag, "test_loss").sel(optimizer=opt)
        for P in Ps:
            y = np.asarray(loss.sel(P=P).transpose("seed", "step").values, float)   # (seed, step)
            keep = np.isfinite(y).any(axis=1)
            if not keep.any():
                continue
            y = y[keep]
            with np.errstate(all="ignore"):
                med, lo, hi = np.nanmedian(y, axis=0), np.nanmin(y, axis=0), np.nanmax(y, axis=0)
            ok = np.isfinite(med) & (steps > 0)
            ax.fill_between(steps[ok], lo[ok], hi[ok], color=cmap(norm(P)), alpha=0.15, lw=0)
            ax.plot(steps[ok], med[ok], color=cmap(norm(P)), lw=0.9)
        n = int((ag["status"].sel(optimizer=opt) == "ok").sum())
        ax.set_title(f"{attention} attention\n{opt_label(opt)} ({n} runs)", fontsize=7)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("training step (full batch)")
        annotate_status(ax, ag)
    axes[0, 0].set_ylabel("test loss per token")
    axes[0, 0].plot([], [], color="0.3", lw=0.9, label="median over seeds")
    axes[0, 0].fill_between([], [], [], color="0.3", alpha=0.15, lw=0, label="range over seeds")
    axes[0, 0].legend(fontsize=5.5, loc="lower left")
    sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    cb = fig.colorbar(sm, ax=list(axes[0]), label="$P$ (sequences)")
    fixed_ticks(cb.ax.yaxis, Ps)
    cb.ax.tick_params(labelsize=6)
    return fig


def _label_line(ax, x, y, text, color, dy=0.0):
    """A direct label at the right end of a line (instead of a legend entry), ``dy`` points up."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y)
    if ok.any():
        ax.annotate(text, (x[ok][-1], y[ok][-1]), xytext=(3, dy), textcoords="offset points", fontsize=5.5,
                    color=color, va="center", ha="left", annotation_clip=False)


def _zoom_at_L(ax, lin, sm, L0, marks):
    """An inset of fig8's L panel around the run's L: the closed-form crossover and P* there beside the
    experiment's marks with their CIs (on the full log axis they sit within a marker's width of each other)."""
    from matplotlib.ticker import FixedLocator, NullLocator
    ins = ax.inset_axes([0.62, 0.04, 0.36, 0.27])
    ys = []
    for key, ds in (("P_crossover", lin), ("P_star", sm)):
        _, color, fmt, _ = SCALING_STYLE[key]
        ins.plot(ds["scaling_L"], ds[f"{key}_vs_L"], fmt, color=color, ms=3)
        i = int(np.argmin(np.abs(ds["scaling_L"].values - L0)))
        ys.append(float(ds[f"{key}_vs_L"][i]))
    for c, kw in marks:
        ins.errorbar([L0], [c.estimate], **dict(kw, ms=5, capsize=2))
        ys += [v for v in (c.estimate, c.ci_lo, c.ci_hi) if ok(v)]
    lo, hi = min(ys), max(ys)
    ins.set_xscale("log", base=2)
    ins.set_xlim(L0 / 1.18, L0 * 1.18)
    ins.set_ylim(lo - 0.12 * (hi - lo), hi + 0.12 * (hi - lo))
    ins.xaxis.set_major_locator(FixedLocator([L0]))
    ins.xaxis.set_minor_locator(NullLocator())
    ins.tick_params(labelsize=5, length=2, pad=1, labelbottom=False)
    ins.text(0.03, 0.5, f"$L={L0}$", transform=ins.transAxes, fontsize=5.5, va="center")
    for side in ("top", "right"):
        ins.spines[side].set_visible(True)
    ax.indicate_inset_zoom(ins, edgecolor="0.5", lw=0.6)
    return ins


# fig8's theory curves: name, colour, line format, label offset (points); the experiment's marks reuse them
SCALING_STYLE = {"P_onset": ("onset", "tab:blue", "o:", 0), "P_crossover": ("crossover", "tab:green", "s--", 4),
                 "P_star": ("$P^*$", "tab:red", "D-", -4)}


def fig_scaling(inputs, options):
    """fig8: theory transition points vs L (and vs V, d_k where the config asks for them), directly labelled;
    the paper's P* ∝ L ln²L through the closed-form P* at the run's L as a reference; at the run's L itself
    (no offset) the experimental transitions of the results model, HMC's where the sweep has it, else SGLD's
    (analysis.summary: the crossover and the jump of âG, the same estimators as the results page), with their
    95% bootstrap CIs, in the colour and marker of the theory curve each is compared with."""
    plt = pyplot()
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
    lin = read_dataset(inputs["theory_linear"])
    sm = read_dataset(inputs["theory_softmax"])
    names = [n for n in ("L", "V", "d_k") if f"scaling_{n}" in lin.coords and f"scaling_{n}" in sm.coords]
    fig, axes = plt.subplots(1, len(names), figsize=(COL * (1.1 if len(names) == 1 else 0.8 * len(names)), 2.5),
                             squeeze=False, gridspec_kw={"wspace": 0.45})
    xlabels = {"L": "sequence length $L$", "V": "vocabulary size $V$", "d_k": "key dimension $d_k$"}
    for ax, n in zip(axes[0], names):
        for key, ds in (("P_onset", lin), ("P_crossover", lin), ("P_star", sm)):
            text, color, fmt, dy = SCALING_STYLE[key]
            y, xs = ds[f"{key}_vs_{n}"], ds[f"scaling_{n}"]
            ax.plot(xs, y, fmt, color=color, ms=3)
            _label_line(ax, xs, y, text, color, dy)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(xlabels[n])
        ax.set_title(f"closed-form transitions vs {xlabels[n].split()[-1]}")
    ax = axes[0, 0]
    L0 = sequence_length(sm)
    if "L" in names:   # the paper's scaling form, through the closed-form P* at the run's L
        Ls = sm["scaling_L"].values.astype(float)
        Pst = np.asarray(sm["P_star_vs_L"].values, float)
        k = int(np.argmin(np.abs(Ls - L0)))
        if np.isfinite(Pst[k]):
            ref = Pst[k] * Ls * np.log(Ls) ** 2 / (Ls[k] * np.log(Ls[k]) ** 2)
            ax.plot(Ls, ref, color="0.5", lw=0.8, ls=(0, (4, 2)), zorder=0,
                    label=rf"paper: $P^*\propto L\ln^2L$ (through $P^*$ at $L={Ls[k]:g}$)")
    summary = results_summary(inputs)
    marks = []
    # the experiment at its true L (no offset): each transition in the colour and marker of the theory curve
    # it is compared with (linear crossover: green square; softmax P*: red diamond), larger and open, so the
    # theory's filled marker at the same L and the other transition's mark show through
    for att, v in ATTENTIONS.items():
        kind, name = v.transition, v.transition
        color, fmt = SCALING_STYLE[v.theory_transition][1:3]
        method = "hmc" if experiment_transition(summary, att, kind, "hmc") else "sgld"   # the reference first
        c = experiment_transition(summary, att, kind, method)
        if c is None:
            continue
        lo, hi = c.ci_lo, c.ci_hi
        yerr = [[c.estimate - lo], [hi - c.estimate]] if ok(lo) and ok(hi) else None
        kw = dict(yerr=yerr, fmt=fmt[0], color=color, ms=6, mfc="none", mec=color, mew=1.1, capsize=3,
                  elinewidth=1.0, ecolor=color, zorder=5)
        ax.errorbar([L0], [c.estimate], label=f"{method.upper()} {name} at $L={L0}$, 95% CI", **kw)
        marks.append((c, kw))
    if marks and "L" in names:
        _zoom_at_L(ax, lin, sm, L0, marks)
    if summary is None:
        ax.text(0.02, 0.98, "no results JSON: experimental transitions not drawn", transform=ax.transAxes,
                fontsize=5.5, va="top", color="0.4")
    ax.set_ylabel("transition point $P$ (sequences)")
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, fontsize=6, ncol=1, loc="upper center", bbox_to_anchor=(0.5, -0.02))
    return fig
