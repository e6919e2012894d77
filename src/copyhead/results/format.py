"""Number formatting and Markdown tables of the results pages and the studies report (reading only)."""
from __future__ import annotations

from ..analysis.stats import is_number as ok


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


def table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(str(h).replace("|", "\\|") for h in head) + " |",
             "|" + "|".join(" --- " for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def verdict_text(v: dict) -> str:
    """An agreement verdict in words; 'not mixed' with its count and the verdict of the mixed points."""
    if v["outcome"] != "not mixed":
        return v["outcome"]
    m = v.get("on_mixed")
    tail = (f"; on the {m['n']} mixed points alone: {m['outcome']}, RMS z = {g(m['rms_z'])}, {m['n_within_2']} of "
            f"{m['n']} within 2σ" if m else "; no point has mixed chains")
    return (f"not mixed ({v['n_not_mixed']} of {v['n_away']} points have a training set whose chains have bulk "
            f"ESS < 100 or R̂ > 1.01{tail})")
