"""The phase map: linear crossover / softmax P* over (L, V) along fixed d_k and along d_k ∝ L
(docs/theory.md, Sec. 12; rendered on docs/phase_map.md).

For every (path, L, V) and both priors the closed-form transitions come from
``scaling.closed_form_transitions`` (Eqs. (19)-(21)); the exact dataset average (Eq. (17)) is computed on
the V = 16 slice for L ≤ 128. The softmax copy point is the first-order P* where there is one, else (a
smooth crossover) the P of fastest growth of âG = mP/L (Eq. (20) applied to the softmax saddle). The
ratio > 1 means softmax copies before linear attention. Every P is in sequences at the given σ²; the
closed-form ratio does not depend on σ² (every closed-form P is ∝ σ², Sec. 6), the exact average does.
Pure: ``copyhead phase-map map --out FILE`` and ``copyhead phase-map exact --map FILE --out FILE`` write
the netCDF files through :mod:`.phase_map_output` (``write_map``, ``write_exact``).
"""
from __future__ import annotations

import math
import time

import numpy as np
import xarray as xr

from copyhead.config import ActionParams

from .action import ExactAverage
from .prior import PRIORS
from .ranges import beta_range, exact_P_grid, linear_range, make_model
from .scaling import closed_form_transitions
from .scan import analyse
from .transitions import crossover

# the map's parameters (coarse grids: about a minute on one core)
SETTINGS = {"sigma2": 0.1, "g_Q": 1.0, "g_K": 1.0, "g_O": 1.0, "grid_n": 81, "n_P": 60,
            "L": [16, 32, 64, 128, 256], "V": [8, 16, 32, 64],
            "exact": {"V": 16, "L": [16, 32, 64, 128], "n_datasets": 2, "seed": 0, "max_points": 40,
                      "grid_n": 61}}
# path name -> d_k as a function of L
PATHS = {"d_k=16": lambda L: 16, "d_k=32": lambda L: 32, "d_k=64": lambda L: 64,
         "d_k=L": lambda L: L, "d_k=2L": lambda L: 2 * L}
# N = P·L ≫ V² is read as N ≥ N_OVER_V2_MIN · V² at the smaller of the two transitions
N_OVER_V2_MIN = 10.0
SEQ = "sequences"


def params(L, V, d_k, prior, settings=SETTINGS) -> ActionParams:
    s = settings
    return ActionParams(V=V, L=L, d_k=d_k, g_Q=s["g_Q"], g_K=s["g_K"], g_O=s["g_O"], sigma2=s["sigma2"],
                        prior=prior)


def softmax_copy_point(op, P, L):
    """P of fastest growth of âG = mP/L along a softmax saddle curve (the smooth-crossover copy point)."""
    return crossover(P, op["m1"], op["mP"] / L)[1]


def copy_points(p: ActionParams, grid_n, n_P):
    """Closed-form transitions of one parameter set: dict with the linear crossover, the softmax P*,
    its spinodals, the softmax copy point and whether it is a first-order jump."""
    lin = closed_form_transitions("linear", p, grid_n, n_P)
    sm = closed_form_transitions("softmax", p, grid_n, n_P)
    out = {"P_crossover": lin["P_crossover"], "P_onset": lin["P_onset"], "P_star": sm["P_star"],
           "P_spinodal_low": sm["P_spinodal_low"], "P_spinodal_high": sm["P_spinodal_high"]}
    out["softmax_jump"] = float(np.isfinite(sm["P_star"]))
    if np.isfinite(sm["P_star"]):
        out["P_copy"] = sm["P_star"]
    else:   # smooth: fastest growth of âG on a P range around the linear crossover
        ref = lin["P_crossover"] if np.isfinite(lin["P_crossover"]) else 10 * p.sigma2 * p.V
        P = np.geomspace(ref / 8, ref * 40, n_P)
        out["P_copy"] = softmax_copy_point(analyse(make_model("softmax", p, grid_n, P[-1]), P)[1], P, p.L)
    return out


KEYS = ("P_crossover", "P_onset", "P_star", "P_spinodal_low", "P_spinodal_high", "P_copy", "softmax_jump")
LONG = {"P_crossover": "linear attention: cG overtakes c1 (Eq. 20)",
        "P_onset": "linear attention: Hessian instability of the origin (Eq. 19)",
        "P_star": "softmax first-order point (Eq. 21); NaN: smooth crossover",
        "P_spinodal_low": "softmax lower spinodal (Eq. 21)", "P_spinodal_high": "softmax upper spinodal (Eq. 21)",
        "P_copy": "softmax copy point: P* if first-order, else the P of fastest growth of aG = mP/L",
        "softmax_jump": "1 if the softmax copy point is a first-order jump, 0 if a smooth crossover"}


def compute_map(settings=SETTINGS, log=print) -> xr.Dataset:
    """The closed-form map: variables on (path, L, V, prior), ratio = P_crossover / P_copy."""
    s = settings
    shape = (len(PATHS), len(s["L"]), len(s["V"]), len(PRIORS))
    arr = {k: np.full(shape, np.nan) for k in KEYS}
    cache = {}
    t0 = time.perf_counter()
    for ip, (path, dk_of) in enumerate(PATHS.items()):
        for il, L in enumerate(s["L"]):
            for iv, V in enumerate(s["V"]):
                for ir, prior in enumerate(PRIORS):
                    key = (L, V, dk_of(L), prior)
                    if key not in cache:
                        cache[key] = copy_points(params(*key, settings=s), s["grid_n"], s["n_P"])
                    for k in KEYS:
                        arr[k][ip, il, iv, ir] = cache[key][k]
        log(f"phase map: {path} done ({time.perf_counter() - t0:.0f} s)")
    coords = {"path": list(PATHS), "L": np.asarray(s["L"], int), "V": np.asarray(s["V"], int),
              "prior": list(PRIORS)}
    dims = ("path", "L", "V", "prior")
    ds = xr.Dataset({k: (dims, v, {"long_name": LONG[k], "units": "1" if k == "softmax_jump" else SEQ})
                     for k, v in arr.items()}, coords=coords)
    ds["d_k"] = (("path", "L"), np.array([[dk_of(L) for L in s["L"]] for dk_of in PATHS.values()]),
                 {"long_name": "key/query dimension on the path", "units": "1"})
    _derived(ds)
    ds.attrs["compute_seconds"] = float(time.perf_counter() - t0)
    return ds


def _derived(ds, suffix=""):
    """ratio, and N = P·L of the smaller transition over V² and over (V+L)² (the EK validity measures)."""
    Px, Pc = ds["P_crossover" + suffix], ds["P_copy" + suffix]
    ds["ratio" + suffix] = (Px / Pc).assign_attrs(
        long_name="linear crossover / softmax copy point (> 1: softmax copies first)", units="1")
    N = np.fmin(Px, Pc) * ds["L"]
    ds["N_over_V2" + suffix] = (N / ds["V"] ** 2).assign_attrs(
        long_name="N = P L at the smaller transition, over V^2", units="1")
    ds["N_over_D2" + suffix] = (N / (ds["V"] + ds["L"]) ** 2).assign_attrs(
        long_name="N = P L at the smaller transition, over (V + L)^2", units="1")


def exact_points(p: ActionParams, closed: dict, ex_settings, grid_n):
    """Exact-average (Eq. (17)) linear crossover and softmax copy point for both priors, on an integer P
    grid spanning [0.4, 2.5]× the closed-form transitions; one evidence per dataset for both priors."""
    lo = 0.4 * np.nanmin([closed[pr]["P_crossover"] for pr in PRIORS] + [closed[pr]["P_copy"] for pr in PRIORS])
    hi = 2.5 * np.nanmax([closed[pr]["P_crossover"] for pr in PRIORS] + [closed[pr]["P_copy"] for pr in PRIORS])
    Pg = exact_P_grid([max(2, math.floor(lo)), math.ceil(hi)], ex_settings["max_points"])
    ex = ExactAverage(p, ex_settings["n_datasets"], int(Pg[-1]), ex_settings["seed"])
    others = [p.replace(prior=pr) for pr in PRIORS]
    R = max(linear_range(q, Pg[-1]) for q in others)
    b_lo, b_hi = -0.5, max(beta_range(q, Pg[-1])[1] for q in others)
    out = {}
    for q in others:
        _, _, trl = analyse(make_model("linear", q, grid_n, Pg[-1], exact=ex, ranges=R), Pg, continuous=False)
        _, ops, trs = analyse(make_model("softmax", q, grid_n, Pg[-1], exact=ex, ranges=(b_lo, b_hi)), Pg,
                              continuous=False)
        jump = np.isfinite(trs["P_star"])
        out[q.prior] = {"P_crossover": trl["P_crossover"], "P_star": trs["P_star"], "softmax_jump": float(jump),
                        "P_copy": trs["P_star"] if jump else softmax_copy_point(ops, Pg, p.L)}
    return out


EXACT_KEYS = ("P_crossover", "P_star", "P_copy", "softmax_jump")


def compute_exact(ds_map: xr.Dataset, settings=SETTINGS, log=print) -> xr.Dataset:
    """The exact dataset average on the V = settings["exact"]["V"] slice (all paths, L in the slice):
    variables ``<k>_exact`` on (path, L, prior) next to the closed form ``<k>`` of the same points."""
    e = settings["exact"]
    V, Ls = e["V"], e["L"]
    shape = (len(PATHS), len(Ls), len(PRIORS))
    arr = {k: np.full(shape, np.nan) for k in EXACT_KEYS}
    cache = {}
    t0 = time.perf_counter()
    for ip, (path, dk_of) in enumerate(PATHS.items()):
        for il, L in enumerate(Ls):
            key = (L, V, dk_of(L))
            if key not in cache:
                cm = ds_map.sel(path=path, L=L, V=V)
                closed = {pr: {k: float(cm[k].sel(prior=pr)) for k in ("P_crossover", "P_copy")} for pr in PRIORS}
                cache[key] = exact_points(params(*key, "large_deviation", settings), closed, e, e["grid_n"])
                log(f"phase map exact: L={L} V={V} d_k={dk_of(L)} ({time.perf_counter() - t0:.0f} s)")
            for ir, pr in enumerate(PRIORS):
                for k in EXACT_KEYS:
                    arr[k][ip, il, ir] = cache[key][pr][k]
    dims = ("path", "L", "prior")
    ds = xr.Dataset({f"{k}_exact": (dims, v, {"long_name": f"{LONG[k]}, exact action averaged over "
                                                             f"{e['n_datasets']} datasets (Eq. 17)",
                                              "units": "1" if k == "softmax_jump" else SEQ})
                     for k, v in arr.items()},
                    coords={"path": list(PATHS), "L": np.asarray(Ls, int), "prior": list(PRIORS)})
    ds = ds.assign_coords(V=V)
    for k in ("P_crossover", "P_copy", "P_star"):
        ds[k] = ds_map[k].sel(L=Ls, V=V)
    _derived(ds, "_exact")
    _derived(ds)
    ds.attrs["compute_seconds"] = float(time.perf_counter() - t0)
    return ds
