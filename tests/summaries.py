"""A results summary (copyhead.analysis.summary, the shape results.json holds) made of a few transition cells,
for the figures' tests: every other part of the summary present and empty, so that it reads as the typed
results model (copyhead.analysis.results_model.Summary) does."""


def cell(recipe: str, estimate, ci_lo, ci_hi) -> dict:
    """One method's transition: its estimate and 95 % CI, no theory value."""
    return {"recipe": recipe, "estimate": estimate, "ci_lo": ci_lo, "ci_hi": ci_hi, "resolved": True,
            "bracket": None, "rise_share": None, "n_valid": 100, "n_boot": 100, "note": "", "theory": None,
            "verdict": {"rule": "", "value": None, "outcome": "no theory"}}


def summary(transitions: dict[str, list[dict]]) -> dict:
    """{attention: [{"kind": ..., <method>: cell(...)}, ...]} as a whole summary."""
    conv = {"rhat_max": 1.05, "n_rows": 0, "n_flag": 0, "n_within_flag": 0, "n_pairs": 0, "n_paired_flag": 0,
            "largest_paired": None, "smallest_paired_ess": None, "paired_points": [], "largest_rhat": None,
            "largest_within": None, "smallest_ess": None, "within_points": []}

    def rows(ts):
        return [{"label": t["kind"], "estimator": "", "closed_form": {"label": "", "value": None},
                 "theory_points": [], "paper": None, "adam": None, "sgld": None, "hmc": None, **t} for t in ts]
    return {"paper_sigma2": 1.0, "tolerance": 0.02,
            "attentions": {a: {"sigma2": 1.0, "transitions": rows(ts), "agreement": [], "convergence": conv,
                               "evidence": [], "reference": None, "nonfinite": []} for a, ts in transitions.items()}}
