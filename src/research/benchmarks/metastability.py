"""Why tempering in the likelihood does not mix the softmax jump: the latent heat between its two branches.

    python src/research/benchmarks/metastability.py [--P 12 16 20] [--md docs/benchmarks/metastability.md]

At the converged study's size (config/converged.yaml: V = 16, L = d_k = 32, σ² = 0.1, softmax) and at
each P given, the reference sampler runs exactly the converged study's HMC chains (recipes ``hmc`` and
``hmc_copy``: same training sets, initial states, per-chain streams and kernel as ``copyhead train``),
a prior- and a copy-started chain on each training set, and records after warm-up at every iteration the
collapsed negative log-likelihood ℓ = −log p(Y | Q, K) and âG = mP/L. Per training set it reports
whether the two chains agree (split-R̂ of âG across them ≤ 1.05; docs/results.md judges at 1.01) and, where
they sit on different branches (pooling and copy), the latent heat Δℓ = ℓ̄(pooling) − ℓ̄(copy) and each
branch's spread of ℓ.

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
from research.umbrella import mbar, run_windows, windows  # noqa: E402

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


def umbrella(P: int, seed: int, n_windows: int, span: tuple[float, float], stiffness: float, steps: int,
             burn_in: int, cfg: dict, log) -> dict:
    """Umbrella windows along âG on one training set (the converged study's data of ``seed`` at P), run
    twice in one batch: from prior draws and from the copy solution (the recipes' own initial states).
    Each run is combined by MBAR; their agreement is the check that the windows equilibrated. Returns the
    MBAR posterior mean of âG, the weight of âG > the midpoint of ``span`` (the copy branch), the smallest
    neighbour overlap and the acceptance, per start and for both runs pooled."""
    rcs = {init: RunConfig.from_dict(cfgmod.run_config(cfg, "softmax", name))
           for init, name in (("prior", "hmc"), ("copy", "hmc_copy"))}
    rc, task = rcs["prior"], rcs["prior"].task
    K = n_windows
    model = CopyAttention([make_data(seed, task.V, task.L, P, task.n_test)] * (2 * K), "softmax", rc.model,
                          torch.float64, "cpu")
    post = CollapsedPosterior(model)
    centres, kappa = windows(span[0], span[1], K)
    kappa = kappa * stiffness
    q0, gens = [], []
    for j, init in enumerate(("prior", "copy")):
        r = rcs[init].recipe
        for k in range(K):
            ss = np.random.SeedSequence(hmc_seed(seed, init, "sampler"), spawn_key=(1000 + k,))  # own streams
            gen = torch.Generator().manual_seed(int(ss.generate_state(1, np.uint64)[0] & 0x7FFF_FFFF_FFFF_FFFF))
            th = (model.init_copy(gen, r.copy_beta, chain=j * K + k) if init == "copy"
                  else model.init_prior(gen, r.init_scale))
            q0.append(th[:post.n_qk])
            gens.append(gen)
    t0 = time.process_time()
    res = run_windows(post, torch.stack(q0), np.tile(centres, 2), np.tile(kappa, 2), gens, steps=steps,
                      burn_in=burn_in, n_leapfrog=rc.recipe.n_leapfrog, step_size=rc.recipe.step_size,
                      target_accept=rc.recipe.target_accept, log=log)
    cpu = time.process_time() - t0
    threshold = 0.5 * (span[0] + span[1])
    out = {"P": P, "seed": seed, "centres": centres, "kappa": float(kappa[0]), "threshold": threshold,
           "cpu_s": cpu, "steps": steps, "burn_in": burn_in}
    x = res["s"]
    for name, rows, c, k in (("prior", x[:K], centres, kappa), ("copy", x[K:], centres, kappa),
                             ("both", x, np.tile(centres, 2), np.tile(kappa, 2))):
        fit = mbar(list(rows), c, k)
        half = rows.shape[1] // 2
        halves = [mbar(list(rows[:, :half]), c, k).mean(), mbar(list(rows[:, half:]), c, k).mean()]
        out[name] = {"mean": fit.mean(), "halves": halves, "copy_weight": fit.weight_above(threshold),
                     "overlap": fit.overlap}
    out["accept"] = (float(res["accept"].min()), float(res["accept"].max()))
    out["n_divergent"] = int(res["n_divergent"].sum())
    return out


def umbrella_lines(u: dict) -> list[str]:
    """The umbrella check's paragraph and table for the page."""
    f4 = lambda x: f"{x:.4f}"
    rows = ["| windows started from | MBAR posterior mean of âG | first half / second half | weight of âG > "
            f"{u['threshold']:.3f} (copy branch) | smallest neighbour overlap |", "|---|---|---|---|---|"]
    for name, label in (("prior", "prior draws"), ("copy", "the copy solution"), ("both", "both (pooled)")):
        r = u[name]
        rows.append(f"| {label} | {f4(r['mean'])} | {f4(r['halves'][0])} / {f4(r['halves'][1])} | "
                    f"{r['copy_weight']:.3f} | {r['overlap']:.3f} |")
    agree = abs(u["prior"]["mean"] - u["copy"]["mean"])
    spread = max(abs(r["halves"][0] - r["halves"][1]) for r in (u["prior"], u["copy"]))
    ok = min(u[n]["overlap"] for n in ("prior", "copy")) >= 0.03 and agree <= 2 * max(spread, 1e-3)
    verdict = ("The two runs agree (difference {:.4f}, within twice the larger half-to-half change {:.4f}) and "
               "neighbouring windows overlap: the umbrella estimate stands.".format(agree, spread) if ok else
               "The two runs differ by {:.4f} (half-to-half change up to {:.4f}) or neighbouring windows do not "
               "overlap (≥ 0.03 needed): the windows have not equilibrated along the directions orthogonal to "
               "âG, and the umbrella estimate is not an answer at this length.".format(agree, spread))
    c = u["centres"]
    return ["## Umbrella sampling across the split training set", "",
            f"P = {u['P']}, training set {u['seed']}: {len(c)} harmonic windows on âG, centres {c[0]:.3f}–"
            f"{c[-1]:.3f} (spacing {c[1] - c[0]:.4f}), stiffness κ = {u['kappa']:.3g}; each window an HMC chain of "
            f"{u['steps']} iterations ({u['burn_in']} warm-up, the step size adapted per window) on the collapsed "
            "posterior plus its bias (research.umbrella), the windows run twice in one batch — started from prior "
            "draws and from the copy solution — and each run combined by MBAR. Acceptance after warm-up "
            f"{u['accept'][0]:.2f}–{u['accept'][1]:.2f}, {u['n_divergent']} divergent transitions, "
            f"{u['cpu_s'] / 60:.0f} CPU-minutes. {verdict}", ""] + rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, nargs="+", default=[12, 16, 20])
    ap.add_argument("--md", help="write the page (e.g. docs/benchmarks/metastability.md)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--umbrella", type=int, nargs=2, metavar=("P", "SEED"),
                    help="also run umbrella windows along âG on this (P, training set), e.g. 16 2")
    ap.add_argument("--windows", type=int, default=16)
    ap.add_argument("--span", type=float, nargs=2, default=(0.0, 0.09), help="range of âG the windows cover")
    ap.add_argument("--stiffness", type=float, default=4.0, help="κ in units of 1/spacing²")
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
    cure = ("(umbrella sampling, research.umbrella; the last section checks it on a split training set)."
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
    print(answer)
    print("\n".join(lines))
    umb = []
    if a.umbrella:
        u = umbrella(a.umbrella[0], a.umbrella[1], a.windows, tuple(a.span), a.stiffness, *a.umbrella_steps, cfg, log)
        umb = [""] + umbrella_lines(u)
        print("\n".join(umb))
    if a.md:
        cpu = cpu_name()
        head = ["# Metastability at the softmax jump: the latent heat between the branches", "",
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
                                  "P_seed": a.umbrella, "windows": a.windows, "span": list(a.span),
                                  "stiffness": a.stiffness, "steps": list(a.umbrella_steps)}},
                             concern="metastability")
    return 0


if __name__ == "__main__":
    sys.exit(main())
