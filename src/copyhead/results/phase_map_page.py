"""docs/phase_map.md, generated from the phase-map netCDF files (copyhead.theory.phase_map; docs/theory.md,
Sec. 12). The prior check at d_k < L has its own page, docs/prior_check.md (research.prior_check.page).

``copyhead phase-map page --map M.nc --exact E.nc --out docs/phase_map.md`` (:func:`write_page`,
with its provenance record docs/phase_map.md.provenance.json). Every number on the page is read from those
files here; none is typed.
"""
from __future__ import annotations

import json

import numpy as np

from copyhead.analysis.finite_size import PRIOR_LABEL as PL
from copyhead.analysis.fits import loglog_slope, power_law_fit
from copyhead.provenance import product_record, read_dataset, write_product

from ..format import g

COMMAND = "snakemake -s workflow/phase_map.smk --cores 1"


def n_over_v2_min(ds) -> float:
    """The validity threshold N ≥ n V² the map was computed with (its config)."""
    return float(json.loads(ds.attrs["config_json"])["N_over_V2_min"])


def first_L_above_one(L, r):
    """Smallest L (log-interpolated) from which on the ratio stays ≥ 1, NaN if it ends below 1."""
    L, r = np.asarray(L, float), np.asarray(r, float)
    if not np.isfinite(r).all() or r[-1] < 1:
        return np.nan
    k = len(r) - 1
    while k > 0 and r[k - 1] >= 1:
        k -= 1
    if k == 0:
        return L[0]
    a, b = np.log(r[k - 1]), np.log(r[k])
    return float(np.exp(np.log(L[k - 1]) + (np.log(L[k]) - np.log(L[k - 1])) * (-a) / (b - a)))


def where_softmax_first(ds):
    lines = ["| path | prior | " + " | ".join(f"V = {v}" for v in ds["V"].values) + " | max ratio (at L, V) |",
             "|---|---|" + "---|" * (len(ds["V"]) + 1)]
    for path in ds["path"].values:
        for prior in ds["prior"].values:
            r = ds["ratio"].sel(path=path, prior=prior)
            cells = []
            for v in ds["V"].values:
                Lx = first_L_above_one(ds["L"].values, r.sel(V=v).values)
                cells.append("never" if not np.isfinite(Lx) else
                             (f"all L ≥ {ds['L'].values[0]}" if Lx == ds["L"].values[0] else f"L ≥ {g(Lx)}"))
            i, j = np.unravel_index(int(np.nanargmax(r.values)), r.shape)
            lines.append(f"| {path} | {PL[prior]} | " + " | ".join(cells) +
                         f" | {g(r.values[i, j])} ({int(ds['L'][i])}, {int(ds['V'][j])}) |")
    return lines


def validity(ds):
    n_min = n_over_v2_min(ds)
    out = []
    for prior in ds["prior"].values:
        r = ds["ratio"].sel(prior=prior)
        ok_rank = ds["d_k"] >= ds["L"]
        ok_n = ds["N_over_V2"].sel(prior=prior) >= n_min
        first = (r > 1)
        n1 = int(first.sum())
        both = int((first & ok_rank & ok_n).sum())
        out.append(f"- {PL[prior]} prior: softmax first (ratio > 1) at {n1} of {r.size} (path, L, V) points; "
                   f"{int((first & ok_rank).sum())} of them have d_k ≥ L, {int((first & ok_n).sum())} have "
                   f"N ≥ {g(n_min)} V² (σ² = 0.1), {both} both.")
    return out


def scaling_forms(ds):
    """Per path and prior at each V: log-log slope of the softmax copy point in L, and the spread
    (max/min over L) of P*/ln²L and P*/(L ln²L); the ln-slopes of ln²L and L ln²L over the same L."""
    L = ds["L"].values.astype(float)
    s_ln2 = loglog_slope(L, np.log(L) ** 2)
    out = [f"Over L = {int(L[0])}–{int(L[-1])} the forms themselves have log-log slopes {g(s_ln2)} (ln²L) and "
           f"{g(1 + s_ln2)} (L ln²L). Softmax copy point P* (sequences): slope d ln P*/d ln L, and spread "
           "max/min over L of P*/ln²L | P*/(L ln²L) (1 = the form fits exactly); V = "
           + ", ".join(str(v) for v in ds["V"].values) + ":", "",
           "| path | prior | slope of P* in L | spread P* | spread P*/ln²L | spread P*/(L ln²L) | closest (V = 16) |",
           "|---|---|---|---|---|---|---|"]
    for path in ds["path"].values:
        for prior in ds["prior"].values:
            P = ds["P_copy"].sel(path=path, prior=prior)
            sl, s0, s1, s2 = [], [], [], []
            for v in ds["V"].values:
                y = P.sel(V=v).values
                sl.append(loglog_slope(L, y))
                s0.append(np.nanmax(y) / np.nanmin(y))
                f1, f2 = y / np.log(L) ** 2, y / (L * np.log(L) ** 2)
                s1.append(np.nanmax(f1) / np.nanmin(f1))
                s2.append(np.nanmax(f2) / np.nanmin(f2))
            k = list(ds["V"].values).index(16) if 16 in ds["V"].values else 0
            best = min(zip((s0[k], s1[k], s2[k]), ("L-independent", "ln²L", "L ln²L")))[1]
            out.append(f"| {path} | {PL[prior]} | {', '.join(g(x, 2) for x in sl)} | {', '.join(g(x, 2) for x in s0)}"
                       f" | {', '.join(g(x, 2) for x in s1)}"
                       f" | {', '.join(g(x, 2) for x in s2)} | {best} |")
    out += ["", "The ratio: least squares ln ratio = a + b ln L + c ln V over the (L, V) grid of each path. "
                "O(√(LV)) means b = c = 0.5; the design's fixed-d_k form √(LV/d_k)/ln²L means c = 0.5 and "
                f"b = 0.5 − {g(s_ln2)} = {g(0.5 - s_ln2)} over this L range at fixed d_k (−{g(s_ln2)} along d_k ∝ L).",
            "", "| path | prior | b (L) | c (V) | rms residual (ln) | ratio at L = 16 → 256, V = 16 |", "|---|---|---|---|---|---|"]
    for path in ds["path"].values:
        for prior in ds["prior"].values:
            b, c, rms = power_law_fit(L, ds["V"].values, ds["ratio"].sel(path=path, prior=prior).values)
            r16 = ds["ratio"].sel(path=path, prior=prior, V=16).values
            out.append(f"| {path} | {PL[prior]} | {g(b, 2)} | {g(c, 2)} | {g(rms, 2)} | "
                       f"{' → '.join(g(x) for x in r16)} |")
    return out


def exact_slice(ex):
    n_min = n_over_v2_min(ex)
    out = ["| path | L | d_k | N/V² | closed LD | exact LD | closed Gauss. | exact Gauss. |", "|---|---|---|---|---|---|---|---|"]
    for path in ex["path"].values:
        for L in ex["L"].values:
            s = ex.sel(path=path, L=L)
            dk = {"d_k=L": L, "d_k=2L": 2 * L}.get(path, path.split("=")[1])
            out.append(f"| {path} | {L} | {dk} | {g(float(s['N_over_V2'].sel(prior='large_deviation')), 2)} | "
                       + " | ".join(g(float(s[v].sel(prior=pr))) for pr in ("large_deviation", "gaussian")
                                    for v in ("ratio", "ratio_exact")) + " |")
    err = np.abs(ex["P_copy_exact"] / ex["P_copy"] - 1)
    errx = np.abs(ex["P_crossover_exact"] / ex["P_crossover"] - 1)
    nv = ex["N_over_V2"]
    out += ["", f"Closed form vs exact average on this slice: the softmax copy point differs by at most "
                f"{g(100 * float(err.where(nv >= n_min).max()), 2)} % where N ≥ {g(n_min)} V² and by up to "
                f"{g(100 * float(err.where(nv < n_min).max()), 2)} % where N < {g(n_min)} V²; the linear "
                f"crossover by at most {g(100 * float(errx.max()), 2)} % everywhere. N/(V+L)² is "
                f"{g(float(ex['N_over_D2'].min()), 2)}–{g(float(ex['N_over_D2'].max()), 2)} on the whole slice, "
                f"so (V+L)² is not what separates good from bad agreement: V² is."]
    return out


def summary(ds, ex):
    """The findings in a few generated lines (V = 16, large-deviation prior unless said)."""
    Ls = ds["L"].values
    out = []
    for prior in ("large_deviation", "gaussian"):
        parts = []
        for path in ds["path"].values:
            r = ds["ratio"].sel(path=path, prior=prior, V=16).values
            Lx = first_L_above_one(Ls, r)
            parts.append(f"{path}: {g(r[0])} → {g(r[-1])}" + (f" (≥ 1 from L ≈ {g(Lx)})" if np.isfinite(Lx) else ""))
        out.append(f"- Closed form, {PL[prior]} prior, V = 16, ratio at L = {Ls[0]} → {Ls[-1]}: " + "; ".join(parts) + ".")
    for prior in ("large_deviation", "gaussian"):
        parts = []
        for path in ex["path"].values:
            r = ex["ratio_exact"].sel(path=path, prior=prior).values
            parts.append(f"{path}: {' → '.join(g(x) for x in r)}")
        out.append(f"- Exact average, {PL[prior]} prior, V = 16, L = {', '.join(map(str, ex['L'].values))}: "
                   + "; ".join(parts) + ".")
    out.append("- The prior at d_k < L, checked by sampling Q and K, and what it does to the transitions: "
               "[prior_check.md](prior_check.md) (the research package's, research.prior_check).")
    return out


def render(ds, ex, command=COMMAND):
    s = json.loads(ds.attrs["config_json"])["settings"]
    n_min = n_over_v2_min(ds)
    lines = ["# Phase map: where softmax attention copies first", "",
             f"Generated by `{command}` (workflow/phase_map.smk) from docs/phase_map/*.nc; every number below is "
             "computed from those files. Derivation: docs/theory.md, Sec. 12.", "",
             "![phase map](phase_map/fig_phase_map.png)", "",
             "## Summary", "", *summary(ds, ex), "",
             "## Setting", "",
             f"- Closed form (Eq. 12) with both priors on L = {', '.join(map(str, s['L']))} × V = "
             f"{', '.join(map(str, s['V']))} along d_k = 16, 32, 64, d_k = L and d_k = 2L; σ² = {g(s['sigma2'])}, "
             f"g = 1; grid_n = {s['grid_n']}, {s['n_P']} P values on [P_c/8, 40 P_c] per point "
             f"({g(float(ds.attrs['compute_seconds']))} s wall time on one core of the shared machine).",
             f"- Exact dataset average (Eq. 17) on V = {s['exact']['V']}, L = {', '.join(map(str, s['exact']['L']))}: "
             f"{s['exact']['n_datasets']} datasets, ≤ {s['exact']['max_points']} integer P, grid_n = "
             f"{s['exact']['grid_n']} ({g(float(ex.attrs['compute_seconds']))} s).",
             "- ratio = linear crossover (cG overtakes c1) / softmax copy point (the first-order P* where there "
             "is a jump, else the P of fastest growth of âG). ratio > 1: softmax copies first. The closed-form "
             "ratio does not depend on σ² (every closed-form P ∝ σ²); N = P·L does.",
             f"- Assumptions marked: d_k ≥ L (else M = QᵀK/d_k is rank deficient) and N = P·L ≥ "
             f"{g(n_min)} V² at the smaller transition (σ² = 0.1; at σ² = 1 every N is 10× larger).", "",
             "## Where softmax copies first (closed form)", "", *where_softmax_first(ds), "", *validity(ds), "",
             "## The exact average on the V = 16 slice", "", *exact_slice(ex), "",
             "## The scaling forms along each path", "", *scaling_forms(ds), ""]
    return "\n".join(lines)


def write_page(map_path, exact_path, out) -> dict:
    """Render docs/phase_map.md from the closed-form map and the exact slice and write it with its provenance
    record (``<out>.provenance.json``: the sha256 of each input and the code)."""
    inputs = {"map": map_path, "exact": exact_path}
    text = render(read_dataset(map_path), read_dataset(exact_path))
    return write_product({out: text}, product_record("phase_map_page", "results", inputs))
