"""docs/one_loop.md, generated from the one-loop netCDF files of workflow/one_loop.smk.

``python -m research one-loop page --finite-size F.nc --finite-L G.nc --out docs/one_loop.md`` (:func:`write_page`,
with its provenance record docs/one_loop.md.provenance.json). Every number on the page is read from those files
(via :mod:`research.one_loop.compare`); none is typed. Every verdict gives its effect size first, the largest
|Δ| against the tolerance fixed in advance (``page_tables.effect``), and its significance (z) beside it.
"""
from __future__ import annotations

import numpy as np

from copyhead.format import g, sampler_name
from copyhead.provenance import product_record, read_dataset, write_product

from . import compare as cmp
from . import page_dataset as dataset
from . import page_remainder as remainder
from . import remainder_fit
from .page_tables import (NAME, TABLE_RATIOS, TOLERANCE_TEXT, coefficient_table, converged_lines, effect, f2,
                          flagged_lines, pct, points_table, rms_table, softmax_lines)

COMMAND = "snakemake -s workflow/one_loop.smk --cores 1"


def _coefficient_effect(cf, ds) -> str:
    """A 1/d_k coefficient's effect size: |Δb| = |b measured − b predicted|, relative to b measured, and what it
    moves the gap at the smallest d_k (|Δb|/d_k) against the tolerance."""
    db = cf["measured"]["b"] - cf["predicted"]["b"]
    d_min = float(ds["d_k"].min())
    at = abs(db) / d_min
    return (f"|Δb| = {g(abs(db), 2)} ({pct(db / cf['measured']['b'])} of b), |Δb|/{int(d_min)} = {g(at, 2)} "
            f"({'within' if at <= cmp.TOLERANCE else 'outside'} the tolerance)")


def verdict(ds, label):
    """The aims of the comparison (a threefold lower RMS z at every size, the 1/d_k coefficient within 2σ),
    checked with numbers, each after its effect size (the largest |Δ|, and |Δb| for a coefficient)."""
    r0, _ = cmp.rms_z(ds)
    r1, _ = cmp.rms_z(ds, "one_loop")
    fac = (r0 / r1).values
    xs = ds["x"].values
    short = [f"{int(x)} ({g(f, 2)}×)" for x, f in zip(xs, fac) if not f >= 3]
    out = ["- Over the unflagged points: " + effect(ds, [None, "one_loop"], ["uncorrected", "one loop"], label)
           + f"; significance: RMS z uncorrected → one loop, {label} = "
           + ", ".join(f"{int(x)}: {g(float(a))} → {g(float(b))}" for x, a, b in zip(xs, r0.values, r1.values))
           + f"; reduction {g(np.nanmin(fac), 2)}–{g(np.nanmax(fac), 2)}×. "
           + ("The threefold aim is met at every size." if not short else
              f"The threefold aim is **not** met at {label} = {', '.join(short)}.")]
    if ds.attrs["by"] == "d_k":
        within, outside = [], []
        for ratio in TABLE_RATIOS:
            for param in ("cG", "c1"):
                cf = cmp.coefficient_fits(ds, ratio, param)
                if cf["n"] < 2:
                    continue
                s = (f"{NAME[param]} at {g(ratio)} P_ref: {_coefficient_effect(cf, ds)}, b = {f2(cf['measured']['b'])} ± "
                     f"{cf['measured']['b_err']:.2f} measured, {f2(cf['predicted']['b'])} predicted "
                     f"(z = {f2(cf['z_b'], 1)})")
                (within if abs(cf["z_b"]) <= 2 else outside).append(s)
        out.append("- 1/d_k coefficient b, effect size first (|Δb| = |b measured − b predicted|, relative to b "
                   "measured, and |Δb|/d_k at the smallest d_k: what it moves the gap there, against the "
                   f"{TOLERANCE_TEXT}), then z_b; within 2σ of the measured: " + ("; ".join(within) or "none") + ".")
        out.append(f"- 1/d_k coefficient b (|Δb| and |Δb|/d_k against |Δ| ≤ {g(cmp.TOLERANCE)} first, as above), "
                   "**not** within 2σ: " + ("; ".join(outside) or "none") + ".")
    near = cmp.usable(ds) & cmp.flags(ds)["near"]
    if bool(near.any()):
        where = [f"{g(float(r))} P_ref, {ds.attrs['by']} = {int(x)}" for r in ds["ratio"].values
                 for x in ds["x"].values if bool(near.sel(ratio=r, x=x))]
        rn, _ = cmp.rms_z(ds, "one_loop", exclude_near=True)
        fits = [f"{NAME[q]} b = {f2(cf['predicted']['b'])} predicted (z = {f2(cf['z_b'], 1)})"
                for q in ("cG", "c1") for r in TABLE_RATIOS if bool(near.sel(ratio=r).any())
                for cf in [cmp.coefficient_fits(ds, r, q, exclude_near=True)] if cf["n"] >= 2]
        out.append(f"- The † point(s) ({'; '.join(where)}: next to the unstable region, where the prediction "
                   "depends on the sub-grid) left out: " + effect(ds, ["one_loop"], ["one loop"], ds.attrs["by"],
                                                                  exclude_near=True)
                   + "; significance: one-loop RMS z " + ", ".join(
                       f"{int(x)}: {g(float(v))}" for x, v in zip(ds["x"].values, rn.values)) +
                   ("; " + "; ".join(fits) if fits else "") + ".")
    return out


def explained(ds, label):
    """Predicted / measured gap per P/P_ref over the usable points with |gap| > 3σ: median and range."""
    u = cmp.usable(ds).broadcast_like(ds["gap"]) & (np.abs(ds["gap"]) > 3 * ds["error"])
    q = (cmp.shift(ds) / ds["gap"]).where(u)
    parts = []
    for ratio in TABLE_RATIOS:
        v = q.sel(ratio=ratio).values.ravel()
        v = v[np.isfinite(v)]
        if len(v):
            parts.append(f"{g(ratio)} P_ref: {100 * np.median(v):.0f} % ({100 * v.min():.0f}–"
                         f"{100 * v.max():.0f} %, {len(v)} points)")
    return [f"- Share of the measured gap the one-loop shift predicts (predicted/measured, unflagged points "
            f"with |gap| > 3σ, both parameters, median and range over {label}): " + "; ".join(parts) + "."]


def naive_sign(ds):
    u = cmp.usable(ds).broadcast_like(ds["gap"])
    sg, sn = np.sign(ds["gap"].where(u)), np.sign(cmp.shift(ds, "naive").where(u))
    s1 = np.sign(cmp.shift(ds, "one_loop").where(u))
    big = (np.abs(ds["gap"]) > 3 * ds["error"]) & u
    return int((s1 == sg).where(big).sum()), int((sn == sg).where(big).sum()), int(big.sum())


CAPTION = ("Cells: gap × d_k, measured ± its error / predicted (the one-loop shift × d_k). (…): soft-mode flagged, "
           "not a prediction; †: more than half of the one-loop posterior weight within one sub-grid cell of a "
           "point where Eq. (33) fails (a prediction, next to the unstable region). b: weighted fits "
           "gap = a + b/d_k (weights 1/error² of the measured points, for the predicted gaps too) over the "
           "unflagged d_k; z_b = (b measured − b predicted)/σ_b measured.")


def subgrid_line(fs, check):
    if check is None:
        return []
    c = cmp.subgrid_change(fs, check)
    w = c["at"]
    return [f"- Sub-grid dependence (finite size): on a {int(check.attrs['setting_coarse'])}² sub-grid the predicted "
            f"gap × d_k moves by at most {g(c['max'], 2)} (at P/P_ref = {g(float(w['ratio']))}, d_k = "
            f"{int(w['x'])}, {NAME[str(w['param'])]}), median {g(c['median'], 2)}, over the points unflagged on "
            "both."]


def transition_line(ds):
    """The linear crossover sits at P ≈ P_ref: is that row flagged at every size?"""
    if 1.0 not in ds["ratio"].values:
        return []
    fl = cmp.flags(ds)
    soft = (fl["soft"] | fl["none"]).sel(ratio=1.0)
    n, k = int(soft.size), int(soft.sum())
    if k == n:
        line = (f"- Transition points: the linear crossover is at P ≈ P_ref, flagged at all {n} sizes "
                "(Section 3), so the equivalent-kernel one loop gives no corrected crossover here.")
    else:
        line = f"- Transition points: not computed; P ≈ P_ref is flagged at {k} of {n} sizes (Section 3)."
    if dataset.has_pooling(ds):
        # cmp.rms_z per size at this one ratio, pooled over the sizes (weights: its point counts)
        at = ds.sel(ratio=[1.0])
        r0, npts = cmp.rms_z(at, None, over=cmp.POOLING)
        rp, _ = cmp.rms_z(at, cmp.POOLING, over=cmp.POOLING)
        pooled = lambda r: float(np.sqrt((r**2 * npts).sum() / npts.sum()))  # noqa: E731
        m = int((npts > 0).sum())
        if m:
            line += (f" The pooling sector (Section 0) predicts P ≈ P_ref at {m} of {n} sizes: "
                     + effect(at, [None, cmp.POOLING], ["uncorrected", "pooling sector"], ds.attrs["by"],
                              over=cmp.POOLING)
                     + f"; significance: RMS z there {g(pooled(r0))} uncorrected → {g(pooled(rp))} (both order "
                     "parameters, pooled over the sizes); the studies' five "
                     "P/P_ref are too coarse to locate a corrected crossover from it, so none is given.")
    return [line]


def g_perp_line(ds, by):
    """The dataset-gradient variant (Eq. (34)) against the one-loop one: RMS z per size and how many
    sizes it improves."""
    if "mean_one_loop_g" not in ds or not np.isfinite(ds["mean_one_loop_g"]).any():
        return []
    r1, rg = cmp.rms_z(ds, "one_loop")[0], cmp.rms_z(ds, "one_loop_g")[0]
    cells = ", ".join(f"{int(x)}: {g(float(r1.sel(x=x)))} → {g(float(rg.sel(x=x)))}" for x in ds["x"].values)
    better = int((rg < r1).sum())
    return ["- Adding each run's own transverse evidence gradient (Eq. (34), variant one_loop_g): "
            + effect(ds, ["one_loop", "one_loop_g"], ["one loop", "one loop + g⊥"], by)
            + f"; significance: RMS z one loop → one loop + g⊥, {by} = {cells}: lower at {better} of "
            f"{int(ds['x'].size)} sizes."]


def ds_by(ds):
    return ds.attrs["by"]


def ds_label(by, x):
    return f"{by} = {int(x)}"


def dataset_figures(named):
    """The per-dataset figures (research.one_loop.figures.write_dataset: one per attention type) under
    Section 0, where their inputs carry the per-dataset variant."""
    have = {key for key, ds, _, _ in named if dataset.has_dataset(ds)}
    out = []
    if "converged" in have:
        out += ["![per-dataset one loop, linear](one_loop/fig_one_loop_dataset_linear.png)", "",
                "*Figure: linear attention at the default size (converged study): the measured gap × d_k "
                "(reference chains − same-dataset theory) against P/P_ref with its error, the equivalent-kernel "
                "one-loop shift and the per-dataset one; hollow markers on a dashed line: flagged, not a "
                "prediction.*", ""]
    if "softmax" in have:
        out += ["![per-dataset one loop, softmax](one_loop/fig_one_loop_dataset_softmax.png)", "",
                "*Figure: softmax attention, finite-size study, one panel per d_k: the measured gap × d_k of âG "
                "against P/P* with the equivalent-kernel and the per-dataset one-loop shifts.*", ""]
    return out


def remainder_figure(fit):
    """The remainder figure (research.one_loop.figures.write_remainder) under Section 0b, where its section is
    (``fit``: research.one_loop.remainder_fit.relative_fit, None where there is none)."""
    if fit is None:
        return []
    return ["![what the one loop leaves](one_loop/fig_one_loop_remainder.png)", "",
            "*Figure: the remainder of the measured ĉG gap after the pooling-sector one loop over that shift, against "
            f"L/d_k at P/P_ref = {g(remainder_fit.LAW_RATIO)}, with its measured error; the law a + b L/d_k fitted over "
            f"d_k ≥ {remainder_fit.MIN_DK_OVER_L}L (solid) and extrapolated to d_k = L (dotted); hollow: the d_k = L "
            "points the fit does not use (the default size: its two P/P_ref next to 2).*", ""]


def render(fs, fl, command=COMMAND, check=None, converged=None, softmax=None):
    c_fs, c_fl = cmp.consistency(fs), cmp.consistency(fl)
    k1, kn, nbig = naive_sign(fs)
    soft = cmp.flags(fs)["soft"]
    soft_at = sorted({float(r) for r in fs["ratio"].values if bool(soft.sel(ratio=r).any())})
    L = int(fs["L"].values[0])
    sampler = sampler_name(fs.attrs["recipe"])   # the measured chains' sampler
    kinds = "linear and softmax attention" if softmax is not None else "linear attention"
    out = [f"# The one-loop transverse correction against the measured finite-size gaps ({kinds})", "",
           f"*Generated by `{command}` from docs/one_loop/finite_size.nc, docs/one_loop/finite_L.nc (and "
           "finite_size_coarse9.nc, the sub-grid check) "
           "(the research package's `research.one_loop`: `points`, `compare`, `page`, `figures`); do not edit by "
           "hand.* Theory: [docs/theory.md](theory.md), Sec. 13 "
           "(Eqs. (27)–(35)); data: [docs/studies/studies.json](studies/studies.json), finite-size study "
           f"(L = V = {L}, σ² = {g(float(fs['sigma2'].values[0]))}, d_k = "
           f"{', '.join(str(int(d)) for d in fs['d_k'].values)}) and the scaling study at d_k = 2L "
           f"(L = {', '.join(str(int(x)) for x in fl['L'].values)}, V = {int(fl['V'].values[0])}), "
           f"prior-started {sampler} chains ({fs.attrs['recipe']}; {fs.attrs['prior'].replace('_', '-')} prior, g = 1).", "",
           f"**Compared with what.** Measured gap = {sampler} − the studies' *same-dataset posterior mean* (the curve "
           "the finite-size study reports). Uncorrected theory: that curve itself (z = gap/error). Corrected "
           "theory: that curve + the one-loop shift ⟨O⟩_{S+ΔS_EK} − ⟨O⟩_S of the equivalent-kernel "
           "posterior mean (Eq. (18) with Eq. (32)); the dataset-specific g⊥ term of Eq. (31) (Eq. (34)) only "
           "in the column “one loop + g⊥” and the line on it. "
           "Errors: the measured errors only. **How it is judged.** Every verdict gives the effect size first: "
           "“largest |Δ|” is the largest |measured − theory| over the points it counts (per size; “a → b”: "
           "uncorrected → corrected), in brackets that Δ relative to the theory's value, against the "
           f"{TOLERANCE_TEXT} (copyhead's agreement tolerance, `copyhead.analysis.summary.AGREE_TOLERANCE`); "
           "the significance (RMS z, z_b: in measured errors) stands beside it.", "",
           "## Answer", ""]
    named = [("finite_size", fs, "d_k", f"Finite-size study (L = {L})"),
             ("finite_L", fl, "L", "Scaling study (d_k = 2L)"),
             ("converged", converged, "d_k", "Converged study at the default size"
              + (f" (L = {int(converged['L'].values[0])}, d_k = {int(converged['d_k'].values[0])})" if converged is not None else "")),
             ("softmax", softmax, "d_k", "Softmax, finite-size study")]
    per_dataset = dataset.answer_lines(named)
    rows = remainder_fit.points(named)
    fit = remainder_fit.relative_fit(rows)
    out += per_dataset + remainder.answer_line(rows, fit)
    out += ["- The equivalent-kernel correction (Eq. (32)), Sections 1–5:"] if per_dataset else []
    out += verdict(fs, "d_k") + explained(fs, "d_k") + g_perp_line(fs, "d_k") + transition_line(fs)
    out += [f"- Flagged (no prediction): P/P_ref = {', '.join(g(r) for r in soft_at) or 'none'} — at least one "
            f"d_k has more than {g(cmp.flag_weight(fs))} of the one-loop posterior weight on near-critical "
            "transverse modes (Section 3); the RMS z and the fits leave those points out.",
            f"- Sign: the one-loop shift has the sign of the measured gap at {k1} of the {nbig} unflagged "
            f"finite-size points with |gap| > 3σ; the naive “½ ln det of the total Hessian” at {kn}.",
            "- Scaling study (d_k = 2L):"]
    out += ["  " + v for v in verdict(fl, "L") + explained(fl, "L") + g_perp_line(fl, "L")]
    cv_head, cv_section = converged_lines(converged)
    sm_head, sm_section = softmax_lines(softmax)
    out += cv_head + sm_head
    out += ["", f"Gap × d_k of {NAME['cG']}, measured ± error / one-loop prediction ({NAME['c1']}: Section 1):", ""]
    out += coefficient_table(fs, "cG") + ["", CAPTION]
    out += ["", "![gap against 1/d_k](one_loop/fig_one_loop_gaps.png)", "",
            f"*Figure: measured gap ({sampler} − same-dataset theory) against 1/d_k with its error, the one-loop "
            "prediction drawn through it (dashed and hollow where flagged: not a prediction), one panel per "
            "P/P_ref; the scaling-study points (L = 24, 32 at d_k = 2L) in grey; †: as in the table.*", "",
            *dataset.section(named), *dataset_figures(named), *remainder.section(rows, fit),
            *remainder_figure(fit),
            f"## 1. The 1/d_k coefficient, {NAME['c1']} ({NAME['cG']}: the table of the answer)", "",
            "b is the coefficient of 1/d_k, so the aim “predicted within 2σ of the measured” is |z_b| ≤ 2.", ""]
    out += coefficient_table(fs, "c1")
    out += ["", "## 2. Largest |Δ| and RMS z", "", "Over the unflagged points (both order parameters, every P/P_ref of "
            "the study), against the uncorrected and the corrected theories. Each cell: the largest |Δ| = "
            f"|measured − theory| first (the effect size; tolerance |Δ| ≤ {g(cmp.TOLERANCE)}), then the RMS z beside it "
            "(significance); reduction: uncorrected over one loop, of each:", ""] + rms_table(fs, "d_k")
    out += ["", "Scaling study (d_k = 2L):", ""] + rms_table(fl, "L")
    out += ["", "## 3. The flagged region: soft transverse modes near P_ref", "",
            "Eq. (31) is a Gaussian integral over the L² − 2 transverse directions; it needs "
            "d_k H_I⊥ + H_E⊥ > 0 (Eq. (33)). Near the crossover the smallest eigenvalue of 1 + Σ^½H_E⊥Σ^½ "
            "(Σ = (d_k H_I⊥)⁻¹) approaches 0⁺ near the origin (the pooling side), where ½ ln det(1 + ΣH_E⊥) → "
            "−∞ logarithmically: the Gaussian order rewards exactly the region where it is least valid and "
            "pulls the corrected posterior onto it. That is an artefact of stopping at Gaussian order next to an "
            "instability, not a prediction: such points are flagged (share of the one-loop posterior weight on "
            f"sub-grid points with 1 + eig < {g(float(fs.attrs['setting_soft']))} above {g(cmp.flag_weight(fs))}). "
            "The soft direction is reported below with its column share ‖1ūᵀ‖²/‖u‖² (1: a column mode "
            "M = 1wᵀ, every query attending to the same key positions). Treating it non-perturbatively (a third "
            "order parameter) is not done.", ""]
    out += flagged_lines(fs) + [""] + flagged_lines(fl)
    out += ["", "## 4. The scaling study at d_k = 2L", "", f"{NAME['cG']}:", ""] + coefficient_table(fl, "cG")
    out += ["", f"{NAME['c1']}:", ""] + coefficient_table(fl, "c1") + ["", "Cells as in the answer's table "
                                                                      "(gap × d_k).", ""]
    out += cv_section + sm_section + ["## 6. Checks and settings", ""]
    for c, name in ((c_fs, "finite size"), (c_fl, "d_k = 2L")):
        w = c["closed_at"]
        out.append(f"- {name}: the uncorrected posterior mean here against the studies' closed-form posterior "
                   f"mean at the same P (the same theory, the studies' pipeline): largest difference "
                   f"{g(c['closed_max_abs'], 2)} (at P/P_ref = {g(w['ratio'])}, "
                   f"{ds_label(ds_by(fs if name == 'finite size' else fl), w['x'])}, {NAME[str(w['param'])]}; up "
                   f"to {g(c['closed_max_err'], 2)} measured errors), {g(c['closed_max_abs_above'], 2)} at "
                   "P/P_ref ≥ 1. Not "
                   "investigated; the gaps are taken against the same-dataset curve, not this one. ΔS_pref "
                   f"(Eq. (30)) moves the shifts by at most {g(c['pref_max_abs'], 2)} "
                   f"({g(c['pref_max_err'], 2)} measured errors).")
    out += [
            f"- Grid: window S − S_min < {g(float(fs.attrs['setting_cut']))} (c1 ≥ 0, the c → −c symmetry), "
            f"{int(fs.attrs['setting_fine'])}² points for exp(−S), ΔS_EK on a {int(fs.attrs['setting_coarse'])}² "
            "sub-grid (bicubic interpolation; unstable sub-grid points take the nearest stable value and "
            "their fine points are dropped).", *subgrid_line(fs, check),
            f"- Compute time: {g(float(fs.attrs['seconds_total']), 2)} s (finite size), "
            f"{g(float(fl.attrs['seconds_total']), 2)} s (d_k = 2L), one thread.", "",
            "## 7. Every point", ""] + points_table(fs) + [""] + points_table(fl)
    return "\n".join(out) + "\n"


def write_page(finite_size, finite_L, out, check=None, converged=None, softmax=None) -> dict:
    """Render docs/one_loop.md from the one-loop files of the finite-size and the d_k = 2L studies (and, where
    given, the sub-grid check, the converged study and the softmax points) and write it with its provenance
    record (``<out>.provenance.json``: the sha256 of each input and the code)."""
    inputs = {"finite_size": finite_size, "finite_L": finite_L, "check": check, "converged": converged,
              "softmax": softmax}
    inputs = {role: path for role, path in inputs.items() if path}
    ds = {role: read_dataset(path) for role, path in inputs.items()}
    text = render(ds["finite_size"], ds["finite_L"], COMMAND, ds.get("check"), ds.get("converged"), ds.get("softmax"))
    return write_product({out: text}, product_record("one_loop_page", "one_loop_page", inputs))
