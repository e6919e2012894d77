"""Packed training groups: many (P, seed) chains of one (attention, recipe) advanced by ONE process.

The workflow's default is one job per (attention, recipe, P) (``copyhead train --P 8``; reruns stay exact
and a Snakemake edit reruns only the points it affects). A GPU is only busy with hundreds of chains per
program, so a packed submission can instead run every point of a recipe as one batched program, with the
same command given several P:

    copyhead train --run-config '<json>' --P 8 12 16 --seeds 0 1 2 3 --out <P-major files>

(``--out`` lists one file per (P, seed), P-major: every seed of the first P, then of the next; this
module's :func:`points` splits them). This is :func:`copyhead.run.train_points`: the chains whose energy
uses co-occurrence counts form one batch across P (every tensor has the same shape whatever P is), chains
on the direct path one batch per P, and each file equals, number for number, the file the per-P job
writes (tests/test_engine_counts.py). The workflow runs it when ``COPYHEAD_TRAIN_PACK=recipe`` is set
(workflow/rules/train.smk, docs/slurm.md); both modes make the same files with the same recorded params,
so switching modes reruns nothing.
"""
from __future__ import annotations

from pathlib import Path


def points(Ps, seeds, outs) -> list:
    """``(P, seeds, outs)`` per P from P-major output files (one per (P, seed))."""
    Ps, seeds, outs = [int(P) for P in Ps], [int(s) for s in seeds], [Path(o) for o in outs]
    if len(set(Ps)) != len(Ps):
        raise ValueError(f"--P lists a training-set size twice: {Ps}")
    if len(outs) != len(Ps) * len(seeds):
        raise ValueError(f"{len(Ps)} P x {len(seeds)} seeds need {len(Ps) * len(seeds)} --out files, "
                         f"got {len(outs)}")
    n = len(seeds)
    return [(P, seeds, outs[i * n:(i + 1) * n]) for i, P in enumerate(Ps)]
