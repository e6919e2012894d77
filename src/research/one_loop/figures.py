"""The one-loop figure of docs/one_loop.md: the measured gap (the reference sampler's
prior-started chains − same-dataset theory) against 1/d_k with
its error and the one-loop prediction (Eq. (32)) drawn through it, one panel per P/P_ref (columns) and order
parameter (rows); the scaling study's points (d_k = 2L, L > 16) added in grey.
``python -m research one-loop figure --finite-size F.nc --finite-L G.nc --out fig_one_loop_gaps.png`` writes it with
its provenance sidecar (:func:`write`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from copyhead.figures import write_figure
from copyhead.figures.style import WIDE, pyplot
from copyhead.format import sampler_name
from copyhead.provenance import product_record, read_dataset

from . import compare as cmp
from . import remainder_fit as rem

CONCERN = "one_loop_figures"    # copyhead.fingerprint.CODE_ROOTS: the code these figures are made by

RATIOS = (1.0, 1.35, 2.0)
NAME = {"cG": r"$\hat c_G$", "c1": r"$\hat c_1$", "aG": r"$\hat a_G$"}
PRED = "tab:red"


def _panel(ax, fs, fl, ratio, param):
    fl_fs, fl_fl = cmp.flags(fs), cmp.flags(fl)
    x = 1.0 / fs["d_k"].values
    s = fs.sel(ratio=ratio, param=param)
    pred = cmp.shift(fs).sel(ratio=ratio, param=param).values
    soft = (fl_fs["soft"] | fl_fs["none"]).sel(ratio=ratio).values
    ax.axhline(0.0, color="0.6", lw=0.7, zorder=0)
    ax.errorbar(x, s["gap"].values, s["error"].values, fmt="o", color="k", ms=3.5, capsize=2, zorder=3,
                label=f"measured, $L = {int(fs['L'].values[0])}$")
    ok = ~soft
    order = np.argsort(x)
    ax.plot(x[order], np.where(ok, pred, np.nan)[order], "-", color=PRED, marker="D", ms=3, zorder=2,
            label="one-loop prediction, Eq. (32)")
    if soft.any():
        ax.plot(x[order], pred[order], "--", color=PRED, lw=0.8, zorder=1)
        ax.plot(x[soft], pred[soft], "D", mfc="white", mec=PRED, ms=3.5, zorder=2)
    big = fl["L"].values > fs["L"].values[0]
    xl = 1.0 / fl["d_k"].values[big]
    t = fl.sel(ratio=ratio, param=param)
    ax.errorbar(xl, t["gap"].values[big], t["error"].values[big], fmt="s", color="0.55", ms=3.5, capsize=2,
                zorder=3, label="measured, $d_k = 2L$ ($L$ = " + ", ".join(str(int(v)) for v in fl["L"].values[big]) + ")")
    pl = cmp.shift(fl).sel(ratio=ratio, param=param).values[big]
    sl = (fl_fl["soft"] | fl_fl["none"]).sel(ratio=ratio).values[big]
    ax.plot(xl[~sl], pl[~sl], "x", color="0.3", ms=5, mew=1.2, zorder=4, label="one-loop, $d_k = 2L$")
    ax.plot(xl[sl], pl[sl], "x", color="0.7", ms=5, mew=1.0, zorder=4)
    ax.set_xlim(0, x.max() * 1.08)
    ax.set_xticks(x[::-1][[0, 2, 3, 4]] if len(x) == 5 else x)
    ax.set_xticklabels([f"1/{int(round(1 / v))}" for v in ax.get_xticks()])
    if soft.any() or sl.any():
        ax.text(0.03, 0.03, "flagged: soft transverse mode;\nhollow, dashed, light $\\times$:\nnot a prediction",
                transform=ax.transAxes, fontsize=6, color=PRED, va="bottom", ha="left")
    near = (fl_fs["near"] & ~fl_fs["soft"]).sel(ratio=ratio).values
    for xi, yi in zip(x[near], pred[near]):
        ax.annotate("†", (xi, yi), xytext=(4, 0), textcoords="offset points", color=PRED, fontsize=8, va="center")
    r = "" if ratio == 1 else f"{ratio:g}\\,"
    ax.set_title(f"{NAME[param]}, $P \\approx {r}P_{{ref}}$")


def draw(fs, fl):
    plt = pyplot()
    fig, axes = plt.subplots(2, len(RATIOS), figsize=(WIDE, 4.2), constrained_layout=True)
    for i, param in enumerate(("cG", "c1")):
        for j, ratio in enumerate(RATIOS):
            _panel(axes[i, j], fs, fl, ratio, param)
            if j == 0:
                axes[i, j].set_ylabel(f"gap of {NAME[param]}")
            if i == 1:
                axes[i, j].set_xlabel("$1/d_k$")
    sampler = sampler_name(fs.attrs["recipe"])
    fig.supylabel(f"gap = {sampler} (prior starts) $-$ same-dataset theory", fontsize=8)
    h, lab = axes[0, 0].get_legend_handles_labels()
    order = sorted(range(len(lab)), key=lambda k: ("measured" not in lab[k], "2L" in lab[k]))
    fig.legend([h[k] for k in order], [lab[k] for k in order], loc="outside lower center", ncol=4)
    return fig


def write(finite_size, finite_L, out) -> dict:
    """Draw the figure from the one-loop files of the finite-size and the d_k = 2L studies and write ``out``
    (png) with its ``<stem>.provenance.json``."""
    rec = product_record("fig_one_loop_gaps", CONCERN, {"finite_size": finite_size, "finite_L": finite_L},
                         kind="figure")
    return write_figure(draw(read_dataset(finite_size), read_dataset(finite_L)), out, rec, formats=("png",))


DS_COLOR = "tab:blue"
POOL_COLOR = "tab:green"


def _line(ax, r, y, bad, color, marker, label):
    """A predicted curve: solid with filled markers where it is a prediction, dashed with hollow markers
    where flagged."""
    ax.plot(r, np.where(bad, np.nan, y), "-", color=color, marker=marker, ms=3.5, zorder=2, label=label)
    if bad.any():
        ax.plot(r, y, "--", color=color, lw=0.8, zorder=1)
        ax.plot(r[bad], y[bad], marker, mfc="white", mec=color, ms=4, ls="none", zorder=2)


def draw_dataset(ds):
    """The per-dataset one loop against the equivalent-kernel one and the measured gap (× d_k) against
    P/P_ref (linear) or P/P* (softmax): one panel per (size, order parameter) of ``ds``."""
    plt = pyplot()
    xs, params = ds["x"].values, [str(p) for p in ds["param"].values]
    panels = [(x, q) for x in xs for q in params]
    ncol = min(len(panels), 5)
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(WIDE, 2.4 * nrow + 0.6), constrained_layout=True, squeeze=False)
    softmax = ds.attrs["attention"] == "softmax"
    fe, fd = cmp.flags(ds), cmp.flags(ds, variant=cmp.DATASET)
    for ax, (x, q) in zip(axes.ravel(), panels):
        s = ds.sel(x=x, param=q)
        d_k = float(ds["d_k"].sel(x=x))
        r = ds["ratio"].values
        ok = np.isfinite(s["gap"].values)
        ax.axhline(0.0, color="0.6", lw=0.7, zorder=0)
        ax.errorbar(r[ok], s["gap"].values[ok] * d_k, s["error"].values[ok] * d_k, fmt="o", color="k", ms=3.5,
                    capsize=2, zorder=3, label=f"measured ({sampler_name(ds.attrs['recipe'])} − same-dataset theory)")
        lines = [("one_loop", fe, PRED, "D", "one loop, equivalent kernel (Eq. (32))"),
                 (cmp.DATASET, fd, DS_COLOR, "s", "one loop, per dataset (own H_E⊥, g⊥)")]
        if f"mean_{cmp.POOLING}" in ds:
            lines.append((cmp.POOLING, cmp.flags(ds, variant=cmp.POOLING), POOL_COLOR, "^",
                          "pooling sector (Eq. (37)) + per-dataset rest"))
        for variant, flags, color, marker, label in lines:
            y = cmp.shift(ds, variant).sel(x=x, param=q).values * d_k
            bad = (flags["soft"] | flags["none"]).sel(x=x).values
            _line(ax, r[ok], y[ok], bad[ok], color, marker, label)
        size = f"$L = {int(ds['L'].sel(x=x))}$, $d_k = {int(d_k)}$"
        ax.set_title(f"{NAME[q]}, {size}", fontsize=8)
        ax.set_xlabel("$P/P^*$" if softmax else "$P/P_{ref}$")
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel(r"gap $\times\, d_k$")
    h, lab = axes[0, 0].get_legend_handles_labels()
    fig.legend(h, lab, loc="outside lower center", ncol=3, fontsize=7)
    return fig


def write_dataset(predictions, out) -> dict:
    """Draw the per-dataset figure from one one-loop file (the converged study, linear; the finite-size
    softmax points) and write ``out`` (png) with its ``<stem>.provenance.json``."""
    rec = product_record(Path(out).stem, CONCERN, {"predictions": predictions}, kind="figure")
    return write_figure(draw_dataset(read_dataset(predictions)), out, rec, formats=("png",))


def draw_remainder(named):
    """What the pooling-sector one loop leaves of the ĉG gap at P/P_ref = rem.LAW_RATIO, relative to its
    shift, against L/d_k (research.one_loop.page_remainder): the points with their measured errors, the
    law a + b L/d_k fitted over d_k ≥ 2L and its extrapolation to d_k = L, the d_k = L points it does not use."""
    plt = pyplot()
    rows = rem.points(named)
    fit = rem.relative_fit(rows)
    at = rem.at_ratio(rows, rem.LAW_RATIO)
    fig, ax = plt.subplots(figsize=(WIDE * 0.6, 3.2), constrained_layout=True)
    markers = {16: "o", 24: "s", 32: "D"}
    ax.axhline(0.0, color="0.6", lw=0.7, zorder=0)
    if fit:
        lo = 1.0 / rem.MIN_DK_OVER_L
        u_fit, u_ext = np.linspace(0.0, lo, 20), np.linspace(lo, 1.0, 20)
        ax.plot(u_fit, rem.law(fit, u_fit), "-", color=PRED, zorder=1,
                label=f"fit over $d_k \\geq {rem.MIN_DK_OVER_L}L$: ${fit['a']:.2f} + {fit['b']:.2f}\\,L/d_k$")
        ax.plot(u_ext, rem.law(fit, u_ext), ":", color=PRED, zorder=1, label="its extrapolation to $d_k = L$")
    for L in sorted({p["L"] for p in at}):
        pts = sorted((p for p in at if p["L"] == L), key=lambda p: p["d_k"])
        u = np.array([L / p["d_k"] for p in pts])
        q = np.array([p["r_over_shift"] for p in pts])
        e = np.array([p["q_err"] for p in pts])
        used = np.array([p["d_k"] >= rem.MIN_DK_OVER_L * L for p in pts])
        kw = dict(color="k", ms=4.5, capsize=2, ls="none", marker=markers.get(L, "o"), zorder=3)
        ax.errorbar(u[used], q[used], e[used], label=f"$L = {L}$", **kw)
        if (~used).any():
            ax.errorbar(u[~used], q[~used], e[~used], mfc="white", **kw)
    for L in sorted({p["L"] for p in rows if p["study"] == "converged"}):
        b = rem.bracket(rows, rem.LAW_RATIO, L, L)
        if b:
            ax.errorbar([1.0, 1.0], [p["r_over_shift"] for p in b], [p["q_err"] for p in b],
                        fmt="D-", mfc="white", color="tab:blue", ms=5, capsize=2, zorder=4,
                        label=f"default size $L = d_k = {L}$ ($P/P_{{ref}}$ = "
                              + ", ".join(f"{p['ratio']:.2f}" for p in b) + ")")
    ax.set_xlim(0, 1.08)
    ax.set_ylim(min(0.0, ax.get_ylim()[0]), None)
    ax.set_xlabel("$L/d_k$")
    ax.set_ylabel("remainder / one-loop shift of $\\hat c_G$")
    ax.set_title(f"what the pooling-sector one loop leaves, $P = {rem.LAW_RATIO:g}\\,P_{{ref}}$\n"
                 "(hollow: $d_k = L$, not in the fit)", fontsize=8)
    ax.legend(fontsize=6.5, loc="upper left")
    return fig


def write_remainder(finite_size, finite_L, converged, out) -> dict:
    """Draw the remainder figure from the three linear studies' one-loop files and write ``out`` (png) with its
    ``<stem>.provenance.json``."""
    rec = product_record(Path(out).stem, CONCERN, {"finite_size": finite_size, "finite_L": finite_L,
                                                     "converged": converged}, kind="figure")
    named = [("finite_size", read_dataset(finite_size), "d_k", ""), ("finite_L", read_dataset(finite_L), "L", ""),
             ("converged", read_dataset(converged), "d_k", "")]
    return write_figure(draw_remainder(named), out, rec, formats=("png",))
