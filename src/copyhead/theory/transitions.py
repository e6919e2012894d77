"""Transition points and their automatic classification (docs/theory.md, Sec. 5, Eqs. (19)-(21)).

Input is a ``scan``: for each P of a grid, the global minimiser of S, its action and the list of local
minima found on the order-parameter grid (canonicalised by the model's symmetry). Rules:
- second-order onset: the smallest Hessian eigenvalue of S at the origin changes sign (Eq. (19)); the
  unstable direction is its eigenvector, in (c1, cG); labelled second-order if the global minimiser
  leaves the origin continuously;
- first-order point: the global minimiser switches between two coexisting local minima (Eq. (21)); P* is
  where their actions cross, the spinodals where the metastable branches end;
- crossover (Eq. (20)): where cG overtakes c1 on a continuous saddle curve, and where dcG/dP is largest.
The functions only see arrays and callables, so they also classify the constructed test families.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

# the scalar transition points of ``classify`` (NaN where not applicable)
TRANSITION_KEYS = ("P_onset", "P_crossover", "P_fastest_growth", "P_star", "P_spinodal_low",
                   "P_spinodal_high")


def _nearest(minima, x):
    if not minima:
        return None, np.inf
    d = [np.linalg.norm(np.asarray(m[0]) - x) for m in minima]
    k = int(np.argmin(d))
    return minima[k], d[k]


def onset(P, lam_min, hess_at=None):
    """Second-order instability of the origin, Eq. (19): first P where λ_min(Hess S(0)) turns negative.

    ``lam_min`` are the smallest eigenvalues on the grid P; ``hess_at(P) -> (eigvals, eigvecs)`` refines
    with brentq (else linear interpolation). Returns (P_c, direction) or (nan, [nan, nan]).
    """
    lam_min = np.asarray(lam_min)
    idx = np.where((lam_min[:-1] > 0) & (lam_min[1:] <= 0))[0]
    if len(idx) == 0:
        return np.nan, np.full(2, np.nan)
    i = idx[0]
    if hess_at is not None:
        Pc = brentq(lambda x: hess_at(x)[0][0], P[i], P[i + 1], xtol=1e-10 * P[i], rtol=1e-12)
    else:
        Pc = P[i] + (P[i + 1] - P[i]) * lam_min[i] / (lam_min[i] - lam_min[i + 1])
    if hess_at is not None:
        v = np.asarray(hess_at(Pc)[1][:, 0], float)
    else:
        v = np.full(2, np.nan)
    if np.isfinite(v).all():
        v = v / np.linalg.norm(v)
        if v[0] < 0 or (v[0] == 0 and v[1] < 0):
            v = -v
    return float(Pc), v


def first_order(P, glob, minima, spacing, global_at=None, minima_at=None):
    """First-order switches of the global minimum, Eq. (21).

    P (n,), glob (n, dim) global minimisers, minima: per P a list of (position, S) local minima.
    ``global_at(P)``/``minima_at(P)`` (optional) re-evaluate at any P for bisection refinement.
    Returns a list of dicts with P_star, P_spinodal_low, P_spinodal_high, x_before, x_after.
    """
    out = []
    glob = np.asarray(glob, float).reshape(len(P), -1)
    for i in range(len(P) - 1):
        g0, g1 = glob[i], glob[i + 1]
        jump = np.linalg.norm(g1 - g0)
        if jump <= 1.5 * spacing:
            continue
        tol = 0.5 * jump
        new_before, d_new = _nearest(minima[i], g1)
        old_after, d_old = _nearest(minima[i + 1], g0)
        if not (d_new < tol or d_old < tol):
            continue  # no coexistence: fast but continuous motion (e.g. just after a second-order onset)
        # P*: the two branches exchange stability
        if global_at is not None:
            lo, hi = P[i], P[i + 1]
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                gm = global_at(mid)
                if np.linalg.norm(gm - g0) < np.linalg.norm(gm - g1):
                    lo = mid
                else:
                    hi = mid
                if hi - lo < 1e-6 * hi:
                    break
            Pstar = 0.5 * (lo + hi)
        else:
            m_old_i = _nearest(minima[i], g0)[0]
            s_old_i = m_old_i[1] if m_old_i is not None else np.nan
            s_new_i = new_before[1] if d_new < tol else np.nan
            s_old_j = old_after[1] if d_old < tol else np.nan
            m_new_j = _nearest(minima[i + 1], g1)[0]
            s_new_j = m_new_j[1] if m_new_j is not None else np.nan
            d_i, d_j = s_new_i - s_old_i, s_new_j - s_old_j
            if np.isfinite(d_i) and np.isfinite(d_j) and d_i != d_j:
                Pstar = P[i] + (P[i + 1] - P[i]) * d_i / (d_i - d_j)
            else:
                Pstar = 0.5 * (P[i] + P[i + 1])
        lo_sp = _track(P, minima, i + 1, g1, -1, tol, minima_at)
        hi_sp = _track(P, minima, i, g0, +1, tol, minima_at)
        out.append({"P_star": float(Pstar), "P_spinodal_low": lo_sp, "P_spinodal_high": hi_sp,
                    "x_before": g0.tolist(), "x_after": g1.tolist(), "grid_index": i})
    return out


def _track(P, minima, start, x, step, tol, minima_at=None):
    """Follow the local minimum at x from index start in direction step; return where it disappears."""
    j = start
    last = None
    while 0 <= j < len(P):
        m, d = _nearest(minima[j], x)
        if m is None or d >= tol:
            break
        x = np.asarray(m[0], float)
        last = j
        j += step
    if last is None:
        return float(P[start])
    if not (0 <= j < len(P)):
        return float("nan")  # branch survives to the end of the grid: spinodal outside the P range
    if minima_at is None:
        return float(0.5 * (P[last] + P[j]))
    lo, hi = P[last], P[j]  # exists at lo, gone at hi (in grid order)
    xb = x
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        m, d = _nearest(minima_at(mid, xb), xb)
        if m is not None and d < tol:
            lo, xb = mid, np.asarray(m[0], float)
        else:
            hi = mid
        if abs(hi - lo) < 1e-4 * abs(hi):
            break
    return float(0.5 * (lo + hi))


def crossover(P, c1, cG, after=None, saddle_at=None):
    """Crossover, Eq. (20): first P (beyond ``after``) where cG - c1 turns positive, and the P where
    dcG/dP is largest (parabolic refinement of the grid maximum). Returns (P_x, P_fast, max_slope)."""
    P, c1, cG = map(np.asarray, (P, c1, cG))
    diff = cG - c1
    start = 0 if after is None or not np.isfinite(after) else int(np.searchsorted(P, after))
    idx = [i for i in range(start, len(P) - 1) if diff[i] <= 0 < diff[i + 1]]
    Px = np.nan
    if idx:
        i = idx[0]
        if saddle_at is not None:
            f = lambda x: (lambda s: s[1] - s[0])(saddle_at(x))
            try:
                Px = brentq(f, P[i], P[i + 1], xtol=1e-8 * P[i])
            except ValueError:
                Px = np.nan
        if not np.isfinite(Px):
            Px = P[i] + (P[i + 1] - P[i]) * (-diff[i]) / (diff[i + 1] - diff[i])
    if len(P) < 3:
        return float(Px), float("nan"), float("nan")
    slope = np.gradient(cG, P)
    k = int(np.argmax(slope))
    Pf = P[k]
    if 0 < k < len(P) - 1:
        y0, y1, y2 = slope[k - 1:k + 2]
        x0, x1, x2 = P[k - 1:k + 2]
        den = (x0 - x1) * (x0 - x2) * (x1 - x2)
        a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / den
        b = (x2**2 * (y0 - y1) + x1**2 * (y2 - y0) + x0**2 * (y1 - y2)) / den
        if a < 0:
            Pf = float(np.clip(-b / (2 * a), x0, x2))
    return float(Px), float(Pf), float(slope[k])


def landau_quartic(action_at, Pc, v, t_scale):
    """Effective quartic coefficient of S at the onset along the unstable direction v (Eq. (19b)).

    f(t) = min_y S(Pc, t v + y v⊥) - S(Pc, 0) ≈ A4 t⁴ for a symmetric action (S(-x) = S(x)); the
    transverse relaxation y ~ t² is included. A4 > 0: continuous (second-order) onset; A4 < 0: the
    origin is left by a jump before the instability (first-order, preempted onset).
    """
    from scipy.optimize import minimize_scalar
    v = np.asarray(v, float)
    w = np.array([-v[1], v[0]])
    S0 = float(action_at(Pc, np.zeros((1, 2)))[0])
    vals = []
    for t in (0.5 * t_scale, t_scale):
        f = lambda y: float(action_at(Pc, (t * v + y * w)[None, :])[0])
        r = minimize_scalar(f, bounds=(-t, t), method="bounded", options={"xatol": 1e-7 * t * t})
        vals.append((r.fun - S0) / t**4)
    # f/t⁴ = A4 + A6 t²: extrapolate to t -> 0
    return float((4 * vals[0] - vals[1]) / 3)


def classify(P, glob, minima, spacing, lam_min=None, hess_at=None, global_at=None, minima_at=None,
             crossover_curves=None, saddle_at=None, action_at=None):
    """All transitions of one prediction curve: dict of scalars and the ``transitions`` list.

    crossover_curves = (c1, cG) on the grid P enables the crossover detection (linear attention).
    """
    res = {**{k: np.nan for k in TRANSITION_KEYS}, "onset_direction": [np.nan, np.nan], "transitions": []}
    fo = first_order(P, glob, minima, spacing, global_at, minima_at)
    if lam_min is not None:
        Pc, v = onset(P, lam_min, hess_at)
        if np.isfinite(Pc):
            preempted = any(f["P_star"] <= Pc * (1 + 1e-9) and np.linalg.norm(f["x_before"]) < 2 * spacing
                            for f in fo)
            A4 = np.nan
            if action_at is not None and np.isfinite(v).all():
                A4 = landau_quartic(action_at, Pc, v, 2 * spacing)
                preempted = preempted or A4 < 0
            res["P_onset"], res["onset_direction"] = Pc, [float(v[0]), float(v[1])]
            res["transitions"].append({
                "kind": "onset", "P": Pc,
                "classification": "first-order (weak: jump precedes the instability)" if preempted
                else "second-order",
                "details": {"unstable_direction_c1_cG": [float(v[0]), float(v[1])], "landau_quartic": A4,
                            "rule": "smallest Hessian eigenvalue of S at the origin changes sign (Eq. 19); "
                                    "order from the sign of the effective quartic coefficient (Eq. 19b) "
                                    "and from coexisting minima (Eq. 21)"}})
    for f in fo:
        res["transitions"].append({
            "kind": "first_order", "P": f["P_star"], "classification": "first-order",
            "details": {"P_spinodal_low": f["P_spinodal_low"], "P_spinodal_high": f["P_spinodal_high"],
                        "order_parameters_before": f["x_before"], "order_parameters_after": f["x_after"],
                        "rule": "global minimum switches between coexisting local minima (Eq. 21)"}})
    if fo:
        res["P_star"] = fo[0]["P_star"]
        res["P_spinodal_low"] = fo[0]["P_spinodal_low"]
        res["P_spinodal_high"] = fo[0]["P_spinodal_high"]
    if crossover_curves is not None:
        c1, cG = crossover_curves
        Px, Pf, slope = crossover(P, c1, cG, after=res["P_onset"], saddle_at=saddle_at)
        jump_between = lambda a, b: any(min(a, b) <= f["P_star"] <= max(a, b) for f in fo)
        if np.isfinite(Px):
            res["P_crossover"] = Px
            res["transitions"].append({
                "kind": "crossover", "P": Px,
                "classification": "first-order" if jump_between(Px * 0.97, Px * 1.03) else "crossover",
                "details": {"rule": "cG of the global minimiser overtakes c1 (Eq. 20)"}})
        res["P_fastest_growth"] = Pf
        res["transitions"].append({
            "kind": "fastest_growth", "P": Pf,
            "classification": "first-order" if jump_between(Pf * 0.97, Pf * 1.03) else "crossover",
            "details": {"max_dcG_dP": slope, "rule": "maximum of dcG/dP along the saddle (Eq. 20)"}})
    res["transitions"].sort(key=lambda t: t["P"])
    return res
