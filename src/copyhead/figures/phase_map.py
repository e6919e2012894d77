"""The phase-map figure of docs/phase_map.md: ``draw_map`` (linear crossover / softmax copy point over
(L, V) on each d_k path, the ratio = 1 contours, where the theory's assumptions fail hatched, and the
V = 16 slice with the exact dataset average). ``copyhead phase-map figures --map M.nc --exact E.nc --out DIR``
writes fig_phase_map.png with its provenance sidecar (:func:`write_figures`). (The prior check's figure is
the research package's: research.prior_check.figure.)
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from copyhead.provenance import product_record, read_dataset

from . import write_figure
from .style import WIDE, fixed_ticks, pyplot

PRIOR_LABEL = {"large_deviation": "large-dev.", "gaussian": "Gaussian"}
PATH_COLORS = {"d_k=16": "tab:blue", "d_k=32": "tab:green", "d_k=64": "tab:purple", "d_k=L": "tab:orange",
               "d_k=2L": "tab:red"}


def _edges(v):
    lv = np.log2(np.asarray(v, float))
    mid = (lv[1:] + lv[:-1]) / 2
    return np.concatenate([[lv[0] - (mid[0] - lv[0])], mid, [lv[-1] + (lv[-1] - mid[-1])]])


def _hatch_cells(ax, mask, eL, eV, hatch, color):
    from matplotlib.patches import Rectangle
    for i, j in zip(*np.where(mask)):
        ax.add_patch(Rectangle((eL[i], eV[j]), eL[i + 1] - eL[i], eV[j + 1] - eV[j], fill=False, hatch=hatch,
                               ec=color, lw=0, zorder=2))


def map_panel(ax, ds, path, n_min, norm, cmap):
    """log2(ratio) of the large-deviation closed form over (L, V) on one path, values written in the cells;
    ratio = 1 contours of both priors; d_k < L and N < n_min V² hatched."""
    L, V = ds["L"].values, ds["V"].values
    eL, eV = _edges(L), _edges(V)
    sub = ds.sel(path=path)
    r = sub["ratio"].sel(prior="large_deviation").values                  # (L, V)
    mesh = ax.pcolormesh(eL, eV, np.log2(r).T, cmap=cmap, norm=norm, shading="flat")
    for i in range(len(L)):
        for j in range(len(V)):
            if np.isfinite(r[i, j]):
                ax.text(np.log2(L[i]), np.log2(V[j]), f"{r[i, j]:.2f}", ha="center", va="center", fontsize=5,
                        zorder=4)
    X, Y = np.meshgrid(np.log2(L), np.log2(V), indexing="ij")
    for prior, ls in (("large_deviation", "-"), ("gaussian", "--")):
        z = np.log(sub["ratio"].sel(prior=prior).values)
        if np.nanmin(z) < 0 < np.nanmax(z):
            cs = ax.contour(X, Y, z, levels=[0.0], colors="k", linestyles=ls, linewidths=1.1, zorder=3)
            ax.clabel(cs, fmt={0.0: "1"}, fontsize=5.5)
    dk = sub["d_k"].values
    _hatch_cells(ax, (dk < L)[:, None] & np.ones(len(V), bool)[None, :], eL, eV, "///", "0.3")
    nv = sub["N_over_V2"].sel(prior="large_deviation").values
    _hatch_cells(ax, nv < n_min, eL, eV, "..", "0.45")
    ax.set_xlim(eL[0], eL[-1])
    ax.set_ylim(eV[0], eV[-1])
    ax.set_xticks(np.log2(L), [str(x) for x in L])
    ax.set_yticks(np.log2(V), [str(x) for x in V])
    ax.set_title(path.replace("d_k", "$d_k$"))
    return mesh


def slice_panel(ax, ex):
    """Ratio against L at V = 16 on every path: closed form (lines) and exact dataset average (markers),
    large-deviation prior."""
    for path, color in PATH_COLORS.items():
        s = ex.sel(path=path, prior="large_deviation")
        L = s["L"].values
        ax.plot(L, s["ratio"].values, "-", color=color, lw=1.0)
        ax.plot(L, s["ratio_exact"].values, "o", color=color, ms=3, mfc="white")
        ax.text(L[-1] * 1.08, s["ratio"].values[-1], path.replace("d_k", "$d_k$"), color=color, fontsize=5.5,
                va="center")
    ax.axhline(1.0, color="k", lw=0.6, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    L = ex["L"].values
    ax.set_xlim(L[0] / 1.2, L[-1] * 2.2)
    fixed_ticks(ax.xaxis, [int(x) for x in L])
    fixed_ticks(ax.yaxis, [0.5, 0.7, 1.0, 1.5])
    ax.set_xlabel("$L$")
    ax.set_ylabel("ratio")
    ax.set_title(f"$V$ = {int(ex['V'])}, large-dev.: lines closed form,\ncircles exact average (2 datasets)",
                 fontsize=6.5)


def draw_map(ds, ex, n_min):
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D
    plt = pyplot()
    plt.rcParams["hatch.linewidth"] = 0.5
    fig, axes = plt.subplots(2, 3, figsize=(WIDE, 5.3))
    fig.subplots_adjust(hspace=0.42, wspace=0.32, right=0.86)
    norm, cmap = TwoSlopeNorm(vmin=-2.0, vcenter=0.0, vmax=1.0), "RdBu_r"
    paths = list(ds["path"].values)
    for ax, path in zip(axes.flat, paths):
        mesh = map_panel(ax, ds, path, n_min, norm, cmap)
    for ax in axes[1, :2]:
        ax.set_xlabel("sequence length $L$")
    for ax in axes[:, 0]:
        ax.set_ylabel("vocabulary $V$")
    slice_panel(axes.flat[len(paths)], ex)
    cb = fig.colorbar(mesh, cax=fig.add_axes([0.885, 0.56, 0.015, 0.32]))
    cb.set_label("ratio = linear crossover /\nsoftmax $P^*$ (large-dev.)", fontsize=6.5)
    cb.set_ticks(np.log2([0.25, 0.5, 1, 2]), labels=["0.25", "0.5", "1", "2"])
    handles = [Line2D([], [], color="k", ls="-", label="ratio = 1, large-dev. prior"),
               Line2D([], [], color="k", ls="--", label="ratio = 1, Gaussian prior"),
               Patch(fc="none", ec="0.35", hatch="////", label="$d_k < L$ (rank deficient)"),
               Patch(fc="none", ec="0.55", hatch="....", label=f"$N = PL < {n_min:g}\\,V^2$ ($\\sigma^2$ = 0.1)")]
    fig.legend(handles=handles, loc="upper center", ncol=4, fontsize=6, bbox_to_anchor=(0.47, 0.99))
    return fig


def write_figures(map_path, exact_path, out) -> dict:
    """Draw fig_phase_map.png (from the map and the exact slice) into the folder ``out`` with its
    ``<stem>.provenance.json``; returns {name: record}."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ds = read_dataset(map_path)
    n_min = float(json.loads(ds.attrs["config_json"])["N_over_V2_min"])
    inputs = {"map": map_path, "exact": exact_path}
    return {"fig_phase_map": write_figure(draw_map(ds, read_dataset(exact_path), n_min), out / "fig_phase_map.png",
                                          product_record("fig_phase_map", "figures", inputs, kind="figure"),
                                          formats=("png",))}
