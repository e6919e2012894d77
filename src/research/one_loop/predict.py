"""The one-loop predictions at given points (docs/theory.md, Sec. 13; rendered on docs/one_loop.md): at each
(ratio, size x) the corrected and uncorrected posterior means of :mod:`.posterior` at the point's P, next to
the measured values handed in (read by research.one_loop.points), as one xarray Dataset
(:func:`compute`); :func:`.predict_output.write_predictions` writes it with its provenance as one file of
docs/one_loop/."""
from __future__ import annotations

import time

import numpy as np
import xarray as xr

from .blocks import BLOCKS
from .dataset import DATASET_LABEL, dataset_posterior_means, dataset_variants
from .posterior import (PARAMS, SETTINGS, SOFTMAX_LABEL, SOFTMAX_PARAMS, SOFTMAX_VARIANTS, VARIANT_LABEL,
                        VARIANTS, mode_at, posterior_means, softmax_posterior_means)


def compute(params, points, attrs, settings=SETTINGS, log=print, seeds=(), attention="linear"):
    """xr.Dataset over (ratio, x, param) of the measured points and the posterior means of every variant at
    each point's P (linear: ĉ1, ĉG, VARIANTS; softmax: âG, SOFTMAX_VARIANTS), with the windows, weights,
    the softest mode (linear) and the seconds per point.

    ``params``: ActionParams per size x; ``points``: {(ratio, x, param): dict(P, experiment, error, theory,
    gap, closed)} (what research.one_loop.points reads from the studies' results); ``attrs``: the
    dataset's attributes (study, by, recipe, ...); ``seeds``: the runs whose training sets the one_loop_g
    variant (linear) and the per-dataset one loop (``dataset.dataset_variants`` with the suffix ``_dataset``, its
    weights ``*_dataset``, the pooling sector's ``*_pooling_dataset``;
    skipped where settings["coarse_dataset"] is 0) use."""
    study = attrs["study"]
    linear = attention == "linear"
    per_dataset = bool(seeds) and settings.get("coarse_dataset", 0) > 0
    prms, variants = (PARAMS, VARIANTS) if linear else (SOFTMAX_PARAMS, SOFTMAX_VARIANTS)
    dvariants = tuple(f"{v}_dataset" for v in dataset_variants(attention)) if per_dataset else ()
    variants = variants + dvariants
    ratios = sorted({k[0] for k in points})
    xs = sorted(params)
    shape3, shape2 = (len(ratios), len(xs), len(prms)), (len(ratios), len(xs))
    v3 = {k: np.full(shape3, np.nan) for k in ("experiment", "error", "theory", "gap", "closed")}
    v3.update({f"mean_{k}": np.full(shape3, np.nan) for k in variants})
    window = ("c1_lo", "c1_hi", "cG_lo", "cG_hi") if linear else ("beta_lo", "beta_hi")
    v2 = {k: np.full(shape2, np.nan) for k in ("P", "unstable_weight", "near_unstable_weight", "soft_weight",
                                                "n_unstable", "seconds") + window
          + (tuple(f"mode_{k}_{at}" for k in ("rel", "column", "block") for at in ("none", "one_loop"))
             if linear else ())
          + (tuple(f"{k}_{v}" for v in ("dataset",) + dvariants[2:]
                   for k in ("soft_weight", "unstable_weight", "near_unstable_weight")) + ("seconds_dataset",)
             if per_dataset else ())}
    for a, ratio in enumerate(ratios):
        for b, x in enumerate(xs):
            if (ratio, x, prms[-1]) not in points:
                continue
            P = points[(ratio, x, prms[-1])]["P"]
            t0 = time.perf_counter()
            if linear:
                r = posterior_means(params[x], P, settings["coarse"], settings["fine"], soft=settings["soft"],
                                    cut=settings["cut"], seeds=seeds)
                (v2["c1_lo"][a, b], v2["c1_hi"][a, b]), (v2["cG_lo"][a, b], v2["cG_hi"][a, b]) = r["window"]
                for at in ("none", "one_loop"):
                    blk, rel, share = mode_at(params[x], P, r[at]["c1"], r[at]["cG"])
                    v2[f"mode_rel_{at}"][a, b], v2[f"mode_column_{at}"][a, b] = rel, share
                    v2[f"mode_block_{at}"][a, b] = BLOCKS.index(blk) if blk else -1
                extra = f"(with g⊥ {r['one_loop_g']['cG'] - r['none']['cG']:+.4f}), "
            else:
                r = softmax_posterior_means(params[x], P, settings["coarse_beta"], settings["fine_beta"],
                                            soft=settings["soft"], cut=settings["cut"])
                v2["beta_lo"][a, b], v2["beta_hi"][a, b] = r["window"]
                extra = f"(without the observable's term {r['one_loop_no_obs']['aG'] - r['none']['aG']:+.4f}), "
            if per_dataset:
                t1 = time.perf_counter()
                grid = (settings["coarse_dataset"], settings["fine"]) if linear else \
                    (settings["coarse_beta"], settings["fine_beta"])
                rd = dataset_posterior_means(params[x], P, seeds, *grid, settings["cut"], settings["soft"],
                                             attention=attention)
                r.update({f"{v}_dataset": rd[v] for v in dataset_variants(attention)})
                for k in ("soft_weight", "unstable_weight", "near_unstable_weight"):
                    v2[f"{k}_dataset"][a, b] = rd[k]
                    for v in dataset_variants(attention)[2:]:
                        v2[f"{k}_{v}_dataset"][a, b] = rd[f"{v}_{k}"]
                v2["seconds_dataset"][a, b] = time.perf_counter() - t1
                extra += "".join(f"{v} {rd[v][prms[-1]] - rd['none'][prms[-1]]:+.4f}, "
                                 for v in dataset_variants(attention)[2:])
                extra += (f"per dataset {rd['one_loop'][prms[-1]] - rd['none'][prms[-1]]:+.4f} (soft weight "
                          f"{rd['soft_weight']:.2g}, {v2['seconds_dataset'][a, b]:.1f} s), ")
            for k in ("unstable_weight", "near_unstable_weight", "soft_weight", "n_unstable"):
                v2[k][a, b] = r[k]
            v2["P"][a, b], v2["seconds"][a, b] = P, time.perf_counter() - t0
            for c, prm in enumerate(prms):
                for k in ("experiment", "error", "theory", "gap", "closed"):
                    v3[k][a, b, c] = points[(ratio, x, prm)][k]
                for k in variants:
                    v3[f"mean_{k}"][a, b, c] = r[k][prm]
            log(f"{study} {attention} ratio {ratio} x {x} P {P:g}: shift {prms[-1]} "
                f"{r['one_loop'][prms[-1]] - r['none'][prms[-1]]:+.4f} {extra}"
                f"soft weight {r['soft_weight']:.2g} ({v2['seconds'][a, b]:.1f} s)")
    ds = xr.Dataset({k: (("ratio", "x", "param"), v) for k, v in v3.items()}
                    | {k: (("ratio", "x"), v) for k, v in v2.items()},
                    coords={"ratio": ratios, "x": xs, "param": list(prms),
                            "d_k": ("x", [params[x].d_k for x in xs]), "L": ("x", [params[x].L for x in xs]),
                            "V": ("x", [params[x].V for x in xs]), "sigma2": ("x", [params[x].sigma2 for x in xs])})
    labels = {**(VARIANT_LABEL if linear else SOFTMAX_LABEL), **DATASET_LABEL}
    ds.attrs.update({**attrs, "attention": attention, "prior": params[xs[0]].prior,
                     "g_Q": params[xs[0]].g_Q, "g_K": params[xs[0]].g_K, "g_O": params[xs[0]].g_O,
                     **{f"setting_{k}": v for k, v in settings.items()},
                     "measured": f"recipe {attrs.get('recipe', '?')} (prior-started chains) minus the studies' "
                                 "same-dataset posterior mean",
                     "mode_block_codes": " ".join(BLOCKS), "seeds": " ".join(map(str, seeds)),
                     **{f"variant_{k}": labels[k] for k in variants}})
    return ds
