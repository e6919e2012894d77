"""The posterior means of the order parameters with and without the one-loop correction at one P
(docs/theory.md, Sec. 13): Eq. (18) over the closed-form action on a window of the plane, with the
corrections of Eqs. (30)-(35) evaluated on a coarse sub-grid and interpolated.

Linear (:func:`posterior_means`, over (c1 ≥ 0, cG)), with these variants of the weight:
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
Softmax (:func:`softmax_posterior_means`, over the copy logit β): ΔS_EK and the observable's term of
Eq. (35).
"""
from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicSpline, RectBivariateSpline
from scipy.ndimage import binary_dilation, distance_transform_edt

from copyhead.config import ActionParams
from copyhead.task import run_training_tokens
from copyhead.theory.action import action_linear, action_softmax, order_to_coeffs, softmax_coeffs

from .blocks import block_dirs
from .correction import (column_share, ek_blocks, grad_term_blocks, one_loop_blocks, plane_point,
                         softest_mode)
from .evidence import evidence_dataset, evidence_ek
from .prior import prior_prefactor, prior_rate_form
from .softmax import one_loop_softmax

PARAMS = ("c1", "cG")         # the linear order parameters
SOFTMAX_PARAMS = ("aG",)      # the softmax one (mP/L)

SOFT = 0.2       # a transverse mode with 1 + eig(Σ^½ H_E⊥ Σ^½) below this is near-critical (Sec. 13)
FLAG = 0.5       # a point is flagged (no prediction) when more than this share of its one-loop posterior
                 # weight lies on such sub-grid points
CUT = 30.0       # the window: S − S_min < CUT
BOX = ((0.0, 0.6), (-0.4, 0.8))      # the first (c1, cG) box the window is searched in (widened if hit)
SETTINGS = {"coarse": 11, "fine": 161, "soft": SOFT, "cut": CUT, "flag": FLAG, "coarse_beta": 21, "fine_beta": 801,
            "coarse_dataset": 7}     # the per-dataset one loop's sub-grid (dataset.py; 0: not computed)
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


def window(p: ActionParams, P, n=161, cut=CUT, box=BOX, max_widen=6, action=None):
    """((c1_lo, c1_hi), (cG_lo, cG_hi)): the box (c1 ≥ 0) where S − S_min < cut, padded by one step; the
    search box is widened (×2 on the side it touches) until the window lies inside it. ``action(C1, CG)``:
    the 2-D action (default: the closed form at P, Eq. (16))."""
    action = (lambda C1, CG: action_linear(C1, CG, P, p)) if action is None else action
    (a1, b1), (a2, b2) = box
    for _ in range(max_widen):
        c1, cG = np.linspace(a1, b1, n), np.linspace(a2, b2, n)
        C1, CG = np.meshgrid(c1, cG, indexing="ij")
        S = action(C1, CG)
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
    D = block_dirs(L)
    HI = p.d_k * prior_rate_form(M, p.g_Q * p.g_K, D.reshape(-1, L, L), p.prior)
    return 0.5 * ((L - 1) * np.linalg.slogdet(HI[:3, :3])[1] + L * (L - 3) // 2 * np.log(HI[3, 3])
                  + (L - 1) * (L - 2) // 2 * np.log(HI[4, 4]))


def ek_correction(p: ActionParams, P, seeds=()):
    """The corrections at one (c1, cG) for the equivalent-kernel evidence at P: a function returning
    dict(dS = ΔS_EK of Eq. (32) (NaN where Eq. (33) fails), rel = the smallest eigenvalue of
    1 + Σ^½H_E⊥Σ^½, pref = ΔS_pref of Eq. (30), naive = ½ ln det d_k H_I⊥, and g<i> = ΔS_g of Eq. (34)
    for the training set of run ``seeds[i]`` at P)."""
    E = evidence_ek(p, P)
    Es = [evidence_dataset(run_training_tokens(p, s, int(round(P))), p) for s in seeds]

    def corr(c1, cG):
        m1, mP = map(float, order_to_coeffs(c1, cG, p.L))
        blocks = ek_blocks(p, P, m1, mP, E=E)
        r = one_loop_blocks(*blocks, p.L)
        M = plane_point(m1, mP, p.L)
        return {"dS": r.dS, "rel": r.min_rel_eig, "pref": prior_prefactor(m1, mP, p.L, p.g_Q * p.g_K, p.prior),
                "naive": naive_extra(m1, mP, p),
                **{f"g{i}": grad_term_blocks(Ei.grad(M), blocks[1], blocks[2], p.L)
                   for i, Ei in enumerate(Es)}}
    return corr


def posterior_means(p: ActionParams, P, coarse=11, fine=161, correction=None, soft=SOFT, cut=CUT, seeds=(),
                    action=None, variants=VARIANTS):
    """Posterior means of (c1, cG) under each variant of ``variants`` (default VARIANTS) at one P (module
    docstring).

    ``correction(c1, cG) -> dict(dS, rel, pref, naive, g0, g1, …)`` (default: ek_correction(p, P, seeds));
    ``one_loop_g`` is NaN without seeds. A variant that is a key of the correction's dict (with ``<name>_rel``)
    is that correction added to S, with its own unstable points and weights (``<name>_soft_weight``, …). ``action(C1, CG)``: the 2-D action the correction is added to
    (default: the closed form at P, Eq. (16); one dataset's: ``dataset.dataset_action``). Returns {"window",
    variant: {"c1", "cG"}, "unstable_weight" (under exp(−S), on fine points nearest an unstable sub-grid
    point), "near_unstable_weight" and "soft_weight" (under the one-loop posterior), "n_unstable"}.
    """
    correction = ek_correction(p, P, seeds) if correction is None else correction
    action = (lambda C1, CG: action_linear(C1, CG, P, p)) if action is None else action
    (a1, b1), (a2, b2) = window(p, P, cut=cut, action=action)
    c1f, cGf = np.linspace(a1, b1, fine), np.linspace(a2, b2, fine)
    C1, CG = np.meshgrid(c1f, cGf, indexing="ij")
    S = action(C1, CG)
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

    def interp(Z):
        return RectBivariateSpline(c1c, cGc, Z, kx=3, ky=3)(c1f, cGf)

    def means(dS, keep):
        q = w * np.exp(-(S + dS - (S + dS)[keep].min())) * keep
        return _means(q, C1, CG), q
    own = [v for v in variants if f"{v}_rel" in grid]     # a correction's own variant (e.g. dataset.py's pooling)
    for name in own:
        bad_v = ~np.isfinite(grid[name])
        if bad_v.all():
            out[name] = {prm: np.nan for prm in PARAMS}
            out.update({f"{name}_{k}": np.nan for k in ("soft_weight", "near_unstable_weight", "unstable_weight")})
            continue
        near_v = tuple(distance_transform_edt(bad_v, return_distances=False, return_indices=True))
        keep = ~bad_v[ii, jj]
        out[name], q = means(interp(grid[name][near_v]), keep)
        out[f"{name}_unstable_weight"] = float(q0[~keep].sum() / q0.sum())
        out[f"{name}_near_unstable_weight"] = float(q[binary_dilation(bad_v, np.ones((3, 3), bool))[ii, jj]].sum()
                                                    / q.sum())
        out[f"{name}_soft_weight"] = float(q[(grid[f"{name}_rel"] < soft)[ii, jj]].sum() / q.sum())
    if bad.all():
        for name in (v for v in variants if v not in own):
            out[name] = {"c1": np.nan, "cG": np.nan} if name != "none" else _means(q0, C1, CG)
        out.update(near_unstable_weight=np.nan, soft_weight=np.nan)
        return out
    nearest = tuple(distance_transform_edt(bad, return_distances=False, return_indices=True))
    dilf = binary_dilation(bad, np.ones((3, 3), bool))[ii, jj]
    softf = (grid["rel"] < soft)[ii, jj]
    one = interp(grid["dS"][nearest])
    extra = {"none": lambda: 0.0 * S, "one_loop": lambda: one, "one_loop_pref": lambda: one + interp(grid["pref"]),
             "naive": lambda: one + interp(grid["naive"])}
    for name in ("none", "one_loop", *(v for v in variants if v in extra and v not in ("none", "one_loop"))):
        out[name], q = means(extra[name](), np.ones_like(badf) if name == "none" else ~badf)
        if name == "one_loop":
            out["near_unstable_weight"] = float(q[dilf].sum() / q.sum())
            out["soft_weight"] = float(q[softf].sum() / q.sum())
    if "one_loop_g" in variants:
        per_run = [means(one + interp(grid[k][nearest]), ~badf)[0] for k in gkeys]
        out["one_loop_g"] = {prm: float(np.mean([m[prm] for m in per_run])) if per_run else np.nan
                             for prm in PARAMS}
    return out


def ek_softmax_correction(p: ActionParams, P):
    """The equivalent-kernel softmax correction at one β: a function returning (OneLoop of Eq. (32), the
    observable's term of Eq. (35))."""
    E = evidence_ek(p, P, "softmax")
    return lambda beta: one_loop_softmax(p, P, beta, E=E)


def softmax_posterior_means(p: ActionParams, P, coarse=21, fine=801, soft=SOFT, cut=CUT, action=None,
                            correction=None):
    """Softmax: posterior means of âG over the copy logit β (Eq. (18), uniform in β) inside the window
    S(β) − S_min < cut, uncorrected (``none``), with ΔS_EK (Eq. (32), at M = β(I − J/L)) and the observable's
    second-order term (Eq. (35)) (``one_loop``), and with ΔS_EK but âG(β) alone (``one_loop_no_obs``: what
    the observable's term adds). Corrections on a ``coarse`` sub-grid, cubic interpolation; unstable
    sub-grid points as in :func:`posterior_means`. ``action(β)``: the 1-D action (default: the closed form
    at P); ``correction(β) -> (OneLoop, observable term)`` (default: :func:`ek_softmax_correction`; one
    dataset's: ``dataset.dataset_softmax_correction``). Returns {"window", variant: {"aG"}, "soft_weight",
    "unstable_weight", "near_unstable_weight", "n_unstable"}."""
    action = (lambda beta: action_softmax(beta, P, p)) if action is None else action
    correction = ek_softmax_correction(p, P) if correction is None else correction
    b = np.linspace(*BETA_BOX, 4001)
    S = action(b)
    k = np.where(S - S.min() < cut)[0]
    lo, hi = b[max(k.min() - 1, 0)], b[min(k.max() + 1, len(b) - 1)]
    bf, bc = np.linspace(lo, hi, fine), np.linspace(lo, hi, coarse)
    Sf = action(bf)
    dS, rel, obs = np.full(coarse, np.nan), np.full(coarse, np.nan), np.full(coarse, np.nan)
    for i, x in enumerate(bc):
        r, o = correction(float(x))
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
    (correction.softest_mode, correction.column_share); (None, NaN, NaN) where (c1, cG) is not finite."""
    if not (np.isfinite(c1) and np.isfinite(cG)):
        return None, np.nan, np.nan
    m1, mP = map(float, order_to_coeffs(c1, cG, p.L))
    blk, rel, u = softest_mode(p, P, m1, mP)
    return blk, rel, column_share(u)
