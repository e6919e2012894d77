"""Corrected (one-loop) and uncorrected posterior means of the linear order parameters at the points of
the finite-size studies (issue 21 item 4; docs/theory.md Sec. 13; rendered on docs/one_loop.md).

At each (study, P) the posterior mean of Eq. (18) over (c1 ≥ 0, cG) is computed on a fine grid inside the
window S − S_min < ``cut`` with
- ``none``: exp(−S), S the 2-D closed-form action (Eq. (16), equivalent kernel) — the uncorrected theory;
- ``one_loop``: exp(−S − ΔS_EK), ΔS_EK of Eq. (32) (the transverse Gaussian correction, Eq. (31));
- ``one_loop_pref``: the same + ΔS_pref (Eq. (30), the plane prefactor);
- ``one_loop_g``: exp(−S − ΔS_EK − ΔS_g,s) for each run's own training set s, ΔS_g,s the gradient term of
  Eq. (31) with that dataset's transverse evidence gradient g⊥ and the equivalent-kernel curvature
  (Eq. (34)); the posterior means averaged over the runs (what the same-dataset theory averages too);
- ``naive``: ΔS_EK + ½ ln det(d_k H_I⊥), the "½ ln det of the total Hessian" Sec. 13 rules out.
ΔS is evaluated on a ``coarse`` sub-grid of the window and interpolated (bicubic) onto the fine grid.
Sub-grid points where Eq. (33) fails take the value of the nearest stable one and the fine points nearest
to them are dropped from the corrected posteriors; the corrected posterior weight within one sub-grid cell
of an unstable point and on sub-grid points with a soft mode (1 + eig Σ^½H_E⊥Σ^½ < ``soft``) is kept.

``python -m copyhead.theory.one_loop_predict --studies docs/studies/studies.json --base
config/studies/base.yaml --study finite_size --out docs/one_loop/finite_size.nc`` (or ``--results
docs/results.json --study converged``: the converged study at the default size)
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import xarray as xr
from scipy.interpolate import CubicSpline, RectBivariateSpline
from scipy.ndimage import binary_dilation, distance_transform_edt

from copyhead.config import ActionParams

from . import one_loop as ol
from . import one_loop_terms as olt
from .action import action_linear, action_softmax, order_to_coeffs, softmax_coeffs
from .one_loop_points import PARAMS, SOFTMAX_PARAMS, converged_points, study_points
from .same_dataset import run_training_tokens

SOFT = 0.2       # a transverse mode with 1 + eig(Σ^½ H_E⊥ Σ^½) below this is near-critical (Sec. 13)
FLAG = 0.5       # a point is flagged (no prediction) when more than this share of its one-loop posterior
                 # weight lies on such sub-grid points
CUT = 30.0       # the window: S − S_min < CUT
BOX = ((0.0, 0.6), (-0.4, 0.8))      # the first (c1, cG) box the window is searched in (widened if hit)
SETTINGS = {"coarse": 11, "fine": 161, "soft": SOFT, "cut": CUT, "flag": FLAG, "coarse_beta": 21, "fine_beta": 801}
VARIANTS = ("none", "one_loop", "one_loop_pref", "one_loop_g", "naive")
VARIANT_LABEL = {"none": "2-D closed form exp(−S) (Eqs. (16), (18)), uncorrected",
                 "one_loop": "exp(−S − ΔS_EK), one loop (Eq. (32))",
                 "one_loop_pref": "exp(−S − ΔS_EK − ΔS_pref) (Eqs. (30), (32))",
                 "one_loop_g": "exp(−S − ΔS_EK − ΔS_g) per run's dataset, averaged (Eqs. (32), (34))",
                 "naive": "exp(−S − ΔS_EK − ½ ln det d_k H_I⊥), the naive total-Hessian form (Sec. 13)"}
SOFTMAX_VARIANTS = ("none", "one_loop", "one_loop_no_obs")
SOFTMAX_LABEL = {"none": "1-D closed form exp(−S(β)) (Eqs. (16), (18)), uncorrected",
                 "one_loop": "exp(−S − ΔS_EK) with the observable's term (Eqs. (32), (35))",
                 "one_loop_no_obs": "exp(−S − ΔS_EK), âG(β) without its second-order term (Eq. (32))"}
BETA_BOX = (-3.0, 15.0)     # where the softmax window S(β) − S_min < CUT is searched


def window(p: ActionParams, P, n=161, cut=CUT, box=BOX, max_widen=6):
    """((c1_lo, c1_hi), (cG_lo, cG_hi)): the box (c1 ≥ 0) where S − S_min < cut, padded by one step; the
    search box is widened (×2 on the side it touches) until the window lies inside it."""
    (a1, b1), (a2, b2) = box
    for _ in range(max_widen):
        c1, cG = np.linspace(a1, b1, n), np.linspace(a2, b2, n)
        C1, CG = np.meshgrid(c1, cG, indexing="ij")
        S = action_linear(C1, CG, P, p)
        i, j = np.where(S - S.min() < cut)
        hit_1, hit_lo, hit_hi = i.max() == n - 1, j.min() == 0, j.max() == n - 1
        if not (hit_1 or hit_lo or hit_hi):
            d1, d2 = c1[1] - c1[0], cG[1] - cG[0]
            return (a1, c1[i.max()] + d1), (cG[j.min()] - d2, cG[j.max()] + d2)
        b1 = b1 + (b1 - a1) if hit_1 else b1
        a2, b2 = (a2 - (b2 - a2) if hit_lo else a2), (b2 + (b2 - a2) if hit_hi else b2)
    raise RuntimeError(f"the posterior window at P = {P} does not fit in the box after {max_widen} widenings")


def naive_extra(m1, mP, p: ActionParams):
    """½ ln det(d_k H_I⊥) at the plane point (block form of Eq. (29)): the O(L²) pure-prior term the
    prefactor of Eq. (27) cancels (Sec. 13)."""
    L = p.L
    M = m1 * np.ones((L, L)) + mP * np.eye(L)
    D = ol._block_dirs(L)
    HI = p.d_k * ol.prior_rate_form(M, p.g_Q * p.g_K, D.reshape(-1, L, L), p.prior)
    return 0.5 * ((L - 1) * np.linalg.slogdet(HI[:3, :3])[1] + L * (L - 3) // 2 * np.log(HI[3, 3])
                  + (L - 1) * (L - 2) // 2 * np.log(HI[4, 4]))


def ek_correction(p: ActionParams, P, seeds=()):
    """The corrections at one (c1, cG) for the equivalent-kernel evidence at P: a function returning
    dict(dS = ΔS_EK of Eq. (32) (NaN where Eq. (33) fails), rel = the smallest eigenvalue of
    1 + Σ^½H_E⊥Σ^½, pref = ΔS_pref of Eq. (30), naive = ½ ln det d_k H_I⊥, and g<i> = ΔS_g of Eq. (34)
    for the training set of run ``seeds[i]`` at P)."""
    E = ol.evidence_ek(P * p.L, p.V, p.L, p.g_O, p.sigma2)
    Es = [ol.evidence_dataset(run_training_tokens(p, s, int(round(P))), p.V, p.g_O, p.sigma2) for s in seeds]

    def corr(c1, cG):
        m1, mP = map(float, order_to_coeffs(c1, cG, p.L))
        blocks = ol.ek_blocks(m1, mP, P, p.V, p.L, p.d_k, p.g_Q, p.g_K, p.g_O, p.sigma2, p.prior, E=E)
        r = ol.one_loop_blocks(*blocks, p.L)
        M = m1 * np.ones((p.L, p.L)) + mP * np.eye(p.L)
        return {"dS": r.dS, "rel": r.min_rel_eig, "pref": ol.prior_prefactor(m1, mP, p.L, p.g_Q * p.g_K, p.prior),
                "naive": naive_extra(m1, mP, p),
                **{f"g{i}": olt.grad_term_blocks(olt.evidence_grad(Ei, M), blocks[1], blocks[2], p.L)
                   for i, Ei in enumerate(Es)}}
    return corr


def posterior_means(p: ActionParams, P, coarse=11, fine=161, correction=None, soft=SOFT, cut=CUT, seeds=()):
    """Posterior means of (c1, cG) under each variant of VARIANTS at one P (module docstring).

    ``correction(c1, cG) -> dict(dS, rel, pref, naive, g0, g1, …)`` (default: ek_correction(p, P, seeds));
    ``one_loop_g`` is NaN without seeds. Returns {"window", variant: {"c1", "cG"}, "unstable_weight" (under
    exp(−S), on fine points nearest an unstable sub-grid point), "near_unstable_weight" and "soft_weight"
    (under the one-loop posterior), "n_unstable"}.
    """
    correction = ek_correction(p, P, seeds) if correction is None else correction
    (a1, b1), (a2, b2) = window(p, P, cut=cut)
    c1f, cGf = np.linspace(a1, b1, fine), np.linspace(a2, b2, fine)
    C1, CG = np.meshgrid(c1f, cGf, indexing="ij")
    S = action_linear(C1, CG, P, p)
    w = np.where(c1f[:, None] > 0, 1.0, 0.5) * np.ones_like(S)     # c1 = 0 is the symmetry line (c → −c)
    c1c, cGc = np.linspace(a1, b1, coarse), np.linspace(a2, b2, coarse)
    grid = {}
    for i, x in enumerate(c1c):
        for j, y in enumerate(cGc):
            for k, v in correction(float(x), float(y)).items():
                grid.setdefault(k, np.full((coarse, coarse), np.nan))[i, j] = v
    gkeys = sorted((k for k in grid if k[0] == "g" and k[1:].isdigit()), key=lambda k: int(k[1:]))
    bad = ~np.isfinite(grid["dS"])
    ii = np.rint((C1 - a1) / (b1 - a1) * (coarse - 1)).astype(int)
    jj = np.rint((CG - a2) / (b2 - a2) * (coarse - 1)).astype(int)
    badf = bad[ii, jj]
    q0 = w * np.exp(-(S - S.min()))
    out = {"window": ((a1, b1), (a2, b2)), "unstable_weight": float(q0[badf].sum() / q0.sum()),
           "n_unstable": int(bad.sum())}
    if bad.all():
        for name in VARIANTS:
            out[name] = {"c1": np.nan, "cG": np.nan} if name != "none" else _means(q0, C1, CG)
        out.update(near_unstable_weight=np.nan, soft_weight=np.nan)
        return out
    nearest = tuple(distance_transform_edt(bad, return_distances=False, return_indices=True))
    dilf = binary_dilation(bad, np.ones((3, 3), bool))[ii, jj]
    softf = (grid["rel"] < soft)[ii, jj]

    def interp(Z):
        return RectBivariateSpline(c1c, cGc, Z, kx=3, ky=3)(c1f, cGf)
    one = interp(grid["dS"][nearest])

    def means(dS, keep):
        q = w * np.exp(-(S + dS - (S + dS)[keep].min())) * keep
        return _means(q, C1, CG), q
    for name, dS in {"none": 0.0 * S, "one_loop": one, "one_loop_pref": one + interp(grid["pref"]),
                     "naive": one + interp(grid["naive"])}.items():
        out[name], q = means(dS, np.ones_like(badf) if name == "none" else ~badf)
        if name == "one_loop":
            out["near_unstable_weight"] = float(q[dilf].sum() / q.sum())
            out["soft_weight"] = float(q[softf].sum() / q.sum())
    per_run = [means(one + interp(grid[k][nearest]), ~badf)[0] for k in gkeys]
    out["one_loop_g"] = {prm: float(np.mean([m[prm] for m in per_run])) if per_run else np.nan
                         for prm in PARAMS}
    return out


def softmax_posterior_means(p: ActionParams, P, coarse=21, fine=801, soft=SOFT, cut=CUT):
    """Softmax: posterior means of âG over the copy logit β (Eq. (18), uniform in β) inside the window
    S(β) − S_min < cut, uncorrected (``none``), with ΔS_EK (Eq. (32), at M = β(I − J/L)) and the observable's
    second-order term (Eq. (35)) (``one_loop``), and with ΔS_EK but âG(β) alone (``one_loop_no_obs``: what
    the observable's term adds). Corrections on a ``coarse`` sub-grid, cubic interpolation; unstable
    sub-grid points as in :func:`posterior_means`. Returns {"window", variant: {"aG"}, "soft_weight",
    "unstable_weight", "near_unstable_weight", "n_unstable"}."""
    b = np.linspace(*BETA_BOX, 4001)
    S = action_softmax(b, P, p)
    k = np.where(S - S.min() < cut)[0]
    lo, hi = b[max(k.min() - 1, 0)], b[min(k.max() + 1, len(b) - 1)]
    bf, bc = np.linspace(lo, hi, fine), np.linspace(lo, hi, coarse)
    Sf = action_softmax(bf, P, p)
    E = ol.evidence_ek(P * p.L, p.V, p.L, p.g_O, p.sigma2, "softmax")
    dS, rel, obs = np.full(coarse, np.nan), np.full(coarse, np.nan), np.full(coarse, np.nan)
    for i, x in enumerate(bc):
        r, o = olt.one_loop_softmax(float(x), P, p.V, p.L, p.d_k, p.g_Q, p.g_K, p.g_O, p.sigma2, p.prior, E=E)
        dS[i], rel[i], obs[i] = r.dS, r.min_rel_eig, o
    bad = ~np.isfinite(dS)
    aG = softmax_coeffs(bf, p.L)[1] / p.L                       # âG = mP/L (copyhead.results.inputs)
    q0 = np.exp(-(Sf - Sf.min()))
    idx = np.rint((bf - lo) / (hi - lo) * (coarse - 1)).astype(int)
    out = {"window": (lo, hi), "unstable_weight": float(q0[bad[idx]].sum() / q0.sum()), "n_unstable": int(bad.sum()),
           "none": {"aG": float(q0 @ aG / q0.sum())}, "beta_min": {"none": float(bf[np.argmin(Sf)]), "one_loop": np.nan}}
    if bad.all():
        out.update({v: {"aG": np.nan} for v in SOFTMAX_VARIANTS[1:]}, soft_weight=np.nan, near_unstable_weight=np.nan)
        return out
    good = np.where(~bad)[0]
    nearest = good[np.abs(bc[good][None, :] - bc[:, None]).argmin(1)]
    keep = ~bad[idx]
    T = Sf + CubicSpline(bc, dS[nearest])(bf)
    q = np.exp(-(T - T[keep].min())) * keep
    out["beta_min"]["one_loop"] = float(bf[keep][np.argmin(T[keep])])
    out["one_loop_no_obs"] = {"aG": float(q @ aG / q.sum())}
    out["one_loop"] = {"aG": float(q @ (aG + CubicSpline(bc, obs[nearest])(bf)) / q.sum())}
    near = np.convolve(bad, np.ones(3), "same") > 0
    out["soft_weight"] = float(q[(rel < soft)[idx]].sum() / q.sum())
    out["near_unstable_weight"] = float(q[near[idx]].sum() / q.sum())
    return out


def _means(q, C1, CG):
    return {"c1": float((q * C1).sum() / q.sum()), "cG": float((q * CG).sum() / q.sum())}


def mode_at(p: ActionParams, P, c1, cG):
    """(block, 1 + eig Σ^½H_E⊥Σ^½, column share) of the softest transverse mode at (c1, cG)
    (one_loop.softest_mode, one_loop.column_share); (None, NaN, NaN) where (c1, cG) is not finite."""
    if not (np.isfinite(c1) and np.isfinite(cG)):
        return None, np.nan, np.nan
    m1, mP = map(float, order_to_coeffs(c1, cG, p.L))
    blk, rel, u = ol.softest_mode(m1, mP, P, p.V, p.L, p.d_k, p.g_Q, p.g_K, p.g_O, p.sigma2, p.prior)
    return blk, rel, ol.column_share(u)


def compute_study(studies: dict, study: str, base: dict, settings=SETTINGS, recipe="sgld", log=print, seeds=(),
                  attention="linear"):
    """xr.Dataset over (ratio, x, param) of the measured points and the posterior means of every variant
    (``seeds``: the runs whose training sets the one_loop_g variant uses; softmax: âG, SOFTMAX_VARIANTS)."""
    params, points = study_points(studies, study, base, recipe, attention)
    return compute(params, points, {"study": study, "by": studies[study]["by"], "recipe": recipe}, settings, log,
                   seeds, attention)


def compute(params, points, attrs, settings=SETTINGS, log=print, seeds=(), attention="linear"):
    """The dataset of compute_study from (params per size x, {(ratio, x, param): point})."""
    study = attrs["study"]
    linear = attention == "linear"
    prms, variants = (PARAMS, VARIANTS) if linear else (SOFTMAX_PARAMS, SOFTMAX_VARIANTS)
    ratios = sorted({k[0] for k in points})
    xs = sorted(params)
    shape3, shape2 = (len(ratios), len(xs), len(prms)), (len(ratios), len(xs))
    v3 = {k: np.full(shape3, np.nan) for k in ("experiment", "error", "theory", "gap", "closed")}
    v3.update({f"mean_{k}": np.full(shape3, np.nan) for k in variants})
    window = ("c1_lo", "c1_hi", "cG_lo", "cG_hi") if linear else ("beta_lo", "beta_hi")
    v2 = {k: np.full(shape2, np.nan) for k in ("P", "unstable_weight", "near_unstable_weight", "soft_weight",
                                                "n_unstable", "seconds") + window
          + (tuple(f"mode_{k}_{at}" for k in ("rel", "column", "block") for at in ("none", "one_loop"))
             if linear else ())}
    for a, ratio in enumerate(ratios):
        for b, x in enumerate(xs):
            if (ratio, x, prms[-1]) not in points:
                continue
            P = points[(ratio, x, prms[-1])]["P"]
            t0 = time.perf_counter()
            if linear:
                r = posterior_means(params[x], P, settings["coarse"], settings["fine"], soft=settings["soft"],
                                    cut=settings["cut"], seeds=seeds)
                (v2["c1_lo"][a, b], v2["c1_hi"][a, b]), (v2["cG_lo"][a, b], v2["cG_hi"][a, b]) = r["window"]
                for at in ("none", "one_loop"):
                    blk, rel, share = mode_at(params[x], P, r[at]["c1"], r[at]["cG"])
                    v2[f"mode_rel_{at}"][a, b], v2[f"mode_column_{at}"][a, b] = rel, share
                    v2[f"mode_block_{at}"][a, b] = ol.BLOCKS.index(blk) if blk else -1
                extra = f"(with g⊥ {r['one_loop_g']['cG'] - r['none']['cG']:+.4f}), "
            else:
                r = softmax_posterior_means(params[x], P, settings["coarse_beta"], settings["fine_beta"],
                                            soft=settings["soft"], cut=settings["cut"])
                v2["beta_lo"][a, b], v2["beta_hi"][a, b] = r["window"]
                extra = f"(without the observable's term {r['one_loop_no_obs']['aG'] - r['none']['aG']:+.4f}), "
            for k in ("unstable_weight", "near_unstable_weight", "soft_weight", "n_unstable"):
                v2[k][a, b] = r[k]
            v2["P"][a, b], v2["seconds"][a, b] = P, time.perf_counter() - t0
            for c, prm in enumerate(prms):
                for k in ("experiment", "error", "theory", "gap", "closed"):
                    v3[k][a, b, c] = points[(ratio, x, prm)][k]
                for k in variants:
                    v3[f"mean_{k}"][a, b, c] = r[k][prm]
            log(f"{study} {attention} ratio {ratio} x {x} P {P:g}: shift {prms[-1]} "
                f"{r['one_loop'][prms[-1]] - r['none'][prms[-1]]:+.4f} {extra}"
                f"soft weight {r['soft_weight']:.2g} ({v2['seconds'][a, b]:.1f} s)")
    ds = xr.Dataset({k: (("ratio", "x", "param"), v) for k, v in v3.items()}
                    | {k: (("ratio", "x"), v) for k, v in v2.items()},
                    coords={"ratio": ratios, "x": xs, "param": list(prms),
                            "d_k": ("x", [params[x].d_k for x in xs]), "L": ("x", [params[x].L for x in xs]),
                            "V": ("x", [params[x].V for x in xs]), "sigma2": ("x", [params[x].sigma2 for x in xs])})
    labels = VARIANT_LABEL if linear else SOFTMAX_LABEL
    ds.attrs.update({**attrs, "attention": attention, "prior": params[xs[0]].prior,
                     "g_Q": params[xs[0]].g_Q, "g_K": params[xs[0]].g_K, "g_O": params[xs[0]].g_O,
                     **{f"setting_{k}": v for k, v in settings.items()},
                     "measured": "SGLD (prior starts) minus the studies' same-dataset posterior mean",
                     "mode_block_codes": " ".join(ol.BLOCKS), "seeds": " ".join(map(str, seeds)),
                     **{f"variant_{k}": labels[k] for k in variants}})
    return ds


def main(argv=None):
    import json
    import pathlib

    import torch

    from copyhead.config import load_yaml
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=pathlib.Path, help="docs/studies/studies.json (finite_size, finite_L)")
    ap.add_argument("--base", type=pathlib.Path, help="the studies' base config (finite_size, finite_L)")
    ap.add_argument("--results", type=pathlib.Path, help="a results JSON, e.g. docs/results.json (converged)")
    ap.add_argument("--study", required=True, choices=["finite_size", "finite_L", "converged"])
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--coarse", type=int, default=SETTINGS["coarse"])
    ap.add_argument("--attention", choices=["linear", "softmax"], default="linear",
                    help="softmax: âG at the finite-size study's points (Eqs. (32), (35))")
    ap.add_argument("--spec", type=pathlib.Path, default=pathlib.Path("config/studies.yaml"),
                    help="the studies' spec: its seeds are the runs whose training sets the one_loop_g variant "
                         "uses (finite_size, finite_L; converged: the results' linear sgld seeds)")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    settings = dict(SETTINGS, coarse=a.coarse)
    if a.study == "converged":
        results = json.loads(a.results.read_text())
        params, points = converged_points(results)
        seeds = json.loads(results["config"]["json"])["sweep"]["linear"]["sgld"]["seeds"]
        ds = compute(params, points, {"study": "converged", "by": "d_k", "recipe": "sgld",
                                      "source": str(a.results)}, settings, seeds=seeds)
    else:
        seeds = load_yaml(a.spec)["seeds"]
        ds = compute_study(json.loads(a.studies.read_text()), a.study, load_yaml(a.base), settings,
                           seeds=() if a.attention == "softmax" else seeds, attention=a.attention)
    ds.attrs["seconds_total"] = time.perf_counter() - t0
    a.out.parent.mkdir(parents=True, exist_ok=True)
    ds.to_netcdf(a.out)


if __name__ == "__main__":
    main()
