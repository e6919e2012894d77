"""Why tempering in the likelihood does not mix the softmax jump: the latent heat between its two branches.

    python src/research/benchmarks/metastability.py [--P 850 900 950] [--umbrella P SEED ...]
        [--md docs/benchmarks/metastability.md]

At the converged study's size (config/converged.yaml, softmax; or a study of config/studies.yaml with
``--study``; the page states the sizes) and at each P given, the reference sampler runs exactly the converged study's HMC chains (recipes ``hmc`` and
``hmc_copy``: same training sets, initial states, per-chain streams and kernel as ``copyhead train``),
a prior- and a copy-started chain on each training set, and records after warm-up at every iteration the
collapsed negative log-likelihood ℓ = −log p(Y | Q, K) and âG = mP/L. Per training set it reports
whether the two chains agree (split-R̂ of âG across them ≤ 1.05; docs/results.md judges at 1.01) and, where
they sit on different branches (pooling and copy), the latent heat Δℓ = ℓ̄(pooling) − ℓ̄(copy) and each
branch's spread of ℓ. With ``--umbrella P SEED`` (repeatable) it weighs the two branches of those
training sets by umbrella sampling along âG (:func:`umbrella`): which branch holds the posterior, and by
how many nats of free energy.

Replica exchange across the likelihood temperature (targets ∝ prior · p(Y | Q, K)^β, a ladder of β with 1
in it) swaps the states of neighbouring replicas β_i < β_j with probability min(1, exp((β_j − β_i)(ℓ_j −
ℓ_i))). A pooling state (high ℓ) moving up the ladder past a copy state is accepted with probability
exp(−Δβ Δℓ), so the ladder carries states between the branches only where its spacing is Δβ ≲ ln 5/Δℓ
(acceptance ≥ 0.2); it must reach from below the lower spinodal of the jump (where the copy branch
ceases to exist, β ≈ P_sp,low/P) to above the upper one (β ≈ P_sp,high/P: the pooling branch ceases), so
that both branches are created and destroyed inside the ladder. The page reports the replicas such a
ladder needs, with the closed form's spinodals; the conclusion rests on the measured Δℓ, not on them.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]   # the checkout
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import cpu_name, stamp, write_benchmark_page  # noqa: E402
from copyhead import config as cfgmod  # noqa: E402
from copyhead import order_params as op  # noqa: E402
from copyhead.analysis import convergence as cv  # noqa: E402
from copyhead.collapsed import CollapsedPosterior  # noqa: E402
from copyhead.config import RunConfig  # noqa: E402
from copyhead.hmc import HMC  # noqa: E402
from copyhead.model import CopyAttention  # noqa: E402
from copyhead.task import hmc_seed, make_data, torch_seed  # noqa: E402
from copyhead.studies.spec import action_params, load_spec, study_config  # noqa: E402
from copyhead.theory.scaling import closed_form_transitions  # noqa: E402
from research.umbrella import MBAR, mbar, run_windows, windows  # noqa: E402

CONFIG = ROOT / "config" / "converged.yaml"
SPEC = ROOT / "config" / "studies.yaml"
SEEDS = (0, 1, 2, 3)
ACCEPT = 0.2            # the swap acceptance a ladder needs between neighbours


def load_config(study: str | None) -> tuple[dict, str]:
    """(validated config, where it comes from): the converged study's (config/converged.yaml), or with
    ``study`` that study's as config/studies.yaml generates it (copyhead study-config), so a metastable point
    a studies page lists can be weighed on the study's own training sets."""
    if study:
        return study_config(load_spec(SPEC), study)[0], f"study {study} of config/studies.yaml"
    return cfgmod.validate(cfgmod.load(CONFIG)), "config/converged.yaml"


def chains(P: int, cfg: dict, log):
    """The study's (``cfg``) prior- and copy-started HMC chains of softmax attention at P, on its four
    training sets: {(seed, init): {"aG": (n,), "nll": (n,)}} after warm-up, and the sampler's summary."""
    rcs = {init: RunConfig.from_dict(cfgmod.run_config(cfg, "softmax", name))
           for init, name in (("prior", "hmc"), ("copy", "hmc_copy"))}
    rc = rcs["prior"]
    recipe = rc.recipe
    task = rc.task
    keys = [(s, init) for init in ("prior", "copy") for s in SEEDS]
    datas = [make_data(s, task.V, task.L, P, task.n_test) for s, _ in keys]
    model = CopyAttention(datas, "softmax", rc.model, torch.float64, "cpu")
    post = CollapsedPosterior(model)
    q0 = []
    for k, (s, init) in enumerate(keys):   # copyhead.run's initial states (the (Q, K) part)
        gen = torch.Generator().manual_seed(torch_seed(s))
        r = rcs[init].recipe
        th = model.init_copy(gen, r.copy_beta, chain=k) if init == "copy" else model.init_prior(gen, r.init_scale)
        q0.append(th[:post.n_qk])
    gens = [torch.Generator().manual_seed(hmc_seed(s, init, "sampler")) for s, init in keys]
    h = HMC(post.energy_grad, torch.stack(q0), gens, n_leapfrog=recipe.n_leapfrog, step_size=recipe.step_size,
            target_accept=recipe.target_accept)
    prior = lambda q: 0.5 * (q * q * post.prec_qk).sum(1)
    aG, nll = [], []
    t0 = time.process_time()
    for it in range(recipe.steps):
        h.step(adapt=it < recipe.burn_in)
        if it + 1 == recipe.burn_in:
            h.end_warmup()
        if it + 1 > recipe.burn_in:
            aG.append(op.order_parameters(post.attention(h.q))["mP"] / task.L)
            nll.append(h.U - prior(h.q))          # U = ℓ + the prior's quadratic form
        if log and (it + 1) % 200 == 0:
            log(f"P={P}: iteration {it + 1}/{recipe.steps}, {time.process_time() - t0:.0f} s")
    aG, nll = torch.stack(aG, 1).numpy(), torch.stack(nll, 1).numpy()
    out = {key: {"aG": aG[k], "nll": nll[k]} for k, key in enumerate(keys)}
    return out, {"recipe": recipe, "accept": h.accept_rate().tolist(), "cpu_s": time.process_time() - t0}


def per_dataset(ch: dict, P: int, spinodals: tuple[float, float]) -> list[dict]:
    """One row per training set: the two chains' âG and ℓ, whether they agree, and the ladder Δℓ implies."""
    lo, hi = spinodals
    rows = []
    for s in SEEDS:
        a, b = ch[(s, "prior")], ch[(s, "copy")]
        rhat = cv.split_rhat(np.stack([a["aG"], b["aG"]]))
        row = {"seed": s, "aG_prior": float(a["aG"].mean()), "aG_copy": float(b["aG"].mean()),
               "nll_prior": float(a["nll"].mean()), "nll_copy": float(b["nll"].mean()),
               "nll_sd": float(max(a["nll"].std(ddof=1), b["nll"].std(ddof=1))), "rhat": float(rhat),
               "agree": bool(rhat <= 1.05)}
        if not row["agree"]:
            # the branch with the larger âG is the copy branch; its ℓ is the lower
            pool, copy = (a, b) if a["aG"].mean() < b["aG"].mean() else (b, a)
            dl = float(pool["nll"].mean() - copy["nll"].mean())
            row["latent_heat"] = dl
            if dl > 0:
                step = math.log(1 / ACCEPT) / dl
                row["dbeta"] = step
                row["beta_range"] = (lo / P, hi / P)
                row["replicas"] = int(math.ceil((hi - lo) / P / step)) + 1
        rows.append(row)
    return rows


def umbrella(points: list[tuple[int, int]], span: tuple[float, float], n_windows: int, stiffness: float,
             dense: tuple[float, float, int] | None, steps: int, burn_in: int, cfg: dict, log,
             samples: str | None = None) -> dict:
    """Umbrella windows along âG on each (P, training set) of ``points`` (the config's data of that seed at
    that P), every point's windows run twice — from prior draws and from the copy solution (the recipes'
    own initial states) — and all of them in one batch. Each run is combined by MBAR; the two runs'
    agreement is the check that the windows equilibrated. Per point: the MBAR posterior mean of âG, the
    free energy ΔF of âG > the midpoint of ``span`` (the copy branch) against the rest, that branch's weight
    and the smallest neighbour overlap, per start and for both runs pooled, each also from the two halves
    of the kept draws. A fit MBAR cannot solve (windows without overlap) is reported as such (NaN, overlap
    0), never raised after the sampling; ``samples`` (a .npz path) keeps every window's âG draws."""
    rcs = {init: RunConfig.from_dict(cfgmod.run_config(cfg, "softmax", name))
           for init, name in (("prior", "hmc"), ("copy", "hmc_copy"))}
    rc, task = rcs["prior"], rcs["prior"].task
    centres, kappa = windows(span[0], span[1], n_windows, dense)
    kappa, K = kappa * stiffness, len(centres)
    runs = [(P, seed, init) for P, seed in points for init in ("prior", "copy")]
    model = CopyAttention([make_data(seed, task.V, task.L, P, task.n_test) for P, seed, _ in runs for _ in range(K)],
                          "softmax", rc.model, torch.float64, "cpu",
                          energy="dense" if len({P for P, _ in points}) > 1 else "auto")   # several P: counts
    post = CollapsedPosterior(model)
    q0, gens = [], []
    for j, (P, seed, init) in enumerate(runs):
        r = rcs[init].recipe
        for k in range(K):        # own streams per window, point and start
            ss = np.random.SeedSequence(hmc_seed(seed, init, "sampler"), spawn_key=(P, 1000 + k))
            gen = torch.Generator().manual_seed(int(ss.generate_state(1, np.uint64)[0] & 0x7FFF_FFFF_FFFF_FFFF))
            th = (model.init_copy(gen, r.copy_beta, chain=j * K + k) if init == "copy"
                  else model.init_prior(gen, r.init_scale))
            q0.append(th[:post.n_qk])
            gens.append(gen)
    t0 = time.process_time()
    res = run_windows(post, torch.stack(q0), np.tile(centres, len(runs)), np.tile(kappa, len(runs)), gens,
                      steps=steps, burn_in=burn_in, n_leapfrog=rc.recipe.n_leapfrog, step_size=rc.recipe.step_size,
                      target_accept=rc.recipe.target_accept, log=log)
    if samples:
        np.savez(samples, centres=centres, kappa=kappa, points=np.array(points), s=res["s"])
    threshold = 0.5 * (span[0] + span[1])
    out = {"centres": centres, "kappa": (float(kappa.min()), float(kappa.max())), "threshold": threshold,
           "cpu_s": time.process_time() - t0, "steps": steps, "burn_in": burn_in,
           "accept": (float(res["accept"].min()), float(res["accept"].max())),
           "n_divergent": int(res["n_divergent"].sum()), "points": []}
    for i, (P, seed) in enumerate(points):
        x = res["s"][2 * i * K:(2 * i + 2) * K]
        pt = {"P": P, "seed": seed}
        for name, rows, c, k in (("prior", x[:K], centres, kappa), ("copy", x[K:], centres, kappa),
                                 ("both", x, np.tile(centres, 2), np.tile(kappa, 2))):
            half = rows.shape[1] // 2
            pt[name] = _fit_summary([_mbar_or_none(part, c, k) for part in (rows, rows[:, :half], rows[:, half:])],
                                    threshold)
        out["points"].append(pt)
    return out


def _mbar_or_none(rows: np.ndarray, centres, kappa) -> MBAR | None:
    """MBAR of the windows' draws ``rows`` (windows × draws), or None where it has no solution (windows
    without overlap: :func:`research.umbrella.mbar` raises)."""
    try:
        return mbar(list(rows), centres, kappa)
    except RuntimeError:
        return None


def _fit_summary(fits: list[MBAR | None], threshold: float) -> dict:
    """One run's numbers from its MBAR fits (all draws, first half, second half; None: no solution): the
    posterior mean of âG and ΔF of âG > ``threshold``, each also per half, the copy branch's weight and the
    smallest neighbour overlap (NaN and 0 where a fit has no solution), and whether every fit has one."""
    full, *halves = fits
    mean = lambda f: f.mean() if f is not None else math.nan
    dF = lambda f: f.free_energy_above(threshold) if f is not None else math.nan
    return {"mean": mean(full), "halves": [mean(f) for f in halves], "dF": dF(full),
            "dF_halves": [dF(f) for f in halves],
            "copy_weight": full.weight_above(threshold) if full is not None else math.nan,
            "overlap": full.overlap if full is not None else 0.0, "converged": None not in fits}


def _overlap(pt: dict) -> float:
    """The smallest neighbour overlap of a point's two runs."""
    return min(pt[n]["overlap"] for n in ("prior", "copy"))


def settled(pt: dict) -> tuple[bool, float, float]:
    """(stands, |difference of the two runs' means|, the larger half-to-half change): a point's umbrella
    estimate stands when neighbouring windows overlap (≥ 0.03 in both runs) and the runs from the two starts
    agree within twice the larger half-to-half change of either (at least 0.001 in âG)."""
    agree = abs(pt["prior"]["mean"] - pt["copy"]["mean"])
    spread = max(abs(pt[n]["halves"][0] - pt[n]["halves"][1]) for n in ("prior", "copy"))
    ok = _overlap(pt) >= 0.03 and agree <= 2 * max(spread, 1e-3)
    return ok, agree, spread


def why_not(pt: dict) -> str | None:
    """Which check a point's umbrella estimate fails, or None where it stands: "no fit" (MBAR has no solution
    for a run or one of its halves), "overlap" (neighbouring windows overlap < 0.03), "disagree" (the two
    runs differ by more than twice their larger half-to-half change)."""
    if not all(pt[n]["converged"] for n in ("prior", "copy", "both")):
        return "no fit"
    if _overlap(pt) < 0.03:
        return "overlap"
    return None if settled(pt)[0] else "disagree"


def umbrella_answer(u: dict) -> str:
    """The page's first sentence: which branch holds the posterior at each weighed point, by how much."""
    said = []
    for pt in u["points"]:
        _, agree, spread = settled(pt)
        dF = pt["both"]["dF"]
        branch = "the copy branch" if dF < 0 else "the pooling branch"
        said.append(f"P = {pt['P']} (training set {pt['seed']}): " + {
            None: f"{branch}, ΔF = {dF:+.0f} nats",
            "no fit": "not settled (MBAR has no solution: windows without overlap)",
            "overlap": f"not settled (ΔF = {dF:+.0f} nats, but neighbouring windows overlap only "
                       f"{_overlap(pt):.3f} < 0.03)",
            "disagree": f"not settled (ΔF = {dF:+.0f} nats, but the two runs differ by {agree:.4f}, more than "
                        f"twice their half-to-half change {spread:.4f})"}[why_not(pt)])
    return "Umbrella sampling along âG says which branch holds the posterior: " + "; ".join(said) + "."


def umbrella_lines(u: dict, chains: dict) -> list[str]:
    """The umbrella section of the page: one row per (P, training set), beside its plain chains' âG where
    the page ran them (``chains``: {(P, seed): row of :func:`per_dataset`})."""
    f4 = lambda x: f"{x:.4f}"
    nats = lambda x: "–" if not math.isfinite(x) else f"{x:+.0f}" if abs(x) >= 10 else f"{x:+.1f}"
    rows = ["| P | training set | âG of the plain chains, prior / copy start | umbrella posterior mean of âG "
            "(prior / copy run) | ΔF = F(copy) − F(pooling), nats (prior / copy run; first / second half, "
            f"pooled) | weight of âG > {u['threshold']:.3f} (copy branch) | smallest neighbour overlap | "
            "estimate |", "|---|---|---|---|---|---|---|---|"]
    for pt in u["points"]:
        _, agree, spread = settled(pt)
        ch = chains.get((pt["P"], pt["seed"]))
        b = pt["both"]
        rows.append(f"| {pt['P']} | {pt['seed']} | {f4(ch['aG_prior']) + ' / ' + f4(ch['aG_copy']) if ch else '–'} | "
                    f"{f4(b['mean'])} ({f4(pt['prior']['mean'])} / {f4(pt['copy']['mean'])}) | "
                    f"{nats(pt['prior']['dF'])} / {nats(pt['copy']['dF'])}; "
                    f"{nats(b['dF_halves'][0])} / {nats(b['dF_halves'][1])} | {b['copy_weight']:.3f} | "
                    f"{_overlap(pt):.3f} | "
                    + {None: f"stands (runs differ by {agree:.4f})",
                       "no fit": "not an answer (MBAR has no solution: windows without overlap)",
                       "overlap": f"not an answer (overlap below 0.03; runs differ by {agree:.4f})",
                       "disagree": f"not an answer (runs differ by {agree:.4f}, half-to-half {spread:.4f})"
                       }[why_not(pt)] + " |")
    c, (k_lo, k_hi) = u["centres"], u["kappa"]
    gaps = np.diff(c)
    stiff = f"κ = {k_lo:.3g}" if k_lo == k_hi else f"κ = {k_lo:.3g} (spacing {gaps.max():.4f}) to {k_hi:.3g} (spacing {gaps.min():.4f})"
    return ["## Umbrella sampling: which branch holds the posterior", "",
            f"{len(c)} harmonic windows on âG per point, centres {c[0]:.3f}–{c[-1]:.3f}, {stiff}, each "
            "window's bias as wide as its spacing times 1/√(stiffness); each window an HMC chain of "
            f"{u['steps']} iterations ({u['burn_in']} warm-up, the step size adapted per window) on the collapsed "
            "posterior plus its bias (research.umbrella), every point's windows run twice — started from prior "
            "draws and from the copy solution — all points in one batch, each run combined by MBAR. "
            f"Acceptance after warm-up {u['accept'][0]:.2f}–{u['accept'][1]:.2f}, {u['n_divergent']} divergent "
            f"transitions, {u['cpu_s'] / 60:.0f} CPU-minutes. ΔF < 0: the copy branch holds the posterior (its "
            "weight 1/(1 + e^ΔF)); a point's estimate stands when neighbouring windows overlap (≥ 0.03) and the "
            "two runs' means agree within twice their larger half-to-half change (≥ 0.001).", ""] + rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, nargs="+", default=[850, 900, 950])
    ap.add_argument("--md", help="write the page (e.g. docs/benchmarks/metastability.md)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--umbrella", type=int, nargs=2, metavar=("P", "SEED"), action="append",
                    help="also run umbrella windows along âG on this (P, training set), e.g. 900 0 (repeatable: "
                         "every point's windows run in one batch)")
    ap.add_argument("--windows", type=int, default=16)
    ap.add_argument("--span", type=float, nargs=2, default=(0.0, 0.09), help="range of âG the windows cover")
    ap.add_argument("--stiffness", type=float, default=4.0, help="κ in units of 1/spacing²")
    ap.add_argument("--samples", help="keep every umbrella window's âG draws in this .npz (outside docs/)")
    ap.add_argument("--dense", type=float, nargs=3, metavar=("LO", "HI", "N"),
                    help="N windows evenly over [LO, HI] replace the coarse ones there (between the branches)")
    ap.add_argument("--umbrella-steps", type=int, nargs=2, default=(1000, 200), metavar=("STEPS", "BURN_IN"))
    ap.add_argument("--study", help="a study of config/studies.yaml (e.g. L32_dk64, whose studies page lists a "
                                    "metastable point) instead of the converged study")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    log = None if a.quiet else (lambda line: print("   ", line, flush=True))
    cfg, source = load_config(a.study)
    p = action_params(cfg)
    tr = closed_form_transitions("softmax", p, cfg["theory"]["grid_n"])
    spin = (float(tr["P_spinodal_low"]), float(tr["P_spinodal_high"]))
    rows, info = [], {}
    for P in a.P:
        ch, info[P] = chains(P, cfg, log)
        rows += [dict(r, P=P) for r in per_dataset(ch, P, spin)]
    recipe = info[a.P[0]]["recipe"]
    fmt = lambda x: f"{x:.4f}"
    lines = ["| P | training set | âG prior start | âG copy start | split-R̂ of âG | ℓ̄ prior / copy start | "
             "sd of ℓ (larger) | branches | latent heat Δℓ | ladder spacing Δβ for swaps ≥ 0.2 | replicas from "
             "β = P_sp,low/P to P_sp,high/P |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        both = not r["agree"]
        lines.append(f"| {r['P']} | {r['seed']} | {fmt(r['aG_prior'])} | {fmt(r['aG_copy'])} | {r['rhat']:.2f} | "
                     f"{r['nll_prior']:.1f} / {r['nll_copy']:.1f} | {r['nll_sd']:.1f} | "
                     f"{'two (disagree)' if both else 'one (agree)'} | "
                     + (f"{r['latent_heat']:.0f} | {r.get('dbeta', math.nan):.4f} | {r.get('replicas', '–')} |"
                        if both else "– | – | – |"))
    split = [r for r in rows if not r["agree"] and r.get("latent_heat", 0) > 0]

    def span(key, f):
        lo, hi = min(r[key] for r in split), max(r[key] for r in split)
        return f(lo) if f(lo) == f(hi) else f"{f(lo)}–{f(hi)}"
    cure = ("(umbrella sampling, research.umbrella; the last section weighs the split training sets)."
            if a.umbrella else "(umbrella sampling, research.umbrella: `--umbrella P SEED` checks it).")
    answer = (f"{len(split)} of {len(rows)} (P, training set) points have their prior- and copy-started chains on "
              "different branches. " + (
                  f"Between the branches the log-likelihood differs by Δℓ = {span('latent_heat', '{:.0f}'.format)} "
                  f"nats (within a branch its standard deviation is at most {span('nll_sd', '{:.0f}'.format)}), so "
                  f"replica exchange in β needs neighbours within Δβ ≈ {span('dbeta', '{:.4f}'.format)} and a ladder "
                  f"of {span('replicas', str)} replicas per training "
                  "set across the closed form's spinodals: tempering in the likelihood is not a practical cure "
                  "here (the latent heat is extensive in N = P·L). What would be: a bias along the order "
                  "parameter âG itself " + cure
                  if split else "No training set is split between branches at these P: nothing for tempering to cure."))
    umb = []
    if a.umbrella:
        dense = (a.dense[0], a.dense[1], int(a.dense[2])) if a.dense else None
        u = umbrella([tuple(x) for x in a.umbrella], tuple(a.span), a.windows, a.stiffness, dense,
                     *a.umbrella_steps, cfg, log, samples=a.samples)
        umb = [""] + umbrella_lines(u, {(r["P"], r["seed"]): r for r in rows})
        answer = umbrella_answer(u) + " " + answer
    print(answer)
    print("\n".join(lines + umb))
    if a.md:
        cpu = cpu_name()
        head = ["# Metastability at the softmax jump: which branch holds the posterior, and the latent heat "
                "between them", "",
                answer, "",
                f"Written by `python src/research/benchmarks/metastability.py {' '.join(argv if argv is not None else sys.argv[1:])}` "
                f"({stamp()}). The "
                f"HMC chains of {source} (recipes hmc and hmc_copy: {recipe.steps} iterations, "
                f"{recipe.burn_in} warm-up, {recipe.n_leapfrog} leapfrog steps), softmax, V = {p.V}, L = {p.L}, "
                f"d_k = {p.d_k}, σ² = {p.sigma2}; ℓ = −log p(Y | Q, K) (the readout integrated out) and âG = mP/L "
                f"at every iteration after warm-up. Closed-form spinodals P_sp,low = {spin[0]:.1f}, "
                f"P_sp,high = {spin[1]:.1f}. Acceptance after warm-up: "
                + "; ".join(f"P = {P}: " + ", ".join(f"{x:.2f}" for x in info[P]["accept"]) for P in a.P) + ".",
                "", "Swap rule: neighbours β_i < β_j exchange states with probability min(1, exp((β_j − β_i)(ℓ_j − "
                "ℓ_i))); a pooling state passing a copy state upwards needs exp(−Δβ Δℓ) ≥ 0.2, i.e. Δβ ≤ ln 5/Δℓ. "
                "A uniform ladder at that spacing from β = P_sp,low/P (below it the copy branch is gone) to "
                "β = P_sp,high/P (above it the pooling branch is gone) has the replica count of the last column; "
                "a ladder dense only near each training set's own coexistence point would need fewer, but that "
                "point differs between training sets and is what is unknown.", ""]
        write_benchmark_page(Path(a.md), head + lines + umb, "metastability",
                             {"P": a.P, "config": str(CONFIG.relative_to(ROOT)) if not a.study else str(SPEC.relative_to(ROOT)),
                              "study": a.study, "cpu": cpu,
                              "umbrella": None if not a.umbrella else {
                                  "P_seed": a.umbrella, "windows": a.windows, "span": list(a.span), "dense": a.dense,
                                  "stiffness": a.stiffness, "steps": list(a.umbrella_steps)}},
                             concern="metastability")
    return 0


if __name__ == "__main__":
    sys.exit(main())
