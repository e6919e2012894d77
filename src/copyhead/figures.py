"""Figures: one function per paper figure, drawn from aggregate and theory netCDF files.

Owns the figure registry ``FIGURES`` (name, which aggregate/theory files it needs, which config options
it depends on, the drawing function) and ``make_figure``, which writes the PDF and PNG atomically plus a
``<name>.provenance.json`` sidecar with the sha256 of every input (also embedded in the PDF/PNG metadata).
Naming: linear attention uses the orthonormal projections ĉ1, ĉG; softmax uses the coefficients of
Ā ≈ (m1 J + mP I)/L normalised as â1 = m1 (uniform weight) and âG = mP/L (copy weight), so â1 + âG = 1
for a softmax pattern in the span (docs/workflow.md, "Order-parameter names").
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np

from .order_params import paper_order_parameters
from .provenance import atomic_write, figure_record, read_dataset, sha256_file, write_json

COL = 3.4   # paper single-column width, inches
WIDE = 7.0  # two-column width

MARKERS = {"adam": "o", "sgld": "D", "adam_map": "s", "sgld_copy": "^"}
LABELS = {"adam": "Adam", "sgld": "SGLD", "adam_map": "Adam (plain MAP)", "sgld_copy": "SGLD, copy init"}
C1_COLOR, CG_COLOR = "tab:blue", "tab:orange"
OPT_COLORS = {"adam": "tab:blue", "sgld": "tab:red", "adam_map": "tab:gray", "sgld_copy": "tab:purple"}


def _style():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({
        "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 6.5,
        "xtick.labelsize": 7, "ytick.labelsize": 7, "lines.markersize": 4, "lines.linewidth": 1.2,
        "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False,
        "savefig.bbox": "tight", "savefig.dpi": 200, "figure.dpi": 100,
    })
    return plt


def _log_P_axis(ax, Ps, label="training-set size $P$ (sequences)"):
    """Log x axis labelled with the swept P values as plain numbers."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter
    Ps = np.unique(np.asarray(Ps, float))
    ax.set_xscale("log")
    ax.set_xlim(Ps.min() / 1.3, Ps.max() * 1.3)
    ticks = [Ps[0]]
    for P in Ps[1:]:  # skip ticks that would crowd their neighbour on a log axis
        if P / ticks[-1] >= 1.3:
            ticks.append(P)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)


def _label(optimizer: str) -> str:
    return LABELS.get(optimizer, optimizer)


def _marker(optimizer: str) -> str:
    return MARKERS.get(optimizer, "v")


def _op_names(attention: str) -> tuple[str, str]:
    return ("$\\hat c_1$", "$\\hat c_G$") if attention == "linear" else ("$\\hat a_1$", "$\\hat a_G$")


def _op_values(ds, attention: str, suffix: str, L: int):
    """The two plotted order parameters from a dataset (runs or theory) with variables m1/mP/c1/cG."""
    return paper_order_parameters(ds, attention, L, suffix)


def _L(ds) -> int:
    cfg = json.loads(ds.attrs.get("config_json", "{}"))
    if "task" in cfg:
        return int(cfg["task"]["L"])
    return int(ds.sizes["query"])


def _status_note(ag) -> str:
    n_div = int((ag["status"] == "diverged").sum())
    return f"{n_div} diverged run(s) excluded" if n_div else ""


def _annotate_status(ax, ag):
    """Count diverged runs on the panel (they are excluded from the plotted means)."""
    note = _status_note(ag)
    if note:
        ax.text(0.02, 0.02, note, transform=ax.transAxes, fontsize=6, color="red")


def _ok(ag, var):
    return ag[var].where(ag["status"] == "ok")


def _seed_stats(x):
    n = x.notnull().sum("seed")
    mean = x.mean("seed")
    sem = (x.std("seed", ddof=1) / np.sqrt(n)).where(n > 1, 0.0)
    return mean, sem


def _mark_transitions(ax, th, kinds):
    """Vertical lines at theory transition points, labelled along the line (name and value)."""
    styles = {"P_onset": ("onset", "0.35", ":"), "P_crossover": ("crossover", "0.35", "--"),
              "P_star": ("$P^*$ closed form", "k", "-."), "P_spinodal_low": (None, "0.6", (0, (1, 3))),
              "P_spinodal_high": (None, "0.6", (0, (1, 3))), "P_star_exact": ("$P^*$ exact avg.", "tab:red", "-."),
              "P_crossover_exact": ("crossover exact avg.", "tab:red", "--")}
    for k in kinds:
        if k not in th or not np.isfinite(float(th[k])):
            continue
        label, color, ls = styles[k]
        P = float(th[k])
        ax.axvline(P, color=color, ls=ls, lw=0.8, zorder=0)
        if label:
            ax.text(P, 0.5, f"{label} {P:.3g}", transform=ax.get_xaxis_transform(), fontsize=5.5,
                    rotation=90, va="center", ha="right", color=color)


# ---------------------------------------------------------------------------------------------- figures
def fig_stages(inputs, options):
    """fig1: mean attention pattern Ā at one P per stage (SGLD by default), linear and softmax."""
    plt = _style()
    opt = options["stage_optimizer"]
    stages = options["stages"]
    rows = [a for a in ("linear", "softmax") if a in stages and f"aggregate_{a}" in inputs]
    ncol = max(len(stages[a]) for a in rows)  # stages: attention -> [[stage name, P], ...] in order
    fig, axes = plt.subplots(len(rows), ncol, figsize=(WIDE, 1.9 * len(rows) + 0.3), squeeze=False)
    for r, att in enumerate(rows):
        ag = read_dataset(inputs[f"aggregate_{att}"])
        mats = []
        for stage, P in stages[att]:
            A = _ok(ag, "attention").sel(optimizer=opt, P=P).mean("seed")
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
            ax.set_title(f"{att}: {stage}\n$P={P}$ ({_label(opt)})")
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
    plt = _style()
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


def _fig_order_params(inputs, options, attention):
    """fig3 (linear: ĉ1, ĉG) / fig4 (softmax: â1, âG, incl. copy-initialised SGLD for the hysteresis) vs P:
    experiments as markers (mean ± sem over seeds), theory as lines, transitions marked; test loss vs P."""
    plt = _style()
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    th = read_dataset(inputs[f"theory_{attention}"])
    L = _L(ag)
    n1, nG = _op_names(attention)
    fig, (ax, axl) = plt.subplots(1, 2, figsize=(WIDE, 2.6), gridspec_kw={"width_ratios": [1.5, 1],
                                                                          "wspace": 0.3})
    # theory: saddle (dashed), posterior mean (dotted), dataset-averaged exact action (dash-dot)
    t1, tG = _op_values(th, attention, "_saddle", L)
    ax.plot(th["P"], t1, "--", color=C1_COLOR, lw=1, label=f"{n1} theory (saddle)")
    ax.plot(th["P"], tG, "--", color=CG_COLOR, lw=1, label=f"{nG} theory (saddle)")
    if "c1_mean" in th:
        m1_, mG_ = _op_values(th, attention, "_mean", L)
        ax.plot(th["P"], m1_, ":", color=C1_COLOR, lw=1, label=f"{n1} theory (posterior mean)")
        ax.plot(th["P"], mG_, ":", color=CG_COLOR, lw=1, label=f"{nG} theory (posterior mean)")
    if "P_exact" in th.coords and f"c1_saddle_exact" in th:
        e1, eG = _op_values(th.rename({"P_exact": "Pe"}), attention, "_saddle_exact", L)
        ax.plot(th["P_exact"], e1, "-.", color=C1_COLOR, lw=0.9, alpha=0.8, label=f"{n1} exact avg. action")
        ax.plot(th["P_exact"], eG, "-.", color=CG_COLOR, lw=0.9, alpha=0.8, label=f"{nG} exact avg. action")
    # experiments: mean ± sem over seeds (SGLD: each seed is one chain's posterior mean)
    P = ag["P"].values
    for opt in ag["optimizer"].values:
        opt = str(opt)
        for var, color, name in zip(_op_values(ag, attention, "", L), (C1_COLOR, CG_COLOR), (n1, nG)):
            x = var.sel(optimizer=opt).where(ag["status"].sel(optimizer=opt) == "ok")
            mean, sem = _seed_stats(x)
            ok = np.isfinite(mean.values)
            ax.errorbar(P[ok], mean.values[ok], yerr=sem.values[ok], fmt=_marker(opt), color=color,
                        mfc="white" if opt.endswith("copy") or opt.endswith("map") else color,
                        ms=4, capsize=2, lw=0.8, label=f"{name} {_label(opt)}")
        loss = _ok(ag, "test_loss_final").sel(optimizer=opt)
        mean, sem = _seed_stats(loss)
        ok = np.isfinite(mean.values)
        axl.errorbar(P[ok], mean.values[ok], yerr=sem.values[ok], fmt=_marker(opt) + "-",
                     color=OPT_COLORS.get(opt, "k"), ms=4, capsize=2, lw=0.8, label=_label(opt))
    kinds = ("P_onset", "P_crossover") if attention == "linear" else ("P_star", "P_spinodal_low",
                                                                      "P_spinodal_high", "P_star_exact")
    _mark_transitions(ax, th, kinds)
    for a in (ax, axl):
        _log_P_axis(a, P)
    ax.set_ylabel("order parameter")
    ax.set_title(f"{attention} attention: order parameters")
    ax.legend(fontsize=5.5, ncol=3, loc="upper center", bbox_to_anchor=(0.8, -0.22))
    axl.set_ylabel("test loss per token")
    axl.set_yscale("log")
    axl.set_title("test loss")
    axl.legend()
    _annotate_status(axl, ag)
    return fig




def _theory_pattern_cosine(ag, th, attention: str):
    """cos(Ā, A_th) per (optimizer, P, seed): Frobenius cosine between the learned mean attention and the
    theory's predicted pattern A_th = (m1 J + mP I)/L at the nearest theory P (closed-form saddle).
    NaN where the theory predicts A_th = 0 (linear attention before the onset)."""
    L = _L(ag)
    Pth = th["P"].values
    A = _ok(ag, "attention").values  # (optimizer, P, seed, query, key)
    out = np.full(A.shape[:3], np.nan)
    I, J = np.eye(L), np.ones((L, L))
    for j, P in enumerate(ag["P"].values):
        k = int(np.argmin(np.abs(np.log(Pth) - np.log(P))))
        At = (float(th["m1_saddle"][k]) * J + float(th["mP_saddle"][k]) * I) / L
        nt = np.linalg.norm(At)
        if nt < 1e-12:
            continue
        a = A[:, j]
        out[:, j] = np.einsum("osqk,qk->os", a, At) / (np.linalg.norm(a, axis=(-2, -1)) * nt)
    return ag["c1"].copy(data=out)


def fig_coverage(inputs, options):
    """fig5: (a) coverage of Ā by span{J, I}: projected-norm ratio ||ΠĀ||/||Ā|| (for an orthogonal
    projection this equals the cosine between Ā and ΠĀ, which the run files also store); (b) cosine
    similarity between Ā and the theory's predicted pattern (m1 J + mP I)/L at the same P."""
    plt = _style()
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 2.3))
    P_all = []
    for att, ls in (("linear", "-"), ("softmax", "--")):
        if f"aggregate_{att}" not in inputs:
            continue
        ag = read_dataset(inputs[f"aggregate_{att}"])
        th = read_dataset(inputs[f"theory_{att}"])
        P = ag["P"].values
        P_all += list(P)
        series = (_ok(ag, "coverage_ratio"), _theory_pattern_cosine(ag, th, att))
        for ax, var in zip(axes, series, strict=True):
            for opt in ag["optimizer"].values:
                opt = str(opt)
                mean, sem = _seed_stats(var.sel(optimizer=opt))
                ok = np.isfinite(mean.values)
                ax.errorbar(P[ok], mean.values[ok], yerr=sem.values[ok], fmt=_marker(opt) + ls,
                            color=OPT_COLORS.get(opt, "k"), ms=3.5, capsize=2, lw=0.8,
                            label=f"{att}, {_label(opt)}")
    axes[0].set_title(r"coverage: $\|\Pi\bar A\|_F/\|\bar A\|_F$, $\Pi$ onto span$\{J, I\}$")
    axes[0].set_ylabel("projected-norm ratio")
    axes[1].set_title(r"cosine similarity of $\bar A$ and theory $(m_1J+m_PI)/L$")
    axes[1].set_ylabel(r"$\cos(\bar A, A_{\rm theory})$")
    for ax in axes:
        _log_P_axis(ax, P_all)
        ax.set_ylim(-0.05, 1.05)
    axes[1].legend(fontsize=5.5, loc="lower right")
    return fig


def _fig_loss_curves(inputs, options, attention):
    """fig6 (linear) / fig7 (softmax): test loss vs training step for every P (Adam), log axes."""
    plt = _style()
    ag = read_dataset(inputs[f"aggregate_{attention}"])
    opt = options.get("loss_optimizer", "adam")
    fig, ax = plt.subplots(figsize=(COL, 2.4))
    if opt not in ag["optimizer"].values:
        opt = str(ag["optimizer"].values[0])
    Ps = ag["P"].values
    cmap = plt.get_cmap("viridis")
    norm = plt.matplotlib.colors.LogNorm(vmin=Ps.min(), vmax=max(Ps.max(), Ps.min() + 1))
    loss = _ok(ag, "test_loss").sel(optimizer=opt)
    steps = ag["step"].values
    for P in Ps:
        y = loss.sel(P=P).mean("seed").values
        ok = np.isfinite(y) & (steps > 0)
        if ok.any():
            ax.plot(steps[ok], y[ok], color=cmap(norm(P)), lw=1)
    sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    cb = fig.colorbar(sm, ax=ax, label="$P$ (sequences)")
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter
    cb.ax.yaxis.set_major_locator(FixedLocator(Ps))
    cb.ax.yaxis.set_major_formatter(ScalarFormatter())
    cb.ax.yaxis.set_minor_locator(NullLocator())
    cb.ax.tick_params(labelsize=6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"training step ({_label(opt)}, full batch)")
    ax.set_ylabel("test loss per token")
    ax.set_title(f"{attention} attention: test loss during training")
    _annotate_status(ax, ag)
    return fig




def experimental_transition(ag, attention: str, optimizer: str) -> float:
    """Transition estimate from experiments (seed means). Linear: the P (log-interpolated) where ĉG first
    overtakes ĉ1. Softmax: the geometric midpoint of the two swept P between which âG jumps most.
    NaN if there is no such point."""
    if optimizer not in ag["optimizer"].values:
        return float("nan")
    L = _L(ag)
    a, b = _op_values(ag, attention, "_mean", L)
    P = ag["P"].values.astype(float)
    if attention == "softmax":
        g = b.sel(optimizer=optimizer).values
        ok = np.isfinite(g)
        P, g = P[ok], g[ok]
        if len(P) < 2:
            return float("nan")
        i = int(np.argmax(np.diff(g)))
        return float(np.sqrt(P[i] * P[i + 1]))
    d = (b - a).sel(optimizer=optimizer).values
    ok = np.isfinite(d)
    P, d = P[ok], d[ok]
    for i in range(1, len(P)):
        if d[i - 1] < 0 <= d[i]:
            t = -d[i - 1] / (d[i] - d[i - 1])
            return float(np.exp(np.log(P[i - 1]) + t * (np.log(P[i]) - np.log(P[i - 1]))))
    return float("nan")


def fig_scaling(inputs, options):
    """fig8: theory transition points vs L (and vs V, d_k where the config asks for them), with the
    experimental estimates at the config's L."""
    plt = _style()
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
                ax.plot([_L(ag)], [Pe], "*", color=color, ms=9, mec="k", mew=0.5,
                        label=f"{name} ({_label(opt)})")
    ax.set_ylabel("transition point $P$ (sequences)")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=6, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.06))
    return fig


@dataclass(frozen=True)
class Figure:
    name: str
    draw: Callable
    needs: tuple = ()                     # (kind, attention) pairs: kind in {aggregate, theory}
    options: Callable[[dict], dict] = field(default=lambda cfg: {})

    def available(self, attentions) -> bool:
        """Drawable when every aggregate it needs is swept (theory files always exist)."""
        return all(att in attentions for kind, att in self.needs if kind == "aggregate")


_BOTH = (("aggregate", "linear"), ("aggregate", "softmax"))
FIGURES = {f.name: f for f in [
    Figure("fig1_stages", fig_stages, _BOTH,
           lambda cfg: {"stage_optimizer": cfg["figures"]["stage_optimizer"],
                        "stages": {a: [[k, v] for k, v in st.items()] for a, st in cfg["figures"]["stages"].items()}}),
    Figure("fig2_landscapes", fig_landscapes, (("theory", "linear"), ("theory", "softmax"))),
    # fig3/fig4: ĉ1, ĉG (linear) or â1, âG (softmax) vs P: Adam circles, SGLD diamonds, theory lines, test loss
    Figure("fig3_linear_order_params", partial(_fig_order_params, attention="linear"),
           (("aggregate", "linear"), ("theory", "linear"))),
    Figure("fig4_softmax_order_params", partial(_fig_order_params, attention="softmax"),
           (("aggregate", "softmax"), ("theory", "softmax"))),
    Figure("fig5_coverage", fig_coverage, _BOTH + (("theory", "linear"), ("theory", "softmax"))),
    # fig6/fig7: test loss vs training step for every P (Adam), log axes
    Figure("fig6_linear_loss_curves", partial(_fig_loss_curves, attention="linear"), (("aggregate", "linear"),)),
    Figure("fig7_softmax_loss_curves", partial(_fig_loss_curves, attention="softmax"), (("aggregate", "softmax"),)),
    Figure("fig8_scaling", fig_scaling, (("theory", "linear"), ("theory", "softmax")) + _BOTH,
           lambda cfg: {"experiment_optimizer": cfg["figures"]["stage_optimizer"]}),
]}


def make_figure(name: str, inputs: dict, out_pdf: Path, options: dict | None = None) -> dict:
    """Draw figure ``name`` from ``inputs`` (role -> path); write .pdf, .png, .provenance.json."""
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; allowed values: {sorted(FIGURES)}")
    options = options or {}
    out_pdf = Path(out_pdf)
    rec = figure_record(name, inputs, options)
    fig = FIGURES[name].draw(inputs, options)
    short = json.dumps({"figure": name, "code_version": rec["code_version"],
                        "inputs": {r: v["sha256"] for r, v in rec["inputs"].items()}}, sort_keys=True)
    atomic_write(out_pdf, lambda t: fig.savefig(t, format="pdf", metadata={
        "Title": name, "Creator": f"copyhead {rec['package_version']}", "Subject": short,
        "Keywords": "copyhead provenance; see " + out_pdf.with_suffix(".provenance.json").name}))
    atomic_write(out_pdf.with_suffix(".png"), lambda t: fig.savefig(
        t, format="png", metadata={"Title": name, "Software": "copyhead", "Description": short}))
    import matplotlib.pyplot as plt
    plt.close(fig)
    rec["outputs"] = {ext: {"path": str(out_pdf.with_suffix("." + ext)),
                            "sha256": sha256_file(out_pdf.with_suffix("." + ext))} for ext in ("pdf", "png")}
    write_json(rec, out_pdf.with_suffix(".provenance.json"))
    return rec
