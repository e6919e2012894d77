"""What the studies found, in a few sentences: read from a studies report's JSON (``copyhead studies-report``;
docs/studies/studies.json and the group reports docs/studies_<group>/studies.json). The studies report puts
them at its top; the results page quotes them with a link (each sentence one finding with its numbers)."""
from __future__ import annotations

import math

from ..analysis.finite_size import largest_gaps, ratio_verdict
from ..analysis.results_model import FiniteSize, FiniteSizeAgreement, StudiesReport, Study, StudyPath
from ..analysis.summary import AGREE_TOLERANCE
from ..analysis.scaling_claims import mixing
from ..attention import ATTENTIONS
from ..analysis.twins import collapse_sentence, twin_effect
from ..format import g, ok, twin_effect_text

LD = "large_deviation"


def _rms(rows: tuple[FiniteSizeAgreement, ...], att: str, by: str) -> tuple[list, list]:
    rs = sorted((r for r in rows if r.attention == att), key=lambda r: getattr(r, by))
    return [getattr(r, by) for r in rs], [r.same_mean.rms_z for r in rs]


def samplers(rep: StudiesReport) -> str:
    """The samplers of a report's studies, e.g. 'HMC' or 'SGLD' (each study's ``method``)."""
    return " and ".join(dict.fromkeys(s.method or "SGLD" for s in rep.studies)) or "SGLD"


def _finite(fs: FiniteSize, sampler: str, tol: float = AGREE_TOLERANCE) -> list[str]:
    by = fs.by
    out = []
    effects = []
    for att in ATTENTIONS:
        xs, ds = largest_gaps(fs, att, by)
        if len(xs) >= 2:
            inside = [x for i, x in enumerate(xs) if all(d <= tol for d in ds[i:])]
            effects.append(f"{att} {g(ds[0], 2)} → {g(ds[-1], 2)} ("
                           + (f"within |Δ| ≤ {g(tol)} from {by} = {inside[0]} on" if inside else
                              f"above |Δ| ≤ {g(tol)} at every {by}") + ")")
    where = (f"at L = {fs.L}, d_k = {fs.values[0]} → {fs.values[-1]}" if by == "d_k" else
             f"at d_k/L = {g(fs.d_k_over_L)}, L = {fs.values[0]} → {fs.values[-1]}")
    parts, falls, above = [], [], []
    for att in ATTENTIONS:
        xs, zs = _rms(fs.agreement, att, by)
        if len(xs) >= 2:
            parts.append(f"{att} {g(zs[0])} → {g(zs[-1])}")
            falls.append(zs[-1] < zs[0])
            above.append(zs[-1] > 2)
    sig = ""
    if parts:
        trend = ("falls" if all(falls) else "does not fall for every attention type") + f" as {by} grows"
        level = "still above 2 at the largest" if all(above) else "at or below 2 for some attention type at the largest"
        sig = (f"RMS z {', '.join(parts)} — it {trend}, {level} {by} (z grows with the chains' precision, so it "
               "tests an approximate theory ever more strictly; the effect size is the verdict)")
    if effects:   # the significance on the effect size's own line, beside it
        out.append(f"Largest |Δ| = |experiment − theory| of {sampler} against the same-dataset theory {where}: "
                   f"{', '.join(effects)}" + (f"; significance beside it: {sig}" if sig else "") + ".")
    elif sig:
        out.append(f"Significance only (these tables give no |Δ|): {sampler} against the same-dataset theory "
                   f"{where}: {sig}.")
    trs = []
    for t in fs.transitions:
        f = t.fit
        if t.prior != LD or not math.isfinite(f.a):
            continue
        trs.append(f"{t.attention} {t.transition} → {f.a:.3f} ± {f.a_err:.3f} ({ratio_verdict(f.a, f.a_err)[1]})")
    if trs:
        out.append(f"Experiment/theory of the transition points extrapolated to {by} → ∞ (large-deviation prior): "
                   + "; ".join(trs) + ".")
    return out


def _ordering(part: StudyPath) -> str | None:
    rows = [r for r in part.rows if r.ratio and ok(r.ratio.experiment)]
    if not rows:
        return None
    tl = part.theory_lines
    label = tl.label or (f"d_k = {g(tl.dk_per_L)}·L" if tl.dk_per_L else "the studied path")
    rows = [r for r in rows if tl.V is None or r.V == tl.V]
    items, first = [], []
    for r in sorted(rows, key=lambda r: r.L):
        lo, hi = r.ratio.lo, r.ratio.hi
        items.append(f"L = {r.L}{' (d_k < L)' if r.d_k < r.L else ''}: [{g(lo)}, {g(hi)}] "
                     f"(closed-form crossover / P* {g(r.ratio.large_deviation)})")
        mixed, words = mixing(r)
        if mixed is False:
            items[-1] += f" — not mixed: {words}"
        elif lo > 1:
            first.append(r)
    method = "/".join(dict.fromkeys(r.method for r in rows))
    verdict = (f"softmax copies first at L = {', '.join(str(r.L) for r in first)}" if first else
               "no size where softmax is shown to copy first (no interval above 1 from mixed chains)")
    return (f"Linear crossover / softmax jump along {label} (V = {'–' if tl.V is None else tl.V}), "
            f"{method}: {'; '.join(items)} — {verdict} on this path (ratio > 1: softmax copies first).")


def headline(rep: StudiesReport) -> list[str]:
    """The findings of one studies report, each one sentence with its numbers."""
    out = []
    for fs in (rep.finite_size, rep.finite_L):   # along d_k and along L: both halves, whatever they say
        if fs:
            out += _finite(fs, samplers(rep))
    for part in rep.paths():
        s = _ordering(part)
        if s:
            out.append(s)
    s = collapse_sentence(rep.twins or ())
    if s:
        out.append(s)
    for t in rep.twins or ():   # the order parameters of the same twins, next to their transitions
        if t.differs == "σ²" and t.n:
            e = twin_effect(t)
            same = e.get("n") and e["n_within_tol"] == e["n"]
            out.append(f"The order parameters of the σ² twins {t.study} / {t.ref} "
                       f"{'collapse within tolerance' if same else 'do not collapse'} at equal P/σ²: "
                       f"{twin_effect_text(e)} (significance: {t.n_within_2} of {t.n} within 2σ, "
                       f"RMS z {g(t.rms_z)}).")
    return out


def sampler_text(x: dict | None) -> str:
    """A study's sampler in a few words (HMC: steps × leapfrog steps of ε; SGLD: steps of η)."""
    if not x:
        return "not recorded"
    head = (f"{g(x['steps'])} × {g(x['n_leapfrog'])} leapfrog, ε {g(x['step_size'])}" if "n_leapfrog" in x
            else f"{g(x['steps'])} steps, η {g(x.get('eta', math.nan))}")
    return f"{head}, burn-in {g(x.get('burn_in', math.nan))}, thin {g(x.get('thin', math.nan))}"


def recipe_lines(studies: tuple[Study, ...], say_current: bool = True) -> list[str]:
    """Whether every study was sampled with the recipe the spec gives it now (``current``, set by
    ``copyhead studies-report``), and which were not and where they come from; nothing for tables that
    predate the mark, and (``say_current`` False: the results page) nothing when every study is current."""
    if all(s.current is None for s in studies):
        return []
    old = [s for s in studies if not s.current]
    if not old and not say_current:
        return []
    if not old:
        return ["**Recipes.** Every study was sampled with the recipe the spec gives it now (each study's sampler: "
                "section 4).", ""]
    where = sorted({s.carried for s in old if s.carried})
    came = f", carried from the report made at commit {', '.join(where)}" if where else ""
    return [f"**Recipes mixed.** {len(studies) - len(old)} of {len(studies)} studies sampled with the recipe the "
            f"spec gives them now; {len(old)} not ({', '.join(s.name for s in old)}{came}: sampler "
            f"{'; '.join(sorted({sampler_text(s.sampler) for s in old}))}). Every table below uses each study as it "
            "was sampled until it is rerun (docs/workflow.md, Studies: rerunning a group a few studies at a time); "
            "section 4 lists each study's sampler.", ""]
