"""Number formatting and Markdown tables of the results pages, the figures' labels and the studies report
(reading only): below all three, so that none of them imports another for it."""
from __future__ import annotations

from .analysis.results_model import AgreementVerdict, Effect
from .analysis.stats import is_number as ok


# the samplers' names by optimizer method (a recipe's ``method``; the reference recipes are named after theirs)
METHOD = {"hmc": "HMC", "sgld": "SGLD", "adam": "Adam"}


def sampler_name(method: str) -> str:
    """The sampler's name of a method or reference recipe (``METHOD``); any other recipe by its own name."""
    return METHOD.get(method, method)


def g(x, digits: int = 3) -> str:
    """A number with ``digits`` significant digits; '–' where there is none."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not ok(x):
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** digits:
        return f"{x:.0f}"
    if abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def pm(x, e) -> str:
    return f"{g(x)} ± {g(e, 2)}" if ok(e) else g(x)


def ci(lo, hi) -> str:
    return f"[{g(lo)}, {g(hi)}]" if ok(lo) and ok(hi) else "–"


def yn(b) -> str:
    return "–" if b is None else ("yes" if b else "**no**")


def P_(x) -> str:
    """A training-set size: an integer as such, else 4 significant digits."""
    return g(x, 4) if ok(x) and x != int(x) else (str(int(x)) if ok(x) else "–")


def P_short(x: float) -> str:
    """A training-set size on a figure: to the unit from 100 on (1025, not 1.03e+03), else 3 digits."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(str(h).replace("|", "\\|") for h in head) + " |",
             "|" + "|".join(" --- " for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def pct(x) -> str:
    """A relative difference as a signed percentage: whole percent from 10 % on, two digits below."""
    if not ok(x):
        return "–"
    v = 100 * x
    return (f"{v:+.0f}" if abs(v) >= 10 else f"{v:+.2g}").replace("-", "−") + " %"


def effect_text(e: Effect | None) -> str:
    """The effect size of a comparison: its largest |Δ| with the worst point, Δ relative to the theory there."""
    if not e or not ok(e.max_abs_delta):
        return "no point to compare"
    rel = f", {pct(e.worst_rel)}" if ok(e.worst_rel) else ""
    lead = "provisional, on chains that have not mixed: " if e.provisional else ""
    return (f"{lead}largest |Δ| = {g(e.max_abs_delta, 2)} at P = {P_(e.worst_P)} {e.worst_param} "
            f"({g(e.worst_experiment)} against {g(e.worst_theory)}{rel}); {e.n_within_tol} of "
            f"{e.n + (e.n_not_mixed if e.provisional else 0)} points within |Δ| ≤ {g(e.tolerance)}")


def twin_effect_text(e: dict) -> str:
    """The effect size of a twin comparison (copyhead.analysis.twins.twin_effect): its largest |Δ| with where,
    Δ relative to the larger value there, and how many pairs are within the tolerance."""
    if not e.get("n"):
        return "no pair of points to compare"
    return (f"largest |Δ| = {g(e['max_abs_delta'], 2)} ({e['attention']} {e['recipe']} {e['name']} at P/σ² = "
            f"{g(e['P_over_sigma2'])}: {g(e['value'])} against {g(e['value_ref'])}, {pct(e['rel'])}); "
            f"{e['n_within_tol']} of {e['n']} pairs within |Δ| ≤ {g(e['tolerance'])}")


def verdict_text(v: AgreementVerdict) -> str:
    """An agreement verdict in words, effect size first: 'agrees within tolerance', 'deviates by |Δ| (Δ
    relative to the theory)', 'not mixed' (with how many points), 'no points'."""
    e = v.effect
    out = v.outcome
    if out == "deviates":
        rel = f"{pct(e.worst_rel)}; " if ok(e.worst_rel) else ""
        out = f"deviates by {g(e.max_abs_delta, 2)} ({rel}tolerance |Δ| ≤ {g(e.tolerance)})"
    elif out == "agrees within tolerance":
        out = f"agrees within tolerance (|Δ| ≤ {g(e.tolerance)})"
    if e.n_not_mixed:
        out += (f"; {e.n_not_mixed} of {e.n + e.n_not_mixed} points not mixed (a training set's chains "
                "have bulk ESS < 100 or R̂ > 1.01), left out")
    return out


def significance_text(v: AgreementVerdict) -> str:
    """The significance that stands beside an effect size: RMS z and the points within 2σ."""
    if not ok(v.rms_z):
        return "no error bars"
    return f"RMS z = {g(v.rms_z)}, {v.n_within_2} of {v.n_away} points within 2σ"
