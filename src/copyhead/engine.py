"""Packed training groups: many (P, seed) chains of one (attention, recipe) advanced by ONE process.

The workflow's default is one job per (attention, recipe, P) (``copyhead train``; reruns stay exact and
a Snakemake edit reruns only the points it affects). A GPU is only busy with hundreds of chains per
program, so a packed submission can instead run every point of a recipe as one batched program:

    python -m copyhead.engine --run-config '<json>' --P 8 12 16 --seeds 0 1 2 3 --out <P-major files>

(``--out`` lists one file per (P, seed), P-major: every seed of the first P, then of the next). This is
:func:`copyhead.run.train_points`: the chains whose energy uses co-occurrence counts form one batch across
P (every tensor has the same shape whatever P is), chains on the direct path one batch per P, and each
file equals, number for number, the file the per-P job writes (tests/test_engine_counts.py). The
workflow runs it when ``COPYHEAD_TRAIN_PACK=recipe`` is set (workflow/rules/train.smk, docs/slurm.md).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def points(Ps, seeds, outs) -> list:
    """``(P, seeds, outs)`` per P from P-major output files (one per (P, seed))."""
    Ps, seeds, outs = [int(P) for P in Ps], [int(s) for s in seeds], [Path(o) for o in outs]
    if len(outs) != len(Ps) * len(seeds):
        raise ValueError(f"{len(Ps)} P x {len(seeds)} seeds need {len(Ps) * len(seeds)} --out files, "
                         f"got {len(outs)}")
    n = len(seeds)
    return [(P, seeds, outs[i * n:(i + 1) * n]) for i, P in enumerate(Ps)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m copyhead.engine", description=__doc__.splitlines()[0])
    ap.add_argument("--run-config", required=True, help="resolved run config as JSON (copyhead.config.run_config)")
    ap.add_argument("--P", type=int, nargs="+", required=True, help="training-set sizes")
    ap.add_argument("--seeds", type=int, nargs="+", required=True, help="seeds of every P")
    ap.add_argument("--out", nargs="+", required=True, help="one file per (P, seed), P-major")
    ap.add_argument("--device", help="override numerics.device (cpu | cuda | auto)")
    a = ap.parse_args(argv)
    from .config import ConfigError, validate_run_config
    try:
        run_cfg = validate_run_config(json.loads(a.run_config))
        pts = points(a.P, a.seeds, a.out)
    except (ValueError, ConfigError) as e:  # JSONDecodeError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return 2
    from .run import train_points  # imports torch: only after the arguments are known to be valid
    train_points(run_cfg, pts, device=a.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
