"""The per-dataset one loop on docs/one_loop.md (research.one_loop.dataset; docs/theory.md Sec. 13,
"Per-dataset one loop"): the answer's lines and the section, from the one-loop netCDF files' per-dataset
variables (mean_none_dataset, mean_one_loop_dataset, *_weight_dataset) through research.one_loop.compare.
Markdown lines only; the page is assembled by research.one_loop.page."""
from __future__ import annotations

import numpy as np

from copyhead.format import g

from . import compare as cmp
from .page_tables import NAME, effect, f2

DS = cmp.DATASET
POOL = cmp.POOLING
AIM_LINEAR = 5.0        # the aim: linear RMS z ≤ 5 at the default size against the reference chains


def has_dataset(ds) -> bool:
    return ds is not None and f"mean_{DS}" in ds


def has_pooling(ds) -> bool:
    return ds is not None and f"mean_{POOL}" in ds


def _rms(ds, variant, over):
    r, n = cmp.rms_z(ds, variant, over=over)
    return r, n


def rms_rows(ds, label):
    """Per size: the points neither correction flags (n), RMS z uncorrected / equivalent kernel / per dataset
    over them, and the per-dataset RMS z over all the points it does not flag (n')."""
    both = ("one_loop", DS)
    r0, n = _rms(ds, None, both)
    rek, _ = _rms(ds, "one_loop", both)
    rds, _ = _rms(ds, DS, both)
    r0d, nd = _rms(ds, None, DS)
    rdd, _ = _rms(ds, DS, DS)
    pool = has_pooling(ds)
    if pool:
        r0p, npl = _rms(ds, None, POOL)
        rpp, _ = _rms(ds, POOL, POOL)
    lines = [f"| {label} | n | uncorrected | one loop (EK) | per dataset | n′ | uncorrected′ | per dataset′ |"
             + (" n″ | uncorrected″ | pooling sector″ |" if pool else ""),
             "|---|---|---|---|---|---|---|---|" + ("---|---|---|" if pool else "")]
    for x in ds["x"].values:
        c = [int(n.sel(x=x)), r0.sel(x=x), rek.sel(x=x), rds.sel(x=x), int(nd.sel(x=x)), r0d.sel(x=x), rdd.sel(x=x)]
        lines.append(f"| {int(x)} | {c[0]} | " + " | ".join(g(float(v)) for v in c[1:4]) + f" | {c[4]} | "
                     + " | ".join(g(float(v)) for v in c[5:]) + " |"
                     + (f" {int(npl.sel(x=x))} | {g(float(r0p.sel(x=x)))} | {g(float(rpp.sel(x=x)))} |" if pool else ""))
    return lines


def _summary(ds, by):
    """Over the points neither correction flags: the effect size (largest |Δ| uncorrected → EK → per dataset,
    against the tolerance), then 'x: uncorrected → EK → per dataset' in RMS z."""
    both = ("one_loop", DS)
    r0, n = _rms(ds, None, both)
    rek, _ = _rms(ds, "one_loop", both)
    rds, _ = _rms(ds, DS, both)
    cells = ", ".join(f"{int(x)}: {g(float(r0.sel(x=x)))} → {g(float(rek.sel(x=x)))} → {g(float(rds.sel(x=x)))} "
                      f"(n = {int(n.sel(x=x))})" for x in ds["x"].values)
    better = int((rds < rek).sum())
    return (effect(ds, [None, "one_loop", DS], ["uncorrected", "EK one loop", "per dataset"], by, over=both)
            + f"; significance: RMS z uncorrected → EK one loop → per dataset, {by} = {cells}; per dataset below "
            f"the equivalent kernel at {better} of {int(ds['x'].size)} sizes")


def flagged_text(ds):
    """The (ratio, x) the per-dataset correction flags and the ones the equivalent-kernel one flags."""
    out = []
    for variant, name in ((DS, "per dataset"), ("one_loop", "equivalent kernel")):
        fl = cmp.flags(ds, variant=variant)
        bad = fl["soft"] | fl["none"]
        pts = [f"{g(float(r), 2)} ({int(x)})" for r in ds["ratio"].values for x in ds["x"].values
               if bool(bad.sel(ratio=r, x=x))]
        out.append(f"{name}: {', '.join(pts) or 'none'}")
    return "; ".join(out)


def consistency_text(ds):
    """|the per-dataset uncorrected mean − the studies' same-dataset curve| (the same theory on the same
    training sets, another grid): largest, in measured errors."""
    d = np.abs(ds["mean_none_dataset"] - ds["theory"])
    return (f"{g(float(d.max()), 2)} ({g(float((d / ds['error']).max()), 2)} measured errors, median "
            f"{g(float(d.median()), 2)})")


def point_rows(ds, ratio_name="P/P_ref"):
    """Every point: measured gap ± error, the two predicted shifts, z of each, the per-dataset soft weight."""
    pool = has_pooling(ds)
    lines = [f"| P | {ratio_name} | {ds.attrs['by']} | param | measured gap ± err | EK shift | per-dataset shift | "
             + ("pooling-sector shift | " if pool else "")
             + "z uncorr. | z EK | z per dataset | " + ("z pooling | " if pool else "") + "soft weight (per dataset) |",
             "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if pool else "")]
    zu, ze, zd = cmp.z(ds), cmp.z(ds, "one_loop"), cmp.z(ds, DS)
    she, shd = cmp.shift(ds), cmp.shift(ds, DS)
    fe, fd = cmp.flags(ds), cmp.flags(ds, variant=DS)
    if pool:
        zp, shp, fp = cmp.z(ds, POOL), cmp.shift(ds, POOL), cmp.flags(ds, variant=POOL)
    for ratio in ds["ratio"].values:
        for x in ds["x"].values:
            s = ds.sel(ratio=ratio, x=x)
            if not np.isfinite(float(s["P"])):
                continue
            for param in ds["param"].values:
                q = dict(ratio=ratio, x=x, param=param)

                def cell(v, flags):
                    bad = bool((flags["soft"] | flags["none"]).sel(ratio=ratio, x=x))
                    return f"({f2(float(v.sel(**q)), 4)})" if bad else f2(float(v.sel(**q)), 4)
                lines.append(f"| {g(float(s['P']))} | {g(float(ratio), 2)} | {int(x)} | {NAME[str(param)]} | "
                             f"{f2(float(s['gap'].sel(param=param)), 4)} ± {float(s['error'].sel(param=param)):.4f} | "
                             f"{cell(she, fe)} | {cell(shd, fd)} | " + (f"{cell(shp, fp)} | " if pool else "")
                             + f"{g(float(zu.sel(**q)))} | {g(float(ze.sel(**q)))} | {g(float(zd.sel(**q)))} | "
                             + (f"{g(float(zp.sel(**q)))} | " if pool else "")
                             + f"{g(float(s['soft_weight_dataset']), 2)} |")
    return lines


def _share_text(ds, param="cG", above=1.2):
    """Where the aim fails: the share of the measured gap the per-dataset shift predicts (predicted/measured)
    for ``param`` on the copy side (P/P_ref ≥ ``above``, unflagged, |gap| > 3σ): median and range."""
    u = cmp.usable(ds, variant=DS) & (ds["ratio"] >= above)
    q = (cmp.shift(ds, DS) / ds["gap"]).sel(param=param).where(u & (np.abs(ds["gap"].sel(param=param))
                                                                     > 3 * ds["error"].sel(param=param)))
    v = q.values.ravel()
    v = v[np.isfinite(v)]
    if not len(v):
        return ""
    return (f" On the copy side (P/P_ref ≥ {g(above)}) the per-dataset shift predicts {100 * np.median(v):.0f} % "
            f"({100 * v.min():.0f}–{100 * v.max():.0f} %, {len(v)} P) of the measured {NAME[param]} gap: the missing "
            "part is beyond Gaussian order in the transverse modes (at d_k = 2L the per-dataset RMS z grows with L, "
            "scaling-study table of Section 0).")


def _pool_moves(ds):
    """Where the pooling sector moves the prediction most against the per-dataset one loop: the point and the
    size of the difference of the two shifts (ĉ1), in measured errors."""
    d = (cmp.shift(ds, POOL) - cmp.shift(ds, DS)).sel(param="c1")
    zz = np.abs(d / ds["error"].sel(param="c1"))
    if not np.isfinite(zz).any():
        return "no point to compare"
    i = np.unravel_index(int(np.nanargmax(zz.values)), zz.shape)
    s = ds.isel(ratio=i[0], x=i[1])
    return (f"largest change of the ĉ1 shift against the per-dataset one loop at P = {g(float(s['P']))} "
            f"(P/P_ref {g(float(s['ratio']), 2)}, {ds.attrs['by']} {int(s['x'])}): {f2(float(d.values[i]), 4)} "
            f"({g(float(zz.values[i]), 2)} measured errors; measured gap {f2(float(s['gap'].sel(param='c1')), 4)})")


def answer_lines(named):
    """The answer's lines: per study, RMS z uncorrected → equivalent kernel → per dataset, and the aims."""
    out = []
    for key, ds, by, what in named:
        if not has_dataset(ds):
            continue
        line = f"- Per-dataset one loop (Section 0), {what}, over the points neither correction flags: {_summary(ds, by)}."
        if key == "converged":
            r, n = _rms(ds, DS, DS)
            x = ds["x"].values[0]
            v = float(r.sel(x=x))
            line += (f" Over every point it does not flag (n = {int(n.sel(x=x))}): "
                     + effect(ds, [DS], ["per dataset"], by, over=DS) + f"; significance: RMS z {g(v)} — the aim "
                     f"≤ {g(AIM_LINEAR)} is {'met' if v <= AIM_LINEAR else f'**not** met (by a factor {g(v / AIM_LINEAR, 2)})'}"
                     f"; flagged: {flagged_text(ds)}." + _share_text(ds))
        if has_pooling(ds):
            rp, npl = _rms(ds, POOL, POOL)
            r0p, _ = _rms(ds, None, POOL)
            line += (" With the pooling sector (Eq. (37): the column modes beyond Gaussian order), over the points it "
                     "does not flag: " + effect(ds, [None, POOL], ["uncorrected", "pooling sector"], by, over=POOL)
                     + "; significance: RMS z uncorrected → pooling sector, " + ", ".join(f"{int(x)}: {g(float(r0p.sel(x=x)))} → {g(float(rp.sel(x=x)))} "
                                                   f"(n = {int(npl.sel(x=x))})" for x in ds["x"].values)
                     + f"; {_pool_moves(ds)}.")
        if key == "softmax":
            r0, _ = _rms(ds, None, DS)
            rd, _ = _rms(ds, DS, DS)
            lower = [int(x) for x in ds["x"].values if float(rd.sel(x=x)) < float(r0.sel(x=x))]
            line += (" Over every point the per-dataset one loop does not flag: "
                     + effect(ds, [None, DS], ["uncorrected", "per dataset"], by, over=DS)
                     + f"; significance: RMS z lower than uncorrected at d_k = {', '.join(map(str, lower)) or 'none'} of "
                     f"{', '.join(str(int(x)) for x in ds['x'].values)} (the aim: every d_k ≥ 16).")
        out.append(line)
    return out


def section(named):
    """Section 0 of the page: what the per-dataset one loop is, and per study its RMS z table, flags and the
    consistency of its uncorrected mean with the studies' same-dataset curve; the converged study and the
    softmax points in full."""
    if not any(has_dataset(ds) for _, ds, _, _ in named):
        return []
    out = ["## 0. The per-dataset one loop", "",
           "The equivalent-kernel correction (Sections 1–5) takes the curvature of the *dataset average* and "
           "the variant one_loop_g adds one dataset's gradient to it; but the measured gap is taken against each "
           "run's *own* 2-D posterior. The per-dataset one loop (`research.one_loop.dataset`, docs/theory.md "
           "Sec. 13) uses one expansion per training set: its own full evidence Hessian H_E⊥ and gradient g⊥ "
           "(closed form from the dataset's second moments, equal to the Hessian-vector products to rounding) "
           "in Eq. (31), plus the plane prefactor ΔS_pref (Eq. (30), the same order in 1/d_k; linear only), added "
           "to that run's own 2-D action and averaged over the runs like the same-dataset curve. Softmax: the "
           "same on the run's 1-D action in β, with the observable's term ½ tr[∇²âG⊥(C + x̄x̄ᵀ)] of the run's "
           "own transverse covariance C = (H_E⊥ + d_k H_I⊥)⁻¹ and mean x̄ = −C g⊥. A point is flagged by the "
           "rule of Section 3 applied to the per-dataset weights (averaged over the runs). Checks outside this page: "
           "against exact sampling of the full posterior at L = V = 4 "
           "([benchmarks/one_loop_exact.md](benchmarks/one_loop_exact.md)), and the off-plane part of the "
           "reference chains' mean attention against the Gaussian-order transverse mean, with the column modes' "
           "share ([benchmarks/one_loop_column_share.md](benchmarks/one_loop_column_share.md)); on exact draws at "
           "the default size, which part of that mean the Gaussian order, the exact transverse saddle and its "
           "one-loop tadpole get ([benchmarks/column_response.md](benchmarks/column_response.md)).", "",
           "Columns: n = the points neither correction flags (RMS z over both parameters and every P there); "
           "n′ = every point the per-dataset correction does not flag. Prime columns: RMS z over those. "
           "Linear studies also have the *pooling sector* (Eq. (37), `research.one_loop.pooling`): the column "
           "modes M = 1wᵀ — the unstable and soft modes of the flags — integrated beyond Gaussian order (their norm "
           "exactly, under the equivalent kernel's evidence and the prior rate; their direction exactly under the "
           "run's own column gradient), the other transverse modes as in the per-dataset one loop; n″ = the points "
           "it does not flag (double-prime columns).", ""]
    for key, ds, by, what in named:
        if not has_dataset(ds):
            continue
        out += [f"**{what}.**", ""] + rms_rows(ds, by) + [
            "", f"Flagged (no prediction), {'P/P*' if key == 'softmax' else 'P/P_ref'} ({by}): {flagged_text(ds)}. The per-dataset uncorrected mean "
            f"against the studies' same-dataset curve: largest difference {consistency_text(ds)}.", ""]
        if key in ("converged", "softmax"):
            out += point_rows(ds, "P/P*" if key == "softmax" else "P/P_ref") + [""]
    return out
