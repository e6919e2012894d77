"""SGLD against the reference posterior: HMC on the collapsed posterior (no step-size bias) on the same
training sets, so the dataset cancels and only Monte Carlo error and SGLD's bias and mixing remain."""
from __future__ import annotations

import numpy as np

from .agreement import agreement_summary
from .convergence import chain_ess, chain_mcse
from .experiments import KEYS, NAMES, Recipe, chain_series, swept_P
from .stats import NAN, mean_error


def reference_sampler(recs: dict[str, Recipe], r: Recipe) -> Recipe | None:
    """The HMC recipe an SGLD recipe is compared with: the one of the same start, else a prior-started one."""
    hmc = [h for h in recs.values() if h.method == "hmc"]
    return next((h for h in hmc if h.init == r.init), None) or next((h for h in hmc if h.init == "prior"), None)


def sampler_table(ag, attention: str, recs: dict[str, Recipe]) -> list[dict]:
    """Per SGLD recipe, its reference HMC recipe (:func:`reference_sampler`), each common P and plotted
    order parameter, over the seeds both have an ok chain for (the same dataset): the sample means of both
    (mean over seeds), the difference d = mean_s (ȳ_SGLD,s − ȳ_HMC,s) with error
    √(Σ_s MCSE_SGLD,s² + MCSE_HMC,s²)/n (Monte Carlo only: the dataset cancels), z = d/error, the largest
    per-seed |z|, and the median over seeds of each chain's own ESS of the mean (its mixing). An
    SGLD chain that has not mixed underestimates its own MCSE, so |z| is then an upper bound."""
    rows = []
    for r in recs.values():
        ref = reference_sampler(recs, r) if r.method == "sgld" else None
        if ref is None:
            continue
        for P in sorted(set(swept_P(ag, r.name)) & set(swept_P(ag, ref.name))):
            s_a, a = chain_series(ag, attention, r.name, P)
            s_b, b = chain_series(ag, attention, ref.name, P)
            common = sorted(set(s_a) & set(s_b))
            if not common:
                continue
            ia, ib = [list(s_a).index(s) for s in common], [list(s_b).index(s) for s in common]
            for k in KEYS[attention]:
                xa, xb = a[k][ia], b[k][ib]
                if xa.shape[1] < 4 or xb.shape[1] < 4:
                    continue
                d = xa.mean(axis=1) - xb.mean(axis=1)
                e = np.hypot(chain_mcse(xa), chain_mcse(xb))
                err = mean_error(e)
                with np.errstate(invalid="ignore", divide="ignore"):
                    zs = np.abs(d / e)
                rows.append({"attention": attention, "recipe": r.name, "reference": ref.name, "init": r.init,
                             "P": float(P), "param": k, "name": NAMES[k], "n_seeds": len(common),
                             "sgld": float(xa.mean()), "hmc": float(xb.mean()), "diff": float(d.mean()),
                             "error": err, "z": float(d.mean() / err) if err > 0 else NAN,
                             "z_seed_max": float(np.nanmax(zs)) if np.isfinite(zs).any() else NAN,
                             "ess_sgld": float(np.nanmedian(chain_ess(xa))),
                             "ess_hmc": float(np.nanmedian(chain_ess(xb))),
                             "draws_sgld": int(xa.shape[1]), "draws_hmc": int(xb.shape[1])})
    return rows


def sampler_summaries(rows) -> list[dict]:
    """Per (attention, SGLD recipe): n points, n_within_2 (|z| ≤ 2), RMS z, the worst point, and the median
    over points of the ESS per chain of each sampler. The points of one recipe share seeds across P (the
    same chains' noise streams on nested datasets), so they are not independent: the RMS z is a summary,
    not a χ² test."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["attention"], row["recipe"], row["reference"]), []).append(row)
    out = []
    for (att, recipe, ref), rs in groups.items():
        s = agreement_summary([x["z"] for x in rs])
        worst = rs[s.worst_index[0]] if s.worst_index is not None else None
        out.append({"attention": att, "recipe": recipe, "reference": ref, "n": s.n,
                    "n_within_2": s.n_within_2, "rms_z": s.rms_z,
                    "worst_P": worst["P"] if worst else NAN, "worst_param": worst["name"] if worst else "",
                    "worst_z": worst["z"] if worst else NAN,
                    "worst_diff": worst["diff"] if worst else NAN,
                    "ess_sgld": float(np.nanmedian([x["ess_sgld"] for x in rs])),
                    "ess_hmc": float(np.nanmedian([x["ess_hmc"] for x in rs]))})
    return out
