"""research/benchmarks/metastability.py: what it reads off its chains (the latent heat between the branches
and the replica ladder tempering would need)."""
import math

import numpy as np
import pytest

pytestmark = pytest.mark.research


def test_the_metastability_measurement_reads_the_latent_heat_and_the_ladder_it_needs(research_script):
    """research/benchmarks/metastability.py: a training set whose two starts sit on different branches gets the
    latent heat Δℓ = ℓ̄(pooling) − ℓ̄(copy) and a ladder spacing ln 5/Δℓ over the spinodals' β range; one
    whose chains agree gets neither."""
    mod = research_script("metastability")
    rng = np.random.default_rng(0)
    n = 400
    pool = lambda: {"aG": 0.007 + 0.001 * rng.standard_normal(n), "nll": 670 + 10 * rng.standard_normal(n)}
    copy = {"aG": 0.064 + 0.002 * rng.standard_normal(n), "nll": 170 + 20 * rng.standard_normal(n)}
    ch = {(s, i): pool() for s in mod.SEEDS for i in ("prior", "copy")}
    ch[(2, "copy")] = copy
    rows = mod.per_dataset(ch, 16, (11.0, 22.0))
    split = [r for r in rows if not r["agree"]]
    assert [r["seed"] for r in split] == [2] and all(r["rhat"] < 1.05 for r in rows if r["agree"])
    r = split[0]
    assert r["latent_heat"] == pytest.approx(500, abs=3)
    assert r["dbeta"] == pytest.approx(math.log(5) / r["latent_heat"])
    assert r["replicas"] == math.ceil((22 - 11) / 16 / r["dbeta"]) + 1
    assert not any("latent_heat" in x for x in rows if x["agree"])


def test_a_metastable_study_point_is_weighed_on_the_study_s_own_config(research_script):
    """--study NAME: the chains and the umbrella windows run on the study's config as config/studies.yaml
    generates it (its L, d_k and HMC recipe), so a point a studies page lists as metastable is weighed on the
    study's own training sets; a short run returns finite MBAR estimates inside the windows' span."""
    import copy
    mod = research_script("metastability")
    cfg, source = mod.load_config("L16_dk16")
    assert source == "study L16_dk16 of config/studies.yaml"
    assert (cfg["task"]["L"], cfg["model"]["d_k"], cfg["optimizers"]["hmc"]["n_leapfrog"]) == (16, 16, 8)
    assert mod.load_config(None)[1] == "config/converged.yaml"
    short = copy.deepcopy(cfg)
    for r in ("hmc", "hmc_copy"):
        short["optimizers"][r].update(steps=30, burn_in=10)
    ch, info = mod.chains(12, short, None)
    assert len(ch) == 8 and all(v["aG"].shape == (20,) and np.isfinite(v["nll"]).all() for v in ch.values())
    u = mod.umbrella([(12, 0), (14, 1)], (0.0, 0.2), 4, 4.0, (0.05, 0.15, 3), 40, 10, short, None)
    assert len(u["centres"]) == 5 and [(pt["P"], pt["seed"]) for pt in u["points"]] == [(12, 0), (14, 1)]
    for pt in u["points"]:
        for name in ("prior", "copy", "both"):
            r = pt[name]
            assert 0.0 <= r["mean"] <= 0.25 and 0.0 <= r["copy_weight"] <= 1.0
            # ΔF and the copy branch's weight are one number said two ways
            assert r["copy_weight"] == pytest.approx(1 / (1 + math.exp(r["dF"])), abs=1e-9)
    failed = {"mean": math.nan, "halves": [math.nan] * 2, "dF": math.nan, "dF_halves": [math.nan] * 2,
              "copy_weight": math.nan, "overlap": 0.0, "converged": False}
    lost = {"points": [{"P": 9, "seed": 0, **{n: failed for n in ("prior", "copy", "both")}}]}
    assert "MBAR has no solution" in mod.umbrella_answer(lost) and mod.settled(lost["points"][0])[0] is False
    lines = mod.umbrella_lines(u, {})
    assert sum(line.startswith("| 1") for line in lines) == 2
    assert mod.umbrella_answer(u).count("P = ") == 2
