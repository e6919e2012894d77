"""The one loop along a P grid (docs/theory.md, Sec. 13): the closed-form posterior means with and without the
one-loop correction, their flag and the corrected transition. (Once copyhead's theory option
``theory.fluctuations``, which wrote it into the theory files; issue 50 took it out of the paper pipeline.)"""
from __future__ import annotations

import time

import numpy as np

from copyhead.config import ActionParams

from .posterior import PARAMS, SETTINGS, SOFTMAX_PARAMS, posterior_means, softmax_posterior_means


def one_loop_curve(p: ActionParams, Ps, settings=SETTINGS, log=None, attention="linear") -> dict:
    """The closed-form posterior means (Eq. (18)) without and with the one-loop correction at each P of
    ``Ps``: arrays over Ps of each order parameter (linear c1,
    cG, Eq. (32); softmax aG = mP/L, Eqs. (32) and (35)) under ``none`` and ``one_loop`` (NaN where flagged:
    more than settings["flag"] of the one-loop posterior weight on near-critical transverse modes, or no
    stable sub-grid point), soft_weight, unstable_weight, flagged, and the transition of the corrected
    curve with a note: linear P_crossover, where ĉG − ĉ1 changes sign between two neighbouring unflagged P
    (linear in log P); softmax P_jump, the pair of neighbouring unflagged P across which the global minimum
    β of S + ΔS_EK jumps most (and the same for the uncorrected S, on the same grid: ``P_jump_none``)."""
    linear = attention == "linear"
    prms = PARAMS if linear else SOFTMAX_PARAMS
    Ps = np.asarray(sorted(float(x) for x in Ps))
    out = {f"{q}_{v}": np.full(len(Ps), np.nan) for q in prms for v in ("none", "one_loop")}
    out.update({k: np.full(len(Ps), np.nan) for k in ("soft_weight", "unstable_weight", "beta_none", "beta_one_loop")})
    out["flagged"] = np.zeros(len(Ps), bool)
    for i, P in enumerate(Ps):
        t0 = time.perf_counter()
        if linear:
            r = posterior_means(p, P, settings["coarse"], settings["fine"], soft=settings["soft"], cut=settings["cut"])
        else:
            r = softmax_posterior_means(p, P, settings["coarse_beta"], settings["fine_beta"], soft=settings["soft"],
                                        cut=settings["cut"])
            out["beta_none"][i], out["beta_one_loop"][i] = r["beta_min"]["none"], r["beta_min"]["one_loop"]
        flag = not np.isfinite(r["one_loop"][prms[-1]]) or r["soft_weight"] > settings["flag"]
        for q in prms:
            out[f"{q}_none"][i] = r["none"][q]
            out[f"{q}_one_loop"][i] = np.nan if flag else r["one_loop"][q]
        out["soft_weight"][i], out["unstable_weight"][i], out["flagged"][i] = (r["soft_weight"],
                                                                                r["unstable_weight"], flag)
        if log:
            log(f"one loop {attention} P {P:g}: " + ", ".join(f"{q} {r['none'][q]:.4f} -> "
                + ("flagged" if flag else f"{r['one_loop'][q]:.4f}") for q in prms)
                + f" ({time.perf_counter() - t0:.1f} s)")
    out["P"] = Ps
    if linear:
        d = out["cG_one_loop"] - out["c1_one_loop"]
        out["P_crossover"], out["P_crossover_note"] = np.nan, "the corrected ĉG − ĉ1 does not change sign on the grid"
        for i in range(len(Ps) - 1):
            if np.isfinite(d[i]) and np.isfinite(d[i + 1]) and d[i] < 0 <= d[i + 1]:
                t = d[i] / (d[i] - d[i + 1])
                out["P_crossover"] = float(np.exp(np.log(Ps[i]) + t * (np.log(Ps[i + 1]) - np.log(Ps[i]))))
                out["P_crossover_note"] = "linear in log P between neighbouring unflagged grid points"
                break
        else:
            if out["flagged"].any():
                out["P_crossover_note"] += " outside the flagged P (no prediction there)"
        return out
    for v in ("none", "one_loop"):
        b = np.where(out["flagged"], np.nan, out[f"beta_{v}"]) if v == "one_loop" else out["beta_none"]
        jumps = np.diff(b)
        if np.isfinite(jumps).any():
            j = int(np.nanargmax(jumps))
            out[f"P_jump_{v}"] = (float(Ps[j]), float(Ps[j + 1]))
        else:
            out[f"P_jump_{v}"] = (np.nan, np.nan)
    out["P_jump_note"] = ("the neighbouring grid P across which the global minimum β of the (corrected) action "
                          "jumps most: a bracket, as fine as the grid")
    return out
