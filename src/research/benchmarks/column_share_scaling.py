"""Why the pooling sector misses the column share on the copy side: the miss against L/d_k (issue 30's
column-share target; docs/theory.md Sec. 13, Eq. (37); the page docs/benchmarks/column_share_scaling.md).

At the default size (L = d_k = 32) the pooling sector, evaluated at the chains' own plane position, predicts a
column share ‖1d̄ᵀ‖²/‖D‖² of the off-plane mean attention D several times below the chains' on the copy side
(docs/benchmarks/one_loop_column_share.md). The sector is exact in the column norm but Gaussian in the other
transverse modes, and its evidence is expanded to second order around the plane: an expansion in the transverse
fluctuations, whose size per mode is 1/d_k over L² modes. If that is why it misses, the miss must shrink as
d_k grows at fixed L and vanish as L/d_k -> 0; if it stays, the sector itself is wrong. This script measures
it on the finite-size path (L = V = 16, σ² = 0.1: the studies L16_dk16 ... L16_dk256 of config/studies.yaml)
and at L = 32 (d_k = 32: the research pages' default size, config/dk_equals_L.yaml; d_k = 64: the study L32_dk64), on the copy side
(P/P_ref = 1.35 and 2, the studies' own P grid), 4 training sets each (the runs' own, seeds 0-3). The L = 32
points then say which variable carries the miss across L: L/d_k, or L²/d_k (the transverse modes over d_k).

Per (size, P, training set): exact posterior draws (HMC on the collapsed posterior of (Q, K), the pipeline's
reference sampler; 4 prior-started chains), the mean off-plane attention D (sign-fixed draws), its Monte
Carlo noise δ = (D₁ − D₂)/2 from two halves of the chains, and the column and the rest parts of D with the
noise's expected share taken out; the pooling sector (and the Gaussian-order one loop) at the chains' own
(ĉ1, ĉG): the same parts of its mean off-plane matrix.

    python src/research/benchmarks/column_share_scaling.py --md docs/benchmarks/column_share_scaling.md    # ~50 min, one core
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

from copyhead import order_params as op
from copyhead.analysis.fits import fit_inverse_dk
from copyhead.analysis.summary import LOCATION_TOLERANCE
from copyhead.studies.spec import action_params, load_spec, reference_transitions, study_config
from copyhead.task import make_data
from copyhead.theory.action import order_to_coeffs
from research.one_loop.correction import column_share, plane_point
from research.one_loop.dataset import DatasetMoments, transverse_moments, transverse_system
from research.one_loop.pooling import PoolingSector
from copyhead.theory.same_dataset import run_training_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))   # benchmarks/common.py
from common import collapsed_attention_samples, default_size_main, mean_se, pm  # noqa: E402

SPEC = "config/studies.yaml"
SIZES = ("L16_dk16", "L16_dk32", "L16_dk64", "L16_dk128", "L16_dk256", "default", "L32_dk64")
RATIOS = (1.35, 2.0)
SEEDS = (0, 1, 2, 3)
CHAINS, ITERS, BURN, THIN = 4, 3000, 500, 2
NOISE_FLOOR = 0.25     # a training set whose signal ‖D‖² − ‖δ‖² is below this × ‖δ‖² has no share to compare


def size_params(name, config: dict):
    """(ActionParams, P_ref) of a size: a study of SPEC, or ``default`` (the size of ``config``, the loaded
    --config: config/dk_equals_L.yaml unless another is given)."""
    cfg = config if name == "default" else study_config(load_spec(SPEC), name)[0]
    p = action_params(cfg)
    return p, reference_transitions(p, cfg["theory"]["grid_n"])["linear"][1]


def parts(u):
    """(‖col u‖², ‖u‖² − ‖col u‖²): the column part 1ūᵀ and the rest."""
    tot = float(np.sum(u**2))
    col = column_share(u) * tot
    return col, tot - col


def one_point(p, P, seed):
    """The chains' off-plane mean against the theories' at the chains' (ĉ1, ĉG), one training set."""
    sums = []

    def record(A):
        sums.append(op.sign_fix(A).clone())
    t0 = time.perf_counter()
    _, h = collapsed_attention_samples(make_data(seed, p.V, p.L, P, 8), "linear", p.d_k, p.sigma2,
                                       1000 * seed + P, chains=CHAINS, iters=ITERS, burn=BURN, thin=THIN,
                                       record=record)
    A = torch.stack(sums, 1).numpy()                          # (chains, draws, L, L)
    half = CHAINS // 2
    D1, D2 = (m - op.projection(m) for m in (A[s].mean((0, 1)) for s in (slice(0, half), slice(half, None))))
    D, delta = 0.5 * (D1 + D2), 0.5 * (D1 - D2)
    o = op.order_parameters(A.mean((0, 1)))
    c1, cG = float(o["c1"]), float(o["cG"])
    L = p.L
    tok = run_training_tokens(p, seed, P)
    mom = DatasetMoments(tok, p.V, p.g_O, p.sigma2)
    m1, mP = map(float, order_to_coeffs(c1, cG, L))
    pool = PoolingSector(p, P).correction(m1, mP, *transverse_system(p, mom, plane_point(m1, mP, L))[:3])
    xp = pool["mean"] / L
    xg = transverse_moments(p, mom, c1, cG)[0] / L
    (cD, rD), (cd, rd) = parts(D), parts(delta)
    (cp, rp), (cg, rg) = parts(xp), parts(xg)
    sig_col, sig_rest = cD - cd, rD - rd
    resolved = (cD + rD) - (cd + rd) >= NOISE_FLOOR * (cd + rd)
    return {"L": L, "d_k": p.d_k, "P": P, "seed": seed, "c1": c1, "cG": cG,
            "share_signal": sig_col / (sig_col + sig_rest) if resolved else float("nan"),
            "share_pool": cp / (cp + rp), "share_one_loop": cg / (cg + rg),
            "col_signal": sig_col, "rest_signal": sig_rest, "col_pool": cp, "rest_pool": rp,
            "col_one_loop": cg, "rest_one_loop": rg, "norm": float(np.sqrt(cD + rD)),
            "norm_noise": float(np.sqrt(cd + rd)), "resolved": bool(resolved),
            "cos_pool": float(np.sum(D * xp) / np.sqrt(np.sum(D**2) * np.sum(xp**2))),
            "accept": float(h.accept_rate().mean()), "seconds": time.perf_counter() - t0}


def measure(cfg, log=print):
    rows, first = [], None
    for name in SIZES:
        p, P_ref = size_params(name, cfg)
        first = first or p
        for ratio in RATIOS:
            P = max(2, int(round(ratio * P_ref)))
            for seed in SEEDS:
                r = dict(one_point(p, P, seed), size=name, ratio=ratio, P_ref=P_ref)
                rows.append(r)
                log(f"{name} (L {p.L}, d_k {p.d_k}) P {P} ({ratio} P_ref) seed {seed}: share chains "
                    f"{r['share_signal']:.3f}, pooling {r['share_pool']:.3f}, one loop {r['share_one_loop']:.3f}; "
                    f"‖D‖ {r['norm']:.3g} (noise {r['norm_noise']:.2g}); acceptance {r['accept']:.2f} "
                    f"({r['seconds']:.0f} s)")
    return first, rows


def groups(rows):
    """((L, d_k, ratio), rows) in page order: L, then d_k, then P/P_ref."""
    keys = sorted({(r["L"], r["d_k"], r["ratio"]) for r in rows})
    return [(k, [r for r in rows if (r["L"], r["d_k"], r["ratio"]) == k]) for k in keys]


def summary(sel):
    """Per (size, ratio): the chains' signal share, the pooling sector's at the chains' point, their per-set
    difference and log ratio ln(chains/sector) (each mean ± standard error over the sets; NaN if some set has
    no signal above the noise, or for the log, no positive share), and the column and rest parts, chains over
    the sector (ratios of the set means)."""
    ok = all(r["resolved"] for r in sel)
    diff, se = mean_se([r["share_signal"] - r["share_pool"] for r in sel]) if ok else (float("nan"),) * 2
    pos = ok and all(r["share_signal"] > 0 for r in sel)
    lnr, lnr_se = mean_se([np.log(r["share_signal"] / r["share_pool"]) for r in sel]) if pos else (float("nan"),) * 2
    mean = lambda k: float(np.mean([r[k] for r in sel]))  # noqa: E731
    return {"P": sel[0]["P"], "share": mean("share_signal") if ok else float("nan"), "pool": mean("share_pool"),
            "one_loop": mean("share_one_loop"), "diff": diff, "se": se, "lnr": lnr, "lnr_se": lnr_se,
            "col_ratio": mean("col_signal") / mean("col_pool"), "rest_ratio": mean("rest_signal") / mean("rest_pool"),
            "cos": mean("cos_pool"), "noise": mean("norm_noise") / mean("norm")}


def power_fit(xs, ys, es):
    """Weighted least squares y = c x^α: ((c, α), their covariance, χ²/dof), the covariance scaled by χ²/dof
    where above 1; None if the fit fails."""
    from scipy.optimize import curve_fit
    xs, ys, es = map(np.asarray, (xs, ys, es))
    try:
        par, cov = curve_fit(lambda x, c, al: c * x**al, xs, ys, p0=(ys[np.argmax(xs)], 0.5), sigma=es,
                             absolute_sigma=True, maxfev=10000)
    except (RuntimeError, ValueError):
        return None
    chi2 = float(np.sum(((ys - par[0] * xs**par[1]) / es) ** 2) / max(len(xs) - 2, 1))
    return par, cov * max(chi2, 1.0), chi2


def fit_power(xs, ys, es):
    """y = c x^α (a miss that vanishes as x → 0): (c, σ_c, α, σ_α, χ²/dof) of power_fit; NaNs if it fails."""
    res = power_fit(xs, ys, es)
    if res is None:
        return (float("nan"),) * 5
    (c, al), cov, chi2 = res
    return float(c), float(np.sqrt(cov[0, 0])), float(al), float(np.sqrt(cov[1, 1])), chi2


def power_predict(res, x):
    """(c x^α, its standard error from the fit's covariance) at x."""
    (c, al), cov, _ = res
    jac = np.array([x**al, c * x**al * np.log(x)])
    return float(c * x**al), float(np.sqrt(jac @ cov @ jac))


# the effect-size tolerance on ln(chains' share / sector's): the project's tolerance on a ratio (1 ± 0.1,
# copyhead.analysis.summary.LOCATION_TOLERANCE), as ±0.1 in ln (≈ 10 % on the share ratio)
LN_TOLERANCE = LOCATION_TOLERANCE


def collapse_lines(summ) -> tuple[list[str], dict]:
    """Which variable carries the miss across L: the power law of ln(chains/sector) fitted at L = 16 against
    L/d_k, carried to the L = 32 points once at equal L/d_k and once at equal L²/d_k (the transverse modes
    over d_k); Δ = measured − carried (in ln(chains/sector)), z = Δ/√(σ_measured² + σ_fit²). Returns the lines
    and {variable: [(Δ, z), ...]}."""
    out, zs = [], {"L/d_k": [], "L²/d_k": []}
    for ratio in RATIOS:
        pts = [(k[0] / k[1], s["lnr"], s["lnr_se"]) for k, s in summ if k[0] == 16 and k[2] == ratio
               and np.isfinite(s["lnr"])]
        res = power_fit(*zip(*pts)) if len(pts) >= 3 else None
        if res is None:
            continue
        for (L, d_k, r), s in summ:
            if L == 16 or r != ratio or not np.isfinite(s["lnr"]):
                continue
            cells = []
            for name, x in (("L/d_k", L / d_k), ("L²/d_k", L * L / (16 * d_k))):
                m, e = power_predict(res, x)
                z = (s["lnr"] - m) / np.hypot(s["lnr_se"], e)
                zs[name].append((float(s["lnr"] - m), float(z)))
                cells.append(f"at equal {name} {pm(m, e, '.2f')} (z = {z:+.1f})")
            out.append(f"- L = {L}, d_k = {d_k}, P/P_ref = {ratio:g}: measured ln(chains/sector) = "
                       f"{pm(s['lnr'], s['lnr_se'], '.2f')}; the L = 16 law " + ", ".join(cells) + ".")
    return out, zs


def markdown(p, rows, seconds, when) -> list[str]:
    lines = ["# Why the pooling sector misses the column share on the copy side: the miss against L/d_k and L²/d_k", "",
             f"*Generated by `python src/research/benchmarks/column_share_scaling.py --md docs/benchmarks/column_share_scaling.md` "
             f"({when}; {seconds:.0f} s); do not edit by hand.* Theory: docs/theory.md Sec. 13 (Eq. (37)); the "
             "miss at the default size: docs/benchmarks/one_loop_column_share.md.", "",
             f"Exact: HMC on the collapsed posterior of (Q, K), {CHAINS} prior-started chains per training set "
             f"(seeds {', '.join(map(str, SEEDS))}: the runs' own training sets), {ITERS} iterations, {BURN} warm-up, "
             f"every {THIN}nd kept; D = the mean off-plane attention (sign-fixed draws), δ = half the difference of "
             "the two halves of the chains' D. Share = column part ‖1d̄ᵀ‖² over ‖D‖², both with δ's part taken out. "
             "Predicted: the pooling sector (Eq. (37)) and the Gaussian-order one loop (Eq. (31)) at the chains' "
             "own (ĉ1, ĉG) of each training set: what they say given the plane position. Difference: chains − "
             "pooling sector per training set, mean ± standard error over the sets; — where some set's signal is "
             f"below {NOISE_FLOOR:g} × its noise. Column (rest) ratio: the chains' squared norm of the column part "
             "‖1d̄ᵀ‖² (of the rest) over the sector's, means over the sets.", ""]
    summ = [(k, summary(sel)) for k, sel in groups(rows)]
    lines += ["## Answer", ""]
    for ratio in RATIOS:
        path = [(k, s) for k, s in summ if k[0] == 16 and k[2] == ratio]
        pts = [(k[0] / k[1], s["lnr"], s["lnr_se"]) for k, s in path if np.isfinite(s["lnr"])]
        if len(pts) < 3:
            lines.append(f"- L = 16, P/P_ref = {ratio:g}: ln(chains' share / sector's) is resolved at {len(pts)} d_k "
                         "only: no fit.")
            continue
        c, sc, al, sal, chi2p = fit_power(*zip(*pts))
        xs, ys, es = zip(*pts)
        line = fit_inverse_dk([1.0 / x for x in xs], ys, es)     # a + b L/d_k: "size" d_k/L
        a, sa, b, sb, chi2 = (line[k] for k in ("a", "a_err", "b", "b_err", "chi2_dof"))
        lines.append(f"- L = 16, P/P_ref = {ratio:g}, over d_k = {', '.join(str(k[1]) for k, s in path if np.isfinite(s['lnr']))}: "
                     f"ln(chains' share / sector's) = c (L/d_k)^α (a miss that vanishes as d_k → ∞) with "
                     f"α = {pm(al, sal, '.2f')}, c = {pm(c, sc, '.2f')}, χ²/dof = {chi2p:.2g}; a straight line "
                     f"a + b L/d_k instead: a = {a:+.3g} ± {sa:.2g} ({abs(a) / sa:.1f} σ from 0; the limit only if the "
                     f"law is straight), b = {b:+.3g} ± {sb:.2g}, χ²/dof = {chi2:.2g}.")
    collapse, zs = collapse_lines(summ)
    if zs["L/d_k"]:
        # effect size first: the largest |Δ| in ln(chains/sector) (a factor e^|Δ| on the share ratio) and the
        # points within |Δ| ≤ LN_TOLERANCE; the significance (within 2σ, RMS z) beside it
        big = {k: max(abs(d) for d, _ in v) for k, v in zs.items()}
        near = {k: sum(abs(d) <= LN_TOLERANCE for d, _ in v) for k, v in zs.items()}
        within = {k: sum(abs(z) <= 2 for _, z in v) for k, v in zs.items()}
        rms = {k: float(np.sqrt(np.mean([z * z for _, z in v]))) for k, v in zs.items()}
        best = min(big, key=big.get)
        other = "L/d_k" if best == "L²/d_k" else "L²/d_k"

        def said(k):
            return (f"largest |Δ ln| = {big[k]:.2f} (×{np.exp(big[k]):.2f} on the ratio), {near[k]} within "
                    f"|Δ ln| ≤ {LN_TOLERANCE:g}; significance: within 2σ at {within[k]}, RMS z {rms[k]:.1f}")
        both = "" if min(rms, key=rms.get) == best else " (the RMS z would pick the other: the two disagree)"
        lines.append(f"- **Across L**: the L = 16 law carried to the {len(zs['L/d_k'])} L = 32 points misses them, at "
                     f"equal L²/d_k (the transverse modes over d_k), by {said('L²/d_k')}; at equal L/d_k by "
                     f"{said('L/d_k')}: the miss follows {best}, by the effect size{both}; {other} misses by "
                     f"{big[other] - big[best]:.2f} more in ln.")
    u16 = max(L * L / d_k for (L, d_k, _), _s in summ if L == 16)
    for (L, d_k, ratio), s in summ:
        if L == d_k and np.isfinite(s["lnr"]):
            more = f", {L * L / d_k / u16:g}× the largest at L = 16" if L != 16 else ""
            lines.append(f"- d_k = L = {L} (L²/d_k = {L * L / d_k:g}{more}), "
                         f"P/P_ref = {ratio:g} (P = {s['P']}): chains' share {s['share']:.3f}, sector's "
                         f"{s['pool']:.3f}: ratio e^({pm(s['lnr'], s['lnr_se'], '.2f')}) = {np.exp(s['lnr']):.1f}; "
                         f"squared norm of the column part ×{s['col_ratio']:.2f}, of the rest ×{s['rest_ratio']:.2f} "
                         "of the sector's.")
    lines += ["", "Carried across L (the power law at L = 16, per P/P_ref):", ""]
    lines += collapse
    lines += ["", "| L | d_k | L/d_k | P (P/P_ref) | signal share, chains | pooling sector | one loop | difference "
              "(chains − pooling) | ln(chains/pooling) | column ratio | rest ratio | cosine(D, sector) | noise ‖δ‖/‖D‖ |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    f = lambda v, fmt=".3f": "—" if not np.isfinite(v) else format(v, fmt)  # noqa: E731
    for (L, d_k, ratio), s in summ:
        diff = "—" if not np.isfinite(s["diff"]) else f"{s['diff']:+.4f} ± {s['se']:.4f}"
        lnr = "—" if not np.isfinite(s["lnr"]) else f"{s['lnr']:+.2f} ± {s['lnr_se']:.2f}"
        lines.append(f"| {L} | {d_k} | {L / d_k:g} | {s['P']} ({ratio:g}) | {f(s['share'])} | {s['pool']:.3f} | "
                     f"{s['one_loop']:.3f} | {diff} | {lnr} | {s['col_ratio']:.2f} | "
                     f"{s['rest_ratio']:.2f} | {s['cos']:.2f} | {s['noise']:.2f} |")
    lines += ["", "ln(chains/pooling): per training set, mean ± standard error over the sets. Column and rest ratios separate where the miss "
              "sits: 1 and 1 means the sector has both parts right; a column ratio above 1 with the rest near 1 "
              "means the column modes are displaced more than the sector says.", "", "## Every training set", "",
              "| L | d_k | P | seed | ĉ1 | ĉG | signal share | pooling sector | one loop | ‖D‖ | noise ‖δ‖ | acceptance |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['L']} | {r['d_k']} | {r['P']} | {r['seed']} | {r['c1']:.4f} | {r['cG']:.4f} | "
                     f"{f(r['share_signal'])} | {r['share_pool']:.3f} | {r['share_one_loop']:.3f} | {r['norm']:.3g} | "
                     f"{r['norm_noise']:.2g} | {r['accept']:.2f} |")
    return lines + [""]


def main(argv=None) -> int:
    return default_size_main(__doc__, "column_share_scaling", measure, markdown,
                             {"sizes": list(SIZES), "spec": SPEC, "ratios": list(RATIOS), "seeds": list(SEEDS),
                              "chains": CHAINS, "iterations": ITERS, "burn_in": BURN, "thin": THIN}, argv)


if __name__ == "__main__":
    raise SystemExit(main())
