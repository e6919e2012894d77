"""The prior check's figure, docs/prior_check/fig_prior_check.png (:func:`draw_prior`: the prior of the
projection of QᵀK/d_k against sampling, the off-plane norm of rank-deficient score matrices, the effect on the
transitions). ``python -m research prior-check-figure --prior C.nc --out fig_prior_check.png`` writes it with its
provenance sidecar (:func:`write`). It was drawn by copyhead.figures.phase_map until issue 50 moved the prior
check to the research package.
"""
from __future__ import annotations

import numpy as np

from copyhead.figures import write_figure
from copyhead.figures.style import WIDE, fixed_ticks, pyplot
from copyhead.provenance import product_record, read_dataset

CONCERN = "prior_check_page"    # copyhead.fingerprint.CODE_ROOTS: the code the figure and the page are made by


def draw_prior(pc):
    """(a, b) formula − sampled −ln p along the copy and pooling lines, per d_k; (c) fraction of ||M||² in
    span{J, I} for score matrices drawn at the copy point, bound d_k/(L−1); (d) transitions vs d_k."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(WIDE, 2.2))
    dks = pc["d_k"].values
    colors = plt.cm.viridis(np.linspace(0, 0.85, len(dks)))
    L = int(pc.attrs["L"])
    for ax, line, xlabel in ((axes[0], "copy", "$m_P$ (on $m_1 = 0$)"), (axes[1], "pool", "$x = L m_1 + m_P$ (on $m_P = 0$)")):
        for dk, col in zip(dks, colors):
            s = pc.sel(d_k=dk, line=line)
            t = s["t"].values
            err = s["rate_large_deviation"].values - s["rate_mc"].values
            ax.errorbar(t, err, yerr=2 * s["rate_mc_se"].values, fmt="o-", color=col, ms=2.5, lw=0.8,
                        label=f"$d_k$ = {dk}" + (" < L" if dk < L else ""))
            ax.plot(t, s["rate_exact"].values - s["rate_mc"].values, ":", color=col, lw=0.6)
        ax.axhline(0, color="k", lw=0.5)
        ax.set_xlabel(xlabel)
    axes[0].set_ylabel("formula − sampled $-\\ln p$ (nats)")
    axes[0].set_title("(a) large-dev. rate, copy line", fontsize=7)
    axes[1].set_title("(b) pooling line; dotted: exact", fontsize=7)
    axes[0].legend(fontsize=5, loc="lower left")
    ax = axes[2]
    beta = pc["beta"].values
    for dk, col in zip(dks, colors):
        ax.plot(beta, pc["coverage_M"].sel(d_k=dk).values, "-", color=col, lw=1.0)
        if dk < L - 1:
            ax.axhline(dk / (L - 1) * L / (L - 1), color=col, ls="--", lw=0.6)
    ax.set_xlabel("copy logit $\\beta$ (draws at $m_P = \\beta$)")
    ax.set_ylabel("$\\|\\Pi M\\|^2 / \\|M\\|^2$")
    ax.set_ylim(0, 1.05)
    ax.set_title("(c) in-plane norm; dashed: rank bound", fontsize=7)
    ax = axes[3]
    for key, style, label in (("P_copy_ld", "ko-", "softmax $P^*$, large-dev. rate"),
                              ("P_copy_exact_prior", "k^--", "softmax $P^*$, exact prior"),
                              ("P_crossover_ld", "bD-", "linear crossover, large-dev."),
                              ("P_crossover_exact_prior", "bv--", "linear crossover, exact")):
        ax.plot(dks, pc[key].values, style, ms=3, lw=0.8, mfc="none" if "exact" in key else None, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    fixed_ticks(ax.xaxis, [int(d) for d in dks])
    fixed_ticks(ax.yaxis, [5, 10, 20, 30])
    ax.axvline(L, color="0.6", lw=0.6, ls=":")
    ax.set_xlabel("$d_k$")
    ax.set_ylabel("$P$ (sequences)")
    ax.set_title(f"(d) transitions, $L$ = $V$ = {L}", fontsize=7)
    ax.legend(fontsize=5, loc="upper left")
    fig.tight_layout()
    return fig


def write(prior_path, out) -> dict:
    """Draw fig_prior_check.png from the prior check ``prior_path`` to ``out`` with its
    ``<stem>.provenance.json``; returns its record."""
    rec = product_record("fig_prior_check", CONCERN, {"prior": prior_path}, kind="figure")
    return write_figure(draw_prior(read_dataset(prior_path)), out, rec, formats=("png",))
