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
