"""Plot conventions shared by the figures: sizes, markers, colours, the log-P axis, panel notes."""
from __future__ import annotations

import numpy as np

from ..attention import variant
from ..format import P_short

COL = 3.4   # paper single-column width, inches
WIDE = 7.0  # two-column width

MARKERS = {"adam": "o", "sgld": "D", "adam_map": "s", "sgld_copy": "^", "hmc": "*", "hmc_copy": "v",
           "sgld_half": "X"}
LABELS = {"adam": "Adam", "sgld": "SGLD", "adam_map": "Adam (plain MAP)", "sgld_copy": "SGLD, copy start",
          "hmc": "HMC (reference)", "hmc_copy": "HMC, copy start", "sgld_half": "SGLD, half step"}
# one meaning per colour in a figure: blue and orange are the two order parameters (pooling, copy) and
# nothing else; the methods' colours (test-loss and jump markers) avoid them
C1_COLOR, CG_COLOR = "tab:blue", "tab:orange"
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


def mark_transitions(ax, th, kinds, also=()):
    """Vertical lines at theory transition points, named (name and value) as the tick labels of an axis on
    top of ``ax``, above the data, in each line's colour (labels inside the panel covered the markers); the
    same lines, unnamed, on the axes ``also`` (fig3/fig4: the strip above the panel is ``ax``, the panel
    below it ``also``). Lines and labels are clipped to the axes, so a point outside the swept P range shows
    neither. Returns the number of named lines."""
    ticks, names, colors = [], [], []
    for k in kinds:
        if k not in th or not np.isfinite(float(th[k])):
            continue
        label, color, ls = TRANSITION_STYLES[k]
        P = float(th[k])
        for a in (ax, *also):
            a.axvline(P, color=color, ls=ls, lw=0.8, zorder=0)
        if not label:
            continue
        name = f"{label} {P_short(P)}"
        near = next((i for i, t in enumerate(ticks) if abs(np.log(P / t)) < 0.02), None)
        if near is None:
            ticks.append(P), names.append(name), colors.append(color)
        else:           # lines within 2 % of each other share one label (they overprinted each other)
            names[near] += " / " + name
    if ticks:   # after the x scale is set (setting it resets a secondary axis' locators and labels)
        top = ax.secondary_xaxis("top")
        fixed_ticks(top.xaxis, ticks, names)
        top.tick_params(length=2, pad=1, labelsize=5, labelrotation=90)
        for t, c in zip(top.get_xticklabels(), colors):
            t.set_color(c)
    return len(ticks)


def hollow_points(ax, P, y, marker, color, ms=4, zorder=5):
    """White-filled markers over the points (P, y): points whose chains are not shown converged (R̂ above
    the threshold). Drawn over the labelled error-bar points, so legends and error bars stay as they are."""
    P, y = np.asarray(P, float), np.asarray(y, float)
    if len(P):
        ax.plot(P, y, marker, mfc="white", mec=color, ms=ms, ls="none", zorder=zorder)
