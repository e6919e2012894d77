"""The transition table of a sweep: each recipe's transition points read from the data with percentile-
bootstrap intervals over chains/seeds (the estimators of :mod:`copyhead.analysis.transition_estimators`), each beside
the theory's values of the same transition (the same estimators on the theory curves, and the theory's own
transition points) and whether the interval contains them."""
from __future__ import annotations

import numpy as np

from .curves import CURVES, seed_mean_curve
from .experiments import COPY_KEY, NAMES, Recipe, run_values, swept_P
from .stats import NAN, as_float
from .transition_estimators import (BootstrapCI, bootstrap, chain_mean_sem, crossover_of_chains, crossover_point,
                          hysteresis_of_chains, interpolation_error, jump_bracket_of_chains, onset_point,
                          steepest_rise)


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
        v = as_float(v)
        known = np.isfinite(v) and np.isfinite(as_float(ci_lo)) and np.isfinite(as_float(ci_hi))
        out.append({"curve": label, "value": v, "contains": bool(ci_lo <= v <= ci_hi) if known else None})
    return out


def _linear_crossover_theory(th, same, P, seeds) -> list[tuple[str, float]]:
    vals = [("closed form, minimiser", as_float(th.get("P_crossover")))]
    if "c1_mean" in th:
        vals.append(("closed form, posterior mean", crossover_point(th["P"].values, th["c1_mean"].values,
                                                                    th["cG_mean"].values)))
    vals.append(("exact avg., minimiser", as_float(th.get("P_crossover_exact"))))
    if "c1_mean_exact" in th:
        vals.append(("exact avg., posterior mean", crossover_point(
            th["P_exact"].values, th["c1_mean_exact"].values, th["cG_mean_exact"].values)))
    for curve in ("same_saddle", "same_mean"):
        c1 = seed_mean_curve(curve, "linear", th, same, P, seeds, "c1")
        if c1 is not None:
            cG = seed_mean_curve(curve, "linear", th, same, P, seeds, "cG")
            vals.append((CURVES[curve][0] + " (seed mean, swept P)", crossover_point(P, c1, cG)))
    return vals


def _softmax_jump_theory(th, same, P, seeds, min_rise: float) -> list[dict]:
    """The jump of every theory curve read exactly as the data are: :func:`steepest_rise` of its seed mean
    of âG on the swept P (the closed form interpolated in log P, the exact average and the same-dataset
    theory at the swept P themselves): each a grid bracket ``lo``–``hi`` with ``value`` its geometric
    midpoint. The theory's thermodynamic first-order points P* come after, under their own names, marked
    ``compared: False`` (a different quantity: where the global minimum switches branch)."""
    out = []
    for curve, (label, _, _) in CURVES.items():
        y = seed_mean_curve(curve, "softmax", th, same, P, seeds, "aG")
        if y is None:
            continue
        br = steepest_rise(P, y, min_rise)
        out.append({"curve": f"{label} (seed mean, swept P, steepest rise)", "value": br.mid, "lo": br.lo,
                    "hi": br.hi, "rise_share": br.share})
    for label, key in (("closed form, P* (first-order point; not an estimate of the data's jump)", "P_star"),
                       ("exact avg., P* (first-order point; not an estimate of the data's jump)", "P_star_exact")):
        out.append({"curve": label, "value": as_float(th.get(key)), "compared": False})
    return out


def _bracket_list(ci_lo, ci_hi, values: list[dict]) -> list[dict]:
    """Theory brackets against the data's interval: ``contains`` is True when they overlap (both are
    intervals on the same grid); P* entries (``compared`` False) get None."""
    out = []
    for t in values:
        t = dict(t)
        ends = [as_float(t.get("lo", t["value"])), as_float(t.get("hi", t["value"])), as_float(ci_lo), as_float(ci_hi)]
        t["contains"] = (bool(ends[0] <= ends[3] and ends[2] <= ends[1])
                         if t.get("compared", True) and np.isfinite(ends).all() else None)
        out.append(t)
    return out


def spinodal_windows(th, same=None, seeds=None) -> list[tuple[str, float, float]]:
    """The theory's coexistence windows [lower spinodal, upper spinodal]: closed form, exact average and,
    with the same-dataset theory, the smallest and largest swept P where at least half the seeds' actions
    have two distinct minima (prior side ≠ copy side)."""
    out = [("closed form", as_float(th.get("P_spinodal_low")), as_float(th.get("P_spinodal_high"))),
           ("exact avg.", as_float(th.get("P_spinodal_low_exact")), as_float(th.get("P_spinodal_high_exact")))]
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
    for good) per prior-started recipe; softmax jump (the grid step where the seed mean of âG rises fastest
    per unit log P, :func:`copyhead.analysis.transition_estimators.steepest_rise`: an interval, the bootstrap's union
    of such steps; each theory curve read the same way on the same P, overlap = ``contains``) per
    prior-started recipe; the
    hysteresis window (prior- and copy-started chains of the same seeds disagree by more than 2 errors in
    the copy order parameter) per copy-started recipe, each edge against the spinodals. A softmax curve whose
    seed means rise by less than ``min_rise`` in âG (1 % of its range [0, 1] by default) has no jump, and
    prior- and copy-started chains closer than ``min_rise`` are on the same branch (no hysteresis); runs
    at A = 0 do not make a linear crossover; with one chain per P there is no interval (NaN, noted)."""
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
            # the interval also holds the interpolation between grid points (log P against P)
            err = interpolation_error(P, chain_mean_sem(c1x)[0], chain_mean_sem(cGx)[0])
            lo, hi = (ci.lo - err, ci.hi + err) if np.isfinite(err) else (ci.lo, ci.hi)
            th_vals = _linear_crossover_theory(th, same, P, seeds)
            note = _join(_note(c1), f"interval widened by the interpolation error ±{err:.3g} (log P vs P)"
                         if np.isfinite(err) and err > 0 else "")
            rows.append(_ci_row(attention, "crossover ĉG = ĉ1", r.name, ci, method=r.method, ci_lo=lo, ci_hi=hi,
                                interpolation_error=err, theory=_theory_list(lo, hi, th_vals), resolved=True,
                                note=note))

            def onset(P_, c1_):
                m, s = chain_mean_sem(c1_)
                return onset_point(P_, m, s, k=2.0, baseline=m[0])

            ci = _no_interval(bootstrap(onset, P, c1, **kw), c1)
            vals_on = [("closed form, Hessian instability", as_float(th.get("P_onset"))),
                       ("closed form, weak first-order P*", as_float(th.get("P_star"))),
                       ("exact avg., Hessian instability", as_float(th.get("P_onset_exact")))]
            note = _note(c1)
            if np.isfinite(as_float(th.get("P_onset"))) and P[0] > as_float(th.get("P_onset")):
                note = _join(note, "the swept grid starts above the theory's onset")
            row = _widened(_ci_row(attention, "onset of ĉ1", r.name, ci, method=r.method, resolved=True,
                                   note=note), P, "a detection point")
            row["theory"] = _theory_list(row["ci_lo"], row["ci_hi"], vals_on)
            rows.append(row)
        else:
            P, (aG,) = _grid(P0, [vals["aG"]])
            if len(P) < 3:
                continue
            br, ci = jump_bracket_of_chains(P, aG, min_rise=min_rise, **kw)
            ci = _no_interval(ci, aG)
            note = _note(aG)
            if not np.isfinite(br.lo):
                note = _join(note, f"the seed means of âG rise by less than {min_rise:g}: no jump on the swept grid")
            # the interval: the bootstrap's union of grid steps, never narrower than the step itself
            lo, hi = (float(np.nanmin([ci.lo, br.lo])), float(np.nanmax([ci.hi, br.hi]))) if np.isfinite(br.lo) \
                else (NAN, NAN)
            row = _ci_row(attention, "jump of âG (steepest rise)", r.name, ci, method=r.method, resolved=False,
                          note=note, bracket=[br.lo, br.hi], rise_share=br.share, ci_lo=lo, ci_hi=hi)
            row["theory"] = _bracket_list(lo, hi, _softmax_jump_theory(th, same, P, seeds, min_rise))
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


