"""Paired comparisons of chains that should sample the same posterior: twin studies at equal P/σ² (the σ²
collapse: every transition P ∝ σ²; or equal σ² and another SGLD step size η) and, within a study, prior-
against copy-started chains (a mean biased by slow mixing shows as a difference between the two starts).

Pure functions of numbers: a *study* is the dict ``copyhead.studies.tables.load_study`` makes. z of a
difference = difference / √(error₁² + error₂²) (:func:`.agreement.z_scores`; NaN without both errors);
the summaries are :func:`.finite_size.z_summary`.
"""
from __future__ import annotations

import math

from .agreement import z_scores
from .finite_size import REPEATS, band, z_summary
from .results_model import Study, Twin, TwinPoint, TwinTransition
from .summary import AGREE_TOLERANCE, LOCATION_TOLERANCE


def _num(x) -> float:
    return float(x) if x is not None else math.nan


def _eta(study: dict) -> float:
    """The SGLD step size of the study's prior-started recipe (NaN without one)."""
    return _num(study.get("eta"))


def compare_twins(study: dict, ref: dict) -> dict:
    """``study`` against its twin ``ref`` at equal P/σ² (a ``P_like`` pair of the spec): order parameters
    (same recipe in both) and transitions divided by σ². The twins differ in σ² (the collapse test) or,
    at equal σ², in the SGLD step size η (the step-size test); ``differs`` says which. Per pair of points
    the z of the difference and of the difference minus the one the same-dataset theory predicts (the
    twins' training sets differ in P too); per transition whether the two 95% CIs overlap."""
    scale = study["sigma2"] / ref["sigma2"]
    differs = "σ²" if study["sigma2"] != ref["sigma2"] else ("η" if _eta(study) != _eta(ref) else "nothing")
    rows = []
    pairs = [(att, a, ref["attentions"][att]) for att, a in study["attentions"].items() if att in ref["attentions"]]
    for att, a, b in pairs:
        mine = {(r["recipe"], r["P"], r["param"]): r for r in a["rows"] if r["curve"] == "same_mean"}
        theirs = {(r["recipe"], r["P"] * scale, r["param"]): r for r in b["rows"] if r["curve"] == "same_mean"}
        for key in sorted(set(mine) & set(theirs)):
            x, y = mine[key], theirs[key]
            ex, ey = _num(x["error"]), _num(y["error"])
            rows.append({"attention": att, "recipe": key[0], "P": key[1], "P_over_sigma2": key[1] / study["sigma2"],
                         "param": key[2], "name": x["name"], "value": x["experiment"], "error": x["error"],
                         "value_ref": y["experiment"], "error_ref": y["error"],
                         "theory": x["theory"], "theory_ref": y["theory"],
                         "z": float(z_scores(x["experiment"], y["experiment"], ex, ey)),
                         # the difference the same-dataset theory predicts (its datasets differ in P too)
                         "z_vs_theory": float(z_scores(x["experiment"] - y["experiment"], x["theory"] - y["theory"],
                                                       ex, ey))})
    trans = {}
    for att, a, b in pairs:
        ta, tb = a["transition"], b["transition"]
        trans[att] = {"name": ta["name"], "value": ta["estimate"] / study["sigma2"],
                      "ci": [ta["ci_lo"] / study["sigma2"], ta["ci_hi"] / study["sigma2"]],
                      "value_ref": tb["estimate"] / ref["sigma2"],
                      "ci_ref": [tb["ci_lo"] / ref["sigma2"], tb["ci_hi"] / ref["sigma2"]],
                      "theory": ta["theory"]["large_deviation"] / study["sigma2"],
                      "theory_ref": tb["theory"]["large_deviation"] / ref["sigma2"]}
    for t in trans.values():   # the two 95% CIs overlap: the transition collapses within errors
        t["overlap"] = bool(max(t["ci"][0], t["ci_ref"][0]) <= min(t["ci"][1], t["ci_ref"][1])) \
            if all(math.isfinite(v) for v in (*t["ci"], *t["ci_ref"])) else None
    diff, vs_theory = z_summary([r["z"] for r in rows]), z_summary([r["z_vs_theory"] for r in rows])
    return {"study": study["name"], "ref": ref["name"], "sigma2": study["sigma2"], "sigma2_ref": ref["sigma2"],
            "differs": differs, "eta": _eta(study), "eta_ref": _eta(ref),
            "rows": rows, "transitions": trans, "n": diff["n"], "n_within_2": diff["n_within_2"],
            "rms_z": diff["rms_z"], "n_within_2_theory": vs_theory["n_within_2"], "rms_z_theory": vs_theory["rms_z"]}


def twin_effect(c: Twin, tol: float = AGREE_TOLERANCE) -> dict:
    """The effect size of a twin comparison (:func:`compare_twins`), from its rows: per pair of order
    parameters |Δ| = |value − value_ref|; how many are within ``tol`` (the agreement tolerance of the results
    page, fixed before looking), the largest |Δ| with where it is and Δ relative to the larger of the two
    values there (signed: study minus twin). Significance (z) is :func:`compare_twins`'s."""
    d = [r for r in c.rows if r.value is not None and r.value_ref is not None
         and math.isfinite(r.value) and math.isfinite(r.value_ref)]
    if not d:
        return {"n": 0, "tolerance": tol}
    delta = [(abs(r.value - r.value_ref), _relative(r), r) for r in d]
    # the largest |Δ|; of equal ones (softmax â1 = 1 − âG) the one that is larger relative to its value
    big, rel, r = max(delta, key=lambda x: (round(x[0], 12), abs(x[1]) if math.isfinite(x[1]) else 0.0))
    return {"n": len(d), "n_within_tol": sum(x <= tol for x, _, _ in delta), "tolerance": tol, "max_abs_delta": big,
            "rel": rel, "attention": r.attention, "recipe": r.recipe,
            "name": r.name, "P_over_sigma2": r.P_over_sigma2, "value": r.value, "value_ref": r.value_ref}


def theory_difference_effect(c: Twin, tol: float = AGREE_TOLERANCE) -> dict:
    """How far a twin pair's differences are from the difference the same-dataset theory predicts for the two:
    per pair |(value − value_ref) − (theory − theory_ref)|, the largest (``max_abs``) and how many are within
    ``tol`` (``n_within_tol``) of ``n``; the significance of the same is :func:`compare_twins`'s
    n_within_2_theory and rms_z_theory."""
    d = [abs((r.value - r.value_ref) - (r.theory - r.theory_ref)) for r in c.rows
         if all(x is not None and math.isfinite(x) for x in (r.value, r.value_ref, r.theory, r.theory_ref))]
    return {"n": len(d), "max_abs": max(d, default=math.nan), "n_within_tol": sum(x <= tol for x in d), "tolerance": tol}


def _relative(r: TwinPoint) -> float:
    """A twin pair's Δ relative to the larger of its two values (NaN where both are 0)."""
    scale = max(abs(r.value), abs(r.value_ref))
    return (r.value - r.value_ref) / scale if scale > 0 else math.nan


def transition_collapse(t: TwinTransition, tol: float = LOCATION_TOLERANCE) -> tuple[str, str]:
    """One σ² twin's transition at equal P/σ², effect size first: the ratio of the two and the interval the
    two 95% CIs allow for it against 1 ± ``tol`` ('collapses within tolerance' inside, 'differs' wholly
    outside, else 'not resolved'), whether the CIs overlap beside it. Returns (verdict, the words)."""
    if not (t.value_ref and all(math.isfinite(v) for v in (t.value, t.value_ref, *t.ci, *t.ci_ref))):
        return "–", "ratio undefined"
    r, lo, hi = t.value / t.value_ref, t.ci[0] / t.ci_ref[1], t.ci[1] / t.ci_ref[0]
    word = {"inside": "collapses within tolerance", "outside": "differs", "both": "not resolved"}[band(lo, hi, tol)]
    return word, (f"{t.value:.3g} against {t.value_ref:.3g}, ratio {r:.3g} (|r − 1| = {abs(r - 1):.2g}; from the "
                  f"CIs [{lo:.3g}, {hi:.3g}] against 1 ± {tol:g}): {word}; 95% CIs "
                  f"{'overlap' if t.overlap else 'do not overlap'}")


def collapse_sentence(twins) -> str | None:
    """The σ² twins' transition points at equal P/σ², one clause each (:func:`transition_collapse`); None
    without a σ² twin."""
    parts = [f"{att} {t.name}: {transition_collapse(t)[1]}" for c in twins if c.differs == "σ²"
             for att, t in c.transitions.items() if t.overlap is not None]
    return ("At equal P/σ² the σ² twins' transition points (÷ σ²): " + "; ".join(parts) + ".") if parts else None


def transitions_collapse(twins: list[dict]) -> bool:
    """The transition points collapse at equal P/σ² when the 95% CIs of every transition of every σ² twin
    pair overlap (False without a σ² pair)."""
    s2 = [c for c in twins if c["differs"] == "σ²"]
    return bool(s2) and all(t.get("overlap") for c in s2 for t in c["transitions"].values())


def start_agreement(studies: list[Study]) -> dict:
    """Prior- against copy-started chains of the same (study, attention, P, parameter) (recipes ``r`` and
    ``r_copy``: sgld, hmc): they start on opposite sides of the transition, so a mean biased by slow mixing
    or a second branch shows as a difference. Returns the effect size first, the largest |difference|
    (``max_delta``) and the points within the agreement tolerance (``n_within_tol``), then the significance
    (:func:`~.finite_size.z_summary` of the differences: n, n_within_2, rms_z)."""
    z, d = [], []
    for s in studies:
        for att, a in s.attentions.items():
            rows = {(r.recipe, r.P, r.param): r for r in a.rows if r.curve == "same_mean"}
            for (recipe, P, param), r in rows.items():
                c = rows.get((f"{recipe}_copy", P, param))
                if c is None or (att, param) in REPEATS:
                    continue
                z.append(float(z_scores(r.experiment, c.experiment, _num(r.error), _num(c.error))))
                d.append(abs(r.experiment - c.experiment))
    d = [x for x in d if math.isfinite(x)]
    return {**z_summary(z), "max_delta": max(d, default=math.nan),
            "n_within_tol": sum(x <= AGREE_TOLERANCE for x in d)}
