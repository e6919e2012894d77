"""Predicted one-loop shift of the linear order parameters against the finite-size study's measured gaps
(issue 21 item 4, first comparison; docs/theory.md Sec. 13).

For each (d_k, P) of docs/studies/studies.json finite_size (L = V = 16, σ² = 0.1, large-deviation prior,
g = 1) the posterior mean of Eq. (18) on a 2-D (c1, cG) grid is computed with exp(−S) (closed form,
Eq. (16)) and with exp(−S − ΔS_EK) (Eq. (32)), optionally + ΔS_pref (Eq. (30)), and, for contrast, with the
naive "½ ln det of the total transverse Hessian" (ΔS_EK + ½ ln det d_k H_I⊥). ΔS is evaluated on a coarse
grid inside the posterior's window and interpolated (cubic) onto the fine grid. The predicted shift
⟨O⟩_corrected − ⟨O⟩_S is printed next to the measured gap (SGLD − same-dataset theory) and both × d_k.

    python benchmarks/one_loop_gaps.py [--ratios 1 1.35 2] [--dk 16 32 ...] [--coarse 11] [--json out]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np
import torch
from scipy.interpolate import RectBivariateSpline
from scipy.ndimage import binary_dilation, distance_transform_edt

from copyhead.config import ActionParams
from copyhead.theory import one_loop as ol
from copyhead.theory.action import action_linear, order_to_coeffs

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOFT = 0.2      # a transverse mode with 1 + eig(Σ^½ H_E⊥ Σ^½) below this is near-critical (Sec. 13)


def naive_extra(m1, mP, p):
    """½ ln det(d_k H_I⊥) (the term the prior's prefactor cancels, Sec. 13), block form."""
    L = p.L
    M = m1 * np.ones((L, L)) + mP * np.eye(L)
    D = ol._block_dirs(L)
    HI = p.d_k * (D @ ol.prior_rate_hessian(M, p.g_Q * p.g_K, p.prior) @ D.T)
    return 0.5 * ((L - 1) * np.linalg.slogdet(HI[:3, :3])[1] + L * (L - 3) // 2 * np.log(HI[3, 3])
                  + (L - 1) * (L - 2) // 2 * np.log(HI[4, 4]))


def window(p, P, n=161):
    """Box of (c1 ≥ 0, cG) where S − S_min < 30 on a broad grid."""
    c1 = np.linspace(0, 0.6, n)
    cG = np.linspace(-0.4, 0.8, n)
    C1, CG = np.meshgrid(c1, cG, indexing="ij")
    S = action_linear(C1, CG, P, p)
    ok = S - S.min() < 30
    i, j = np.where(ok)
    pad1, pad2 = c1[1] - c1[0], cG[1] - cG[0]
    return (0.0, min(c1[i.max()] + pad1, 0.6)), (max(cG[j.min()] - pad2, -0.4), min(cG[j.max()] + pad2, 0.8))


def shifts(p, P, coarse=11, fine=161):
    (a1, b1), (a2, b2) = window(p, P)
    c1f, cGf = np.linspace(a1, b1, fine), np.linspace(a2, b2, fine)
    C1, CG = np.meshgrid(c1f, cGf, indexing="ij")
    S = action_linear(C1, CG, P, p)
    w = np.where(c1f[:, None] > 0, 1.0, 0.5) * np.ones_like(S)
    c1c, cGc = np.linspace(a1, b1, coarse), np.linspace(a2, b2, coarse)
    dS = np.full((coarse, coarse), np.nan)
    pref = np.zeros((coarse, coarse))
    naive = np.zeros((coarse, coarse))
    rel = np.zeros((coarse, coarse))
    E = ol.evidence_ek(P * p.L, p.V, p.L, p.g_O, p.sigma2)
    for i, x in enumerate(c1c):
        for j, y in enumerate(cGc):
            m1, mP = map(float, order_to_coeffs(x, y, p.L))
            r = ol.one_loop_ek(m1, mP, P, p.V, p.L, p.d_k, p.g_Q, p.g_K, p.g_O, p.sigma2, p.prior, E=E)
            dS[i, j], rel[i, j] = r.dS, r.min_rel_eig
            pref[i, j] = ol.prior_prefactor(m1, mP, p.L, p.g_Q * p.g_K, p.prior)
            naive[i, j] = naive_extra(m1, mP, p)
    bad = np.isnan(dS)
    # posterior weight (under exp(−S)) of the fine points whose nearest coarse point is unstable
    ii = np.rint((C1 - a1) / (b1 - a1) * (coarse - 1)).astype(int)
    jj = np.rint((CG - a2) / (b2 - a2) * (coarse - 1)).astype(int)
    badf = bad[ii, jj]
    q0 = w * np.exp(-(S - S.min()))
    unstable_weight = float(q0[badf].sum() / q0.sum())
    # unstable coarse points (Eq. (33)) take the value of the nearest stable one (no spline ringing) and the
    # fine points nearest to them are dropped from the corrected posterior; their corrected weight and that
    # of the fine points within one coarse cell of them are reported
    near = distance_transform_edt(bad, return_distances=False, return_indices=True)
    fill = dS[tuple(near)] if bad.any() else dS
    dil = binary_dilation(bad, np.ones((3, 3), bool)) if bad.any() else bad

    def interp(Z):
        return RectBivariateSpline(c1c, cGc, Z, kx=3, ky=3)(c1f, cGf)

    out = {"window": [[a1, b1], [a2, b2]], "unstable_weight": unstable_weight}
    variants = {"none": 0 * S, "one_loop": interp(fill), "one_loop+pref": interp(fill) + interp(pref),
                "naive_total_hessian": interp(fill) + interp(naive)}
    dilf = dil[ii, jj]
    softf = (rel < SOFT)[ii, jj]
    for name, extra in variants.items():
        T = S + extra
        q = w * np.exp(-(T - T[~badf].min())) * (~badf if name != "none" else 1)
        out[name] = {"c1": float((q * C1).sum() / q.sum()), "cG": float((q * CG).sum() / q.sum())}
        if name == "one_loop":
            out["near_unstable_weight"] = float(q[dilf].sum() / q.sum())
            out["soft_weight"] = float(q[softf].sum() / q.sum())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ratios", type=float, nargs="+", default=[1.0, 1.35, 2.0])
    ap.add_argument("--dk", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    ap.add_argument("--coarse", type=int, default=11)
    ap.add_argument("--recipe", default="sgld")
    ap.add_argument("--json", type=pathlib.Path, default=None)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    fs = json.loads((ROOT / "docs/studies/studies.json").read_text())["finite_size"]
    gaps = {(g["ratio"], g["param"]): g for g in fs["gaps"]
            if g["attention"] == "linear" and g["recipe"] == a.recipe}
    rows = []
    print("ratio d_k  P  param | measured gap ± err | pred one_loop  +pref  naive | ×d_k: measured  one_loop  "
          "+pref | unstable weight under S, near-unstable weight under S+ΔS, soft-mode weight under S+ΔS")
    for ratio in a.ratios:
        for d_k in a.dk:
            pts = {prm: next(q for q in gaps[(ratio, prm)]["points"] if q["d_k"] == d_k) for prm in ("c1", "cG")}
            P = float(pts["cG"]["P"])
            p = ActionParams(V=fs["L"], L=fs["L"], d_k=d_k, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1,
                             prior="large_deviation")
            t0 = time.perf_counter()
            r = shifts(p, P, a.coarse)
            for prm in ("c1", "cG"):
                q = pts[prm]
                pr = {k: r[k][prm] - r["none"][prm] for k in ("one_loop", "one_loop+pref", "naive_total_hessian")}
                row = {"ratio": ratio, "d_k": d_k, "P": P, "param": prm, "measured_gap": q["gap"],
                       "measured_err": q["error"], "theory_same_mean": q["theory"],
                       "closed_mean": r["none"][prm], "pred": pr, "unstable_weight": r["unstable_weight"],
                       "near_unstable_weight": r["near_unstable_weight"],
                       "soft_weight": r["soft_weight"], "window": r["window"]}
                rows.append(row)
                print(f"{ratio:5} {d_k:4} {P:4.0f} {prm:3} | {q['gap']:+.4f} ± {q['error']:.4f} | "
                      f"{pr['one_loop']:+.4f} {pr['one_loop+pref']:+.4f} {pr['naive_total_hessian']:+.4f} | "
                      f"{q['gap'] * d_k:+.2f} {pr['one_loop'] * d_k:+.2f} {pr['one_loop+pref'] * d_k:+.2f} | "
                      f"{r['unstable_weight']:.2g} {r['near_unstable_weight']:.2g} soft {r['soft_weight']:.2g}  ({time.perf_counter() - t0:.0f} s)", flush=True)
    for prm in ("c1", "cG"):
        for ratio in a.ratios:
            g = gaps[(ratio, prm)]["fit"]
            print(f"fitted b (gap = gap_inf + b/d_k), ratio {ratio}, {prm}: {g['b']:+.3f} ± {g['b_err']:.3f}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
