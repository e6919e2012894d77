"""Agreement of experiment and theory by a number: z-scores, their summaries and the agreement table of a
sweep.

z = (experiment − theory)/error per point, with error = √(err_exp² + err_theory²); per curve or attention
type a summary: RMS z, χ² = Σ z² with its degrees of freedom (the number of points, minus fitted
parameters: the theory curves have none), χ²/dof, the p-value of χ² and the worst point. Typically
restricted to points away from the transitions (:func:`away_from`), where a sharp curve sampled on a grid
is not a fair comparison.

Definitions of the agreement table (:func:`agreement_table`; docs/figures.md, "Results tables", says the
same for a reader):

- **Error of a point** (recipe, P; one chain per seed, each on its own training set): the mean over chains
  of the chains' sample means and its error (:func:`copyhead.analysis.stats.point_estimate`): the larger of
  the spread of the chain means sd_i(ȳ_i)/√m (which also contains the dataset-to-dataset variation of the
  posterior mean; NaN with one chain) and √(Σ_i MCSE_i²)/m with MCSE_i ArviZ's MCSE of the mean of chain i
  alone (Monte Carlo error only; :mod:`copyhead.analysis.convergence`), a floor the spread cannot go below
  (``error_basis`` says which). Adam: the standard error over seeds (NaN with one seed: such a point has
  no z).
- **Same-dataset theory** (a prediction per run): the differences d_i = ȳ_i − theory_i are averaged over
  chains with the same error rule (so the dataset variation cancels); ``z_chains_rms`` is the RMS of the
  per-chain z_i = d_i/MCSE_i (SGLD only).
- **Exact dataset average**: only at the P of its own grid; its error is sd/√n of the per-dataset
  minimiser over its n datasets. The closed form has no error (:mod:`copyhead.analysis.curves`).
- ``natural``: the curve that estimates what the method measures (SGLD: posterior mean; Adam, a MAP
  estimate: the minimiser).
- **Away from transitions**: P outside [T/f, T·f] of each theory transition point T of the curve's
  source (closed form: its own; exact average and same dataset: the exact average's) and, for a first-order
  transition, outside the spinodal window widened by f (f = ``away_factor``, default 1.5).
"""
from __future__ import annotations

import math
import warnings

from dataclasses import dataclass

import numpy as np

from ..attention import variant, weights
from ..config.schema import SAMPLERS
from .convergence import chain_mcse
from .curves import CURVES, curve_values, theory_transitions
from .experiments import COPY_KEY, KEYS, NAMES, Recipe, chain_series, run_values, sequence_length, swept_P
from .stats import NAN, as_float, point_estimate


def z_scores(experiment, theory, error, theory_error=None) -> np.ndarray:
    """(experiment − theory)/√(error² + theory_error²), elementwise (broadcasting); NaN where the combined
    error is not positive and finite (e.g. a single seed without an error bar)."""
    e = np.asarray(experiment, float) - np.asarray(theory, float)
    var = np.asarray(error, float) ** 2
    if theory_error is not None:
        var = var + np.asarray(theory_error, float) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(var) & (var > 0), e / np.sqrt(var), np.nan)


@dataclass(frozen=True)
class Agreement:
    """Summary of z-scores: n points, RMS z, χ², dof, χ²/dof, p = P(χ²_dof ≥ χ²), the worst point (its
    index into the z array and its z) and how many points lie within 2σ (|z| ≤ 2)."""
    n: int
    rms_z: float
    chi2: float
    dof: int
    chi2_per_dof: float
    p_value: float
    worst_index: tuple | None
    worst_z: float
    n_within_2: int = 0


def agreement_summary(z, mask=None, n_params: int = 0) -> Agreement:
    """Summarise the finite z-scores (those where ``mask`` is True, if given): RMS z, χ²/dof with
    dof = n − ``n_params``, its p-value, and the point of largest |z|."""
    from scipy.stats import chi2 as chi2_dist
    z = np.asarray(z, float)
    use = np.isfinite(z) if mask is None else np.isfinite(z) & np.broadcast_to(np.asarray(mask, bool), z.shape)
    n = int(use.sum())
    if n == 0:
        return Agreement(0, float("nan"), float("nan"), 0, float("nan"), float("nan"), None, float("nan"))
    zz = z[use]
    chi2 = float((zz ** 2).sum())
    dof = n - int(n_params)
    flat = int(np.argmax(np.where(use, np.abs(z), -np.inf)))
    worst = tuple(int(i) for i in np.unravel_index(flat, z.shape))
    return Agreement(n, float(np.sqrt(chi2 / n)), chi2, dof, chi2 / dof if dof > 0 else float("nan"),
                     float(chi2_dist.sf(chi2, dof)) if dof > 0 else float("nan"), worst, float(z[worst]),
                     int((np.abs(zz) <= 2).sum()))


def rms(z) -> float:
    """The root mean square of the finite values of ``z``; NaN where there is none."""
    z = np.asarray(z, float)
    z = z[np.isfinite(z)]
    return float(np.sqrt(np.mean(z ** 2))) if len(z) else NAN


def away_from(P, transitions, factor: float = 1.5, windows=()) -> np.ndarray:
    """True for the P outside [T/factor, T·factor] of every finite transition point T and outside
    [lo/factor, hi·factor] of every window (lo, hi) with finite edges (e.g. the spinodal window of a
    first-order transition, where two minima coexist)."""
    P = np.asarray(P, float)
    out = np.ones(P.shape, bool)
    for T in np.atleast_1d(np.asarray(transitions, float)):
        if np.isfinite(T):
            out &= (P < T / factor) | (P > T * factor)
    for lo, hi in windows:
        if np.isfinite(lo) and np.isfinite(hi):
            out &= (P < min(lo, hi) / factor) | (P > max(lo, hi) * factor)
    return out


# ------------------------------------------------------------------------------ the agreement of a sweep
def away_mask(P, attention: str, trans: dict, factor: float = 1.5) -> np.ndarray:
    """P away from the transitions ``trans`` (copyhead.analysis.curves.theory_transitions): linear onset,
    crossover and the weak first-order point; softmax P* and the spinodal window (module docstring)."""
    pts = [trans[k] for k in variant(attention).near]
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


def _mean(x) -> float:
    x = np.asarray(x, float)
    return float(x.mean()) if x.size else NAN


def agreement_table(ag, th, same, attention: str, recs: dict[str, Recipe], away_factor: float = 1.5) -> list[dict]:
    """Per (recipe, P, plotted order parameter, theory curve available): n, experiment, error, error_basis,
    theory, theory_error, z, z_chains_rms (same-dataset, SGLD), away (from the curve's transitions),
    natural (module docstring). ``same`` (same-dataset theory) may be None."""
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
            tg = curve_values(curve, attention, th, same, P, seeds, L, grid_only=True)[1]
            away = away_mask(P, attention, theory_transitions(th, source), away_factor)
            for i, p in enumerate(P):
                if p not in Ps:
                    continue
                for k in KEYS[attention]:
                    y, t, e, m = vals[k][i], tv[k][i], te[k][i], mc[k][i]
                    sg = r.sampler
                    if source == "same_dataset":
                        use = np.isfinite(y) & np.isfinite(t)
                        per_seed, offset = (y - t)[use], 0.0
                        est = point_estimate(per_seed, m[use] if sg else None)
                        exp_, th_, th_err = _mean(y[use]), _mean(t[use]), as_float(np.max(e[use], initial=0.0))
                        z = as_float(z_scores(est["mean"], 0.0, est["error"], th_err))
                        with np.errstate(invalid="ignore", divide="ignore"):
                            zc = ((y - t) / np.hypot(m, e))[use] if sg else np.zeros(0)
                        zc_rms = rms(zc)
                    else:
                        use = np.isfinite(y)
                        per_seed, offset = y[use], as_float(t[0])
                        est = point_estimate(y[use], m[use] if sg else None)
                        exp_, th_, th_err = est["mean"], as_float(t[0]), as_float(e[0])
                        z = as_float(z_scores(exp_, th_, est["error"], th_err)) if np.isfinite(th_) else NAN
                        zc_rms = NAN
                    if est["n"] == 0 or not np.isfinite(th_):
                        continue
                    rows.append({"attention": attention, "recipe": r.name, "method": r.method, "init": r.init,
                                 "P": float(p), "param": k, "name": NAMES[k], "curve": curve,
                                 "curve_label": label, "source": source, "kind": kind,
                                 "natural": (kind == "mean") == r.sampler, "n": est["n"],
                                 "experiment": exp_, "error": est["error"], "error_basis": est["error_basis"],
                                 "theory": th_, "theory_error": th_err, "z": z, "z_chains_rms": zc_rms,
                                 "away": bool(away[i]),
                                 # the theory's grid error (its value's change on a finer grid), which must
                                 # stay below the experimental error for the comparison to test the theory
                                 "theory_grid_error": as_float(np.nanmax(tg[k][i][use], initial=0.0)),
                                 # per seed, for the seed-block bootstrap of the summary (block_rms_z)
                                 "seeds": [int(x) for x in np.asarray(seeds)[use]],
                                 "seed_values": [float(x) for x in per_seed], "z_offset": offset})
    return rows


def block_rms_z(rows, n_boot: int = 400, level: float = 0.95, seed: int = 0) -> dict:
    """Percentile interval of the RMS z of ``rows`` under a seed-block bootstrap: a replicate redraws the
    seeds with replacement and recomputes every point's mean from the drawn seeds' values, its z against the
    point's own error (kept fixed: an error recomputed from a resample with repeated seeds shrinks, which
    would make the interval's upper tail meaningless)
    (a seed's values at all P move together: its chains share their start and noise stream on nested
    datasets, so the points of one seed are correlated, and an RMS z over P that treats them as
    independent overstates the evidence either way). ``n_distinct``: the number of distinct seed multisets
    (35 for 4 seeds) — the bootstrap's resolution. NaN without per-seed values or with one seed."""
    rows = [r for r in rows if r.get("seed_values") and np.isfinite(as_float(r.get("z")))]
    seeds = sorted({s for r in rows for s in r["seeds"]})
    k = len(seeds)
    out = {"rms_z_lo": NAN, "rms_z_hi": NAN, "n_boot": n_boot, "n_seeds": k,
           "n_distinct": math.comb(2 * k - 1, k) if k else 0}
    if k < 2:
        return out
    rng = np.random.default_rng(seed)
    col = {sd: j for j, sd in enumerate(seeds)}
    vals = np.full((len(rows), k), NAN)              # each row's value per seed (NaN: no run of that seed)
    for i, r in enumerate(rows):
        for sd, v in zip(r["seeds"], r["seed_values"]):
            vals[i, col[sd]] = float(v)
    off = np.array([as_float(r["z_offset"]) for r in rows])
    err = np.array([float(np.hypot(as_float(r.get("error")), as_float(r["theory_error"]))) for r in rows])
    draws = rng.integers(0, k, size=(n_boot, k))     # the same seed draw for every row of a replicate
    with warnings.catch_warnings():                  # a row none of whose seeds was drawn: NaN, left out
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(vals[:, draws], axis=2)   # (rows, n_boot)
        z = np.where(err[:, None] > 0, (means - off[:, None]) / err[:, None], NAN)
        fin = np.isfinite(z)
        reps = np.sqrt(np.where(fin, z ** 2, 0).sum(axis=0) / np.maximum(fin.sum(axis=0), 1))
        reps[fin.sum(axis=0) == 0] = NAN
    ok = reps[np.isfinite(reps)]
    if len(ok) >= n_boot / 2:
        out["rms_z_lo"], out["rms_z_hi"] = (float(x) for x in np.quantile(ok, [(1 - level) / 2, (1 + level) / 2]))
    return out


def counted(attention: str, param: str) -> bool:
    """Whether a parameter enters the summaries: both of linear attention's (ĉ1, ĉG, independent
    projections); only the copy weight âG of softmax attention, whose â1 = 1 − âG inside the span would
    count the same deviation twice."""
    return variant(attention).plotted is not weights or param == COPY_KEY[attention]


def agreement_summaries(rows) -> list[dict]:
    """Per (attention, recipe, curve) and per (attention, method, curve) (recipes of one method pooled,
    ``recipe`` = "all <method>"): over the points away from the transitions, n_away (with a z), the effect
    size max_abs_delta (the largest |experiment − theory| over those points), rms_z,
    chi2, dof, chi2_per_dof, p_value, n_within_2 (|z| ≤ 2), the worst point (recipe, P, param, z), and over
    all points n_all, rms_z_all; n_no_error counts points without an error (one seed). Softmax attention
    counts âG only (:func:`counted`). Rows carrying
    ``mixed`` (sampled points, :func:`copyhead.analysis.convergence.mixing_status`) add n_not_mixed (away
    points whose chains have not mixed) and the same statistics over the mixed away points alone
    (n_mixed, rms_z_mixed, n_within_2_mixed)."""
    groups: dict[tuple, list[dict]] = {}
    for row in [r for r in rows if counted(r["attention"], r["param"])]:
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
                    "natural": (kind == "mean") == (method in SAMPLERS), "n_away": s.n,
                    "max_abs_delta": largest_delta(rs, curve), "rms_z": s.rms_z,
                    "chi2": s.chi2, "dof": s.dof, "chi2_per_dof": s.chi2_per_dof, "p_value": s.p_value,
                    "n_within_2": s.n_within_2,
                    "worst_recipe": worst["recipe"] if worst else "", "worst_P": worst["P"] if worst else NAN,
                    "worst_param": worst["name"] if worst else "", "worst_z": s.worst_z,
                    "n_all": s_all.n, "rms_z_all": s_all.rms_z,
                    "n_no_error": int((~np.isfinite(z) & away).sum()),
                    "n_grid_limited": sum(bool(r["away"] and as_float(r.get("theory_grid_error")) >
                                               as_float(r.get("error"))) for r in rs)})
        block = block_rms_z([r for r, a in zip(rs, away) if a])
        out[-1].update(rms_z_block_lo=block["rms_z_lo"], rms_z_block_hi=block["rms_z_hi"],
                       block_n_distinct=block["n_distinct"])
        if any("mixed" in r for r in rs):
            mixed = np.array([r.get("mixed") is True for r in rs], bool)
            s_m = agreement_summary(z, away & mixed)
            out[-1].update(n_not_mixed=int((away & ~mixed & np.isfinite(z)).sum()), n_mixed=s_m.n,
                           rms_z_mixed=s_m.rms_z, n_within_2_mixed=s_m.n_within_2)
    return out


# the order in which the theory sources are preferred: the most specific first
SOURCES = (("same", "same dataset"), ("exact", "exact avg."), ("closed", "closed form"))


def deltas(rows, curve: str, recipe: str | None = None, away_only: bool = True) -> list[float]:
    """|experiment − theory| of the agreement rows (records, or their dicts as a study's tables hold them) of one
    theory curve (and recipe) with a finite z, at the points away from the transitions (every point with
    ``away_only=False``): the effect sizes beside the RMS z of the same rows (:func:`agreement_summary`)."""
    get = (lambda r, k: r.get(k)) if rows and isinstance(rows[0], dict) else getattr
    out = []
    for r in rows:
        e, t, z = (as_float(get(r, k)) for k in ("experiment", "theory", "z"))
        if (get(r, "curve") == curve and (get(r, "away") or not away_only)
                and (recipe is None or get(r, "recipe") == recipe)
                and math.isfinite(z) and math.isfinite(e) and math.isfinite(t)):
            out.append(abs(e - t))
    return out


def largest_delta(rows, curve: str, recipe: str | None = None) -> float:
    """The largest of :func:`deltas` (NaN where no row qualifies)."""
    return max(deltas(rows, curve, recipe), default=math.nan)


def natural_curve(rows, method: str) -> str | None:
    """The theory curve a method is judged against (and its residuals are drawn against): its natural kind
    (SGLD, HMC: posterior mean; Adam: minimiser) from the most specific source with a finite z in the
    agreement rows (same dataset, else exact average, else closed form)."""
    kind = "mean" if method in SAMPLERS else "saddle"
    have = {r["curve"] for r in rows if r["method"] == method and np.isfinite(as_float(r["z"]))}
    return next((f"{s}_{kind}" for s, _ in SOURCES if f"{s}_{kind}" in have), None)
