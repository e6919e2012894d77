"""Check behind docs/theory.md Eq. (34): the dataset gradient term with the equivalent-kernel curvature
(what docs/one_loop.md's variant one_loop_g uses) against the same term with the dataset's own L²×L²
Hessian, at a few plane points of the finite-size study's L = V = 16, d_k = 32 point near its crossover.

    python src/research/benchmarks/one_loop_gperp_curvature.py [--P 19] [--seeds 0 1 2 3]

Prints, per (c1, cG) and run: −½ g⊥ᵀ(H_E⊥ + d_k H_I⊥)⁻¹ g⊥ with the EK curvature (block form, Eq. (34)) and
with the dataset's curvature (Eq. (31) on full Hessians; NaN where Eq. (33) fails for the dataset), and the
½ ln det parts of both. Seconds: about 0.5 s per (point, run) on one thread.
"""
from __future__ import annotations

import argparse

import numpy as np

from copyhead.config import ActionParams
from copyhead.theory.action import order_to_coeffs
from research.one_loop.correction import ek_blocks, grad_term_blocks, one_loop
from research.one_loop.evidence import evidence_dataset, evidence_ek, grad_hessian
from research.one_loop.prior import prior_rate_hessian
from copyhead.theory.same_dataset import run_training_tokens

POINTS = ((0.1, 0.3), (0.05, 0.3), (0.02, 0.3), (0.1, 0.5), (0.2, 0.5))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, default=19)
    ap.add_argument("--d_k", type=int, default=32)
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3])
    a = ap.parse_args(argv)
    p = ActionParams(V=16, L=16, d_k=a.d_k, g_Q=1.0, g_K=1.0, g_O=1.0, sigma2=0.1, prior="large_deviation")
    L, E = p.L, evidence_ek(p, a.P)
    print(f"L = V = 16, d_k = {a.d_k}, sigma2 = 0.1, P = {a.P}; columns: grad term EK curvature | dataset "
          "curvature; ln det part EK | dataset")
    for c1, cG in POINTS:
        m1, mP = map(float, order_to_coeffs(c1, cG, L))
        M = m1 * np.ones((L, L)) + mP * np.eye(L)
        _, HE, HI, _ = ek_blocks(p, a.P, m1, mP, E=E)
        _, H_ek = grad_hessian(E, M)
        HIf = prior_rate_hessian(M, 1.0)
        for s in a.seeds:
            gd, Hd = grad_hessian(evidence_dataset(run_training_tokens(p, s, a.P), p), M)
            own, ek = one_loop(Hd, gd, HIf, p.d_k), one_loop(H_ek, gd, HIf, p.d_k)
            print(f"(c1, cG) = ({c1}, {cG}) run {s}: {grad_term_blocks(gd, HE, HI, L):9.3f} | "
                  f"{own.grad_term:9.3f}   {ek.logdet:8.2f} | {own.logdet:8.2f}"
                  f"{'' if own.stable else '  (dataset: Eq. (33) fails)'}")


if __name__ == "__main__":
    main()
