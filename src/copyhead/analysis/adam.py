"""Adam, a MAP estimate, against the theory's landscape: where its transitions lie among the theory's marks,
the minima of the softmax landscapes, Adam recipes against each other, Adam against the minimiser."""
from __future__ import annotations

import numpy as np

from .agreement import natural_curve, z_scores
from .experiments import COPY_KEY, NAMES, Recipe, run_values, swept_P
from .stats import NAN, as_float, mean_sem


def local_minima_1d(S) -> list[int]:
    """The indices of the local minima of a 1-D curve (an action landscape S(β)): finite points below their
    left neighbour and not above their right one (the ends count as having an infinite neighbour)."""
    S = np.asarray(S, float)
    idx = []
    for i in range(len(S)):
        left = S[i - 1] if i > 0 else np.inf
        right = S[i + 1] if i < len(S) - 1 else np.inf
        if np.isfinite(S[i]) and S[i] < left and S[i] <= right:
            idx.append(i)
    return idx


def softmax_landscape_minima(th) -> list[dict]:
    """Read off the softmax action landscapes of the theory file (closed form on ``landscape_P``, exact
    average on ``P_exact``): per P the local minima in β (the copy logit), the uniform-side one (smallest
    β) and the copy-side one (largest β), and ΔS = S(copy) − S(uniform) (< 0: the copy minimum is the
    global one, the MAP of the order-parameter posterior)."""
    rows = []
    for var, pdim, source in (("action_landscape", "landscape_P", "closed form"),
                              ("action_landscape_exact", "P_exact", "exact avg.")):
        if var not in th or "beta_grid" not in th[var].dims:
            continue
        beta = th["beta_grid"].values.astype(float)
        S_all = th[var].transpose(pdim, "beta_grid").values
        for P, S in zip(th[pdim].values.astype(float), S_all):
            mins = local_minima_1d(S)
            if not mins:
                continue
            lo, hi = mins[0], mins[-1]
            rows.append({"source": source, "P": float(P), "n_minima": len(mins), "beta_uniform": float(beta[lo]),
                         "beta_copy": float(beta[hi]) if hi != lo else NAN,
                         "dS_copy_minus_uniform": float(S[hi] - S[lo]) if hi != lo else NAN})
    return rows


def _where(x, marks: list[tuple[str, float]]) -> str:
    """Where x lies among the named, finite theory marks (sorted): 'below <a>', 'between <a> and <b>',
    'above <b>'."""
    marks = sorted([(n, v) for n, v in marks if np.isfinite(v)], key=lambda m: m[1])
    if not np.isfinite(x) or not marks:
        return ""
    if x < marks[0][1]:
        return f"below {marks[0][0]}"
    for (n1, v1), (n2, v2) in zip(marks, marks[1:]):
        if v1 <= x <= v2:
            return f"between {n1} and {n2}"
    return f"above {marks[-1][0]}"


def _vs_minimiser(agreement, adam_names) -> list[dict]:
    """Per Adam recipe and order parameter, over the points away from the transitions where it has a z
    against its natural minimiser (:func:`copyhead.analysis.agreement.natural_curve`): n, how many lie
    below the minimiser, the median of (Adam − minimiser) and of the same relative to |minimiser|."""
    out = []
    ref = natural_curve(agreement, "adam")
    for name in adam_names:
        for key in sorted({r["param"] for r in agreement if r["recipe"] == name}):
            rs = [r for r in agreement if r["recipe"] == name and r["param"] == key and r["curve"] == ref
                  and r["away"] and np.isfinite(as_float(r["z"]))]
            if not rs:
                continue
            d = np.array([r["experiment"] - r["theory"] for r in rs])
            t = np.array([abs(r["theory"]) for r in rs])
            rel = d[t > 0] / t[t > 0]
            out.append({"recipe": name, "param": key, "name": NAMES[key], "curve": ref, "n": len(rs),
                        "n_below": int((d < 0).sum()), "median_difference": float(np.median(d)),
                        "median_relative_difference": float(np.median(rel)) if len(rel) else NAN})
    return out


def adam_table(ag, th, attention: str, recs: dict[str, Recipe], transitions: list[dict],
               agreement: list[dict] | None = None) -> dict:
    """Adam (a MAP estimate of the weights, not a posterior mean) against the theory's landscape:
    ``position``: per Adam recipe and transition estimate, where it lies among the theory's marks (linear:
    the origin's instability P_onset and the weak first-order point P*; softmax: the copy minimum appears
    at the lower spinodal, becomes global at P*, the uniform minimum disappears at the upper spinodal;
    closed form and exact average); ``landscape``: softmax_landscape_minima; ``map_vs_prior_warmup``: per
    P swept by two Adam recipes, the copy order parameter of each (mean ± sem over seeds) and the z of
    their difference; ``vs_minimiser`` (with the ``agreement`` rows): Adam against its reference minimiser
    (_vs_minimiser)."""
    adam = [r for r in recs.values() if r.method == "adam"]
    pos = []
    for t in transitions:
        if t["recipe"] not in {r.name for r in adam}:
            continue
        for source, sfx in (("closed form", ""), ("exact avg.", "_exact")):
            if attention == "linear" and t["transition"].startswith("crossover"):
                marks = [(f"P_onset ({source})", as_float(th.get("P_onset" + sfx))),
                         (f"P_crossover ({source})", as_float(th.get("P_crossover" + sfx)))]
            elif attention == "linear":
                marks = [(f"P_onset ({source})", as_float(th.get("P_onset" + sfx))),
                         (f"P* ({source})", as_float(th.get("P_star" + sfx)))]
            else:
                marks = [(f"lower spinodal ({source})", as_float(th.get("P_spinodal_low" + sfx))),
                         (f"P* ({source})", as_float(th.get("P_star" + sfx))),
                         (f"upper spinodal ({source})", as_float(th.get("P_spinodal_high" + sfx)))]
            pos.append({"recipe": t["recipe"], "transition": t["transition"], "source": source,
                        "estimate": t["estimate"], "ci_lo": t["ci_lo"], "ci_hi": t["ci_hi"],
                        "estimate_is": _where(t["estimate"], marks), "ci_lo_is": _where(t["ci_lo"], marks),
                        "ci_hi_is": _where(t["ci_hi"], marks),
                        "marks": [{"name": n, "P": v} for n, v in marks]})
    key = COPY_KEY[attention]
    pairs = []
    names = [r.name for r in adam]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            Pa, _, va = run_values(ag, attention, a)
            _, _, vb = run_values(ag, attention, b)
            for j, P in enumerate(Pa):
                if P not in set(swept_P(ag, a)) or P not in set(swept_P(ag, b)):
                    continue
                ma, sa = (as_float(x) for x in mean_sem(va[key][j]))
                mb, sb = (as_float(x) for x in mean_sem(vb[key][j]))
                na, nb = int(np.isfinite(va[key][j]).sum()), int(np.isfinite(vb[key][j]).sum())
                # the error of the difference; a recipe without an error bar (one seed) adds none
                err = np.sqrt(np.nansum([sa ** 2, sb ** 2])) if np.isfinite(sa) or np.isfinite(sb) else NAN
                pairs.append({"recipes": [a, b], "P": float(P), "param": key, "name": NAMES[key],
                              "mean_a": ma, "sem_a": sa, "n_a": na, "mean_b": mb, "sem_b": sb, "n_b": nb,
                              "difference": ma - mb, "z": as_float(z_scores(ma - mb, 0.0, err)) if err > 0 else NAN})
    return {"position": pos, "landscape": softmax_landscape_minima(th) if attention == "softmax" else [],
            "map_vs_prior_warmup": pairs, "vs_minimiser": _vs_minimiser(agreement or [], names)}
