"""Do the column modes swell? The off-plane fluctuations of the exact posterior, split into the column modes
M = 1wᵀ and the rest, against the per-dataset one loop and the pooling sector (docs/theory.md Sec. 13,
Eqs. (31), (37); the page docs/benchmarks/column_fluctuations.md).

Both theories predict that in the pooling regime the column modes fluctuate several times more than under
the prior (their evidence curvature is negative: a column mode is a bias channel that fits the uncentred
targets' mean), and the pooling sector lets that swelling pull ĉ1 towards 0. This script measures it: per
(P, training set) of the default size (config.yaml: V, L, d_k, σ², prior), exact posterior draws of the
attention A (HMC on the collapsed posterior of (Q, K), 4 chains from the prior, the pipeline's reference
sampler), and per draw ‖col(A_off)‖²_F (A_off = A − ΠA, col(u) = 1ūᵀ, ū the column means) and ‖A_off‖²_F − that;
the theory's second moments of the same parts at its own corrected (ĉ1, ĉG) (one loop: the column and rest
blocks of tr C + ‖x̄‖², C = (H⊥ + d_k H_I⊥)⁻¹; pooling sector: ⟨ρ²⟩ of Eq. (37) and the rest's Gaussian), over
L² (A = M/L). Errors: the standard deviation of the 4 chains' means / 2.

    python src/research/benchmarks/column_fluctuations.py --md docs/benchmarks/column_fluctuations.md    # ~15 min, one core
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

from copyhead import order_params as op
from copyhead.config import ActionParams
from copyhead.studies.spec import action_params
from copyhead.task import make_data
from copyhead.theory.action import order_to_coeffs
from research.one_loop.correction import gaussian_correction, plane_point
from research.one_loop.dataset import DatasetMoments, dataset_means, transverse_system
from research.one_loop.pooling import PoolingSector, column_basis
from copyhead.theory.same_dataset import run_training_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))   # benchmarks/common.py
from common import collapsed_attention_samples, default_size_main, mean_se  # noqa: E402

PS = (4, 8, 12, 16, 20)
SEEDS = (0, 1)
CHAINS, ITERS, BURN, THIN = 4, 1600, 200, 2        # the pipeline's hmc recipe (config.yaml)


def split(A):
    """(‖col(A_off)‖², ‖A_off‖² − ‖col(A_off)‖², ĉ1) per chain of A (chains, L, L)."""
    L = A.shape[-1]
    o = op.order_parameters(op.sign_fix(A))
    off = A - op.projection(A)
    col = (off.mean(-2, keepdim=True) ** 2).sum((-2, -1)) * L
    return torch.stack([col, (off**2).sum((-2, -1)) - col, o["c1"]], -1)


def theory(p: ActionParams, P, seed):
    """The one loop's and the pooling sector's (ĉ1, column second moment, rest second moment) (A units)."""
    L = p.L
    tok = run_training_tokens(p, seed, P)
    mom = DatasetMoments(tok, p.V, p.g_O, p.sigma2)
    r = dataset_means(p, P, tok, mom)
    Cb, Ct, Rt = column_basis(L)
    out = {}
    for name in ("one_loop", "pooling"):
        m1, mP = map(float, order_to_coeffs(r[name]["c1"], r[name]["cG"], L))
        Ht, gt, Sinv, _ = transverse_system(p, mom, plane_point(m1, mP, L))
        if name == "one_loop":
            C = gaussian_correction(Ht, gt, Sinv, cov=True)[-1]
            x = -(C @ gt)
            col = float(np.trace(Ct.T @ C @ Ct) + np.sum((Ct.T @ x) ** 2))
            rest = float(np.trace(C) + x @ x) - col
        else:
            s = PoolingSector(p, P).correction(m1, mP, Ht, gt, Sinv)
            col, rest = s["rho2"], s["second"] - s["rho2"]
        out[name] = (r[name]["c1"], col / L**2, rest / L**2)
    prior_col = (L - 1) * p.g_Q * p.g_K / (p.d_k * L**2)
    prior_rest = (L**2 - 2 - (L - 1)) * p.g_Q * p.g_K / (p.d_k * L**2)
    return out, (prior_col, prior_rest), r["soft_weight"]


def measure(cfg, log=print):
    p = action_params(cfg)
    rows = []
    for P in PS:
        for seed in SEEDS:
            t0 = time.perf_counter()
            rec, h = collapsed_attention_samples(make_data(seed, p.V, p.L, P, 8), "linear", p.d_k, p.sigma2,
                                                 1000 * seed + P, chains=CHAINS, iters=ITERS, burn=BURN, thin=THIN,
                                                 record=split)
            x = torch.stack(rec, 1).numpy()                     # (chains, n, 3)
            per_chain = x.mean(1)                                # (chains, 3)
            th, prior, soft = theory(p, P, seed)
            (col, col_err), (rest, rest_err), (c1, c1_err) = (mean_se(per_chain[:, k]) for k in range(3))
            rows.append({"P": P, "seed": seed, "col": col, "rest": rest, "c1": c1, "col_err": col_err,
                         "rest_err": rest_err, "c1_err": c1_err,
                         "accept": float(h.accept_rate().mean()), "prior_col": prior[0], "prior_rest": prior[1],
                         **{f"{k}_{name}": v for name, vals in th.items() for k, v in zip(("c1", "col", "rest"), vals)},
                         "soft": soft})
            r = rows[-1]
            log(f"P {P} seed {seed}: column {r['col']:.5f} ± {r['col_err']:.5f} (prior {r['prior_col']:.5f}, one "
                f"loop {r['col_one_loop']:.5f}, pooling {r['col_pooling']:.5f}); rest {r['rest']:.5f} (one loop "
                f"{r['rest_one_loop']:.5f}); ĉ1 {r['c1']:.4f} (one loop {r['c1_one_loop']:.4f}, pooling "
                f"{r['c1_pooling']:.4f}) ({time.perf_counter() - t0:.0f} s)")
    return p, rows


def markdown(p, rows, seconds, when) -> list[str]:
    def mean(sel, k):
        return float(np.mean([r[k] for r in sel]))

    def err(sel, k):
        return float(np.sqrt(np.sum([r[k] ** 2 for r in sel])) / len(sel))
    lines = [f"# Do the column modes swell? Exact posterior against the one loop and the pooling sector "
             f"(L = {p.L}, d_k = {p.d_k}, V = {p.V})", "",
             f"*Generated by `python src/research/benchmarks/column_fluctuations.py --md docs/benchmarks/column_fluctuations.md` "
             f"({when}; {seconds:.0f} s); do not edit by hand.* Theory: docs/theory.md Sec. 13 (Eqs. (31), "
             "(37)).", "",
             f"Exact: HMC on the collapsed posterior of (Q, K), {CHAINS} prior-started chains per training set "
             f"(training sets {', '.join(map(str, SEEDS))}: the runs' own), {ITERS} iterations, {BURN} warm-up, "
             f"every {THIN}nd kept (the pipeline's hmc recipe). Per draw: the column part ‖1ūᵀ‖² of the off-plane "
             "attention A_off = A − ΠA (ū its column means) and the rest ‖A_off‖² − ‖1ūᵀ‖². Theory at its own "
             "corrected (ĉ1, ĉG), per training set: the second moments of the same parts (one loop: Eq. (31)'s "
             "transverse Gaussian; pooling sector: ⟨ρ²⟩ of Eq. (37) and the rest's Gaussian), over L². Prior: "
             "(L − 1) c/(d_k L²) for the columns, (L² − 2 − (L − 1)) c/(d_k L²) for the rest. Means over the "
             "training sets; ± from the spread of the chains.", "", "## Answer", "",
             "| P | column E‖col‖², chains | prior | one loop | pooling sector | rest, chains | prior | one loop | "
             "pooling sector | ĉ1 chains | ĉ1 one loop | ĉ1 pooling sector |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for P in sorted({r["P"] for r in rows}):
        sel = [r for r in rows if r["P"] == P]
        lines.append(f"| {P} | {mean(sel, 'col'):.5f} ± {err(sel, 'col_err'):.5f} | {mean(sel, 'prior_col'):.5f} | "
                     f"{mean(sel, 'col_one_loop'):.5f} | {mean(sel, 'col_pooling'):.5f} | "
                     f"{mean(sel, 'rest'):.5f} ± {err(sel, 'rest_err'):.5f} | {mean(sel, 'prior_rest'):.5f} | "
                     f"{mean(sel, 'rest_one_loop'):.5f} | {mean(sel, 'rest_pooling'):.5f} | "
                     f"{mean(sel, 'c1'):.4f} ± {err(sel, 'c1_err'):.4f} | {mean(sel, 'c1_one_loop'):.4f} | "
                     f"{mean(sel, 'c1_pooling'):.4f} |")
    swell = {P: mean([r for r in rows if r["P"] == P], "col") / mean([r for r in rows if r["P"] == P], "prior_col")
             for P in sorted({r["P"] for r in rows})}
    pred = {P: mean([r for r in rows if r["P"] == P], "col_pooling") / mean([r for r in rows if r["P"] == P], "prior_col")
            for P in swell}
    lines += ["", "Column second moment over the prior's, chains (pooling sector): "
              + ", ".join(f"P = {P}: {swell[P]:.2f} ({pred[P]:.2f})" for P in swell) + ".", "",
              "## Every training set", "",
              "| P | seed | column, chains | one loop | pooling | rest, chains | one loop | pooling | ĉ1 chains | "
              "one loop | pooling | acceptance | soft weight |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['P']} | {r['seed']} | {r['col']:.5f} ± {r['col_err']:.5f} | {r['col_one_loop']:.5f} | "
                     f"{r['col_pooling']:.5f} | {r['rest']:.5f} ± {r['rest_err']:.5f} | {r['rest_one_loop']:.5f} | "
                     f"{r['rest_pooling']:.5f} | {r['c1']:.4f} ± {r['c1_err']:.4f} | {r['c1_one_loop']:.4f} | "
                     f"{r['c1_pooling']:.4f} | {r['accept']:.2f} | {r['soft']:.2g} |")
    return lines + [""]


def main(argv=None) -> int:
    return default_size_main(__doc__, "column_fluctuations", measure, markdown,
                             {"P": list(PS), "seeds": list(SEEDS), "chains": CHAINS, "iterations": ITERS,
                              "burn_in": BURN, "thin": THIN}, argv)


if __name__ == "__main__":
    raise SystemExit(main())
