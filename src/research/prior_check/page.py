"""docs/prior_check.md: the prior of the order parameters at d_k < L, = L, > L checked by sampling Q and K, and
what it does to the transitions (docs/theory.md, Sec. 12.3), generated from the prior check's netCDF file
(research.prior_check.output). ``python -m research prior-check-page --prior C.nc --out docs/prior_check.md``
(:func:`write_page`, with its provenance record docs/prior_check.md.provenance.json). Every number on the page is
read from that file; none is typed. It was the last section of docs/phase_map.md (copyhead.results.phase_map_page)
until issue 50 moved the prior check to the research package.
"""
from __future__ import annotations

import numpy as np

from copyhead.format import g
from copyhead.provenance import product_record, read_dataset, write_product

from .figure import CONCERN

COMMAND = "snakemake -s workflow/prior_check.smk --cores 1"


def moved(pc) -> float:
    """The largest relative move of a transition (softmax copy point, linear crossover) when the exact
    projection density replaces the large-deviation rate as the prior."""
    return max(float(np.abs(pc[f"P_{k}_exact_prior"] / pc[f"P_{k}_ld"] - 1).max()) for k in ("copy", "crossover"))


def summary(pc) -> list[str]:
    """The finding in one generated line."""
    e = np.abs(pc["rate_large_deviation"] - pc["rate_mc"])
    dks = [int(d) for d in pc["d_k"].values]
    bad = [d for d in dks if float(pc["copy_fraction_linear"].sel(d_k=d)) > float(pc["rank_bound"].sel(d_k=d))]
    return [f"- Prior (L = V = {pc.attrs['L']}): the large-deviation rate of the projection is within "
            f"{g(float(e.max()), 2)} nats of sampling at every d_k = {', '.join(map(str, dks))} (below, at and above "
            f"L alike; exact density: transitions move ≤ {g(100 * moved(pc), 2)} %). "
            + (f"At d_k = {', '.join(map(str, bad))} the predicted linear copy state needs a copy fraction "
               f"{g(float(pc['copy_fraction_linear'].max()), 2)} above the rank bound d_k/(L−1): not representable."
               if bad else "The predicted linear copy state is within the rank bound at every d_k.")]


def prior_section(pc):
    """The tables: −ln p of the projection against sampling per d_k, and the transitions with either prior."""
    L = int(pc.attrs["L"])
    dks = [int(d) for d in pc["d_k"].values]
    err = pc["rate_large_deviation"] - pc["rate_mc"]
    rel = np.abs(err) / pc["rate_mc"].where(pc["rate_mc"] > 1)
    out = [f"L = V = {L}, σ² = {g(float(pc.attrs['sigma2']))}, g_Q = g_K = 1; −ln p of the projection "
           "(x, mP) relative to the origin, along the copy line m1 = 0 (x = mP = t) and the pooling line "
           f"mP = 0 (x = t), t = {', '.join(g(x) for x in pc['t'].values)} (the region the transitions use: "
           "softmax β ≲ 3, linear plateau x ≈ 2.6, mP ≈ 2.1).", "",
           "| d_k | max \\|LD − sampled\\| copy line (nats) | relative | pooling line (nats) | relative | "
           "max \\|exact − sampled\\| | max \\|Gaussian − sampled\\| copy line | KL(exact‖LD) | KL(exact‖Gauss.) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for dk in dks:
        e, rr = err.sel(d_k=dk), rel.sel(d_k=dk)
        ee = np.abs(pc["rate_exact"] - pc["rate_mc"]).sel(d_k=dk).max()
        eg = np.abs(pc["rate_gaussian"] - pc["rate_mc"]).sel(d_k=dk, line="copy").max()
        out.append(f"| {dk}{' < L' if dk < L else ''} | {g(float(np.abs(e.sel(line='copy')).max()), 2)} | "
                   f"{g(100 * float(rr.sel(line='copy').max()), 2)} % | {g(float(np.abs(e.sel(line='pool')).max()), 2)} | "
                   f"{g(100 * float(rr.sel(line='pool').max()), 2)} % | {g(float(ee), 2)} | {g(float(eg), 3)} | "
                   f"{g(float(pc['KL_large_deviation'].sel(d_k=dk)), 2)} | {g(float(pc['KL_gaussian'].sel(d_k=dk)), 2)} |")
    se = float(pc["rate_mc_se"].max())
    out += ["", f"(Sampling standard error ≤ {g(se, 2)} nats per point.)", "",
            "Transitions at the same L, V with the large-deviation rate (LD) and with the exact projection "
            "density as the prior, and the copy fraction cG²/(c1² + cG²) of the predicted linear copy state "
            "(twice its crossover) against the largest one a rank-≤ d_k score matrix can have, d_k/(L−1):", "",
            "| d_k | softmax copy point LD | exact prior | kind | linear crossover LD | exact prior | "
            "predicted linear copy fraction | rank bound | in-plane fraction of draws at β = 2 |",
            "|---|---|---|---|---|---|---|---|---|"]
    for dk in dks:
        s = pc.sel(d_k=dk)
        kind = "first-order" if float(s["softmax_jump_ld"]) else "smooth"
        out.append(f"| {dk} | {g(float(s['P_copy_ld']))} | {g(float(s['P_copy_exact_prior']))} | {kind} | "
                   f"{g(float(s['P_crossover_ld']))} | {g(float(s['P_crossover_exact_prior']))} | "
                   f"{g(float(s['copy_fraction_linear']), 2)} | {g(float(s['rank_bound']), 2)} | "
                   f"{g(float(s['coverage_M'].sel(beta=2.0)), 2)} |")
    out += ["", f"Replacing the rate by the exact density moves every transition by at most {g(100 * moved(pc), 2)} %."]
    return out


def render(pc, command=COMMAND) -> str:
    lines = ["# The prior when d_k < L, checked by sampling", "",
             f"Generated by `{command}` from docs/prior_check/prior_check.nc; every "
             "number below is computed from that file (the research package's `research.prior_check`). "
             "Derivation: docs/theory.md, Sec. 12.3; the closed-form phase map it belongs to: "
             "[phase_map.md](phase_map.md).", "",
             "## Summary", "", *summary(pc), "",
             "## The prior of the projection, and the transitions", "",
             "![prior check](prior_check/fig_prior_check.png)", "", *prior_section(pc), ""]
    return "\n".join(lines)


def write_page(prior_path, out) -> dict:
    """Render docs/prior_check.md from the prior check and write it with its provenance record
    (``<out>.provenance.json``: the sha256 of the input and the code)."""
    inputs = {"prior": prior_path}
    return write_product({out: render(read_dataset(prior_path))}, product_record("prior_check_page", CONCERN, inputs))
