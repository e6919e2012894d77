"""The results tables: convergence, agreement (z-scores and summaries), transitions with bootstrap
confidence intervals, Adam against the MAP landscape. Pure functions of datasets; rows are JSON-ready
dicts (floats, NaN where a number does not exist).

Definitions (docs/figures.md, "Results tables", says the same for a reader):

- **Chain error of an SGLD point** (recipe, P; one chain per seed, each on its own training set). The
  estimate is the mean over chains of the chains' sample means ȳ_i. Two standard errors of it:
  ``err_mcse`` = √(Σ_i MCSE_i²)/m with MCSE_i ArviZ's MCSE of the mean of chain i alone (Monte Carlo
  error only; copyhead.analysis.convergence), and
  ``err_spread`` = sd_i(ȳ_i)/√m (the spread of the chain means, which also contains the dataset-to-
  dataset variation of the posterior mean; 1 − 1/m degrees of freedom, NaN with one chain). The error used
  is the larger of the two (``error_basis`` says which): the spread is the honest error of a mean over
  independent datasets but is itself noisy with few chains, the MCSE is a floor it cannot go below.
  Adam: the standard error over seeds (NaN with one seed: such a point has no z).
- **Same-dataset theory** (a prediction per run): the differences d_i = ȳ_i − theory_i are averaged over
  chains with the same error rule (so the dataset variation cancels); ``z_chains_rms`` is the RMS of the
  per-chain z_i = d_i/MCSE_i (SGLD only).
- **Exact dataset average**: only at the P of its own grid; its error is sd/√n of the per-dataset
  minimiser over its n datasets. The closed form has no error.
- **z** = (experiment − theory)/√(error² + theory error²). ``natural``: the curve that estimates what the
  method measures (SGLD: posterior mean; Adam, a MAP estimate: the minimiser).
- **Away from transitions**: P outside [T/f, T·f] of each theory transition point T of the curve's
  source (closed form: its own; exact average and same dataset: the exact average's) and, for a first-order
  transition, outside the spinodal window widened by f (f = ``away_factor``, default 1.5).
- **R̂** of a (recipe, P): rank-normalised split-R̂ across its chains (different seeds: different
  datasets, so it also flags dataset-to-dataset variation larger than the posterior width). Prior- and
  copy-started chains of the same P: R̂ pooled over all their chains, and the paired R̂ — per seed, the
  R̂ of its prior- and copy-started chains (the same training set, independent noise), the largest over
  seeds: the cleanest convergence test, and the evidence of hysteresis where it is large.
"""
from __future__ import annotations

import numpy as np

from ..analysis import chain_ess, chain_mcse, ess_bulk, point_estimate, split_rhat
from ..config.schema import METHODS, SAMPLERS
from .inputs import (CURVES, KEYS, NAMES, Recipe, chain_series, curve_values, run_values, swept_P,
                     theory_transitions)

RHAT_MAX = 1.05
NAN = float("nan")


def _f(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return NAN


# ------------------------------------------------------------------------------------------ convergence
def _conv_row(attention, recipe, starts, P, key, x, rhat_max) -> dict:
    m, n = x.shape if x.ndim == 2 else (0, 0)
    row = {"attention": attention, "recipe": recipe, "starts": starts, "P": float(P), "param": key,
           "name": NAMES[key], "n_chains": int(m), "n_draws": int(n)}
    if m == 0 or n < 4:
        row.update(mean=NAN, rhat=NAN, rhat_within_max=NAN, ess_bulk=NAN, ess_sum=NAN, err_mcse=NAN, err_spread=NAN, error=NAN,
                   error_basis="", rhat_flag=False)
        return row
    est = point_estimate(x.mean(axis=1), chain_mcse(x))
    rhat = split_rhat(x)
    within = [split_rhat(row) for row in x]
    row["rhat_within_max"] = float(np.nanmax(within)) if np.isfinite(within).any() else NAN
    row.update(mean=est["mean"], rhat=rhat, ess_bulk=ess_bulk(x), ess_sum=float(np.nansum(chain_ess(x))),
               err_mcse=est["err_mcse"], err_spread=est["err_spread"], error=est["error"],
               error_basis=est["error_basis"], rhat_flag=bool(rhat > rhat_max))
    return row


def convergence_table(ag, attention: str, recs: dict[str, Recipe], rhat_max: float = RHAT_MAX) -> list[dict]:
    """Per (sampling recipe: SGLD or HMC, P, plotted order parameter): n_chains, n_draws, mean of the
    chain means, rank split-R̂ across the chains, rhat_within_max (the largest single-chain split-R̂:
    first against second half of one chain, free of dataset-to-dataset variation), bulk ESS (all chains),
    ess_sum (Σ of the chains' own ESS), err_mcse, err_spread, error (module docstring), rhat_flag (R̂ >
    rhat_max). Then per copy-started recipe and its prior-started twin, at their common P, a row
    ``<twin>+<copy>`` (starts "prior+copy") with R̂ pooled over both starts' chains, ``rhat_paired_max``
    (the largest over seeds of the R̂ of one seed's two chains), ``ess_paired_min`` (the smallest over
    seeds of the bulk ESS of one seed's two chains) and ``n_pairs``; its rhat_flag is set when either
    exceeds rhat_max. HMC recipes are judged without R̂ across seeds (``rhat_basis``, ``rhat_plot``: the
    value the figures draw): a single-recipe row is flagged by its within-chain R̂, a pair row by its
    per-dataset R̂; SGLD keeps the flag across chains (docs/figures.md)."""
    rows = []
    sgld = [r for r in recs.values() if r.sampler]
    for r in sgld:
        for P in swept_P(ag, r.name):
            _, ser = chain_series(ag, attention, r.name, P)
            if not len(ser[KEYS[attention][0]]):
                continue  # no ok chain at this P (all diverged)
            for k in KEYS[attention]:
                row = _conv_row(attention, r.name, r.init, P, k, ser[k], rhat_max)
                if r.method == "hmc":   # judged per chain, never across seeds (different training sets)
                    row.update(rhat_basis="within chain", rhat_plot=row["rhat_within_max"],
                               rhat_flag=bool(_f(row["rhat_within_max"]) > rhat_max))
                rows.append(row)
    for r in sgld:
        if r.init != "copy" or not r.twin or not recs[r.twin].sampler:
            continue
        for P in sorted(set(swept_P(ag, r.twin)) & set(swept_P(ag, r.name))):
            s_a, a = chain_series(ag, attention, r.twin, P)
            s_b, b = chain_series(ag, attention, r.name, P)
            for k in KEYS[attention]:
                n = min(a[k].shape[1], b[k].shape[1]) if len(a[k]) and len(b[k]) else 0
                pooled = np.vstack([a[k][:, :n], b[k][:, :n]]) if n else np.zeros((0, 0))
                row = _conv_row(attention, f"{r.twin}+{r.name}", "prior+copy", P, k, pooled, rhat_max)
                pairs = [np.vstack([a[k][list(s_a).index(s), :n], b[k][list(s_b).index(s), :n]])
                         for s in sorted(set(s_a) & set(s_b))] if n >= 4 else []
                paired = [x for x in (split_rhat(p) for p in pairs) if np.isfinite(x)]
                ess_p = [x for x in (ess_bulk(p) for p in pairs) if np.isfinite(x)]
                row["rhat_paired_max"] = float(max(paired)) if paired else NAN
                row["ess_paired_min"] = float(min(ess_p)) if ess_p else NAN
                row["n_pairs"] = len(paired)
                row["rhat_flag"] = bool(row["rhat_flag"] or (paired and max(paired) > rhat_max))
                if r.method == "hmc":   # per training set: one seed's prior- and copy-started chains
                    row.update(rhat_basis="per dataset", rhat_plot=row["rhat_paired_max"],
                               rhat_flag=bool(paired and max(paired) > rhat_max))
                rows.append(row)
    return rows


def flagged_points(conv_rows, rhat_max: float = RHAT_MAX) -> dict[tuple[str, float, str], bool]:
    """(recipe, P, param) -> True where the point is not shown converged: the ``rhat_flag`` of its own row
    or of the prior/copy pair row it belongs to (SGLD: its R̂ across chains, the pair's pooled or paired
    R̂; HMC: a chain's two halves, the pair's per-dataset R̂). What the figures draw hollow."""
    out = {}
    for row in conv_rows:
        bad = bool(row["rhat_flag"])
        for recipe in row["recipe"].split("+"):
            key = (recipe, float(row["P"]), row["param"])
            out[key] = out.get(key, False) or bad
    return out


# ------------------------------------------------------------------------------ SGLD against the reference
def _reference_sampler(recs: dict[str, Recipe], r: Recipe) -> Recipe | None:
    """The HMC recipe an SGLD recipe is compared with: the one of the same start, else a prior-started one."""
    hmc = [h for h in recs.values() if h.method == "hmc"]
    return next((h for h in hmc if h.init == r.init), None) or next((h for h in hmc if h.init == "prior"), None)


def sampler_table(ag, attention: str, recs: dict[str, Recipe]) -> list[dict]:
    """SGLD against the reference posterior (HMC on the collapsed posterior, no step-size bias) on the
    same training sets. Per SGLD recipe, its reference HMC recipe (:func:`_reference_sampler`), each common
    P and plotted order parameter, over the seeds both have an ok chain for (the same dataset): the sample
    means of both (mean over seeds), the difference d = mean_s (ȳ_SGLD,s − ȳ_HMC,s) with error
    √(Σ_s MCSE_SGLD,s² + MCSE_HMC,s²)/n (Monte Carlo only: the dataset cancels), z = d/error, the largest
    per-seed |z|, and the median over seeds of each chain's own ESS of the mean (its mixing). An
    SGLD chain that has not mixed underestimates its own MCSE, so |z| is then an upper bound."""
    rows = []
    for r in recs.values():
        ref = _reference_sampler(recs, r) if r.method == "sgld" else None
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
                n = len(common)
                err = float(np.sqrt(np.sum(e ** 2)) / n)
                with np.errstate(invalid="ignore", divide="ignore"):
                    zs = np.abs(d / e)
                rows.append({"attention": attention, "recipe": r.name, "reference": ref.name, "init": r.init,
                             "P": float(P), "param": k, "name": NAMES[k], "n_seeds": n,
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
    from ..analysis import agreement_summary
    out = []
    for (att, recipe, ref), rs in groups.items():
        z = np.array([x["z"] for x in rs], float)
        fin = np.isfinite(z)
        s = agreement_summary(z)
        worst = rs[s.worst_index[0]] if s.worst_index is not None else None
        out.append({"attention": att, "recipe": recipe, "reference": ref, "n": s.n,
                    "n_within_2": int((np.abs(z[fin]) <= 2).sum()), "rms_z": s.rms_z,
                    "worst_P": worst["P"] if worst else NAN, "worst_param": worst["name"] if worst else "",
                    "worst_z": worst["z"] if worst else NAN,
                    "worst_diff": worst["diff"] if worst else NAN,
                    "ess_sgld": float(np.nanmedian([x["ess_sgld"] for x in rs])),
                    "ess_hmc": float(np.nanmedian([x["ess_hmc"] for x in rs]))})
    return out


# ------------------------------------------------------------------------------------------- agreement
def away_mask(P, attention: str, trans: dict, factor: float = 1.5) -> np.ndarray:
    """P away from the transitions ``trans`` (theory_transitions): linear onset, crossover and the weak
    first-order point; softmax P* and the spinodal window (module docstring)."""
    from ..analysis import away_from
    if attention == "linear":
        pts = [trans["P_onset"], trans["P_crossover"], trans["P_star"]]
    else:
        pts = [trans["P_star"], trans["P_spinodal_low"], trans["P_spinodal_high"]]
    return away_from(P, pts, factor, windows=[(trans["P_spinodal_low"], trans["P_spinodal_high"])])


def _mcse_grid(ag, attention, r: Recipe, P, seeds) -> dict[str, np.ndarray]:
    """Per-chain MCSE (n_P, n_seeds) of each plotted order parameter; NaN for Adam or missing chains."""
    out = {k: np.full((len(P), len(seeds)), NAN) for k in KEYS[attention]}
    if not r.sampler:
        return out
    for i, p in enumerate(P):
        s, ser = chain_series(ag, attention, r.name, p)
        for k in out:
            if len(s) and ser[k].shape[1] >= 4:
                m = chain_mcse(ser[k])
                for j, seed in enumerate(s):
                    out[k][i, list(seeds).index(seed)] = m[j]
    return out


def agreement_table(ag, th, same, attention: str, recs: dict[str, Recipe], away_factor: float = 1.5) -> list[dict]:
    """Per (recipe, P, plotted order parameter, theory curve available): n, experiment, error, error_basis,
    theory, theory_error, z, z_chains_rms (same-dataset, SGLD), away (from the curve's transitions),
    natural (module docstring). ``same`` (same-dataset theory) may be None."""
    from ..analysis import z_scores
    from .inputs import sequence_length
    rows = []
    L = sequence_length(ag, th)
    for r in recs.values():
        P, seeds, vals = run_values(ag, attention, r.name)
        Ps = set(swept_P(ag, r.name))
        mc = _mcse_grid(ag, attention, r, P, seeds)
        for curve, (label, source, kind) in CURVES.items():
            cv = curve_values(curve, attention, th, same, P, seeds, L)
            if cv is None:
                continue
            tv, te = cv
            away = away_mask(P, attention, theory_transitions(th, source), away_factor)
            for i, p in enumerate(P):
                if p not in Ps:
                    continue
                for k in KEYS[attention]:
                    y, t, e, m = vals[k][i], tv[k][i], te[k][i], mc[k][i]
                    sg = r.sampler
                    if source == "same_dataset":
                        use = np.isfinite(y) & np.isfinite(t)
                        est = point_estimate((y - t)[use], m[use] if sg else None)
                        exp_, th_, th_err = _mean(y[use]), _mean(t[use]), _f(np.max(e[use], initial=0.0))
                        z = _f(z_scores(est["mean"], 0.0, est["error"], th_err))
                        with np.errstate(invalid="ignore", divide="ignore"):
                            zc = ((y - t) / np.hypot(m, e))[use] if sg else np.zeros(0)
                        zc = zc[np.isfinite(zc)]
                        zc_rms = float(np.sqrt(np.mean(zc ** 2))) if len(zc) else NAN
                    else:
                        use = np.isfinite(y)
                        est = point_estimate(y[use], m[use] if sg else None)
                        exp_, th_, th_err = est["mean"], _f(t[0]), _f(e[0])
                        z = _f(z_scores(exp_, th_, est["error"], th_err)) if np.isfinite(th_) else NAN
                        zc_rms = NAN
                    if est["n"] == 0 or not np.isfinite(th_):
                        continue
                    rows.append({"attention": attention, "recipe": r.name, "method": r.method, "init": r.init,
                                 "P": float(p), "param": k, "name": NAMES[k], "curve": curve,
                                 "curve_label": label, "source": source, "kind": kind,
                                 "natural": (kind == "mean") == r.sampler, "n": est["n"],
                                 "experiment": exp_, "error": est["error"], "error_basis": est["error_basis"],
                                 "theory": th_, "theory_error": th_err, "z": z, "z_chains_rms": zc_rms,
                                 "away": bool(away[i])})
    return rows


def _mean(x) -> float:
    x = np.asarray(x, float)
    return float(x.mean()) if x.size else NAN


def agreement_summaries(rows) -> list[dict]:
    """Per (attention, recipe, curve) and per (attention, method, curve) (recipes of one method pooled,
    ``recipe`` = "all <method>"): over the points away from the transitions, n_away (with a z), rms_z,
    chi2, dof, chi2_per_dof, p_value, n_within_2 (|z| ≤ 2), the worst point (recipe, P, param, z), and over
    all points n_all, rms_z_all; n_no_error counts points without an error (one seed)."""
    from ..analysis import agreement_summary
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["attention"], "recipe", row["recipe"], row["method"], row["curve"]), []).append(row)
        groups.setdefault((row["attention"], "method", f"all {row['method']}", row["method"], row["curve"]),
                          []).append(row)
    out = []
    for (att, level, recipe, method, curve), rs in groups.items():
        if level == "method" and len({r["recipe"] for r in rs}) < 2:
            continue  # the same numbers as the recipe's own row
        z = np.array([r["z"] for r in rs], float)
        away = np.array([r["away"] for r in rs], bool)
        s = agreement_summary(z, away)
        s_all = agreement_summary(z)
        worst = rs[s.worst_index[0]] if s.worst_index is not None else None
        label, source, kind = CURVES[curve]
        out.append({"attention": att, "level": level, "recipe": recipe, "method": method, "curve": curve,
                    "curve_label": label, "source": source, "kind": kind,
                    "natural": (kind == "mean") == (method in SAMPLERS), "n_away": s.n, "rms_z": s.rms_z,
                    "chi2": s.chi2, "dof": s.dof, "chi2_per_dof": s.chi2_per_dof, "p_value": s.p_value,
                    "n_within_2": int((np.abs(z[away & np.isfinite(z)]) <= 2).sum()),
                    "worst_recipe": worst["recipe"] if worst else "", "worst_P": worst["P"] if worst else NAN,
                    "worst_param": worst["name"] if worst else "", "worst_z": s.worst_z,
                    "n_all": s_all.n, "rms_z_all": s_all.rms_z,
                    "n_no_error": int((~np.isfinite(z) & away).sum())})
    return out


# ------------------------------------------------------------------------------------------- figures
def reference_curve(rows, method: str) -> str | None:
    """The theory curve residuals of ``method`` are drawn against: the natural kind (SGLD: posterior mean,
    Adam: minimiser) of the most specific source present in the agreement rows (same dataset, else exact
    average, else closed form)."""
    kind = "mean" if method in SAMPLERS else "saddle"
    have = {r["curve"] for r in rows if r["method"] == method and np.isfinite(_f(r["z"]))}
    for src in ("same", "exact", "closed"):
        if f"{src}_{kind}" in have:
            return f"{src}_{kind}"
    return None


def figure_statistics(ag, th, same, attention: str, recs: dict[str, Recipe], rhat_max: float = RHAT_MAX) -> dict:
    """What fig3/fig4 draw beyond the aggregate's means: ``flags`` (flagged_points: hollow markers),
    ``convergence`` rows (the R̂ panel), ``residuals`` {recipe: rows of its reference curve} and
    ``reference`` {method: curve key}."""
    conv = convergence_table(ag, attention, recs, rhat_max) if "c1_sample" in ag else []
    rows = agreement_table(ag, th, same, attention, recs)
    ref = {m: reference_curve(rows, m) for m in METHODS}
    res = {}
    for r in recs.values():
        c = ref.get(r.method)
        res[r.name] = [x for x in rows if x["recipe"] == r.name and x["curve"] == c]
    return {"flags": flagged_points(conv, rhat_max), "convergence": conv, "residuals": res, "reference": ref}
