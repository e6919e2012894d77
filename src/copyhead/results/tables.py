"""The results tables: convergence, agreement (z-scores and summaries), transitions with bootstrap
confidence intervals, Adam against the MAP landscape. Pure functions of datasets; rows are JSON-ready
dicts (floats, NaN where a number does not exist).

Definitions (docs/figures.md, "Results tables", says the same for a reader):

- **Chain error of an SGLD point** (recipe, P; one chain per seed, each on its own training set). The
  estimate is the mean over chains of the chains' sample means ȳ_i. Two standard errors of it:
  ``err_mcse`` = √(Σ_i MCSE_i²)/m with MCSE_i = sd_i/√ESS_i of chain i alone (Monte Carlo error only), and
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

from .inputs import (COPY_KEY, CURVES, KEYS, NAMES, Recipe, chain_series, curve_values, run_values, swept_P,
                     theory_transitions)

RHAT_MAX = 1.05
NAN = float("nan")


def _f(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return NAN


# ------------------------------------------------------------------------------------------ point errors
def point_estimate(values, mcse=None) -> dict:
    """Mean over chains (or seeds) of ``values`` with the error rule of the module docstring: n, mean,
    err_spread (sd/√n), err_mcse (√Σ MCSE²/n, when ``mcse`` is given for every value), error (the larger
    finite one) and error_basis ("spread" | "mcse" | "")."""
    v = np.asarray(values, float)
    ok = np.isfinite(v)
    n = int(ok.sum())
    mean = float(v[ok].mean()) if n else NAN
    spread = float(v[ok].std(ddof=1) / np.sqrt(n)) if n > 1 else NAN
    mc = NAN
    if mcse is not None and n:
        m = np.asarray(mcse, float)[ok]
        if np.isfinite(m).all():
            mc = float(np.sqrt((m ** 2).sum()) / n)
    cands = {"spread": spread, "mcse": mc}
    fin = {k: e for k, e in cands.items() if np.isfinite(e)}
    basis = max(fin, key=fin.get) if fin else ""
    return {"n": n, "mean": mean, "err_spread": spread, "err_mcse": mc,
            "error": fin[basis] if basis else NAN, "error_basis": basis}


def chain_mcse(x) -> np.ndarray:
    """MCSE of each chain's mean from its own ESS: sd_i/√ESS_i (rows of an (n_chains, n_draws) array)."""
    from ..analysis import mcse_ess
    x = np.asarray(x, float)
    return np.array([mcse_ess(row) if x.shape[1] >= 4 else NAN for row in x])


def _chain_ess(x) -> np.ndarray:
    from ..analysis import ess
    x = np.asarray(x, float)
    return np.array([ess(row) for row in x])


# ------------------------------------------------------------------------------------------ convergence
def _conv_row(attention, recipe, starts, P, key, x, rhat_max) -> dict:
    from ..analysis import ess_bulk, split_rhat
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
    row.update(mean=est["mean"], rhat=rhat, ess_bulk=ess_bulk(x), ess_sum=float(np.nansum(_chain_ess(x))),
               err_mcse=est["err_mcse"], err_spread=est["err_spread"], error=est["error"],
               error_basis=est["error_basis"], rhat_flag=bool(rhat > rhat_max))
    return row


def convergence_table(ag, attention: str, recs: dict[str, Recipe], rhat_max: float = RHAT_MAX) -> list[dict]:
    """Per (SGLD recipe, P, plotted order parameter): n_chains, n_draws, mean of the chain means, rank split-R̂
    across the chains, rhat_within_max (the largest single-chain split-R̂: first against second half of one
    chain, free of dataset-to-dataset variation), bulk ESS (all chains), ess_sum (Σ of the chains' own ESS), err_mcse, err_spread, error
    (module docstring), rhat_flag (R̂ > rhat_max). Then per copy-started recipe and its prior-started twin,
    at their common P, a row ``<twin>+<copy>`` (starts "prior+copy") with R̂ pooled over both starts'
    chains, ``rhat_paired_max`` (the largest over seeds of the R̂ of one seed's two chains) and
    ``n_pairs``; its rhat_flag is set when either exceeds rhat_max."""
    rows = []
    sgld = [r for r in recs.values() if r.method == "sgld"]
    for r in sgld:
        for P in swept_P(ag, r.name):
            _, ser = chain_series(ag, attention, r.name, P)
            if not len(ser[KEYS[attention][0]]):
                continue  # no ok chain at this P (all diverged)
            rows += [_conv_row(attention, r.name, r.init, P, k, ser[k], rhat_max) for k in KEYS[attention]]
    from ..analysis import split_rhat
    for r in sgld:
        if r.init != "copy" or not r.twin or recs[r.twin].method != "sgld":
            continue
        for P in sorted(set(swept_P(ag, r.twin)) & set(swept_P(ag, r.name))):
            s_a, a = chain_series(ag, attention, r.twin, P)
            s_b, b = chain_series(ag, attention, r.name, P)
            for k in KEYS[attention]:
                n = min(a[k].shape[1], b[k].shape[1]) if len(a[k]) and len(b[k]) else 0
                pooled = np.vstack([a[k][:, :n], b[k][:, :n]]) if n else np.zeros((0, 0))
                row = _conv_row(attention, f"{r.twin}+{r.name}", "prior+copy", P, k, pooled, rhat_max)
                paired = [split_rhat(np.vstack([a[k][list(s_a).index(s), :n], b[k][list(s_b).index(s), :n]]))
                          for s in sorted(set(s_a) & set(s_b))] if n >= 4 else []
                paired = [x for x in paired if np.isfinite(x)]
                row["rhat_paired_max"] = float(max(paired)) if paired else NAN
                row["n_pairs"] = len(paired)
                row["rhat_flag"] = bool(row["rhat_flag"] or (paired and max(paired) > rhat_max))
                rows.append(row)
    return rows


def flagged_points(conv_rows, rhat_max: float = RHAT_MAX) -> dict[tuple[str, float, str], bool]:
    """(recipe, P, param) -> True where the point is not shown converged: its own R̂ > rhat_max, or the
    pooled or paired R̂ of the prior/copy pair it belongs to is. What the figures draw hollow."""
    out = {}
    for row in conv_rows:
        bad = bool(row["rhat"] > rhat_max or _f(row.get("rhat_paired_max")) > rhat_max)
        for recipe in row["recipe"].split("+"):
            key = (recipe, float(row["P"]), row["param"])
            out[key] = out.get(key, False) or bad
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
    if r.method != "sgld":
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
                    sg = r.method == "sgld"
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
                                 "natural": (kind == "mean") == (r.method == "sgld"), "n": est["n"],
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
                    "natural": (kind == "mean") == (method == "sgld"), "n_away": s.n, "rms_z": s.rms_z,
                    "chi2": s.chi2, "dof": s.dof, "chi2_per_dof": s.chi2_per_dof, "p_value": s.p_value,
                    "n_within_2": int((np.abs(z[away & np.isfinite(z)]) <= 2).sum()),
                    "worst_recipe": worst["recipe"] if worst else "", "worst_P": worst["P"] if worst else NAN,
                    "worst_param": worst["name"] if worst else "", "worst_z": s.worst_z,
                    "n_all": s_all.n, "rms_z_all": s_all.rms_z,
                    "n_no_error": int((~np.isfinite(z) & away).sum())})
    return out


# ----------------------------------------------------------------------------------------- transitions
def _grid(P, arr):
    """Rows of P (and of the (n_P, n_seeds) arrays) where at least one value is finite."""
    keep = np.any([np.isfinite(a).any(axis=1) for a in arr], axis=0)
    return np.asarray(P, float)[keep], [a[keep] for a in arr]


def _ci_row(attention, transition, recipe, ci, **extra) -> dict:
    row = {"attention": attention, "transition": transition, "recipe": recipe, "estimate": ci.estimate,
           "ci_lo": ci.lo, "ci_hi": ci.hi, "level": ci.level, "n_boot": ci.n_boot, "n_valid": ci.n_valid}
    row.update(extra)
    return row


def _no_interval(ci, *arrays):
    """The bootstrap result without an interval when no P has two chains (every replicate is the estimate)."""
    from ..analysis import BootstrapCI
    if _one_chain(*arrays):
        return BootstrapCI(ci.estimate, NAN, NAN, ci.level, ci.n_boot, ci.n_valid)
    return ci


def _note(*arrays) -> str:
    return "one seed per P: no bootstrap interval" if _one_chain(*arrays) else ""


def _join(*notes) -> str:
    return "; ".join(n for n in notes if n)


def _grid_step(P, x) -> tuple[float, float]:
    """The two neighbouring grid points around ``x`` (NaN, NaN when x is not inside the grid)."""
    P = np.sort(np.asarray(P, float))
    if not np.isfinite(x) or len(P) < 2 or not P[0] <= x <= P[-1]:
        return NAN, NAN
    i = int(np.clip(np.searchsorted(P, x), 1, len(P) - 1))
    return float(P[i - 1]), float(P[i])


def _widened(row: dict, P, why: str) -> dict:
    """``row`` with its interval widened to the grid step around the estimate (a point located only to
    within that step: a detection point, or a jump sharper than the grid) and a note saying so."""
    a, b = _grid_step(P, row["estimate"])
    if np.isfinite(a):
        row["ci_lo"] = float(np.nanmin([row["ci_lo"], a]))
        row["ci_hi"] = float(np.nanmax([row["ci_hi"], b]))
        row["note"] = _join(row.get("note", ""), f"{why}: located only to the grid step [{a:g}, {b:g}], "
                                                 "interval widened to it")
    return row


def _theory_list(ci_lo, ci_hi, values) -> list[dict]:
    out = []
    for label, v in values:
        v = _f(v)
        known = np.isfinite(v) and np.isfinite(_f(ci_lo)) and np.isfinite(_f(ci_hi))
        out.append({"curve": label, "value": v, "contains": bool(ci_lo <= v <= ci_hi) if known else None})
    return out


def _seed_mean_curve(curve, attention, th, same, P, seeds, key):
    cv = curve_values(curve, attention, th, same, P, seeds)
    if cv is None:
        return None
    with np.errstate(invalid="ignore"):
        y = cv[0][key]
        n = np.isfinite(y).sum(axis=1)
        return np.where(n > 0, np.nansum(np.where(np.isfinite(y), y, 0), axis=1) / np.maximum(n, 1), NAN)


def _linear_crossover_theory(th, same, P, seeds) -> list[tuple[str, float]]:
    from ..analysis import crossover_point
    vals = [("closed form, minimiser", _f(th.get("P_crossover")))]
    if "c1_mean" in th:
        vals.append(("closed form, posterior mean", crossover_point(th["P"].values, th["c1_mean"].values,
                                                                    th["cG_mean"].values)))
    vals.append(("exact avg., minimiser", _f(th.get("P_crossover_exact"))))
    if "c1_mean_exact" in th:
        vals.append(("exact avg., posterior mean", crossover_point(
            th["P_exact"].values, th["c1_mean_exact"].values, th["cG_mean_exact"].values)))
    for curve in ("same_saddle", "same_mean"):
        c1 = _seed_mean_curve(curve, "linear", th, same, P, seeds, "c1")
        if c1 is not None:
            cG = _seed_mean_curve(curve, "linear", th, same, P, seeds, "cG")
            vals.append((CURVES[curve][0] + " (seed mean, swept P)", crossover_point(P, c1, cG)))
    return vals


def _softmax_jump_theory(th, same, P, seeds) -> list[tuple[str, float]]:
    from ..analysis import fit_logistic_jump
    L = _L(th)
    vals = [("closed form, P*", _f(th.get("P_star"))), ("exact avg., P*", _f(th.get("P_star_exact")))]
    if "mP_mean" in th:
        vals.append(("closed form, posterior mean (logistic midpoint)",
                     fit_logistic_jump(th["P"].values, th["mP_mean"].values / L).P_jump))
    if "mP_mean_exact" in th:
        vals.append(("exact avg., posterior mean (logistic midpoint)",
                     fit_logistic_jump(th["P_exact"].values, th["mP_mean_exact"].values / L).P_jump))
    for curve in ("same_saddle", "same_mean"):
        y = _seed_mean_curve(curve, "softmax", th, same, P, seeds, "aG")
        if y is not None:
            vals.append((CURVES[curve][0] + " (seed mean, swept P, logistic midpoint)",
                         fit_logistic_jump(P, y).P_jump))
    return vals


def _L(th) -> int:
    from .inputs import sequence_length
    return sequence_length(th)


def spinodal_windows(th, same=None, seeds=None) -> list[tuple[str, float, float]]:
    """The theory's coexistence windows [lower spinodal, upper spinodal]: closed form, exact average and,
    with the same-dataset theory, the smallest and largest swept P where at least half the seeds' actions
    have two distinct minima (prior side ≠ copy side)."""
    out = [("closed form", _f(th.get("P_spinodal_low")), _f(th.get("P_spinodal_high"))),
           ("exact avg.", _f(th.get("P_spinodal_low_exact")), _f(th.get("P_spinodal_high_exact")))]
    if same is not None and "action_gap_same" in same:
        gap = np.asarray(same["action_gap_same"].transpose("P", "seed").values, float)
        if seeds is not None:
            gap = gap[:, np.isin(same["seed"].values, seeds)]
        two = np.abs(gap) > 0
        n = np.isfinite(gap).sum(axis=1)
        bist = (two.sum(axis=1) >= np.maximum(n, 1) / 2) & (n > 0)
        Ps = same["P"].values.astype(float)[bist]
        out.append(("same dataset (≥ half the seeds bistable)", float(Ps.min()) if len(Ps) else NAN,
                    float(Ps.max()) if len(Ps) else NAN))
    return out


def _one_chain(*arrays) -> bool:
    """True when no P has two chains (no bootstrap spread: an interval would be a point)."""
    return all(int(np.isfinite(a).sum(axis=1).max(initial=0)) < 2 for a in arrays)


def _off_origin(c1, cG, rel: float = 1e-3):
    """c1, cG with the runs at A = 0 (both below ``rel`` × the largest |ĉG|: Adam collapsed onto the
    origin) set to NaN: there ĉG = ĉ1 = 0 is not a crossing."""
    scale = np.nanmax(np.abs(cG), initial=0.0)
    origin = (np.abs(c1) <= rel * scale) & (np.abs(cG) <= rel * scale)
    return np.where(origin, np.nan, c1), np.where(origin, np.nan, cG)


def transition_table(ag, th, same, attention: str, recs: dict[str, Recipe], n_boot: int = 1000,
                     level: float = 0.95, seed: int = 0, min_rise: float = 0.01) -> list[dict]:
    """Transition points from data with percentile-bootstrap intervals over chains/seeds
    (copyhead.analysis.bootstrap), each with the theory's values and whether the interval contains them:
    linear crossover (ĉG = ĉ1) and onset (ĉ1 leaves its level at the smallest swept P by 2 standard errors
    for good) per prior-started recipe; softmax jump (logistic midpoint of âG; ``resolved`` False: the jump
    lies between two grid points and the interval is widened to them) per prior-started recipe; the
    hysteresis window (prior- and copy-started chains of the same seeds disagree by more than 2 errors in
    the copy order parameter) per copy-started recipe, each edge against the spinodals. A softmax curve whose
    seed means rise by less than ``min_rise`` in âG (1 % of its range [0, 1] by default) has no jump, and
    prior- and copy-started chains closer than ``min_rise`` are on the same branch (no hysteresis); runs
    at A = 0 do not make a linear crossover; with one chain per P there is no interval (NaN, noted)."""
    from ..analysis import (bootstrap, chain_mean_sem, crossover_of_chains, fit_logistic_jump,
                            hysteresis_of_chains, jump_of_chains, onset_point)
    rows = []
    kw = dict(n_boot=n_boot, level=level, seed=seed)
    for r in recs.values():
        if r.init != "prior":
            continue
        P0, seeds, vals = run_values(ag, attention, r.name)
        if attention == "linear":
            P, (c1, cG) = _grid(P0, [vals["c1"], vals["cG"]])
            if len(P) < 2:
                continue
            c1x, cGx = _off_origin(c1, cG)
            ci = _no_interval(bootstrap(crossover_of_chains, P, c1x, cGx, **kw), c1)
            th_vals = _linear_crossover_theory(th, same, P, seeds)
            rows.append(_ci_row(attention, "crossover ĉG = ĉ1", r.name, ci, method=r.method,
                                theory=_theory_list(ci.lo, ci.hi, th_vals), resolved=True, note=_note(c1)))

            def onset(P_, c1_):
                m, s = chain_mean_sem(c1_)
                return onset_point(P_, m, s, k=2.0, baseline=m[0])

            ci = _no_interval(bootstrap(onset, P, c1, **kw), c1)
            vals_on = [("closed form, Hessian instability", _f(th.get("P_onset"))),
                       ("closed form, weak first-order P*", _f(th.get("P_star"))),
                       ("exact avg., Hessian instability", _f(th.get("P_onset_exact")))]
            note = _note(c1)
            if np.isfinite(_f(th.get("P_onset"))) and P[0] > _f(th.get("P_onset")):
                note = _join(note, "the swept grid starts above the theory's onset")
            row = _widened(_ci_row(attention, "onset of ĉ1", r.name, ci, method=r.method, resolved=True,
                                   note=note), P, "a detection point")
            row["theory"] = _theory_list(row["ci_lo"], row["ci_hi"], vals_on)
            rows.append(row)
        else:
            P, (aG,) = _grid(P0, [vals["aG"]])
            if len(P) < 4:
                continue
            def jump(P_, aG_):
                m_ = chain_mean_sem(aG_)[0]
                ok = np.isfinite(m_)
                if not ok.any() or np.ptp(m_[ok]) < min_rise:
                    return NAN
                return jump_of_chains(P_, aG_)

            ci = _no_interval(bootstrap(jump, P, aG, **kw), aG)
            m, s = chain_mean_sem(aG)
            fit = fit_logistic_jump(P, m, s if np.isfinite(s).all() else None)
            note = _note(aG)
            if not np.isfinite(ci.estimate):
                note = _join(note, f"the seed means of âG rise by less than {min_rise:g}: no jump on the swept grid")
            row = _ci_row(attention, "jump of âG (logistic midpoint)", r.name, ci, method=r.method,
                          resolved=bool(fit.resolved), note=note)
            if np.isfinite(ci.estimate) and not fit.resolved:
                row = _widened(row, P, "a jump sharper than the grid")
            lo, hi = row["ci_lo"], row["ci_hi"]
            row["theory"] = _theory_list(lo, hi, _softmax_jump_theory(th, same, P, seeds))
            row["windows"] = [{"curve": w, "lo": a, "hi": b,
                               "overlaps": bool(lo <= b and a <= hi)
                               if np.isfinite([lo, hi, a, b]).all() else None}
                              for w, a, b in spinodal_windows(th, same, seeds)]
            rows.append(row)
    key = COPY_KEY[attention]
    for r in recs.values():
        if r.init != "copy" or not r.twin:
            continue
        Pa, sa, va = run_values(ag, attention, r.twin)
        _, sb, vb = run_values(ag, attention, r.name)
        common = sorted(set(swept_P(ag, r.twin)) & set(swept_P(ag, r.name)))
        cs = sorted(set(sa) & set(sb))
        if len(common) < 2 or not cs:
            continue
        ip = [int(np.flatnonzero(Pa == p)[0]) for p in common]
        A = va[key][np.ix_(ip, [list(sa).index(s) for s in cs])]
        B = vb[key][np.ix_(ip, [list(sb).index(s) for s in cs])]
        P = np.asarray(common, float)
        win = hysteresis_of_chains(P, A, B, min_diff=min_rise)  # the seed means; bootstrap paired by seed
        wins = spinodal_windows(th, same, cs)
        for edge, idx in (("lower", 1), ("upper", 2)):
            ci = _no_interval(bootstrap(lambda P_, a, b, e=edge: getattr(
                hysteresis_of_chains(P_, a, b, min_diff=min_rise), "lo" if e == "lower" else "hi"),
                                        P, A, B, **kw), A)
            est = win.lo if edge == "lower" else win.hi
            note = _note(A)
            if not np.any(win.disagree):
                note = (f"prior- and copy-started chains agree (within 2 errors or {min_rise:g}) at every "
                        "common P")
            elif not np.isfinite(est):
                note = _join(note, "the disagreement reaches the end of the common P grid: the edge is not "
                                   "bracketed")
            row = _ci_row(attention, f"hysteresis window, {edge} edge ({NAMES[key]})", f"{r.twin}+{r.name}",
                          ci, method=r.method, resolved=True, note=note,
                          disagree_P=[float(p) for p, d in zip(P, win.disagree) if d])
            row["estimate"] = float(est)
            row = _widened(row, P, "a detection point")
            row["theory"] = _theory_list(row["ci_lo"], row["ci_hi"], [(f"{w}, {edge} spinodal", w_[idx - 1])
                                                                      for w, *w_ in wins])
            rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------ Adam
def _local_minima_1d(S) -> list[int]:
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
            mins = _local_minima_1d(S)
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
    against its reference minimiser (reference_curve): n, how many lie below the minimiser, the median of
    (Adam − minimiser) and of the same relative to |minimiser|."""
    out = []
    ref = reference_curve(agreement, "adam")
    for name in adam_names:
        for key in sorted({r["param"] for r in agreement if r["recipe"] == name}):
            rs = [r for r in agreement if r["recipe"] == name and r["param"] == key and r["curve"] == ref
                  and r["away"] and np.isfinite(_f(r["z"]))]
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
    from ..analysis import mean_sem, z_scores
    adam = [r for r in recs.values() if r.method == "adam"]
    pos = []
    for t in transitions:
        if t["recipe"] not in {r.name for r in adam}:
            continue
        for source, sfx in (("closed form", ""), ("exact avg.", "_exact")):
            if attention == "linear" and t["transition"].startswith("crossover"):
                marks = [(f"P_onset ({source})", _f(th.get("P_onset" + sfx))),
                         (f"P_crossover ({source})", _f(th.get("P_crossover" + sfx)))]
            elif attention == "linear":
                marks = [(f"P_onset ({source})", _f(th.get("P_onset" + sfx))),
                         (f"P* ({source})", _f(th.get("P_star" + sfx)))]
            else:
                marks = [(f"lower spinodal ({source})", _f(th.get("P_spinodal_low" + sfx))),
                         (f"P* ({source})", _f(th.get("P_star" + sfx))),
                         (f"upper spinodal ({source})", _f(th.get("P_spinodal_high" + sfx)))]
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
                ma, sa = mean_sem(va[key][j])
                mb, sb = mean_sem(vb[key][j])
                na, nb = int(np.isfinite(va[key][j]).sum()), int(np.isfinite(vb[key][j]).sum())
                err = np.sqrt(np.nansum([_f(sa) ** 2, _f(sb) ** 2])) if np.isfinite(sa) or np.isfinite(sb) else NAN
                pairs.append({"recipes": [a, b], "P": float(P), "param": key, "name": NAMES[key],
                              "mean_a": _f(ma), "sem_a": _f(sa), "n_a": na, "mean_b": _f(mb), "sem_b": _f(sb),
                              "n_b": nb, "difference": _f(ma) - _f(mb),
                              "z": _f(z_scores(_f(ma) - _f(mb), 0.0, err)) if err > 0 else NAN})
    return {"position": pos, "landscape": softmax_landscape_minima(th) if attention == "softmax" else [],
            "map_vs_prior_warmup": pairs, "vs_minimiser": _vs_minimiser(agreement or [], names)}


# ------------------------------------------------------------------------------------------- figures
def reference_curve(rows, method: str) -> str | None:
    """The theory curve residuals of ``method`` are drawn against: the natural kind (SGLD: posterior mean,
    Adam: minimiser) of the most specific source present in the agreement rows (same dataset, else exact
    average, else closed form)."""
    kind = "mean" if method == "sgld" else "saddle"
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
    ref = {m: reference_curve(rows, m) for m in ("sgld", "adam")}
    res = {}
    for r in recs.values():
        c = ref.get(r.method)
        res[r.name] = [x for x in rows if x["recipe"] == r.name and x["curve"] == c]
    return {"flags": flagged_points(conv, rhat_max), "convergence": conv, "residuals": res, "reference": ref}
