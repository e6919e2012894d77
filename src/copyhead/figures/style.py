"""Plot conventions shared by the figures: sizes, markers, colours, the log-P axis, panel notes."""
from __future__ import annotations

import numpy as np

from ..attention import variant
from ..results.format import sampler_name

COL = 3.4   # paper single-column width, inches
WIDE = 7.0  # two-column width

MARKERS = {"adam": "o", "sgld": "D", "adam_map": "s", "sgld_copy": "^", "hmc": "*", "hmc_copy": "v",
           "sgld_half": "X"}
LABELS = {"adam": "Adam", "sgld": "SGLD", "adam_map": "Adam (plain MAP)", "sgld_copy": "SGLD, copy init",
          "hmc": "HMC (reference)", "hmc_copy": "HMC, copy init", "sgld_half": "SGLD, half step"}
# one meaning per colour in a figure: blue and orange are the two order parameters (pooling, copy) and
# nothing else; the methods' colours (test-loss and jump markers) avoid them
C1_COLOR, CG_COLOR = "tab:blue", "tab:orange"
EXACT_MEAN_LS = (0, (3, 1, 1, 1, 1, 1))   # dataset-averaged exact action, posterior mean
OPT_COLORS = {"adam": "0.15", "sgld": "tab:red", "adam_map": "tab:gray", "sgld_copy": "tab:purple",
              "hmc": "tab:green", "hmc_copy": "tab:olive", "sgld_half": "tab:brown"}

# theory transition points: label, colour, line style (every drawn line is named on the plot)
TRANSITION_STYLES = {
    "P_onset": ("onset", "0.35", ":"), "P_crossover": ("crossover", "0.35", "--"),
    "P_star": ("$P^*$ closed form", "k", "-."), "P_spinodal_low": ("lower spinodal", "0.5", (0, (1, 2))),
    "P_spinodal_high": ("upper spinodal", "0.5", (0, (1, 2))), "P_star_exact": ("$P^*$ exact avg.", "tab:red", "-."),
    "P_crossover_exact": ("crossover exact avg.", "tab:red", "--")}


def pyplot():
    """matplotlib.pyplot with the Agg backend and the paper's style (imported only when drawing)."""
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


def fixed_ticks(axis, values, labels=None):
    """Ticks exactly at ``values``, labelled as plain numbers (or with ``labels``), no minor ticks."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator, ScalarFormatter
    axis.set_major_locator(FixedLocator(values))
    axis.set_major_formatter(ScalarFormatter() if labels is None else FixedFormatter(labels))
    axis.set_minor_locator(NullLocator())


def log_P_axis(ax, Ps, label="training-set size $P$ (sequences)"):
    """Log x axis labelled with the swept P values as plain numbers."""
    Ps = np.unique(np.asarray(Ps, float))
    ax.set_xscale("log")
    ax.set_xlim(Ps.min() / 1.3, Ps.max() * 1.3)
    ticks = [Ps[0]]
    for P in Ps[1:]:  # skip ticks that would crowd their neighbour on a log axis
        if P / ticks[-1] >= 1.3:
            ticks.append(P)
    fixed_ticks(ax.xaxis, ticks)
    ax.set_xlabel(label)


def opt_label(optimizer: str) -> str:
    return LABELS.get(optimizer, optimizer)


def opt_marker(optimizer: str) -> str:
    return MARKERS.get(optimizer, "v")


def op_names(attention: str) -> tuple[str, str]:
    """TeX names of the two plotted order parameters."""
    return variant(attention).tex


def status_note(ag) -> str:
    """'k diverged run(s) excluded' and 'k non-finite run(s) excluded' (aggregate status "nonfinite": the
    file said ok but a result is not finite), or ''."""
    notes = []
    for status, what in (("diverged", "diverged"), ("nonfinite", "non-finite")):
        n = int((ag["status"] == status).sum())
        if n:
            notes.append(f"{n} {what} run(s) excluded")
    return "; ".join(notes)


def annotate_status(ax, ag):
    """Count diverged and non-finite runs on the panel (they are excluded from the plotted means)."""
    note = status_note(ag)
    if note:
        ax.text(0.02, 0.02, note, transform=ax.transAxes, fontsize=6, color="red")


def mark_nonfinite(ax, ag, optimizer: str) -> int:
    """A red ✕ at the bottom of ``ax`` at every P where a run of ``optimizer`` has a non-finite result
    (aggregate status "nonfinite"; older aggregates have none). Returns how many P are marked."""
    st = ag["status"].sel(optimizer=optimizer)
    Ps = [float(P) for P in ag["P"].values if (st.sel(P=P) == "nonfinite").any()]
    if Ps:
        ax.plot(Ps, [0.03] * len(Ps), "x", color="red", ms=5, mew=1.2, transform=ax.get_xaxis_transform(),
                zorder=8, clip_on=False)
    return len(Ps)


def errorbar_points(ax, P, mean, sem, **kw):
    """Markers at the finite means with ± sem bars (a NaN sem, e.g. one seed, draws no bar)."""
    P, mean, sem = (np.asarray(v, float) for v in (P, mean, sem))
    ok = np.isfinite(mean)
    ax.errorbar(P[ok], mean[ok], yerr=sem[ok], **kw)


def mark_transitions(ax, th, kinds):
    """Vertical lines at theory transition points, named (name and value) as the tick labels of an axis on
    top of ``ax``, above the data, in each line's colour (labels inside the panel covered the markers);
    line and label are clipped to the axes, so a point outside the swept P range shows neither. Returns
    the number of named lines."""
    ticks, names, colors = [], [], []
    for k in kinds:
        if k not in th or not np.isfinite(float(th[k])):
            continue
        label, color, ls = TRANSITION_STYLES[k]
        P = float(th[k])
        ax.axvline(P, color=color, ls=ls, lw=0.8, zorder=0)
        if label:
            ticks.append(P), names.append(f"{label} {P:.3g}"), colors.append(color)
    if ticks:   # after the x scale is set (setting it resets a secondary axis' locators and labels)
        top = ax.secondary_xaxis("top")
        fixed_ticks(top.xaxis, ticks, names)
        top.tick_params(length=2, pad=1, labelsize=5, labelrotation=90)
        for t, c in zip(top.get_xticklabels(), colors):
            t.set_color(c)
    return len(ticks)


def hollow_points(ax, P, y, marker, color, ms=4):
    """White-filled markers over the points (P, y): points whose chains are not shown converged (R̂ above
    the threshold). Drawn over the labelled error-bar points, so legends and error bars stay as they are."""
    P, y = np.asarray(P, float), np.asarray(y, float)
    if len(P):
        ax.plot(P, y, marker, mfc="white", mec=color, ms=ms, ls="none", zorder=5)


def residual_axis(ax, reference: dict):
    """Residual panel: z = 0 line, ±2 band, symmetric-log y (linear within ±3), title naming the reference
    curve of each method (``reference``: method -> curve label)."""
    ax.axhline(0, color="0.3", lw=0.6, zorder=0)
    ax.axhspan(-2, 2, color="0.9", zorder=-1)
    ax.set_yscale("symlog", linthresh=3)
    lo, hi = ax.get_ylim()
    top = max(abs(lo), abs(hi), 3.0)
    ticks = [2] + [t for t in (10, 100, 1000, 10000) if t <= 1.2 * top]
    fixed_ticks(ax.yaxis, sorted({0.0, *ticks, *(-t for t in ticks)}))
    ax.set_ylim(-1.2 * top, 1.2 * top)
    ax.set_ylabel("$z$")
    by: dict[str, list[str]] = {}
    for m, c in reference.items():
        if c:
            by.setdefault(c, []).append(sampler_name(m))
    what = "; ".join(f"{', '.join(ms)} vs {c}" for c, ms in by.items())
    ax.set_title(f"residuals: {what}" if what else "residuals: no theory curve with errors", fontsize=6)


def rhat_panel(ax, rows, keys, colors, rhat_max):
    """Split-R̂ vs P per sampling recipe (marker) and order parameter (colour); rows ``a+b`` (prior and copy
    start pooled; HMC: per dataset) as black-edged markers of the copy recipe; a row's ``rhat_plot`` where
    it has one (HMC: within-chain and per-dataset R̂, never across seeds); the threshold as a dashed line, always inside
    the axis; the legend names the recipes with neutral markers (the colours are the order parameters')."""
    seen, top = {}, rhat_max
    for key, color in zip(keys, colors):
        by = {}
        for r in rows:
            v = r.get("rhat_plot", r["rhat"])
            if r["param"] == key and v is not None and np.isfinite(v):
                by.setdefault((r["recipe"], r.get("rhat_basis", "")), []).append((r["P"], v))
        for (recipe, basis), pts in by.items():
            P, R = zip(*sorted(pts))
            pooled = "+" in recipe
            mk = opt_marker(recipe.split("+")[-1])
            ax.plot(P, R, mk + ("" if pooled else ":"), color=color, ms=3, lw=0.6, mec="k" if pooled else color)
            seen[recipe] = (mk, pooled, basis)
            top = max(top, max(R))
    ax.axhline(rhat_max, color="r", ls="--", lw=0.7)
    if top > 5:
        ax.set_yscale("log")
    ax.set_ylim(min(0.98, ax.get_ylim()[0]), max(top * 1.08, rhat_max * 1.03))
    ax.set_ylabel("split-$\\hat R$")
    ax.set_title(f"convergence (red dashed: {rhat_max:g})", fontsize=6)
    for recipe, (mk, pooled, basis) in seen.items():
        ax.plot([], [], mk, color="0.6", mec="k" if pooled else "0.6", ms=3, ls="none",
                label=_rhat_label(recipe, pooled, basis))
    if seen:   # beside the panel, never over its points
        ax.legend(fontsize=5, loc="upper left", bbox_to_anchor=(1.0, 1.0), handletextpad=0.2, borderaxespad=0.2)


def _rhat_label(recipe: str, pooled: bool, basis: str) -> str:
    """Plain name of an R̂ row: 'HMC, prior + copy starts (per dataset)', 'SGLD, half step (within chain)'."""
    name = opt_label(recipe.split("+")[0]).split(" (")[0] + (", prior + copy starts" if pooled else "")
    return name + (f" ({basis})" if basis else " (pooled over seeds)" if pooled else "")
