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
from ..config import ATTENTIONS
from ..order_params import paper_order_parameters
from ..provenance import read_dataset
from .style import (C1_COLOR, CG_COLOR, COL, EXACT_MEAN_LS, OPT_COLORS, WIDE, annotate_status, errorbar_points,
                    fixed_ticks, hollow_points, LOSS_LINESTYLES, log_P_axis, mark_transitions, op_names, opt_label, opt_marker, pyplot,
                    residual_axis, rhat_panel)


def fig_stages(inputs, options):
    """fig1: mean attention pattern Ā at one P per stage (SGLD by default), linear and softmax."""
    plt = pyplot()
    opt = options["stage_optimizer"]
    stages = options["stages"]
    rows = [a for a in ATTENTIONS if a in stages and f"aggregate_{a}" in inputs]
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


def _recipes(ag, options):
    """Recipes of the aggregate with method and start (options["recipes"] from the config, else inferred)."""
    from ..results import recipes
    spec = options.get("recipes")
    return recipes(ag, {"optimizers": spec} if spec else None)


def _optional(inputs, role):
    return read_dataset(inputs[role]) if inputs.get(role) else None


def fig_order_params(inputs, options, attention):
    """fig3 (linear: ĉ1, ĉG) / fig4 (softmax: â1, âG, incl. copy-initialised SGLD for the hysteresis) vs P:
    experiments as markers (the aggregate's mean ± sem over seeds; no bar with one seed; hollow where the
    chains' split-R̂ exceeds the threshold, copyhead.results.flagged_points), theory as lines, transitions
    marked; below, the residuals z = (experiment − theory)/error against the theory curve named on the panel
    (copyhead.results: SGLD against the posterior mean, Adam against the minimiser, of the same-dataset theory
    if given, else the exact dataset average, else the closed form); right: test loss and R̂ vs P."""
    from ..results import RHAT_MAX, figure_statistics
    from ..results.inputs import CURVES, KEYS
    plt = pyplot()
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    th = read_dataset(inputs[f"theory_{attention}"])
    same = _optional(inputs, f"datasets_{attention}")
    L = sequence_length(ag)
    n1, nG = op_names(attention)
    recs = _recipes(ag, options)
    stats = figure_statistics(ag, th, same, attention, recs, options.get("rhat_max", RHAT_MAX))
    fig, axs = plt.subplots(2, 2, figsize=(WIDE, 3.9), sharex="col",
                            gridspec_kw={"width_ratios": [1.5, 1], "height_ratios": [2.2, 1], "wspace": 0.3,
                                         "hspace": 0.25})
    (ax, axl), (axz, axr) = axs
    # theory: saddle (dashed), posterior mean (dotted), dataset-averaged exact action (dash-dot)
    t1, tG = paper_order_parameters(th, attention, L, "_saddle")
    ax.plot(th["P"], t1, "--", color=C1_COLOR, lw=1, label=f"{n1} theory (saddle)")
    ax.plot(th["P"], tG, "--", color=CG_COLOR, lw=1, label=f"{nG} theory (saddle)")
    if "c1_mean" in th:
        m1_, mG_ = paper_order_parameters(th, attention, L, "_mean")
        ax.plot(th["P"], m1_, ":", color=C1_COLOR, lw=1, label=f"{n1} theory (posterior mean)")
        ax.plot(th["P"], mG_, ":", color=CG_COLOR, lw=1, label=f"{nG} theory (posterior mean)")
    if "P_exact" in th.coords and "c1_saddle_exact" in th:
        e1, eG = paper_order_parameters(th, attention, L, "_saddle_exact")
        ax.plot(th["P_exact"], e1, "-.", color=C1_COLOR, lw=0.9, alpha=0.8, label=f"{n1} exact avg. action")
        ax.plot(th["P_exact"], eG, "-.", color=CG_COLOR, lw=0.9, alpha=0.8, label=f"{nG} exact avg. action")
        if "c1_mean_exact" in th and stats["reference"].get("sgld") == "exact_mean":
            f1, fG = paper_order_parameters(th, attention, L, "_mean_exact")
            ax.plot(th["P_exact"], f1, ls=EXACT_MEAN_LS, color=C1_COLOR, lw=0.8, alpha=0.7,
                    label=f"{n1} exact avg. posterior mean")
            ax.plot(th["P_exact"], fG, ls=EXACT_MEAN_LS, color=CG_COLOR, lw=0.8, alpha=0.7,
                    label=f"{nG} exact avg. posterior mean")
    if same is not None:  # same-dataset theory: mean over the seeds at the runs' P (x minimiser, + mean)
        for kind, mk, what in (("saddle", "x", "minimiser"), ("mean", "+", "posterior mean")):
            a, b = paper_order_parameters(same, attention, L, f"_{kind}_same")
            ax.plot(same["P"], a.mean("seed"), mk, color=C1_COLOR, ms=4, mew=0.8, ls="none",
                    label=f"same-dataset theory ({what})")
            ax.plot(same["P"], b.mean("seed"), mk, color=CG_COLOR, ms=4, mew=0.8, ls="none")
    # experiments: the aggregate's mean ± sem over seeds (SGLD: each seed is one chain's posterior mean)
    P = ag["P"].values
    means, sems = (paper_order_parameters(ag, attention, L, s) for s in ("_mean", "_sem"))
    flags = stats["flags"]
    n_hollow = 0
    for opt in ag["optimizer"].values:
        opt = str(opt)
        for key, mean, sem, color, name in zip(KEYS[attention], means, sems, (C1_COLOR, CG_COLOR), (n1, nG)):
            y = mean.sel(optimizer=opt)
            errorbar_points(ax, P, y, sem.sel(optimizer=opt), fmt=opt_marker(opt), color=color, ms=4,
                            capsize=2, lw=0.8, label=f"{name} {opt_label(opt)}")
            bad = np.array([flags.get((opt, float(p), key), False) for p in P]) & np.isfinite(y.values)
            n_hollow += int(bad.sum())
            hollow_points(ax, P[bad], y.values[bad], opt_marker(opt), color)
            rz = [(r["P"], r["z"]) for r in stats["residuals"].get(opt, []) if r["param"] == key]
            rz = [(p, z) for p, z in rz if np.isfinite(z)]
            if rz:
                zp, zv = (np.array(v, float) for v in zip(*rz))
                axz.plot(zp, zv, opt_marker(opt), color=color, ms=3.5, ls="none")
                badz = np.array([flags.get((opt, float(p), key), False) for p in zp])
                hollow_points(axz, zp[badz], zv[badz], opt_marker(opt), color, ms=3.5)
        errorbar_points(axl, P, ag["test_loss_final_mean"].sel(optimizer=opt),
                        ag["test_loss_final_sem"].sel(optimizer=opt), fmt=opt_marker(opt) + "-",
                        color=OPT_COLORS.get(opt, "k"), ms=4, capsize=2, lw=0.8, label=opt_label(opt))
    if n_hollow:
        ax.plot([], [], "o", mfc="white", mec="0.3", ms=4, label=f"open: split-$\\hat R$ > {stats_rhat(options)}")
    kinds = ("P_onset", "P_crossover") if attention == "linear" else ("P_star", "P_spinodal_low",
                                                                      "P_spinodal_high", "P_star_exact")
    mark_transitions(ax, th, kinds)
    # residual panel
    residual_axis(axz, {m: CURVES[c][0] for m, c in stats["reference"].items() if c})
    rhat_panel(axr, stats["convergence"], KEYS[attention], (C1_COLOR, CG_COLOR), options.get("rhat_max", RHAT_MAX))
    for a in (axz, axr):
        log_P_axis(a, P)
    for a in (ax, axl):
        a.set_xlabel("")
        a.tick_params(labelbottom=False)
    ax.set_ylabel("order parameter")
    ax.set_title(f"{attention} attention: order parameters")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=5.5, ncol=4, loc="upper center", bbox_to_anchor=(0.5, 0.02))
    axl.set_ylabel("test loss per token")
    axl.set_yscale("log")
    axl.set_title("test loss")
    axl.legend()
    annotate_status(axl, ag)
    return fig


def stats_rhat(options) -> str:
    from ..results import RHAT_MAX
    return f"{options.get('rhat_max', RHAT_MAX):g}"


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
    """fig6 (linear) / fig7 (softmax): test loss vs training step for every P and every Adam run (one thin
    line per seed, so clusters of runs stay visible), log axes; every Adam recipe of the sweep (``adam``
    solid, plain-MAP ``adam_map`` dashed), or only ``options["loss_optimizer"]`` when given."""
    plt = pyplot()
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    recs = _recipes(ag, options)
    opts = [n for n, r in recs.items() if r.method == "adam"]
    if options.get("loss_optimizer") in recs:
        opts = [options["loss_optimizer"]]
    if not opts:
        opts = [str(ag["optimizer"].values[0])]
    fig, ax = plt.subplots(figsize=(COL, 2.4))
    Ps = ag["P"].values
    cmap = plt.get_cmap("viridis")
    norm = plt.matplotlib.colors.LogNorm(vmin=Ps.min(), vmax=max(Ps.max(), Ps.min() + 1))
    steps = ag["step"].values
    styles = {}
    for k, opt in enumerate(opts):
        ls = LOSS_LINESTYLES.get(opt, ("-", "--", ":", "-.")[k % 4])
        loss = ok_runs(ag, "test_loss").sel(optimizer=opt)
        for P in Ps:
            for seed in ag["seed"].values:
                y = loss.sel(P=P, seed=seed).values
                ok = np.isfinite(y) & (steps > 0)
                if ok.any():
                    ax.plot(steps[ok], y[ok], ls=ls, color=cmap(norm(P)), lw=0.7, alpha=0.8)
                    styles[opt] = ls
    for opt, ls in styles.items():
        n = int((ag["status"].sel(optimizer=opt) == "ok").sum())
        ax.plot([], [], ls=ls, color="0.3", lw=0.8, label=f"{opt_label(opt)} ({n} runs)")
    sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    cb = fig.colorbar(sm, ax=ax, label="$P$ (sequences)")
    fixed_ticks(cb.ax.yaxis, Ps)
    cb.ax.tick_params(labelsize=6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training step (full batch)")
    ax.set_ylabel("test loss per token")
    ax.set_title(f"{attention} attention: test loss during training")
    if styles:
        ax.legend(fontsize=5.5, loc="best")
    annotate_status(ax, ag)
    return fig


def results_summary(inputs) -> dict | None:
    """The ``summary`` of the results JSON given as the ``results`` input (copyhead.analysis.summary), or None."""
    import json
    from pathlib import Path
    path = inputs.get("results")
    return json.loads(Path(path).read_text()).get("summary") if path else None


def experiment_transition(summary, attention: str, kind: str, method: str = "sgld") -> dict | None:
    """The summary's (estimate, ci_lo, ci_hi, recipe, theory) of one transition kind and method, or None."""
    if not summary:
        return None
    rows = summary["attentions"].get(attention, {}).get("transitions", [])
    cell = next((r[method] for r in rows if r["kind"] == kind), None)
    est = cell and cell.get("estimate")
    return cell if est is not None and np.isfinite(est) else None


def _label_line(ax, x, y, text, color):
    """A direct label at the right end of a line (instead of a legend entry)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y)
    if ok.any():
        ax.annotate(text, (x[ok][-1], y[ok][-1]), xytext=(3, 0), textcoords="offset points", fontsize=5.5,
                    color=color, va="center", ha="left", annotation_clip=False)


def fig_scaling(inputs, options):
    """fig8: theory transition points vs L (and vs V, d_k where the config asks for them), directly labelled;
    the paper's P* ∝ L ln²L through the closed-form P* at the run's L as a reference; at the run's L the
    experimental SGLD transitions of the results model (analysis.summary: the crossover and the logistic
    midpoint of the jump, the same estimators as the results page) with their 95% bootstrap CIs."""
    plt = pyplot()
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
    lin = read_dataset(inputs["theory_linear"])
    sm = read_dataset(inputs["theory_softmax"])
    names = [n for n in ("L", "V", "d_k") if f"scaling_{n}" in lin.coords and f"scaling_{n}" in sm.coords]
    fig, axes = plt.subplots(1, len(names), figsize=(COL * (1.1 if len(names) == 1 else 0.8 * len(names)), 2.5),
                             squeeze=False, gridspec_kw={"wspace": 0.45})
    xlabels = {"L": "sequence length $L$", "V": "vocabulary size $V$", "d_k": "key dimension $d_k$"}
    for ax, n in zip(axes[0], names):
        x = lin[f"scaling_{n}"].values
        for y, fmt, color, text in ((lin[f"P_onset_vs_{n}"], "o:", "tab:blue", "onset"),
                                    (lin[f"P_crossover_vs_{n}"], "s--", "tab:green", "crossover"),
                                    (sm[f"P_star_vs_{n}"], "D-", "tab:red", "$P^*$")):
            ax.plot(x if text != "$P^*$" else sm[f"scaling_{n}"], y, fmt, color=color, ms=3)
            _label_line(ax, x if text != "$P^*$" else sm[f"scaling_{n}"], y, text, color)
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
    drawn = 0
    for att, kind, color, name in (("linear", "crossover", "tab:green", "crossover"),
                                   ("softmax", "jump", "tab:red", "jump")):
        c = experiment_transition(summary, att, kind)
        if c is None:
            continue
        lo, hi = c["ci_lo"], c["ci_hi"]
        yerr = ([[c["estimate"] - lo], [hi - c["estimate"]]] if lo is not None and hi is not None else None)
        ax.errorbar([L0 * (0.94 if att == "linear" else 1.06)], [c["estimate"]], yerr=yerr, fmt="*", color=color,
                    ms=8, mec="k", mew=0.5, capsize=2, lw=0.9, label=f"SGLD {name}, 95% CI")
        drawn += 1
    if summary is None:
        ax.text(0.02, 0.98, "no results JSON: experimental transitions not drawn", transform=ax.transAxes,
                fontsize=5.5, va="top", color="0.4")
    ax.set_ylabel("transition point $P$ (sequences)")
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, fontsize=6, ncol=1, loc="upper center", bbox_to_anchor=(0.5, -0.02))
    return fig
