"""Finite-size comparisons across studies: the gap between the sampled order parameters and the theory,
and the ratio experiment/theory of the transition points, against 1/size (d_k at fixed L, or L at fixed
d_k/L), each with a weighted fit ``y = y_∞ + b/size`` (:func:`copyhead.analysis.fits.fit_inverse_dk`).

Pure functions of numbers: a *study* here is the dict ``copyhead.studies.tables.load_study`` makes of one
study's results JSON (sizes, and per attention type its SGLD agreement rows, its transition with 95% CI
and the closed-form theory under both priors, the P its grid was placed around); the outputs are the
JSON-ready tables of the studies report (``finite_size``, ``finite_L``) and the numbers its conclusions
quote (:func:`decay`, :func:`correction_size`, :func:`prior_distances`). No file is read here.
"""
from __future__ import annotations

import math

import numpy as np

from ..attention import ATTENTIONS
from .agreement import agreement_summary, counted, deltas, largest_delta
from .fits import fit_inverse_dk, row_error
from .results_model import FiniteSize, Study
from .summary import AGREE_TOLERANCE, LOCATION_TOLERANCE

Z95 = 1.959963984540054            # a 95% interval is ±Z95 standard errors
# the two priors of the closed form: suffix of their theory keys, and their name on pages and figures
PRIORS = {"large_deviation": "", "gaussian": "_gaussian"}
PRIOR_LABEL = {"large_deviation": "large-deviation", "gaussian": "Gaussian"}
# the theory curves the SGLD chains are compared with, per study (the results JSON's curve names; the
# Gaussian-prior closed form is read from the study's theory file)
CURVES = ("same_mean", "closed_mean", "closed_mean_gaussian")
# a complementary pair (softmax: (â1, âG) = (m1, mP/L), â1 + âG = 1 inside the span; copyhead.attention): the
# pooling one's gap is minus the copy one's, so the gap tables count the copy one only (the agreement numbers
# keep both, as docs/results.md does)
REPEATS = {(a, v.keys[0]) for a, v in ATTENTIONS.items() if v.complementary}


def z_summary(z) -> dict:
    """n, the number within 2σ and the RMS of the finite z-scores (:func:`~.agreement.agreement_summary`)."""
    z = np.asarray(z, float)
    s = agreement_summary(z)
    return {"n": s.n, "n_within_2": int(np.sum(np.abs(z[np.isfinite(z)]) <= 2)), "rms_z": s.rms_z}


def curve_agreement(att: dict, curve: str, away_only: bool = True) -> dict:
    """The agreement of the chains (both starts) of one attention type of a study with one theory curve, over
    the points away from the transitions (all points with ``away_only=False``): the effect size first, the
    largest |experiment − theory| (``max_delta``) and the points within the agreement tolerance
    (``n_within_tol``, |Δ| ≤ AGREE_TOLERANCE), then the significance (:func:`z_summary`: RMS z, within 2σ)."""
    d = deltas(att["rows"], curve, away_only=away_only)
    return {**z_summary([r["z"] for r in att["rows"] if r["curve"] == curve and r.get("z") is not None
                         and (r.get("away") or not away_only)]),
            "max_delta": max(d, default=math.nan), "n_within_tol": sum(x <= AGREE_TOLERANCE for x in d)}


def ratio_error(tr: dict, theory: float) -> tuple[float, float]:
    """experiment/theory of a transition point and its error (the 95% CI's half width / Z95, relative)."""
    est, lo, hi = tr["estimate"], tr["ci_lo"], tr["ci_hi"]
    if not all(math.isfinite(x) for x in (est, lo, hi, theory)) or theory <= 0:
        return math.nan, math.nan
    return est / theory, (hi - lo) / (2 * Z95) / theory


def nominal_ratio(ratio: float, ratios) -> float:
    """The spec ratio a grid point stands for (the grid is round(r · P_ref))."""
    return float(min(ratios, key=lambda r: abs(math.log(ratio / r))))


def compatible(a: float, a_err: float, value: float) -> bool | None:
    """Is a fit's y_∞ = ``a`` ± ``a_err`` within 2σ of ``value``? None without a finite y_∞ and error."""
    if not (math.isfinite(a) and math.isfinite(a_err)):
        return None
    return bool(abs(a - value) <= 2 * a_err)


def band(lo: float, hi: float, tol: float = LOCATION_TOLERANCE) -> str:
    """Where an interval [lo, hi] of a ratio lies against 1 ± ``tol``: 'inside', wholly 'outside', or 'both'
    (the effect-size rule of every location verdict: agrees / deviates / not resolved)."""
    if 1 - tol <= lo and hi <= 1 + tol:
        return "inside"
    return "outside" if lo > 1 + tol or hi < 1 - tol else "both"


def ratio_verdict(a: float, a_err: float, tol: float = LOCATION_TOLERANCE) -> tuple[str, str]:
    """Effect size first, for an extrapolated ratio experiment/theory r_∞ = ``a`` ± ``a_err`` against 1:
    'agrees' when its 95% interval lies inside 1 ± ``tol``, 'deviates' when it lies wholly outside, 'not
    resolved' when it reaches both (the error is too large to tell); the distance in σ beside it. Returns
    (outcome, the words for a page); ('–', '–') without a finite r_∞ and error."""
    if not (math.isfinite(a) and math.isfinite(a_err)):
        return "–", "–"
    d, lo, hi = abs(a - 1.0), a - Z95 * a_err, a + Z95 * a_err
    sig = f"{d / a_err:.1f}σ from 1" if a_err > 0 else "no error"
    where = band(lo, hi, tol)
    interval = (f"95% interval [{lo:.3g}, {hi:.3g}] "
                f"{'reaching inside and outside' if where == 'both' else where} 1 ± {tol:g}; {sig}")
    if where == "inside":
        return "agrees", f"agrees within tolerance: |r_∞ − 1| = {d:.3f} ({100 * d:.1f} %), {interval}"
    if where == "outside":
        return "deviates", f"deviates by {d:.3f} ({100 * d:.1f} %): {interval}"
    return "not resolved", f"not resolved: |r_∞ − 1| = {d:.3f} ({100 * d:.1f} %), {interval}"


def finite_size(studies: list[dict], ratios: dict, by: str = "d_k") -> dict:
    """Studies that differ in one size ``by`` (d_k, or L at fixed d_k/L), compared at fixed P/P_ref (P_ref:
    each study's own closed-form transition), with weighted fits y = y_∞ + b/x in x = 1/``by``.
    Returns {"by", "values", "L", "d_k_over_L", "gaps": [...], "transitions": [...], "agreement": [...]};
    every point carries "x" (its value of ``by``)."""
    studies = sorted(studies, key=lambda s: s[by])
    values = [s[by] for s in studies]
    gaps = {}
    for s in studies:
        for att, a in s["attentions"].items():
            for r in a["rows"]:
                if r["curve"] != "same_mean" or r.get("z") is None or (att, r["param"]) in REPEATS:
                    continue
                nominal = nominal_ratio(r["P"] / a["P_ref"], ratios[att])
                key = (att, r["recipe"], nominal, r["param"])
                gaps.setdefault(key, {"name": r["name"], "points": []})["points"].append(
                    {"x": s[by], "d_k": s["d_k"], "L": s["L"], "P": r["P"], "experiment": r["experiment"],
                     "theory": r["theory"], "gap": r["experiment"] - r["theory"], "error": row_error(r), "z": r["z"],
                     "study": s["name"]})
    gap_rows = []
    for (att, recipe, nominal, param), gp in sorted(gaps.items()):
        pts = gp["points"]
        fit = fit_inverse_dk([p["x"] for p in pts], [p["gap"] for p in pts], [p["error"] for p in pts])
        gap_rows.append({"attention": att, "recipe": recipe, "ratio": nominal, "param": param, "name": gp["name"],
                         "points": pts, "fit": fit, "closes": compatible(fit["a"], fit["a_err"], 0.0)})
    trans = []
    for att in ATTENTIONS:
        name = next((s["attentions"][att]["transition"]["name"] for s in studies if att in s["attentions"]), None)
        if name is None:
            continue
        for prior in PRIORS:
            pts = []
            for s in studies:
                a = s["attentions"].get(att)
                if a is None:
                    continue
                th = a["transition"]["theory"][prior]
                q, e = ratio_error(a["transition"], th)
                pts.append({"x": s[by], "d_k": s["d_k"], "L": s["L"], "experiment": a["transition"]["estimate"],
                            "ci_lo": a["transition"]["ci_lo"], "ci_hi": a["transition"]["ci_hi"], "theory": th,
                            "ratio": q, "error": e, "study": s["name"]})
            fit = fit_inverse_dk([p["x"] for p in pts], [p["ratio"] for p in pts], [p["error"] for p in pts])
            trans.append({"attention": att, "transition": name, "prior": prior, "points": pts,
                          "fit": fit, "tends_to_theory": compatible(fit["a"], fit["a_err"], 1.0)})
    agree = [{"name": s["name"], "x": s[by], "d_k": s["d_k"], "L": s["L"], "d_k_over_L": s["d_k"] / s["L"],
              "attention": att, **{c: curve_agreement(a, c) for c in CURVES}}
             for s in studies for att, a in s["attentions"].items()]
    return {"by": by, "values": values, "L": studies[0]["L"] if studies else None,
            "d_k_over_L": studies[0]["d_k"] / studies[0]["L"] if studies else None,
            "gaps": gap_rows, "transitions": trans, "agreement": agree}


def largest_gaps(fs: FiniteSize, att: str, by: str) -> tuple[list, list]:
    """Per value of ``by`` (d_k or L), the largest |experiment − theory| of one attention type over its points
    and order parameters (softmax: âG only), from the report's finite-size gaps (the same-dataset theory)."""
    per: dict = {}
    for gp in fs.gaps:
        if gp.attention != att or not counted(att, gp.param):
            continue
        for pt in gp.points:
            if math.isfinite(pt.gap):
                key = getattr(pt, by)
                per[key] = max(per.get(key, 0.0), abs(pt.gap))
    xs = sorted(per)
    return xs, [per[x] for x in xs]


def study_largest_delta(study: Study, att: str, curve: str) -> float:
    """The largest |experiment − theory| of one study's chains against one theory curve
    (:func:`~.agreement.largest_delta` over its points): the effect size beside :func:`curve_agreement`'s RMS z."""
    a = study.attentions.get(att)
    return largest_delta(a.rows, curve) if a else math.nan


def decay(fs: FiniteSize, att: str) -> dict | None:
    """How the gaps of one attention type shrink from the smallest to the largest size: over the rows that
    carry the information (a gap of more than 5σ at the smallest size), the medians of |gap| at both ends
    and the power ``rate`` in |gap| ∝ size^(−rate); the same for the largest quarter of those rows (they
    dominate the RMS z), whose (name, ratio) pairs are listed under ``top``. None when no row has such a gap."""
    vals = fs.values
    rows = [r for r in fs.gaps if r.attention == att and len(r.points) == len(vals)
            and abs(r.points[0].gap) > 5 * r.points[0].error]
    if not rows:
        return None

    def ends(rs):
        a = float(np.median([abs(r.points[0].gap) for r in rs]))
        b = float(np.median([abs(r.points[-1].gap) for r in rs]))
        return a, b, (math.log(a / b) / math.log(vals[-1] / vals[0]) if a > 0 and b > 0 else math.nan)

    top = sorted(rows, key=lambda r: -abs(r.points[0].gap))[:max(1, len(rows) // 4)]
    first, last, rate = ends(rows)
    top_first, top_last, rate_top = ends(top)
    return {"n": len(rows), "n_top": len(top), "first": first, "last": last, "rate": rate, "top_first": top_first,
            "top_last": top_last, "rate_top": rate_top,
            "top": sorted({(r.name, r.ratio) for r in top})}


def correction_size(fs: FiniteSize, att: str) -> dict | None:
    """The largest fitted correction b/size of one attention type's gaps (its row), the median error of
    those chains' points, and the size at which |b|/size falls to twice that error (``need``): where the
    theory would agree within these errors at every point, if the gap is b/size alone."""
    rows = [r for r in fs.gaps if r.attention == att and math.isfinite(r.fit.b)]
    if not rows:
        return None
    worst = max(rows, key=lambda r: abs(r.fit.b))
    err = float(np.nanmedian([p.error for r in rows for p in r.points]))
    need = abs(worst.fit.b) / (2 * err) if err > 0 else math.nan
    return {"row": worst, "b": worst.fit.b, "median_error": err, "need": need}


def prior_distances(fs: FiniteSize, att: str) -> dict:
    """{prior: (|r_∞ − 1|, the same in σ)} of the transition ratio's extrapolation under each prior that has
    a finite fit (σ inf where the error is 0): the effect size decides which prior is closer, σ beside it."""
    cand = {t.prior: t.fit for t in fs.transitions if t.attention == att and math.isfinite(t.fit.a)}
    return {p: (abs(f.a - 1), abs(f.a - 1) / f.a_err if f.a_err > 0 else math.inf) for p, f in cand.items()}
