"""Is the large-deviation prior the right prior where people train (d_k = L)? A Schwinger–Dyson check on exact
draws of the posterior (the page docs/benchmarks/prior_force.md; theory: docs/theory.md Sec. 3, Eq. (7), and
Sec. 13, Eq. (31)).

The exact posterior of the score matrix M = QᵀK/d_k is p(M) ∝ p₀(M) e^{−E(M)} (p₀: the exact prior of M, E the
training set's evidence, Eq. (4)). Its mean force vanishes along every direction e:
⟨eᵀ∇E⟩ + ⟨eᵀ∇(−ln p₀)⟩ = 0 (Schwinger–Dyson; for e off the plane span{J, I} also under the sign gauge ĉ1 ≥ 0,
whose boundary is normal to J). So over exact draws −⟨eᵀ∇E⟩ *is* the exact prior's mean force along e, and
⟨eᵀ∇R⟩ is what the large-deviation rate R = d_k Σ_i φ(σ_i(M)) (Eq. (7)) — the prior every order of the theory
expands (Gaussian order, saddle, one loop) — puts in its place. Given Q the exact prior of M's columns is
N(0, g_K QᵀQ/d_k²), so d_k² (QᵀQ)⁻¹M/g_K per draw estimates the exact prior force directly (Rao–Blackwell; its
variance is finite only for d_k well above L): at d_k ≥ 2L it checks the identity itself.

The chains' mean along e against the Gaussian order x̄_G = −C g⊥ (C = (H⊥ + d_k H_I⊥)⁻¹ at the chains' plane
point) splits exactly: eᵀ(x̄ − x̄_G) = eᵀC⟨∇S⟩ − eᵀC⟨N⟩, S = E + R over the transverse coordinates x, N(x) =
∇S − g⊥ − C⁻¹x its non-linear part. By Schwinger–Dyson ⟨∇S⟩ = ⟨∇R − ∇(−ln p₀)⟩: the first term is the prior's
error on the posterior's own draws, the second the action's non-linear terms (what the saddle and the one loop
expand). Per (d_k, P/P_ref, training set), 4 prior-started chains, the pipeline's hmc recipe; e: the Gaussian-order
mean's column part (M = 1wᵀ) and its rest, as in src/research/benchmarks/column_response.py.

    python src/research/benchmarks/prior_force.py --md docs/benchmarks/prior_force.md    # ~30 min, one core
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import torch

from copyhead import order_params as op
from copyhead.studies.spec import action_params, reference_transitions
from copyhead.task import make_data
from copyhead.theory.action import order_to_coeffs
from research.one_loop.correction import gaussian_correction, plane_point
from research.one_loop.dataset import DatasetMoments, transverse_system
from research.one_loop.evidence import DatasetEvidence
from research.one_loop.pooling import column_basis
from research.one_loop.prior import neg_log_prior_matrix_grad, saddle_correction_grad
from copyhead.theory.same_dataset import run_training_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))   # benchmarks/common.py
from common import collapsed_attention_samples, default_size_main, mean_se, pm  # noqa: E402

DK_OVER_L = (1, 2, 4)                 # d_k = L (the default size), 2L, 4L
RATIOS = (0.6, 0.9, 1.5)              # P/P_ref (P_ref: the closed-form linear crossover at that d_k)
SEEDS = (0, 1, 2, 3)
CHAINS, ITERS, BURN, THIN = 4, 1600, 200, 2     # the pipeline's hmc recipe (config.yaml)
EVERY = 2                             # forces on every EVERY-th kept draw
SECTORS = (("col", "column"), ("rest", "rest"))


def grid(p):
    """[(d_k, P/P_ref, P)]: the d_k values and each one's P at the ratios of its own crossover."""
    out = []
    for m in DK_OVER_L:
        q = dataclasses.replace(p, d_k=m * p.L)
        P_ref = reference_transitions(q)["linear"][1]
        out += [(q.d_k, r, max(2, round(r * P_ref))) for r in RATIOS]
    return out


def exact_prior_force(M, W, p):
    """The exact prior's force −∇ln p₀ estimated per draw given Q (W = QᵀQ): M's columns are N(0, g_K W/d_k²)
    given Q, so d_k² W⁻¹M/g_K (n, L²) (Rao–Blackwell; an unbiased estimate of the force at M)."""
    return np.array([(p.d_k**2 * np.linalg.solve(w, m) / p.g_K).ravel() for m, w in zip(M, W)])


def correction_hessian(M0, T, p, h=1e-5):
    """The transverse Hessian of ΔR (Eq. (38)) at the plane point M0 (central differences of its gradient along
    the columns of T): what the saddle-point correction adds to the Gaussian order's prior precision d_k H_I⊥."""
    L, g = M0.shape[-1], (p.g_Q, p.g_K)
    H = np.array([(saddle_correction_grad(M0 + h * d, *g) - saddle_correction_grad(M0 - h * d, *g)).ravel() / (2 * h)
                  for d in T.T.reshape(-1, L, L)]) @ T
    return 0.5 * (H + H.T)


def forces(p, tokens, M, W):
    """Per draw the transverse forces at M (n, L, L): the evidence's ∇E, the large-deviation rate's ∇R, the rate
    with its saddle-point correction's ∇(R + ΔR) and the exact prior's Rao–Blackwell estimate d_k²(QᵀQ)⁻¹M/g_K
    (W = QᵀQ), each as a full L×L gradient (n, L²)."""
    ev = DatasetEvidence(tokens, p.V, p.g_O, p.sigma2)
    fE = np.array([np.asarray(ev.grad(m)).ravel() for m in M])
    fR = np.array([neg_log_prior_matrix_grad(m, p.d_k, p.g_Q, p.g_K).ravel() for m in M])
    fR1 = fR + np.array([saddle_correction_grad(m, p.g_Q, p.g_K).ravel() for m in M])
    return fE, fR, fR1, exact_prior_force(M, W, p)


def analyse(p, P, seed, M, W):
    """The per-set numbers from the draws M, W (n, chains, L, L), sign-fixed (ĉ1 ≥ 0)."""
    L = p.L
    c = op.order_parameters(torch.as_tensor(M.reshape(-1, L, L) / L))
    m1, mP = map(float, order_to_coeffs(float(c["c1"].mean()), float(c["cG"].mean()), L))
    tok = run_training_tokens(p, seed, P)
    Ht, gt, Sinv, T = transverse_system(p, DatasetMoments(tok, p.V, p.g_O, p.sigma2), plane_point(m1, mP, L))
    C = gaussian_correction(Ht, gt, Sinv, cov=True)[-1]
    x_g = -(C @ gt)
    C1 = np.linalg.inv(np.linalg.inv(C) + correction_hessian(plane_point(m1, mP, L), T, p))
    x_1 = -(C1 @ gt)                                        # the Gaussian order with R + ΔR's curvature
    x = M.reshape(*M.shape[:2], L * L) @ T                 # (n, chains, L² − 2)
    sub = M[::EVERY]
    fE, fR, fR1, fX = (f.reshape(*sub.shape[:2], -1) @ T for f in forces(
        p, tok, sub.reshape(-1, L, L), W[::EVERY].reshape(-1, L, L)))
    _, Ct, Rt = column_basis(L)
    halves = (slice(0, CHAINS // 2), slice(CHAINS // 2, CHAINS))
    row = {"P": P, "seed": seed, "d_k": p.d_k, "c1": float(c["c1"].mean()), "cG": float(c["cG"].mean())}
    for name, B in (("col", Ct), ("rest", Rt)):
        e = B @ (B.T @ x_g)
        e /= np.linalg.norm(e)
        Ce = C @ e
        per_half = [(float(np.mean(x[:, h] @ e)), float(np.mean(fE[:, h] @ e)), float(np.mean(fR[:, h] @ e)),
                     float(np.mean(fR1[:, h] @ e)), float(np.mean((fE[:, h] + fX[:, h]) @ e)),
                     float(np.mean((fE[:, h] + fR[:, h]) @ Ce)), float(np.mean(np.var(x[:, h] @ e, axis=0, ddof=1))))
                    for h in halves]
        vals, errs = np.mean(per_half, 0), np.abs(np.diff(per_half, axis=0)[0]) / 2
        for k, v, dv in zip(("mean", "fE", "fR", "fR1", "sd", "prior", "var"), vals, errs):
            row[f"{k}_{name}"], row[f"{k}_err_{name}"] = float(v), float(dv)
        row |= {f"gauss_{name}": float(e @ x_g), f"gauss1_{name}": float(e @ x_1),
                f"var_gauss_{name}": float(e @ C @ e), f"var_gauss1_{name}": float(e @ C1 @ e)}
    return row


def measure(cfg, log=print):
    p0 = action_params(cfg)
    rows = []
    for d_k, ratio, P in grid(p0):
        p = dataclasses.replace(p0, d_k=d_k)
        for seed in SEEDS:
            t0 = time.perf_counter()

            def record(A, Q, K):                              # M = QᵀK/d_k in the sign gauge ĉ1 ≥ 0
                return torch.stack([op.sign_fix(A, Q.transpose(1, 2) @ K / d_k)[1], Q.transpose(1, 2) @ Q], 1)
            rec, h = collapsed_attention_samples(make_data(seed, p.V, p.L, P, 8), "linear", d_k, p.sigma2,
                                                 1000 * seed + P, chains=CHAINS, iters=ITERS, burn=BURN,
                                                 thin=THIN, record=record, qk=True)
            D = torch.stack(rec, 0).numpy()                  # (n, chains, 2, L, L)
            r = dict(analyse(p, P, seed, D[:, :, 0], D[:, :, 1]), ratio=ratio, accept=float(h.accept_rate().mean()))
            rows.append(r)
            log(f"d_k {d_k} P {P} ({ratio} P_ref) seed {seed}: " + "; ".join(
                f"{s}: chains − Gaussian {r['mean_' + s] - r['gauss_' + s]:+.4f}, prior part {r['prior_' + s]:+.4f} "
                f"± {r['prior_err_' + s]:.4f}, R/exact force {r['fR_' + s] / -r['fE_' + s]:.2f}, corrected "
                f"{r['fR1_' + s] / -r['fE_' + s]:.2f}, Schwinger–Dyson "
                f"{r['sd_' + s]:+.3f} ± {r['sd_err_' + s]:.3f} (⟨f_E⟩ {r['fE_' + s]:+.3f})" for s, _ in SECTORS)
                + f" ({time.perf_counter() - t0:.0f} s)")
    return p0, rows


def summary(sel, s):
    """Over one point's training sets (mean, SE): the rate's share of the exact prior's mean force, the
    Schwinger–Dyson residual over |⟨f_E⟩| (d_k ≥ 2L), chains − Gaussian, its prior part and the rest."""
    return {"share": mean_se([r[f"fR_{s}"] / -r[f"fE_{s}"] for r in sel]),
            "share1": mean_se([r[f"fR1_{s}"] / -r[f"fE_{s}"] for r in sel]),
            "sd": mean_se([r[f"sd_{s}"] / abs(r[f"fE_{s}"]) for r in sel]),
            "diff": mean_se([r[f"mean_{s}"] - r[f"gauss_{s}"] for r in sel]),
            "prior": mean_se([r[f"prior_{s}"] for r in sel]),
            "rest": mean_se([r[f"mean_{s}"] - r[f"gauss_{s}"] - r[f"prior_{s}"] for r in sel]),
            "ratio": mean_se([r[f"mean_{s}"] / r[f"gauss_{s}"] for r in sel]),
            "ratio1": mean_se([r[f"mean_{s}"] / r[f"gauss1_{s}"] for r in sel]),
            "var": mean_se([r[f"var_{s}"] / r[f"var_gauss_{s}"] for r in sel]),
            "var1": mean_se([r[f"var_{s}"] / r[f"var_gauss1_{s}"] for r in sel])}


def markdown(p, rows, seconds, when) -> list[str]:
    L = p.L
    keys = sorted({(r["d_k"], r["ratio"]) for r in rows})
    groups = {k: [r for r in rows if (r["d_k"], r["ratio"]) == k] for k in keys}
    S = {k: {s: summary(groups[k], s) for s, _ in SECTORS} for k in keys}
    lines = [f"# Is the large-deviation prior the right prior at d_k = L? Schwinger–Dyson on exact draws (L = {L}, "
             f"V = {p.V})", "",
             f"*Generated by `python src/research/benchmarks/prior_force.py --md docs/benchmarks/prior_force.md` ({when}; "
             f"{seconds:.0f} s); do not edit by hand.* Theory: docs/theory.md Sec. 3 (Eq. (7)) and Sec. 13 (Eq. (31)); "
             "the question: [column_response.md](column_response.md) (at P ≤ 12 the chains' off-plane mean is "
             "0.36–0.65 of the Gaussian order, with the Gaussian order's variance and no skewness).", "",
             "Over exact draws the posterior's mean force vanishes along every off-plane direction e (Schwinger–Dyson), "
             "so the exact prior's mean force is −⟨eᵀ∇E⟩ (E: the training set's evidence, Eq. (4)); the theory "
             "expands the large-deviation rate R = d_k Σφ(σ) (Eq. (7)) in its place. *R / exact*: ⟨eᵀ∇R⟩ over "
             "−⟨eᵀ∇E⟩ (1: the rate pulls as hard as the exact prior on the posterior's own draws). *R + ΔR / "
             "exact*: the same with the rate's saddle-point correction ΔR = ½ ln det ∇²K(G*) (K: the exact cumulant "
             "generating function, Eq. (6); closed form in the singular values, Eq. (38), "
             "`research.one_loop.prior.saddle_correction`: "
             "the next order of the prior in 1/d_k per singular value, O(L²) terms, as large as the rate's d_k L "
             "terms at d_k = L). *Gaussian with R + ΔR's curvature*: the Gaussian order with ΔR's transverse Hessian "
             "at the plane point added to the prior precision, −(C⁻¹ + ∇²ΔR⊥)⁻¹g⊥ (and its variance): whether the "
             "correction can enter at Gaussian order (the exact prior's covariance is the rate's, by Legendre "
             "duality, so a stiffer Gaussian cannot get both). The chains' mean "
             "minus the Gaussian order −C g⊥ splits exactly into *prior part* eᵀC⟨∇E + ∇R⟩ (the rate's error, by "
             "Schwinger–Dyson) and *non-linear part* (the rest: the action's terms beyond quadratic, what the saddle "
             "and the one loop expand). *Schwinger–Dyson check* (d_k ≥ 2L): ⟨eᵀ(∇E + d_k²(QᵀQ)⁻¹M/g_K)⟩ over "
             "|⟨eᵀ∇E⟩|, the exact prior's force estimated per draw given Q (0 within its error: the identity holds "
             "on these draws). e: the Gaussian-order mean's column part (M = 1wᵀ) and its rest; amplitudes in units "
             f"of M. HMC on the collapsed posterior of (Q, K), {CHAINS} prior-started chains per training set "
             f"(sets {', '.join(map(str, SEEDS))}), {ITERS} iterations, {BURN} warm-up, every {THIN}nd kept, forces "
             f"on every {EVERY}nd of those; the sign of A fixed per draw (ĉ1 ≥ 0). ± : standard error over the "
             "training sets.", "", "## Answer", "",
             "| L/d_k | P (P/P_ref) | R / exact: column · rest | R + ΔR / exact: column · rest | chains / Gaussian: column · rest | "
             "chains / Gaussian with R + ΔR's curvature: column · rest | variance, chains / Gaussian · with R + ΔR: "
             "column | chains − "
             "Gaussian: column · rest | of which prior part: column · rest | non-linear part: column · rest | "
             "Schwinger–Dyson check: column · rest |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in keys:
        d_k, ratio = k
        P = groups[k][0]["P"]
        s = S[k]
        sd = (" · ".join(pm(*s[x]["sd"], ".2f") for x, _ in SECTORS) if d_k >= 2 * L else
              "— (the estimate's variance is infinite at d_k = L)")
        lines.append(f"| {L / d_k:g} | {P} ({ratio}) | "
                     + " | ".join(" · ".join(pm(*s[x][q], ".2f") for x, _ in SECTORS)
                                  for q in ("share", "share1", "ratio", "ratio1"))
                     + f" | {pm(*s['col']['var'], '.2f')} · {pm(*s['col']['var1'], '.2f')} | "
                     + " | ".join(" · ".join(pm(*s[x][q], ".4f") for x, _ in SECTORS)
                                  for q in ("diff", "prior", "rest")) + f" | {sd} |")
    lines += [""] + [f"- {b}" for b in findings(L, keys, groups, S)]
    lines += ["", "## Every training set", "", "± : half the difference of the two halves of the chains.", "",
              "| d_k | P | seed | ĉ1, ĉG | column: chains / Gaussian / prior part / ⟨f_E⟩ / ⟨f_R⟩ / ⟨f_R+ΔR⟩ | rest: "
              "chains / Gaussian / prior part / ⟨f_E⟩ / ⟨f_R⟩ / ⟨f_R+ΔR⟩ | acceptance |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['d_k']} | {r['P']} | {r['seed']} | {r['c1']:.4f}, {r['cG']:.4f} | " + " | ".join(
            f"{r['mean_' + s]:.4f} ± {r['mean_err_' + s]:.4f} / {r['gauss_' + s]:.4f} / {r['prior_' + s]:+.4f} ± "
            f"{r['prior_err_' + s]:.4f} / {r['fE_' + s]:+.3f} / {r['fR_' + s]:+.3f} / {r['fR1_' + s]:+.3f}" for s, _ in SECTORS)
            + f" | {r['accept']:.2f} |")
    return lines + [""]


def findings(L, keys, groups, S) -> list[str]:
    """The answer's sentences, every number from the rows."""
    out = []
    checks = [S[k][s]["sd"] for k in keys if k[0] >= 2 * L for s, _ in SECTORS]
    if checks:
        worst = max(checks, key=lambda x: abs(x[0]) / x[1] if x[1] > 0 else 0)
        n_ok = sum(abs(m) <= 2 * e for m, e in checks)
        out.append(f"The identity holds on these draws: the Schwinger–Dyson residual (exact prior force estimated "
                   f"given Q) is within 2σ of 0 at {n_ok} of {len(checks)} (point, direction) pairs with d_k ≥ 2L "
                   f"(largest: {pm(*worst, '.2f')} of |⟨f_E⟩|).")
    for k in keys:
        if k[0] != L:
            continue
        for s, name in SECTORS:
            x = S[k][s]
            share, diff, prior = x["share"], x["diff"], x["prior"]
            frac = prior[0] / diff[0] if diff[0] != 0 else float("nan")
            off = abs(share[0] - 1) / share[1] if share[1] > 0 else float("inf")
            s1 = x["share1"]
            off1 = abs(s1[0] - 1) / s1[1] if s1[1] > 0 else float("inf")
            part = (f"the prior part is {frac:.0%} of that difference" if abs(diff[0]) > 2 * diff[1] else
                    "the difference is within 2σ of 0, and the prior part")
            out.append(f"d_k = L, P/P_ref = {k[1]}, {name}: the rate pulls {pm(*share, '.2f')} as hard as the "
                       f"exact prior ({off:.1f}σ from 1), with its saddle-point correction {pm(*s1, '.2f')} "
                       f"({off1:.1f}σ from 1); the chains' mean is {pm(*x['ratio'], '.2f')} of the "
                       f"Gaussian order, and {part} ({pm(*prior, '.4f')} of {pm(*diff, '.4f')}); against the Gaussian order with R + ΔR's "
                       f"curvature the chains' mean is {pm(*x['ratio1'], '.2f')} of its"
                       + (f", their variance {pm(*x['var1'], '.2f')} of its (against the Gaussian order: "
                          f"{pm(*x['var'], '.2f')})." if s == "col" else "."))
    for r in RATIOS:
        for s, name in SECTORS:
            pts = [(k[0], S[k][s]["share"], S[k][s]["share1"]) for k in keys if k[1] == r]
            out.append(f"P/P_ref = {r}, {name}: R / exact (R + ΔR / exact) against L/d_k: "
                       + ", ".join(f"{L / d:g}: {pm(*x, '.2f')} ({pm(*y, '.2f')})" for d, x, y in pts) + ".")
    return out


def main(argv=None) -> int:
    return default_size_main(__doc__, "prior_force", measure, markdown,
                             {"d_k_over_L": list(DK_OVER_L), "P_over_P_ref": list(RATIOS), "seeds": list(SEEDS),
                              "chains": CHAINS, "iterations": ITERS, "burn_in": BURN, "thin": THIN,
                              "forces_every": EVERY}, argv)


if __name__ == "__main__":
    raise SystemExit(main())
