"""The studies report's figures (fig8 of the studies, fig9, fig9b, fig10): drawings of the tables of
studies.json (``copyhead studies-page`` writes them beside the page with their provenance records,
:func:`copyhead.figures.write_figure`). Each function returns a matplotlib Figure and computes nothing:
the numbers (gaps, fits, transition ratios, twins) are the studies' tables
(:mod:`copyhead.analysis.finite_size`, :mod:`copyhead.analysis.scaling_claims`, :mod:`copyhead.analysis.twins`)."""
from __future__ import annotations

import math

import numpy as np

from copyhead.analysis.finite_size import PRIOR_LABEL, Z95
from copyhead.analysis.results_model import FiniteSize, Fit, ScalingRow, TheoryLines, Twin
from copyhead.attention import ATTENTIONS, variant
from copyhead.format import METHOD, g

from .style import fixed_ticks, log_P_axis


def _pyplot():
    """matplotlib.pyplot with the Agg backend (imported only when drawing); these figures keep matplotlib's
    default style at 150 dpi."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def twin_label(c: Twin, ref: bool = False) -> str:
    """The parameter a twin pair differs in, with the study's (or the reference's) value."""
    if c.differs == "σ²":
        return f"σ² = {g(c.sigma2_ref if ref else c.sigma2)}"
    return f"η = {g(c.eta_ref if ref else c.eta)}"


# the prior-started recipes a study's figures show, by the sampler's name, in order of preference: HMC's where
# the studies ran the reference sampler (its copy-started twin, hmc_copy, is the metastability check), else SGLD's
STAGE_RECIPES = ("hmc", "sgld")


def _stage(rows) -> tuple[str | None, str]:
    """(recipe, sampler name) of the prior-started chains among ``rows`` (table rows with a ``recipe``)."""
    present = {r.recipe for r in rows}
    recipe = next((k for k in STAGE_RECIPES if k in present), None)
    return recipe, METHOD.get(recipe, "SGLD")


# points and transitions whose chains have not mixed (or sit on one of two branches) are drawn faded, with one
# legend key: the pages' per-point status (section 4 of a studies page, studies.conclude.unsettled)
FADED_ALPHA = 0.3
FADED_LABEL = "faded: chains not mixed or metastable"
NOTHING_FADED = (frozenset(), frozenset())


def _errorbar(ax, x, y, yerr, faded, **kw):
    """``ax.errorbar`` of the points, the ``faded`` ones (a boolean mask) drawn at :data:`FADED_ALPHA` with no
    legend label (they keep it where every point is faded)."""
    x, y, faded = np.asarray(x, float), np.asarray(y, float), np.asarray(faded, bool)
    yerr = np.asarray(yerr, float)
    hide = {"label": "_faded"} if (~faded).any() else {}
    for mask, extra in ((~faded, {}), (faded, {"alpha": FADED_ALPHA, **hide})):
        if mask.any():
            ax.errorbar(x[mask], y[mask], yerr=yerr[..., mask], **{**kw, **extra})


def _faded_keys(any_faded: bool) -> list:
    """The legend key of the faded points, as a list (empty where nothing is faded)."""
    from matplotlib.lines import Line2D
    return [Line2D([], [], marker="o", color="0.35", alpha=FADED_ALPHA, ls="none", ms=4,
                   label=FADED_LABEL)] if any_faded else []


def _legend(ax, any_faded: bool, **kw):
    """The panel's legend, with the faded points' key where it has any."""
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + _faded_keys(any_faded), **kw)


def _fit_line(ax, fit: Fit, x, color, ls: str):
    """The fitted a + b·x over the data's own range of x only: with three sizes, a line drawn on to x = 0
    would show an extrapolation the data do not support (its value there, r_∞ with its error, is in the
    tables)."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if math.isfinite(fit.a) and len(x):
        xs = np.linspace(x.min(), x.max(), 20)
        ax.plot(xs, fit.a + fit.b * xs, ls, lw=0.8, color=color)


def draw_finite_size(fs: FiniteSize, title: str, unsettled=NOTHING_FADED):
    """Gaps (sampler − same-dataset theory, prior starts: HMC's or SGLD's, :func:`_stage`) of both attention types and the transition ratios
    experiment/theory against 1/size, with their weighted fits (a ``finite_size`` table of studies.json).
    ``unsettled``: (points, transitions) to draw faded (studies.conclude.unsettled; keyed by the study's name,
    which tables older than it lack: nothing faded there)."""
    plt = _pyplot()
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import ListedColormap, LogNorm
    from matplotlib.lines import Line2D
    B = fs.by
    fig, axes = plt.subplots(1, len(ATTENTIONS) + 1, figsize=(12.5, 4.6), dpi=150)
    stage, method = _stage(fs.gaps)
    # colour: P/P_ref on one log scale for both attention types (one colour bar, not a legend entry per
    # curve); marker: the order parameter (open square: the pooling one, filled circle: the copy one)
    ratios = sorted({r.ratio for r in fs.gaps if r.recipe == stage}) or [1.0]
    norm = LogNorm(min(ratios), max(ratios) if max(ratios) > min(ratios) else min(ratios) * 2)
    cmap = ListedColormap(plt.get_cmap("viridis")(np.linspace(0, 0.9, 256)))   # no pale yellow on white
    for i, (ax, att) in enumerate(zip(axes, ATTENTIONS)):
        rows = [r for r in fs.gaps if r.attention == att and r.recipe == stage]
        keys, n_faded = {}, 0
        for r in rows:
            color = cmap(norm(r.ratio))
            copy = r.param.endswith("G")
            x = np.array([1.0 / p.x for p in r.points])
            y = np.array([p.gap for p in r.points])
            e = np.array([p.error for p in r.points])
            faded = [(p.study, att, p.P, r.param) in unsettled[0] for p in r.points]
            n_faded += sum(faded)
            _errorbar(ax, x, y, Z(e), faded, fmt="o" if copy else "s", ms=3.5, capsize=2,
                      color=color, mfc=color if copy else "none", label=f"_{r.name}, P = {g(r.ratio)}·P_ref")
            _fit_line(ax, r.fit, x, color, "--")
            keys[r.name] = Line2D([], [], marker="o" if copy else "s", color="0.35",
                                  mfc="0.35" if copy else "none", ls="none", ms=4, label=r.name)
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xlim(left=0)
        ax.set_xlabel(f"1/{B}")
        ax.set_ylabel(f"{method} − same-dataset theory")
        ax.set_title(f"({'abcdefgh'[i]}) {att}: order parameters, prior starts (95% bars)", fontsize=9)
        if keys:
            ax.legend(handles=list(keys.values()) + _faded_keys(n_faded), fontsize=7,
                      loc="best", title_fontsize=7, title="colour: P / P_ref")
    sm = ScalarMappable(norm=norm, cmap=cmap)
    cax = axes[len(ATTENTIONS) - 1].inset_axes([1.03, 0.0, 0.035, 1.0])
    cb = fig.colorbar(sm, cax=cax)
    ticks = ratios[:1]
    for r in ratios[1:]:   # a tick per ratio, but not two within 10 % (their labels would overlap)
        if r / ticks[-1] >= 1.1:
            ticks.append(r)
    cb.set_ticks(ticks)
    cb.set_ticklabels([g(r) for r in ticks])
    cb.minorticks_off()
    cb.ax.tick_params(labelsize=6.5)
    cb.set_label("P / P_ref (both panels)", fontsize=8)
    ax, n_faded = axes[len(ATTENTIONS)], 0
    for t in fs.transitions:
        x = np.array([1.0 / p.x for p in t.points])
        y = np.array([p.ratio for p in t.points], float)
        e = np.array([p.error for p in t.points], float)
        if not np.isfinite(y).any():
            continue
        filled = t.prior == "large_deviation"
        v = variant(t.attention)
        faded = [(p.study, t.attention) in unsettled[1] for p in t.points]
        n_faded += sum(faded)
        _errorbar(ax, x * (1.0 if filled else 1.02), y, Z(e), faded, fmt=v.marker, ms=4, capsize=2,
                  mfc=None if filled else "none", color=v.color,
                  label=f"{t.attention} {v.transition}, {PRIOR_LABEL[t.prior]} prior")
        _fit_line(ax, t.fit, x, v.color, "--" if filled else ":")
    ax.axhline(1, color="k", lw=0.6)
    ax.set_xlim(left=0)
    ax.set_xlabel(f"1/{B}")
    ax.set_ylabel(f"transition P: {method} / closed-form theory")
    ax.set_title(f"(c) transition points (95% CI), fits r_∞ + b/{B}", fontsize=9)
    _legend(ax, n_faded, fontsize=6.5, loc="best")
    fig.suptitle(title + " (dashed: weighted fits over the measured sizes)", fontsize=10)
    fig.tight_layout()
    fig.subplots_adjust(wspace=0.42)   # room for the colour bar beside (b)
    return fig


def Z(e):
    """1σ errors → 95% error bars."""
    return np.asarray(e, float) * Z95


def _log_L_axis(ax, theory_lines: TheoryLines):
    ax.set_xscale("log")
    Ls = sorted({int(L) for v in theory_lines.lines.values() for L in v.L})
    fixed_ticks(ax.xaxis, [L for L in (8, 12, 16, 24, 32, 48, 64, 96, 128) if Ls and Ls[0] <= L <= Ls[-1]])
    ax.set_xlabel("L")


def _plain_log_ticks(axis, lim):
    """Ticks of a log axis at round numbers inside ``lim``, labelled as plain numbers: 1, 2, 5 × 10^k, or
    finer steps where those give fewer than three."""
    lo, hi = sorted(lim)
    for steps in ((1, 2, 5), (1, 1.5, 2, 3, 5, 7)):
        ticks = [m * 10.0 ** k for k in range(-3, 7) for m in steps if lo <= m * 10.0 ** k <= hi]
        if len(ticks) >= 3:
            break
    if ticks:
        fixed_ticks(axis, ticks)


def draw_scaling(rows: list[ScalingRow], theory_lines: TheoryLines, unsettled=NOTHING_FADED):
    """Transitions against L (experiment and closed form along the studies' path), P* over the paper's two
    scaling forms, and the linear-crossover / softmax-P* ratio against √(LV) (a scaling table of studies.json:
    its rows and theory lines, keyed by (attention, prior)). ``unsettled``: as in :func:`draw_finite_size`;
    a ratio is faded where either of its transitions is."""
    plt = _pyplot()
    bad = unsettled[1]
    n_faded = [0, 0, 0]   # per panel
    method = "/".join(dict.fromkeys(r.method for r in rows)) or "SGLD"
    fig, axes = plt.subplots(1, 3, figsize=(12.5, 4.8), dpi=150)
    ax = axes[0]
    own = {"P_crossover": "crossover", "P_star": "first-order P*"}
    for att, v in ATTENTIONS.items():
        for prior, ls in (("large_deviation", "-"), ("gaussian", ":")):
            tl = theory_lines.line(att, prior)
            if tl:
                ax.plot(tl.L, getattr(tl, v.theory_transition), ls, lw=1, color=v.color,
                        label=f"closed form {att} {own.get(v.theory_transition, '')}, {PRIOR_LABEL[prior]}")
        pts = [r for r in rows if r.transition(att) and r.V == theory_lines.V]
        if pts:
            L = np.array([r.L for r in pts])
            y = np.array([r.transition(att).estimate for r in pts])
            lo = np.array([r.transition(att).ci_lo for r in pts])
            hi = np.array([r.transition(att).ci_hi for r in pts])
            faded = [(r.name, att) in bad for r in pts]
            n_faded[0] += sum(faded)
            _errorbar(ax, L, y, [y - lo, hi - y], faded, fmt=v.marker, color=v.color, capsize=2,
                      label=f"{method} {att} {v.transition}")
    _log_L_axis(ax, theory_lines)
    ax.set_yscale("log")
    _plain_log_ticks(ax.yaxis, ax.get_ylim())
    ax.set_ylabel("transition P (sequences)")
    ax.set_title(f"(a) V = {theory_lines.V}, {theory_lines.label}", fontsize=9)
    _legend(ax, n_faded[0], fontsize=6)
    ax = axes[1]
    for prior, ls in (("large_deviation", "-"), ("gaussian", ":")):
        tl = theory_lines.line("softmax", prior)
        if tl:
            L = np.asarray(tl.L, float)
            ax.plot(L, np.asarray(tl.P_star) / np.log(L) ** 2, ls, color="C3", lw=1,
                    label=f"theory P*/ln²L, {PRIOR_LABEL[prior]}")
            ax.plot(L, np.asarray(tl.P_star) / (L * np.log(L) ** 2) * 10, ls, color="C2", lw=1,
                    label=f"theory 10·P*/(L ln²L), {PRIOR_LABEL[prior]}")
    pts = [r for r in rows if r.softmax and r.V == theory_lines.V]
    if pts:
        L = np.array([r.L for r in pts], float)
        y = np.array([r.softmax.estimate for r in pts])
        lo = np.array([r.softmax.ci_lo for r in pts])
        hi = np.array([r.softmax.ci_hi for r in pts])
        faded = [(r.name, "softmax") in bad for r in pts]
        n_faded[1] += sum(faded)
        for div, col, lab in ((np.log(L) ** 2, "C3", f"{method} jump/ln²L"),
                              (L * np.log(L) ** 2 / 10, "C2", f"{method} 10·jump/(L ln²L)")):
            _errorbar(ax, L, y / div, [(y - lo) / div, (hi - y) / div], faded, fmt="D", color=col, capsize=2, label=lab)
    _log_L_axis(ax, theory_lines)
    ax.set_ylabel("softmax jump P / scaling form")
    ax.set_title("(b) the paper's P* ~ L ln²L (flat = holds)", fontsize=9)
    _legend(ax, n_faded[1], fontsize=6)
    ax = axes[2]
    for prior, ls in (("large_deviation", "-"), ("gaussian", ":")):
        lin, sm = theory_lines.line("linear", prior), theory_lines.line("softmax", prior)
        if lin and sm:
            L = np.asarray(lin.L, float)
            ax.plot(np.sqrt(L * theory_lines.V), np.asarray(lin.P_crossover) / np.asarray(sm.P_star), ls,
                    color="C1", lw=1, label=f"closed form crossover / P* (V = {theory_lines.V}), {PRIOR_LABEL[prior]}")
    rat = [r for r in rows if r.ratio]
    if rat:
        x = np.array([r.sqrt_LV for r in rat])
        y = np.array([r.ratio.experiment for r in rat])
        lohi = np.array([(r.ratio.lo, r.ratio.hi) for r in rat], float)
        method = "/".join(dict.fromkeys(r.method for r in rat))
        faded = [(r.name, "linear") in bad or (r.name, "softmax") in bad for r in rat]
        n_faded[2] += sum(faded)
        _errorbar(ax, x, y, [y - lohi[:, 0], lohi[:, 1] - y], faded, fmt="o", color="k", capsize=2,
                  label=f"{method} crossover / jump (95% interval)")
        same = np.array([r.ratio.same_dataset or [np.nan, np.nan] for r in rat], float)
        if np.isfinite(same).any():
            ax.errorbar(x * 1.03, same.mean(axis=1), yerr=(same[:, 1] - same[:, 0]) / 2, fmt="none", ecolor="C0",
                        capsize=3, lw=1.5, label="same estimator, same-dataset theory (interval)")
        for prior, mk in (("large_deviation", "x"), ("gaussian", "+")):
            ax.plot(x, [getattr(r.ratio, prior) for r in rat], mk, color="C1", ms=7,
                    label=f"closed form crossover / P*, {PRIOR_LABEL[prior]}")
        for r in rat:
            ax.annotate(f"L{r.L} V{r.V}", (r.sqrt_LV, r.ratio.experiment), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
    ax.axhline(1, color="k", lw=0.5)
    ax.set_xscale("log")
    fixed_ticks(ax.xaxis, [10, 15, 20, 30, 40])
    ax.set_xlabel("√(LV)")
    ax.set_ylabel("linear crossover P / softmax jump P")
    ax.set_title("(c) softmax advantage (paper: grows ∝ √(LV))", fontsize=9)
    _legend(ax, n_faded[2], fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2))   # below: hides no point
    fig.tight_layout()
    return fig


def draw_twins(twins: list[Twin]):
    """One row per twin pair, one column per attention type: both twins' order parameters at equal P/σ²."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(twins), len(ATTENTIONS), figsize=(9.5, 3.3 * len(twins)), squeeze=False, dpi=150)
    for row, c in zip(axes, twins):
        for ax, att in zip(row, ATTENTIONS):
            stage, method = _stage(c.rows)
            rows = [r for r in c.rows if r.attention == att and r.recipe == stage]
            for param, col in (("1", "C0"), ("G", "C3")):
                rs = sorted((r for r in rows if r.param.endswith(param)), key=lambda r: r.P_over_sigma2)
                if not rs:
                    continue
                x = np.array([r.P_over_sigma2 for r in rs])
                ax.errorbar(x, [r.value_ref for r in rs], yerr=Z([r.error_ref for r in rs]), fmt="o", mfc="none",
                            color=col, capsize=2, label=f"{rs[0].name}, {twin_label(c, True)}")
                ax.errorbar(x * 1.03, [r.value for r in rs], yerr=Z([r.error for r in rs]), fmt="x", color=col,
                            capsize=2, label=f"{rs[0].name}, {twin_label(c)}")
                ax.plot(x, [r.theory for r in rs], "-", lw=0.7, color=col, alpha=0.6)
                ax.plot(x, [r.theory_ref for r in rs], "--", lw=0.7, color=col, alpha=0.6)
            if rows:   # the sampled P/σ² as plain numbers on a log axis
                log_P_axis(ax, [r.P_over_sigma2 for r in rows], "P / σ²")
            ax.set_ylabel(f"order parameter ({method}, prior starts)")
            what = "σ² collapse" if c.differs == "σ²" else "step size"
            ax.set_title(f"{what}, {att}: {c.study} (×) vs {c.ref} (○)\n95% bars; same-dataset theory: "
                         f"solid {twin_label(c)}, dashed {twin_label(c, True)}", fontsize=8)
            ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


