"""Why the column share of the mean attention is off at P ≈ 1.2 P_ref: which part of one training set's
off-plane posterior mean the Gaussian order, the exact transverse saddle and its one-loop tadpole get
(docs/theory.md Sec. 13, Eq. (31); the page docs/benchmarks/column_response.md).

At Gaussian order in the transverse directions x (the L² − 2 directions of the score matrix M off the plane
span{J, I}) one training set's posterior is N(x̄, C), x̄ = −C g⊥, C = (H⊥ + d_k H_I⊥)⁻¹ (H⊥, g⊥ the set's
evidence Hessian and gradient at the plane point). docs/benchmarks/one_loop_column_share.md finds that the
column modes M = 1wᵀ carry more of the chains' mean than x̄ gives at P = 16 (10σ), even at the chains' own
plane point. This script asks which part of the mean is off, per (P, training set) at the default size:
exact posterior draws (HMC on the collapsed posterior of (Q, K), 4 prior-started chains, the pipeline's hmc
recipe, the Z2 sign fixed per draw) against, at the chains' own plane point, the Gaussian order −C g⊥, the
exact saddle x* of the set's action over x (evidence Eq. (4) + large-deviation prior rate Eq. (7): the
Gaussian order with every power of the force) and the one-loop mean x* − ½ C S‴[C] (the tadpole), each
along the Gaussian-order mean's column direction and its rest. Also measured: the mean averaged over the
chains' own plane fluctuations, the fluctuation response −Cov(eᵀx, g⊥ᵀx), variances, skewness.

    python src/research/benchmarks/column_response.py --md docs/benchmarks/column_response.md    # ~40 min, one core
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import minimize

from copyhead import order_params as op
from copyhead.analysis.summary import LOCATION_TOLERANCE
from copyhead.config import ActionParams
from copyhead.format import g
from copyhead.studies.spec import action_params
from copyhead.task import make_data
from copyhead.theory.action import order_to_coeffs
from research.one_loop.blocks import transverse_basis
from research.one_loop.correction import column_share, gaussian_correction, plane_point
from research.one_loop.dataset import DatasetMoments, transverse_system
from research.one_loop.evidence import DatasetEvidence
from research.one_loop.pooling import column_basis
from copyhead.theory.prior import neg_log_prior_matrix
from research.one_loop.prior import neg_log_prior_matrix_grad
from copyhead.theory.same_dataset import run_training_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))   # benchmarks/common.py
from common import collapsed_attention_samples, default_size_main, mean_se, pm  # noqa: E402

PS = (8, 12, 16, 20, 24)
SEEDS = (0, 1, 2, 3)
CHAINS, ITERS, BURN, THIN = 4, 1600, 200, 2        # the pipeline's hmc recipe (config.yaml)
N_PLANE = 24                                        # plane points of the chains the Gaussian order is averaged over


class TransverseAction:
    """One training set's full action S(M0 + T x) = E(M) + prior rate (Eq. (4) with Eq. (7)) over the
    transverse coordinates x at the plane point M0 (linear attention): value, gradient, Hessian (the
    evidence's in closed form, the prior's by central differences of its gradient), the exact transverse
    saddle x* (tree level: the Gaussian order's mean −C g⊥ with every higher power of the force) and the
    one-loop tadpole −½ C S‴[C] at it (S‴ by second differences of the gradient along C's eigenvectors):
    the posterior mean of x to one loop at a fixed plane point is x* − ½ C S‴[C]."""

    def __init__(self, p: ActionParams, tokens, moments: DatasetMoments, M0, T):
        self.p, self.M0, self.T, self.L, self.mom = p, M0, T, p.L, moments
        self.ev = DatasetEvidence(tokens, p.V, p.g_O, p.sigma2)

    def prior_grad(self, M):
        """∂/∂M of the prior rate (Eq. (7), or (8) for the Gaussian prior) at a general M."""
        return neg_log_prior_matrix_grad(M, self.p.d_k, self.p.g_Q, self.p.g_K, self.p.prior)

    def _M(self, x):
        return self.M0 + (self.T @ x).reshape(self.L, self.L)

    def grads(self, x):
        """(the evidence's, the prior's) gradient over x."""
        M = self._M(x)
        return self.T.T @ self.ev.grad(M), self.T.T @ self.prior_grad(M).ravel()

    def grad(self, x):
        return sum(self.grads(x))

    def value_grad(self, x):
        M = self._M(x)
        return (self.ev(M) + neg_log_prior_matrix(M, self.p.d_k, self.p.g_Q, self.p.g_K, self.p.prior),
                self.grad(x))

    def hessian(self, x, h=1e-5):
        M = self._M(x)
        HE = self.T.T @ self.mom.grad_hessian_M(M)[1] @ self.T
        HP = np.array([(self.prior_grad(M + h * d) - self.prior_grad(M - h * d)).ravel() / (2 * h)
                       for d in self.T.T.reshape(-1, self.L, self.L)]) @ self.T
        return HE + 0.5 * (HP + HP.T)

    def saddle(self, x0, tol=1e-9, floor=1e-12):
        """The minimum x* of S over x from x0: L-BFGS, then Newton steps until the gradient is below tol of the
        force at x0, or below ``floor`` (the gradient's rounding level: a start already at the minimum has a
        force of rounding size itself, and no step gets below it); NaN-free and positive curvature required."""
        x = minimize(self.value_grad, x0, jac=True, method="L-BFGS-B",
                     options={"maxiter": 5000, "gtol": 1e-10}).x
        g, scale = self.grad(x), np.abs(self.grad(x0)).max()
        for step in range(6):
            if np.abs(g).max() <= max(tol * scale, floor):
                return x
            if step < 5:
                x = x - np.linalg.solve(self.hessian(x), g)
                g = self.grad(x)
        raise RuntimeError(f"transverse saddle not found: gradient {np.abs(g).max():.3g} after Newton steps")

    def tadpole(self, x, step=0.3):
        """−½ C S‴[C] at x (C = S''(x)⁻¹), split into the evidence's and the prior's cubic terms (their sum is
        the tadpole), S‴ contracted by second differences of each gradient along C's eigenvectors v_k with
        steps step·√λ_k(C)."""
        lam, V = np.linalg.eigh(self.hessian(x))
        if lam[0] <= 0:
            raise RuntimeError(f"the action's transverse Hessian is not positive at the saddle ({lam[0]:.3g})")
        g0 = np.array(self.grads(x))
        t = np.zeros_like(g0)
        for k in range(len(lam)):
            eps = step / np.sqrt(lam[k])
            up, down = np.array(self.grads(x + eps * V[:, k])), np.array(self.grads(x - eps * V[:, k]))
            t += (up + down - 2.0 * g0) / (eps**2 * lam[k])
        return tuple(-(V / lam) @ (V.T @ (0.5 * ti)) for ti in t)


def recorder(T):
    """record(A) for collapsed_attention_samples: per chain (x = Tᵀvec(L·A) (L² − 2,), ĉ1, ĉG), sign fixed."""
    Tt = torch.as_tensor(T.T)

    def record(A):
        A = op.sign_fix(A)
        L = A.shape[-1]
        o = op.order_parameters(A)
        return torch.cat([(L * A).reshape(len(A), -1) @ Tt.T, o["c1"][:, None], o["cG"][:, None]], 1)
    return record


def signal_share(D, noise):
    """The column share of the signal in D = signal + noise (the column-share page's estimator); NaN where
    ‖D‖² − ‖δ‖² < ‖δ‖²/4 (no signal above the noise)."""
    den = np.sum(D**2) - np.sum(noise**2)
    if den < 0.25 * np.sum(noise**2):
        return float("nan")
    return float((column_share(D) * np.sum(D**2) - column_share(noise) * np.sum(noise**2)) / den)


def cosine(a, b):
    return float(np.sum(a * b) / np.sqrt(np.sum(a * a) * np.sum(b * b)))


def analyse(p: ActionParams, P, seed, X):
    """The per-set numbers from the draws X (n, chains, L² − 2 + 2)."""
    L = p.L
    _, Ct, Rt = column_basis(L)
    x, c1, cG = X[..., :-2], X[..., -2], X[..., -1]
    halves = (slice(0, CHAINS // 2), slice(CHAINS // 2, CHAINS))
    m1, mP = map(float, order_to_coeffs(float(c1.mean()), float(cG.mean()), L))
    tok = run_training_tokens(p, seed, P)
    mom = DatasetMoments(tok, p.V, p.g_O, p.sigma2)
    Ht, gt, Sinv, Tb = transverse_system(p, mom, plane_point(m1, mP, L))
    C = gaussian_correction(Ht, gt, Sinv, cov=True)[-1]
    act = TransverseAction(p, tok, mom, plane_point(m1, mP, L), Tb)
    x_star = act.saddle(-(C @ gt))
    tad_E, tad_P = act.tadpole(x_star)
    x_loop, x_loop_E = x_star + tad_E + tad_P, x_star + tad_E
    x_half = x_star + sum(act.tadpole(x_star, step=0.15))

    def mat(v):                                           # transverse coordinates → L×L score matrix
        return (Tb @ v).reshape(L, L)
    x_g = -(C @ gt)
    # the Gaussian-order mean averaged over the chains' own plane fluctuations (N_PLANE draws of (ĉ1, ĉG))
    pick = np.linspace(0, c1.size - 1, N_PLANE).astype(int)
    # (where a plane point's transverse Hessian is not positive definite its Gaussian order diverges: those
    # points are counted, not averaged)
    x_pts = [-(lambda H, g, S, _: gaussian_correction(H, g, S, cov=True)[-1] @ g)(
        *transverse_system(p, mom, plane_point(*map(float, order_to_coeffs(a, b, L)), L)))
        for a, b in zip(c1.ravel()[pick], cG.ravel()[pick])]
    stable = [v for v in x_pts if np.all(np.isfinite(v))]
    x_avg = np.mean(stable, 0) if stable else np.full_like(x_pts[0], np.nan)
    xc = x - x.mean(0)                                    # within-chain deviations (n, chains, k)
    f = xc @ gt                                           # the force's projection gᵀx per draw
    n = xc.shape[0] - 1
    proj = {}
    n_std = 2 * (L - 1)                                   # Rt: the standard copies' non-column part first
    for name, B in (("col", Ct), ("rest", Rt), ("std", Rt[:, :n_std]), ("other", Rt[:, n_std:])):
        e = B @ (B.T @ x_g)
        e /= np.linalg.norm(e)                            # the Gaussian mean's direction in the sector
        y = xc @ e
        per_half = [(float(np.mean(x[:, h] @ e)), float(-np.sum(y[:, h] * f[:, h]) / (n * (h.stop - h.start))),
                     float(np.sum(y[:, h] ** 2) / (n * (h.stop - h.start))),
                     float(np.mean(y[:, h] ** 3) / np.mean(y[:, h] ** 2) ** 1.5)) for h in halves]
        (m, r, v, sk), (dm, dr, dv, dsk) = np.mean(per_half, 0), np.abs(np.diff(per_half, axis=0)[0]) / 2
        proj[name] = {"mean": m, "mean_err": dm, "resp": r, "resp_err": dr, "var": v, "var_err": dv,
                      "skew": sk, "skew_err": dsk, "gauss": float(e @ x_g), "var_gauss": float(e @ C @ e),
                      "plane_avg": float(e @ x_avg), "saddle": float(e @ x_star), "loop": float(e @ x_loop), "loop_E": float(e @ x_loop_E),
                      "loop_half": float(e @ x_half)}
    x_ch = x.mean((0, 1))
    d_meas = (x[:, halves[0]].mean((0, 1)) - x[:, halves[1]].mean((0, 1))) / 2

    def two_share(k):
        return proj["col"][k] ** 2 / (proj["col"][k] ** 2 + proj["rest"][k] ** 2)
    return {"P": P, "seed": seed, "c1": float(c1.mean()), "cG": float(cG.mean()),
            "share_meas": column_share(mat(x_ch)), "signal_meas": signal_share(mat(x_ch), mat(d_meas)),
            "share_gauss": column_share(mat(x_g)), "cos_gauss": cosine(x_ch, x_g),
            "norm_meas": float(np.linalg.norm(x_ch)), "norm_gauss": float(np.linalg.norm(x_g)),
            "noise": float(np.linalg.norm(d_meas)), "plane_unstable": len(x_pts) - len(stable),
            "two_meas": two_share("mean"), "two_gauss": two_share("gauss"), "two_resp": two_share("resp"),
            "two_loop": two_share("loop"),
            **{f"{k}_{s}": v for s, d in proj.items() for k, v in d.items()},
            "prior_var": p.g_Q * p.g_K / p.d_k}


def measure(cfg, log=print):
    p = action_params(cfg)
    T = transverse_basis(p.L)
    rows = []
    for P in PS:
        for seed in SEEDS:
            t0 = time.perf_counter()
            rec, h = collapsed_attention_samples(make_data(seed, p.V, p.L, P, 8), "linear", p.d_k, p.sigma2,
                                                 1000 * seed + P, chains=CHAINS, iters=ITERS, burn=BURN,
                                                 thin=THIN, record=recorder(T))
            X = torch.stack(rec, 0).numpy()                # (n, chains, L² − 2 + 2)
            r = analyse(p, P, seed, X)
            r["accept"] = float(h.accept_rate().mean())
            rows.append(r)
            log(f"P {P} seed {seed}: column share measured {r['share_meas']:.3f} (signal {r['signal_meas']:.3f}), "
                f"Gaussian {r['share_gauss']:.3f}; two-direction share measured {r['two_meas']:.3f}, Gaussian "
                f"{r['two_gauss']:.3f}, response {r['two_resp']:.3f}; "
                + "; ".join(f"{s}: mean {r['mean_' + s]:.3f} ± {r['mean_err_' + s]:.3f} Gaussian "
                            f"{r['gauss_' + s]:.3f} saddle {r['saddle_' + s]:.3f} one loop {r['loop_' + s]:.3f} "
                            f"response {r['resp_' + s]:.3f} ± {r['resp_err_' + s]:.3f}, "
                            f"variance {r['var_' + s]:.3f} Gaussian {r['var_gauss_' + s]:.3f}" for s in ("col", "rest"))
                + f" ({time.perf_counter() - t0:.0f} s)")
    return p, rows


def _stats(sel, f):
    """(mean, standard error over the training sets) of f(row)."""
    return mean_se([f(r) for r in sel])


def _pm_where(sel, f, fmt=".3f", none="—"):
    """(mean ± SE) of f(row) over the sets where it is finite, with their count where some are not; ``none``
    where no set has it (the signal below the noise, every plane point unstable)."""
    ok = [r for r in sel if np.isfinite(f(r))]
    if not ok:
        return none
    m, e = _stats(ok, f)
    return (pm(m, e, fmt) if len(ok) > 1 else f"{m:{fmt}}") + (
        f" ({len(ok)} of {len(sel)} sets)" if len(ok) < len(sel) else "")


PREDICTIONS = (("gauss", "Gaussian order"), ("saddle", "saddle"), ("loop", "one loop"),
               ("loop_E", "one loop, evidence's cubic terms only"))


def _ratio(sel, sector, pred):
    """chains' amplitude over a prediction's along one sector's direction: (mean, SE) over the sets."""
    return _stats(sel, lambda r: r[f"mean_{sector}"] / r[f"{pred}_{sector}"])


def _sigma(x):
    return abs(x[0] - 1) / x[1] if x[1] > 0 else float("inf")


SECTORS = (("col", "column"), ("rest", "rest"))


def answer(groups) -> list[str]:
    """The answer table (per P: the chains' amplitude over each order's along the two directions, the closest
    order, the variance over Gaussian order) and, per direction, which order is within 2σ of the chains at
    which P; the lines' numbers all come from the rows."""
    Ps = sorted(groups)
    head = " · ".join(lab.split(",")[0] if k != "loop_E" else "evidence only" for k, lab in PREDICTIONS)
    lines = ["Chains' amplitude over each order's, along the Gaussian mean's column part and along its rest "
             "(1: the order gets the chains' mean; ± over the training sets); the closest order with its distance "
             "from 1 in standard errors; the variance along each direction, chains over Gaussian order.", "",
             f"| P | column: {head} | closest | rest: {head} | closest | variance / Gaussian: column · rest |",
             "|---|---|---|---|---|---|"]
    within = {s: {k: [] for k, _ in PREDICTIONS} for s, _ in SECTORS}
    near = {s: {k: [] for k, _ in PREDICTIONS} for s, _ in SECTORS}     # effect size: |amplitude − 1| ≤ tol
    notes = []
    for P in Ps:
        sel, cells = groups[P], []
        for sector, _ in SECTORS:
            r = {k: _ratio(sel, sector, k) for k, _ in PREDICTIONS}
            for k, _ in PREDICTIONS:
                if _sigma(r[k]) <= 2:
                    within[sector][k].append(P)
                if abs(r[k][0] - 1) <= LOCATION_TOLERANCE:
                    near[sector][k].append(P)
            best = min(PREDICTIONS, key=lambda kv: abs(r[kv[0]][0] - 1))
            cells += [" · ".join(pm(*r[k], ".2f") for k, _ in PREDICTIONS),
                      f"{best[1]} ({_sigma(r[best[0]]):.1f}σ)"]
        v = {s: _stats(sel, lambda r, s=s: r[f"var_{s}"] / r[f"var_gauss_{s}"]) for s, _ in SECTORS}
        lines.append(f"| {P} | " + " | ".join(cells) + f" | {pm(*v['col'], '.2f')} · {pm(*v['rest'], '.2f')} |")
        rest = _ratio(sel, "rest", "loop")
        if rest[0] < 0.9 and _sigma(rest) > 2 and v["rest"][0] > 1 and _sigma(v["rest"]) > 2:
            notes.append(f"At P = {P} the chains fluctuate more than Gaussian order along the rest direction but "
                         "are displaced less than the one loop says: not a stiffer mode.")
    lines.append("")
    def which(sets):
        got = [f"{lab} at P = {', '.join(map(str, sets[k]))}" for k, lab in PREDICTIONS if sets[k]]
        none = [P for P in Ps if not any(P in sets[k] for k, _ in PREDICTIONS)]
        return (("; ".join(got) if got else "no order at any P")
                + (f"; no order at P = {', '.join(map(str, none))}" if none and got else ""))
    for sector, name in SECTORS:
        lines.append(f"- {name.capitalize()} direction, the effect size first: the chains' amplitude within "
                     f"{g(LOCATION_TOLERANCE)} of the order's (|amplitude − 1| ≤ {g(LOCATION_TOLERANCE)}): "
                     f"{which(near[sector])}. Significance beside it, within 2σ of the chains: {which(within[sector])}.")
    return lines + [f"- {n}" for n in notes]


def markdown(p, rows, seconds, when) -> list[str]:
    Ps = sorted({r["P"] for r in rows})
    groups = {P: [r for r in rows if r["P"] == P] for P in Ps}

    def q(P, f):                                          # (mean, SE) of f(row) over P's training sets
        return _stats(groups[P], f)

    def m(P, k):
        return q(P, lambda r: r[k])
    lines = [f"# The column share of the mean attention: which part the Gaussian order misses (L = {p.L}, "
             f"d_k = {p.d_k}, V = {p.V})", "",
             f"*Generated by `python src/research/benchmarks/column_response.py --md docs/benchmarks/column_response.md` "
             f"({when}; {seconds:.0f} s); do not edit by hand.* Theory: docs/theory.md Sec. 13 (Eq. (31)); "
             "the question: [one_loop_column_share.md](one_loop_column_share.md) (at P = 16 the column share of "
             "the chains' mean is 10σ above the theory's even at the chains' own plane point).", "",
             f"Exact: HMC on the collapsed posterior of (Q, K), {CHAINS} prior-started chains per training set "
             f"(training sets {', '.join(map(str, SEEDS))}: the runs' own), {ITERS} iterations, {BURN} warm-up, "
             f"every {THIN}nd kept (the pipeline's hmc recipe); the sign of A fixed per draw (ĉ1 ≥ 0). "
             "x: the transverse coordinates of the score matrix M = L·A (the L² − 2 directions off span{J, I}). "
             "Theory per training set at the chains' own plane point (ĉ1, ĉG), the action S = the set's evidence "
             "(Eq. (4)) + the large-deviation prior rate (Eq. (7)) over x:", "",
             "- *Gaussian order*: −C g⊥, C = (H⊥ + d_k H_I⊥)⁻¹ (the one loop's transverse mean, Eq. (31));",
             "- *saddle*: the exact minimum x* of S over x (tree level: the Gaussian order with every power of "
             "the force);",
             "- *one loop*: x* − ½ C S‴[C] at x* (the tadpole: the fluctuations of all transverse modes pushing "
             "on each through the cubic couplings; S‴ by second differences of the gradient along C's "
             "eigenvectors);",
             "- *evidence only*: the one loop with the evidence's cubic terms alone (the prior rate's left out: the "
             "large-deviation rate is the leading order in d_k, and its cubic terms at d_k = L are not checked "
             "against the exact prior of M = QᵀK/d_k).", "",
             "Two unit directions per set: the Gaussian-order mean's column part e_c (M = 1wᵀ) and its rest e_r. "
             "Along each, the chains' mean eᵀx̄ against each prediction; the two-direction share "
             "a_c²/(a_c² + a_r²) is the same estimator on chains and theory. The whole mean's column share "
             "(signal: the Monte Carlo noise taken out with the halves, chains 1–2 against 3–4) is the "
             "column-share page's estimator. ± : standard error over the training sets.", "", "## Answer", ""]
    lines += answer(groups)
    lines += ["", "The shares and the amplitudes themselves:", "", "| P | column share of the mean (signal), chains | Gaussian order | column amplitude: chains / "
              "Gaussian / saddle / one loop / evidence only | rest amplitude: chains / Gaussian / saddle / one loop / "
              "evidence only | two-direction "
              "share: chains / Gaussian / one loop |", "|---|---|---|---|---|---|"]
    for P in Ps:
        lines.append(f"| {P} | {_pm_where(groups[P], lambda r: r['signal_meas'], none='below the noise')} | "
                     f"{m(P, 'share_gauss')[0]:.3f} | "
                     + " | ".join(f"{pm(*m(P, 'mean_' + s))} / " + " / ".join(f"{m(P, k + '_' + s)[0]:.3f}"
                                                                             for k, _ in PREDICTIONS)
                                  for s in ("col", "rest"))
                     + f" | {pm(*m(P, 'two_meas'))} / {m(P, 'two_gauss')[0]:.3f} / {m(P, 'two_loop')[0]:.3f} |")
    lines += ["", "Amplitudes in units of M (the prior's standard deviation per transverse direction: "
              f"√(c/d_k) = {np.sqrt(rows[0]['prior_var']):.3f}).", "", "## What else was tried", "",
              f"- *plane-averaged*: the Gaussian order averaged over {N_PLANE} of the chains' own plane points "
              "(ĉ1, ĉG) (the chains' mean also averages over the plane's fluctuations; plane points where the "
              "transverse Hessian is not positive definite, so that the Gaussian order diverges, are counted and left "
              "out);",
              "- *response*: −Cov(eᵀx, g⊥ᵀx) over the draws, a Gaussian with the chains' own covariance under the "
              "theory's force (equal to the mean for any Gaussian posterior with that force);",
              "- the variance Var(eᵀx) against eᵀCe, and the skewness of eᵀx (within chains);",
              "- the rest split once more: the other two combinations of the standard copies (they hold the row "
              "modes w1ᵀ) and the sym22 + anti211 components, each against the Gaussian order.", "",
              f"Tadpole check: with the difference step halved (0.15 of each mode's width instead of 0.3) the one-loop "
              f"amplitudes move by at most "
              f"{max(abs(r['loop_' + s] - r['loop_half_' + s]) for r in rows for s in ('col', 'rest')):.4f}.", "",
              "| P | plane-averaged over Gaussian: column, rest | response: column, rest | variance, chains / "
              "Gaussian: column · rest | rest split, chains / Gaussian: standard · sym22 + anti211 | skewness: "
              "column, rest |", "|---|---|---|---|---|---|"]
    unstable = "— (the Gaussian order diverges at every plane point)"

    def _unstable(sel):
        n = sum(r["plane_unstable"] for r in sel)
        return f"; {n} of {N_PLANE * len(sel)} plane points unstable" if n else ""
    for P in Ps:
        lines.append(
            f"| {P} | {_pm_where(groups[P], lambda r: r['plane_avg_col'] / r['gauss_col'], '.2f', unstable)}, "
            f"{_pm_where(groups[P], lambda r: r['plane_avg_rest'] / r['gauss_rest'], '.2f', unstable)}"
            f"{_unstable(groups[P])} | {pm(*m(P, 'resp_col'))}, "
            f"{pm(*m(P, 'resp_rest'))} | {pm(*m(P, 'var_col'))} / {m(P, 'var_gauss_col')[0]:.3f} · "
            f"{pm(*m(P, 'var_rest'))} / "
            f"{m(P, 'var_gauss_rest')[0]:.3f} | {pm(*m(P, 'mean_std'))} / {m(P, 'gauss_std')[0]:.3f} · "
            f"{pm(*m(P, 'mean_other'))} / {m(P, 'gauss_other')[0]:.3f} | {pm(*m(P, 'skew_col'), '.2f')}, "
            f"{pm(*m(P, 'skew_rest'), '.2f')} |")
    lines += ["", "## Every training set", "", "± : half the difference of the two halves of the chains.", "",
              "| P | seed | ĉ1, ĉG chains | column share (signal) | Gaussian | ‖x̄‖ chains / Gaussian | noise ‖δ‖ | "
              "cosine(x̄, −C g⊥) | column: chains / Gaussian / saddle / one loop / evidence only | rest: chains / "
              "Gaussian / saddle / one loop / evidence only | acceptance |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['P']} | {r['seed']} | {r['c1']:.4f}, {r['cG']:.4f} | {r['share_meas']:.3f} "
            f"({'below the noise' if np.isnan(r['signal_meas']) else format(r['signal_meas'], '.3f')}) "
            f"| {r['share_gauss']:.3f} | {r['norm_meas']:.3f} / {r['norm_gauss']:.3f} | {r['noise']:.3f} | "
            f"{r['cos_gauss']:.3f} | "
            + " | ".join(f"{pm(r['mean_' + s], r['mean_err_' + s])} / "
                         + " / ".join(f"{r[k + '_' + s]:.3f}" for k, _ in PREDICTIONS) for s in ("col", "rest"))
            + f" | {r['accept']:.2f} |")
    return lines + [""]


def main(argv=None) -> int:
    return default_size_main(__doc__, "column_response", measure, markdown,
                             {"P": list(PS), "seeds": list(SEEDS), "chains": CHAINS, "iterations": ITERS,
                              "burn_in": BURN, "thin": THIN}, argv)


if __name__ == "__main__":
    raise SystemExit(main())
