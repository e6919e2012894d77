"""The drawing functions, one per paper figure: ``draw(inputs, options) -> matplotlib Figure``, with
``inputs`` role -> path of aggregate and theory netCDF files (the registry in ``copyhead.figures`` says
which roles and options each figure takes). Statistics come from ``copyhead.analysis``.
Naming: linear attention uses the orthonormal projections ĉ1, ĉG; softmax uses the coefficients of
Ā ≈ (m1 J + mP I)/L normalised as â1 = m1 (uniform weight) and âG = mP/L (copy weight), so â1 + âG = 1
for a softmax pattern in the span (docs/workflow.md, "Order-parameter names").
"""
from __future__ import annotations

import numpy as np

from ..analysis import experimental_transition, ok_runs, seed_mean_sem, sequence_length, theory_pattern_cosine
from ..order_params import paper_order_parameters
from ..provenance import read_dataset
from .style import (C1_COLOR, CG_COLOR, COL, OPT_COLORS, WIDE, annotate_status, errorbar_points, fixed_ticks,
                    log_P_axis, mark_transitions, op_names, opt_label, opt_marker, pyplot)


def fig_stages(inputs, options):
    """fig1: mean attention pattern Ā at one P per stage (SGLD by default), linear and softmax."""
    plt = pyplot()
    opt = options["stage_optimizer"]
    stages = options["stages"]
    rows = [a for a in ("linear", "softmax") if a in stages and f"aggregate_{a}" in inputs]
    ncol = max(len(stages[a]) for a in rows)  # stages: attention -> [[stage name, P], ...] in order
    fig, axes = plt.subplots(len(rows), ncol, figsize=(WIDE, 1.9 * len(rows) + 0.3), squeeze=False)
    for r, att in enumerate(rows):
        ag = read_dataset(inputs[f"aggregate_{att}"])
        mats = []
        for stage, P in stages[att]:
            A = ok_runs(ag, "attention").sel(optimizer=opt, P=P).mean("seed")
            mats.append((stage, P, A.values))
        for c in range(ncol):
            ax = axes[r, c]
            if c >= len(mats):
                ax.axis("off")
                continue
            stage, P, m = mats[c]
            # each panel on its own scale: pooling (entries ~ c1/L) is invisible on a copy panel's scale
            vmax = float(np.nanmax(np.abs(m))) or 1.0
            if att == "linear":
                kw = dict(cmap="RdBu_r", vmin=-vmax, vmax=vmax)
            else:
                kw = dict(cmap="viridis", vmin=0, vmax=vmax)
            im = ax.imshow(m, origin="upper", **kw)
            cb = fig.colorbar(im, ax=ax, shrink=0.75, pad=0.03, format="%.2g")
            cb.ax.tick_params(labelsize=5.5)
            if c == len(mats) - 1:
                cb.set_label(r"$\bar A_{ab}$")
            ax.set_title(f"{att}: {stage}\n$P={P}$ ({opt_label(opt)})")
            ax.set_xlabel("key position $b$")
            if c == 0:
                ax.set_ylabel("query position $a$")
            ax.set_xticks([])
            ax.set_yticks([])
    return fig


def _barrier_top(sm) -> float:
    """y limit that shows both softmax minima and the barrier between them (not the steep walls)."""
    S = np.asarray(sm["action_landscape"].values, float)
    mins = [int(np.nanargmin(row)) for row in S]
    lo, hi = min(mins), max(mins)
    if hi > lo:
        return 1.5 * float(np.nanmax(S[:, lo:hi + 1]))
    return float(np.nanpercentile(S, 30))


def fig_landscapes(inputs, options):
    """fig2: linear S(ĉ1, ĉG) contours at three P; softmax S(β; P) across P*."""
    plt = pyplot()
    lin = read_dataset(inputs["theory_linear"])
    sm = read_dataset(inputs["theory_softmax"])
    Ps = lin["landscape_P"].values
    fig, axes = plt.subplots(1, len(Ps) + 1, figsize=(WIDE, 2.1), gridspec_kw={"wspace": 0.6})
    for ax, P in zip(axes, Ps):
        S = lin["action_landscape"].sel(landscape_P=P)
        c1, cG = lin["c1_grid"].values, lin["cG_grid"].values
        Sv = np.asarray(S.transpose("cG_grid", "c1_grid").values, float)
        levels = np.quantile(Sv[np.isfinite(Sv)], np.linspace(0, 0.6, 12))
        ax.contourf(c1, cG, Sv, levels=np.unique(levels), cmap="Blues_r", extend="max")
        ax.contour(c1, cG, Sv, levels=np.unique(levels), colors="k", linewidths=0.3)
        # the linear action is Z2-symmetric; mark the minimum in the gauge c1 >= 0 used for the runs
        Sg = np.where(c1[None, :] >= 0, Sv, np.inf)
        i = np.unravel_index(np.nanargmin(Sg), Sg.shape)
        ax.plot(c1[i[1]], cG[i[0]], "r*", ms=8, label="global min ($\\hat c_1\\geq0$)")
        ax.set_xlabel(r"$\hat c_1$")
        ax.set_ylabel(r"$\hat c_G$")
        ax.set_title(f"linear, $P={P:.3g}$")
    axes[0].legend(loc="upper left", fontsize=5.5, bbox_to_anchor=(0, 1.0))
    ax = axes[-1]
    beta = sm["beta_grid"].values
    cmap = plt.get_cmap("coolwarm")
    sPs = sm["landscape_P"].values
    for j, P in enumerate(sPs):
        S = np.asarray(sm["action_landscape"].sel(landscape_P=P).values, float)
        color = cmap(j / max(len(sPs) - 1, 1))
        ax.plot(beta, S, color=color, label=f"$P={P:.3g}$")
        k = np.nanargmin(S)
        ax.plot(beta[k], S[k], "o", color=color, ms=3)
    ax.set_xlabel(r"copy logit $\beta$")
    ax.set_ylabel(r"$S(\beta;P)-\min S$")
    ax.set_ylim(-0.05 * _barrier_top(sm), _barrier_top(sm))
    ax.set_title("softmax")
    if "P_star" in sm and np.isfinite(float(sm["P_star"])):
        ax.set_title(f"softmax ($P^*={float(sm['P_star']):.3g}$)")
    ax.legend(fontsize=5.5, loc="upper left")
    return fig


def fig_order_params(inputs, options, attention):
    """fig3 (linear: ĉ1, ĉG) / fig4 (softmax: â1, âG, incl. copy-initialised SGLD for the hysteresis) vs P:
    experiments as markers (the aggregate's mean ± sem over seeds; no bar with one seed), theory as lines,
    transitions marked; test loss vs P."""
    plt = pyplot()
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    th = read_dataset(inputs[f"theory_{attention}"])
    L = sequence_length(ag)
    n1, nG = op_names(attention)
    fig, (ax, axl) = plt.subplots(1, 2, figsize=(WIDE, 2.6), gridspec_kw={"width_ratios": [1.5, 1],
                                                                          "wspace": 0.3})
    # theory: saddle (dashed), posterior mean (dotted), dataset-averaged exact action (dash-dot)
    t1, tG = paper_order_parameters(th, attention, L, "_saddle")
    ax.plot(th["P"], t1, "--", color=C1_COLOR, lw=1, label=f"{n1} theory (saddle)")
    ax.plot(th["P"], tG, "--", color=CG_COLOR, lw=1, label=f"{nG} theory (saddle)")
    if "c1_mean" in th:
        m1_, mG_ = paper_order_parameters(th, attention, L, "_mean")
        ax.plot(th["P"], m1_, ":", color=C1_COLOR, lw=1, label=f"{n1} theory (posterior mean)")
        ax.plot(th["P"], mG_, ":", color=CG_COLOR, lw=1, label=f"{nG} theory (posterior mean)")
    if "P_exact" in th.coords and f"c1_saddle_exact" in th:
        e1, eG = paper_order_parameters(th.rename({"P_exact": "Pe"}), attention, L, "_saddle_exact")
        ax.plot(th["P_exact"], e1, "-.", color=C1_COLOR, lw=0.9, alpha=0.8, label=f"{n1} exact avg. action")
        ax.plot(th["P_exact"], eG, "-.", color=CG_COLOR, lw=0.9, alpha=0.8, label=f"{nG} exact avg. action")
    # experiments: the aggregate's mean ± sem over seeds (SGLD: each seed is one chain's posterior mean)
    P = ag["P"].values
    means, sems = (paper_order_parameters(ag, attention, L, s) for s in ("_mean", "_sem"))
    for opt in ag["optimizer"].values:
        opt = str(opt)
        hollow = opt.endswith("copy") or opt.endswith("map")
        for mean, sem, color, name in zip(means, sems, (C1_COLOR, CG_COLOR), (n1, nG)):
            errorbar_points(ax, P, mean.sel(optimizer=opt), sem.sel(optimizer=opt), fmt=opt_marker(opt),
                            color=color, mfc="white" if hollow else color, ms=4, capsize=2, lw=0.8,
                            label=f"{name} {opt_label(opt)}")
        errorbar_points(axl, P, ag["test_loss_final_mean"].sel(optimizer=opt),
                        ag["test_loss_final_sem"].sel(optimizer=opt), fmt=opt_marker(opt) + "-",
                        color=OPT_COLORS.get(opt, "k"), ms=4, capsize=2, lw=0.8, label=opt_label(opt))
    kinds = ("P_onset", "P_crossover") if attention == "linear" else ("P_star", "P_spinodal_low",
                                                                      "P_spinodal_high", "P_star_exact")
    mark_transitions(ax, th, kinds)
    for a in (ax, axl):
        log_P_axis(a, P)
    ax.set_ylabel("order parameter")
    ax.set_title(f"{attention} attention: order parameters")
    ax.legend(fontsize=5.5, ncol=3, loc="upper center", bbox_to_anchor=(0.8, -0.22))
    axl.set_ylabel("test loss per token")
    axl.set_yscale("log")
    axl.set_title("test loss")
    axl.legend()
    annotate_status(axl, ag)
    return fig


def fig_coverage(inputs, options):
    """fig5: (a) coverage of Ā by span{J, I}: projected-norm ratio ||ΠĀ||/||Ā|| (for an orthogonal
    projection this equals the cosine between Ā and ΠĀ, which the run files also store); (b) cosine
    similarity between Ā and the theory's predicted pattern (m1 J + mP I)/L at the same P."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 2.3))
    P_all = []
    for att, ls in (("linear", "-"), ("softmax", "--")):
        if f"aggregate_{att}" not in inputs:
            continue
        ag = read_dataset(inputs[f"aggregate_{att}"])
        th = read_dataset(inputs[f"theory_{att}"])
        P = ag["P"].values
        P_all += list(P)
        # coverage from the aggregate's seed statistics; the cosine to the theory pattern is computed here
        series = ((ag["coverage_ratio_mean"], ag["coverage_ratio_sem"]),
                  seed_mean_sem(theory_pattern_cosine(ag, th)))
        for ax, (mean, sem) in zip(axes, series, strict=True):
            for opt in ag["optimizer"].values:
                opt = str(opt)
                errorbar_points(ax, P, mean.sel(optimizer=opt), sem.sel(optimizer=opt),
                                fmt=opt_marker(opt) + ls, color=OPT_COLORS.get(opt, "k"), ms=3.5, capsize=2,
                                lw=0.8, label=f"{att}, {opt_label(opt)}")
    axes[0].set_title(r"coverage: $\|\Pi\bar A\|_F/\|\bar A\|_F$, $\Pi$ onto span$\{J, I\}$")
    axes[0].set_ylabel("projected-norm ratio")
    axes[1].set_title(r"cosine similarity of $\bar A$ and theory $(m_1J+m_PI)/L$")
    axes[1].set_ylabel(r"$\cos(\bar A, A_{\rm theory})$")
    for ax in axes:
        log_P_axis(ax, P_all)
        ax.set_ylim(-0.05, 1.05)
    axes[1].legend(fontsize=5.5, loc="lower right")
    return fig


def fig_loss_curves(inputs, options, attention):
    """fig6 (linear) / fig7 (softmax): test loss vs training step for every P (Adam), log axes."""
    plt = pyplot()
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    opt = options.get("loss_optimizer", "adam")
    fig, ax = plt.subplots(figsize=(COL, 2.4))
    if opt not in ag["optimizer"].values:
        opt = str(ag["optimizer"].values[0])
    Ps = ag["P"].values
    cmap = plt.get_cmap("viridis")
    norm = plt.matplotlib.colors.LogNorm(vmin=Ps.min(), vmax=max(Ps.max(), Ps.min() + 1))
    loss = ok_runs(ag, "test_loss").sel(optimizer=opt)
    steps = ag["step"].values
    for P in Ps:
        y = loss.sel(P=P).mean("seed").values
        ok = np.isfinite(y) & (steps > 0)
        if ok.any():
            ax.plot(steps[ok], y[ok], color=cmap(norm(P)), lw=1)
    sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    cb = fig.colorbar(sm, ax=ax, label="$P$ (sequences)")
    fixed_ticks(cb.ax.yaxis, Ps)
    cb.ax.tick_params(labelsize=6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"training step ({opt_label(opt)}, full batch)")
    ax.set_ylabel("test loss per token")
    ax.set_title(f"{attention} attention: test loss during training")
    annotate_status(ax, ag)
    return fig


def fig_scaling(inputs, options):
    """fig8: theory transition points vs L (and vs V, d_k where the config asks for them), with the
    experimental estimates at the config's L."""
    plt = pyplot()
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
    lin = read_dataset(inputs["theory_linear"])
    sm = read_dataset(inputs["theory_softmax"])
    names = [n for n in ("L", "V", "d_k") if f"scaling_{n}" in lin.coords and f"scaling_{n}" in sm.coords]
    fig, axes = plt.subplots(1, len(names), figsize=(COL * (1 if len(names) == 1 else 0.75 * len(names)), 2.5),
                             squeeze=False, gridspec_kw={"wspace": 0.35})
    xlabels = {"L": "sequence length $L$", "V": "vocabulary size $V$", "d_k": "key dimension $d_k$"}
    for ax, n in zip(axes[0], names):
        x = lin[f"scaling_{n}"].values
        ax.plot(x, lin[f"P_onset_vs_{n}"], "o:", color="tab:blue", label="linear onset $P_c$ (theory)")
        ax.plot(x, lin[f"P_crossover_vs_{n}"], "s--", color="tab:green", label="linear crossover (theory)")
        ax.plot(sm[f"scaling_{n}"], sm[f"P_star_vs_{n}"], "D-", color="tab:red", label="softmax $P^*$ (theory)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(xlabels[n])
        ax.set_title(f"transitions vs {xlabels[n].split()[-1]}")
    ax = axes[0, 0]
    opt = options.get("experiment_optimizer", "sgld")
    for att, color, name in (("linear", "tab:green", "linear crossover"), ("softmax", "tab:red", "softmax jump")):
        key = f"aggregate_{att}"
        if key in inputs:
            ag = read_dataset(inputs[key])
            Pe = experimental_transition(ag, att, opt)
            if np.isfinite(Pe):
                ax.plot([sequence_length(ag)], [Pe], "*", color=color, ms=9, mec="k", mew=0.5,
                        label=f"{name} ({opt_label(opt)})")
    ax.set_ylabel("transition point $P$ (sequences)")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=6, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.06))
    return fig
