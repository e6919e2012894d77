"""The off-plane part of the mean attention: the per-dataset one loop's prediction against the reference chains
(docs/theory.md Sec. 13, "Per-dataset one loop"; the page docs/benchmarks/one_loop_column_share.md).

One training set breaks the permutation symmetry, so its posterior mean attention Ā has a part off the plane
span{I, J} of the 2-D theory. At Gaussian order in the transverse directions that part is the mean of the
transverse Gaussian of Eq. (31), x̄ = −(H⊥ + d_k H_I⊥)⁻¹ g⊥ (research.one_loop.dataset.transverse_mean,
taken at the run's per-dataset corrected mean (ĉ1, ĉG); A = M/L). This script compares, per (P, seed) of a
pipeline run's linear HMC chains (the reference posterior: prior- and copy-started chains on the same
training set), the measured off-plane part D = Ā − ΠĀ with x̄/L: the cosine between them, their norms, and the
column share ‖1d̄ᵀ‖²/‖D‖² (d̄ the column means; 1 for a pure column mode M = 1wᵀ, ≈ (L − 1)/(L² − 2) for
isotropic noise). Errors: the two chains' estimates of the same training set (half their difference) —
each chain's Ā also carries Monte Carlo noise in every direction, which inflates ‖D‖ and pulls the cosine
down where the signal is small.

    python src/research/benchmarks/one_loop_column_share.py --runs results/runs --config config.yaml \\
        --md docs/benchmarks/one_loop_column_share.md
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from copyhead import order_params as op
from copyhead.config import ActionParams, load_yaml
from copyhead.provenance import read_dataset
from copyhead.theory.action import order_to_coeffs
from research.one_loop.correction import column_share, plane_point
from research.one_loop.dataset import DatasetMoments, dataset_means, transverse_moments, transverse_system
from research.one_loop.pooling import PoolingSector
from copyhead.theory.same_dataset import run_training_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))   # benchmarks/common.py
from common import mean_se, stamp, write_benchmark_page  # noqa: E402

RECIPES = ("hmc", "hmc_copy")


def off_plane(A):
    """A − ΠA: the part of A off span{J, I − J/L} (copyhead.order_params.projection)."""
    return A - op.projection(A)


def off_plane_second_moment(ds):
    """E‖A − ΠA‖²_F over one chain's samples, from the per-sample order parameters and coverage ratio
    ‖ΠA‖/‖A‖ (‖ΠA‖² = ĉ1² + ĉG², the plane's orthonormal coordinates)."""
    c1, cG, r = (np.asarray(ds[k].values, float) for k in ("c1_sample", "cG_sample", "coverage_ratio_sample"))
    return float(np.mean((c1**2 + cG**2) * (1.0 / r**2 - 1.0)))


def debiased_share(D, noise):
    """The column share of the signal in D = signal + noise, with E‖D‖² = ‖signal‖² + ‖noise‖² (the chains'
    Monte Carlo noise independent of the signal): (‖col D‖² − ‖col δ‖²)/(‖D‖² − ‖δ‖²), δ the noise estimate;
    NaN where ‖D‖ does not exceed the noise (no signal to take a share of)."""
    den = np.sum(D**2) - np.sum(noise**2)
    if den <= 0:
        return float("nan")
    return float((column_share(D) * np.sum(D**2) - column_share(noise) * np.sum(noise**2)) / den)


def cosine(a, b):
    return float(np.sum(a * b) / np.sqrt(np.sum(a * a) * np.sum(b * b)))


def measure(runs: Path, cfg: dict, log=print, only_P=None):
    t, m = cfg["task"], cfg["model"]
    p = ActionParams(V=t["V"], L=t["L"], d_k=m["d_k"], g_Q=m["g_Q"], g_K=m["g_K"], g_O=m["g_O"],
                     sigma2=m["sigma2"], prior=cfg["theory"]["prior"])
    sweep = cfg["sweep"]["linear"]
    Ps = sorted(set(sweep[RECIPES[0]]["P"]) & set(sweep[RECIPES[1]]["P"]) & set(only_P or sweep[RECIPES[0]]["P"]))
    seeds = sorted(set(sweep[RECIPES[0]]["seeds"]) & set(sweep[RECIPES[1]]["seeds"]))
    rows = []
    for P in Ps:
        for seed in seeds:
            files = [runs / "linear" / r / f"P{P}" / f"seed{seed}.nc" for r in RECIPES]
            if not all(f.exists() for f in files):
                log(f"P {P} seed {seed}: missing {[str(f) for f in files if not f.exists()]}; skipped")
                continue
            runs_ = [read_dataset(f) for f in files]
            D = [off_plane(np.asarray(ds["attention"].values, float)) for ds in runs_]
            sec = [off_plane_second_moment(ds) for ds in runs_]
            Dm = 0.5 * (D[0] + D[1])
            tok = run_training_tokens(p, seed, P)
            mom = DatasetMoments(tok, p.V, p.g_O, p.sigma2)
            r = dataset_means(p, P, tok, mom)
            xb, sec_pred = transverse_moments(p, mom, r["one_loop"]["c1"], r["one_loop"]["cG"])
            xb = xb / p.L
            m1, mP = map(float, order_to_coeffs(r["pooling"]["c1"], r["pooling"]["cG"], p.L))
            system = transverse_system(p, mom, plane_point(m1, mP, p.L))
            pool = PoolingSector(p, P).correction(m1, mP, *system[:3])
            xp = pool["mean"] / p.L
            # the same sector at the chains' own plane position: what it predicts given (ĉ1, ĉG), apart from
            # where its corrected posterior puts them
            c1c, cGc = (0.5 * sum(float(ds[k]) for ds in runs_) for k in ("c1", "cG"))
            m1c, mPc = map(float, order_to_coeffs(c1c, cGc, p.L))
            xc = PoolingSector(p, P).correction(m1c, mPc, *transverse_system(p, mom, plane_point(m1c, mPc, p.L))[:3])
            xc = xc["mean"] / p.L
            shares = [column_share(d) for d in D]
            coss = [cosine(d, xb) for d in D]
            delta = 0.5 * (D[0] - D[1])
            rows.append({"P": P, "seed": seed, "share": column_share(Dm), "share_err": 0.5 * abs(shares[0] - shares[1]),
                         "share_signal": debiased_share(Dm, delta),
                         "share_pred": column_share(xb), "cos": cosine(Dm, xb), "cos_err": 0.5 * abs(coss[0] - coss[1]),
                         "share_pool": column_share(xp), "cos_pool": cosine(Dm, xp),
                         "norm": float(np.linalg.norm(Dm)), "norm_noise": float(np.linalg.norm(delta)),
                         "norm_pred": float(np.linalg.norm(xb)), "norm_pool": float(np.linalg.norm(xp)),
                         "second": 0.5 * (sec[0] + sec[1]), "second_err": 0.5 * abs(sec[0] - sec[1]),
                         "second_pred": sec_pred / p.L**2, "second_pool": pool["second"] / p.L**2,
                         "c1": 0.5 * sum(float(ds["c1"]) for ds in runs_), "c1_pred": r["one_loop"]["c1"],
                         "c1_pool": r["pooling"]["c1"], "soft": r["soft_weight"],
                         "share_at_chains": column_share(xc), "cos_at_chains": cosine(Dm, xc),
                         "norm_at_chains": float(np.linalg.norm(xc))})
            log(f"P {P} seed {seed}: column share {rows[-1]['share']:.3f} ± {rows[-1]['share_err']:.3f} "
                f"(signal {rows[-1]['share_signal']:.3f}; predicted {rows[-1]['share_pred']:.3f}, pooling sector "
                f"{rows[-1]['share_pool']:.3f}), cosine {rows[-1]['cos']:.2f} (pooling {rows[-1]['cos_pool']:.2f}); "
                f"E‖A_off‖² {rows[-1]['second']:.5f} (one loop {rows[-1]['second_pred']:.5f}, pooling "
                f"{rows[-1]['second_pool']:.5f})")
    return p, rows


def by_P(rows):
    """(P, the rows at P, the mean over them of a key) for each P of ``rows``, in order: the tables' per-P rows."""
    for P in sorted({r["P"] for r in rows}):
        sel = [r for r in rows if r["P"] == P]
        yield P, sel, lambda k, sel=sel: float(np.mean([r[k] for r in sel]))


NOISE_FLOOR = 0.25     # signal ‖D‖² − ‖δ‖² below this × ‖δ‖²: the seed's share is noise (at_chains_lines)


def at_chains_lines(rows) -> list[str]:
    """The pooling sector at the chains' own (ĉ1, ĉG) against the chains' signal share, per P: the mean over
    seeds of each, and of their per-seed difference with its standard error (seeds' spread / √n): within 2σ or
    not (— where on some seed the chains' off-plane signal, ‖D‖² − ‖δ‖², is below NOISE_FLOOR ‖δ‖²: its share is
    Monte Carlo noise, as its spread over the seeds is not)."""
    out = ["## The pooling sector at the chains' own plane position", "",
           "The Answer's prediction is taken at the theory's own corrected (ĉ1, ĉG); where that is off, so is the "
           "off-plane mean that goes with it. Here the same sector (Eq. (37)) is evaluated at the chains' (ĉ1, ĉG) "
           "of each training set: what it predicts *given* the plane position. Difference = signal share − "
           "predicted, per seed; ± its standard error over the seeds; — where on a seed the signal ‖D‖² − ‖δ‖² is below "
           f"{NOISE_FLOOR:g} ‖δ‖² (its norm under half the noise's: no share to compare).", "",
           "| P | ĉ1 chains | ĉ1 pooling sector | signal share | pooling sector, own (ĉ1, ĉG) | pooling sector, chains' "
           "(ĉ1, ĉG) | difference (chains' point) | within 2σ | cosine(D, x̄), chains' point | ‖D‖ | ‖x̄‖/L, "
           "chains' point |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for P, sel, mean in by_P(rows):
        d = np.array([r["share_signal"] - r["share_at_chains"] for r in sel])
        resolved = all(r["norm"] ** 2 - r["norm_noise"] ** 2 >= NOISE_FLOOR * r["norm_noise"] ** 2 for r in sel)
        if resolved and np.isfinite(d).all() and len(d) > 1:
            dm, se = mean_se(d)
            diff = f"{dm:+.3f} ± {se:.3f}"
            ok = "yes" if abs(dm) <= 2 * se else f"no ({abs(dm) / se:.1f}σ)"
            sig = f"{mean('share_signal'):.3f}"
        else:
            diff, ok, sig = "—", "— (signal below noise)", "—"
        out.append(f"| {P} | {mean('c1'):.4f} | {mean('c1_pool'):.4f} | {sig} | {mean('share_pool'):.3f} | "
                   f"{mean('share_at_chains'):.3f} | {diff} | {ok} | {mean('cos_at_chains'):.2f} | {mean('norm'):.3g} | "
                   f"{mean('norm_at_chains'):.3g} |")
    return out


def markdown(p, rows, seconds, source, only_P=None) -> list[str]:
    noise = (p.L - 1) / (p.L**2 - 2)
    only = f" --P {' '.join(map(str, only_P))}" if only_P else ""
    lines = [f"# The off-plane part of the mean attention: per-dataset one loop against the reference chains "
             f"(L = {p.L}, d_k = {p.d_k}, V = {p.V})", "",
             f"*Generated by `python src/research/benchmarks/one_loop_column_share.py --runs {source}{only} --md "
             f"docs/benchmarks/one_loop_column_share.md` ({stamp()}; {seconds:.0f} s); do not edit by hand.* "
             "Theory: docs/theory.md Sec. 13 (\"Per-dataset one loop\"); chains: the pipeline's linear `hmc` and "
             "`hmc_copy` runs (prior- and copy-started HMC on the collapsed posterior, the same training sets).", "",
             "D = the chains' mean attention minus its projection on span{J, I}; predicted: the Gaussian-order "
             "transverse mean x̄/L of the run's own one loop at its corrected (ĉ1, ĉG); pooling sector: the mean "
             "off-plane matrix of Eq. (37) (column modes beyond Gaussian order, the rest at Gaussian order) at the "
             "run's pooling-corrected (ĉ1, ĉG). Column share "
             f"‖1d̄ᵀ‖²/‖D‖² (isotropic noise: {noise:.3f}); *signal share*: the same with the Monte Carlo noise "
             "δ = (D₁ − D₂)/2 taken out, (‖1d̄ᵀ‖² − ‖1δ̄ᵀ‖²)/(‖D‖² − ‖δ‖²) (— where ‖D‖ ≤ ‖δ‖: no signal above the "
             "noise). ± : half the difference of the prior- and the "
             "copy-started chain's estimate. ‖D₁ − D₂‖/2: the Monte Carlo noise in D.", "", "## Answer", "",
             "| P | column share, measured (mean over seeds) | signal share | predicted, one loop | predicted, pooling "
             "sector | cosine(D, x̄), one loop | cosine, pooling sector | ‖D‖ | ‖x̄‖/L | ‖x̄‖/L pooling | "
             "noise ‖D₁ − D₂‖/2 | soft weight |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for P, sel, mean in by_P(rows):
        err = lambda k: float(np.sqrt(np.sum([r[k] ** 2 for r in sel])) / len(sel))  # noqa: E731
        sig = mean("share_signal")
        lines.append(f"| {P} | {mean('share'):.3f} ± {err('share_err'):.3f} | "
                     f"{'—' if not np.isfinite(sig) else f'{sig:.3f}'} | {mean('share_pred'):.3f} | "
                     f"{mean('share_pool'):.3f} | {mean('cos'):.2f} ± {err('cos_err'):.2f} | {mean('cos_pool'):.2f} | "
                     f"{mean('norm'):.3g} | {mean('norm_pred'):.3g} | {mean('norm_pool'):.3g} | "
                     f"{mean('norm_noise'):.3g} | {max(r['soft'] for r in sel):.2g} |")
    lines += ["", *at_chains_lines(rows), "",
              "Whether a miss here is the sector's own or the orders beyond it (the transverse fluctuations are "
              "1/d_k per mode over L² modes, and d_k = L here): the same comparison against L/d_k at fixed L, "
              "docs/benchmarks/column_share_scaling.md."]
    prior2 = (p.L**2 - 2) * p.g_Q * p.g_K / (p.d_k * p.L**2)
    lines += ["", "## The off-plane fluctuations", "",
              "E‖A − ΠA‖²_F over each chain's samples (from the per-sample ĉ1, ĉG and coverage ratio ‖ΠA‖/‖A‖; "
              "± half the difference of the two chains), against the theory's second moment of the off-plane part "
              "at its own corrected mean (one loop: tr C + ‖x̄‖² of the transverse Gaussian of Eq. (31); pooling "
              "sector: ⟨ρ²⟩ of Eq. (37) + the rest's tr C_R + ‖x̄_R‖²), over L². The prior alone gives "
              f"(L² − 2) c/(d_k L²) = {prior2:.5f}. The chains' ĉ1 next to the two theories' is the same comparison "
              "in the plane.", "",
              "| P | E‖A_off‖², chains (mean over seeds) | one loop | pooling sector | ĉ1 chains | ĉ1 one loop | "
              "ĉ1 pooling sector |", "|---|---|---|---|---|---|---|"]
    for P, sel, mean in by_P(rows):
        err = float(np.sqrt(np.sum([r["second_err"] ** 2 for r in sel])) / len(sel))
        lines.append(f"| {P} | {mean('second'):.5f} ± {err:.5f} | {mean('second_pred'):.5f} | "
                     f"{mean('second_pool'):.5f} | {mean('c1'):.4f} | {mean('c1_pred'):.4f} | {mean('c1_pool'):.4f} |")
    lines += ["", "## Every training set", "",
              "| P | seed | column share measured | signal share | predicted | pooling sector | cosine | cosine pooling | "
              "‖D‖ | ‖x̄‖/L | noise | soft weight |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        sig = r["share_signal"]
        lines.append(f"| {r['P']} | {r['seed']} | {r['share']:.3f} ± {r['share_err']:.3f} | "
                     f"{'—' if not np.isfinite(sig) else f'{sig:.3f}'} | {r['share_pred']:.3f} | {r['share_pool']:.3f} | "
                     f"{r['cos']:.2f} ± {r['cos_err']:.2f} | {r['cos_pool']:.2f} | {r['norm']:.3g} | {r['norm_pred']:.3g} | "
                     f"{r['norm_noise']:.3g} | {r['soft']:.2g} |")
    return lines + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default="results/runs", help="the pipeline's run folder (results/runs)")
    ap.add_argument("--config", default="config.yaml", help="the config the runs were made with")
    ap.add_argument("--md", help="write the page here (with its provenance record)")
    ap.add_argument("--P", type=int, nargs="+", help="only these P of the sweep (default: every P of both recipes)")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    cfg = load_yaml(a.config)
    p, rows = measure(Path(a.runs), cfg, log=lambda s: print(s, file=sys.stderr, flush=True), only_P=a.P)
    if not rows:
        print(f"no run pairs of {RECIPES} under {a.runs}: run the pipeline first (snakemake --cores 2)", file=sys.stderr)
        return 2
    lines = markdown(p, rows, time.perf_counter() - t0, a.runs, a.P)
    if a.md:
        write_benchmark_page(Path(a.md), lines, "one_loop_column_share", {"runs": a.runs, "config": a.config,
                                                                          "P": a.P},
                             concern="one_loop")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
