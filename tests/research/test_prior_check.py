"""The prior check (research.prior_check; docs/theory.md Sec. 12.3; docs/prior_check.md): the sampled projection
density of QᵀK/d_k against the exact variance-gamma density and the large-deviation rate, at d_k below and above
L, and the rank bound on the copy fraction (moved out of tests/test_phase_map.py with the code, issue 50); its
workflow (workflow/prior_check.smk) and its figure and page with their provenance records."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.special import kve

from copyhead import provenance as prov
from copyhead.provenance import sha256_file, sidecar_path
from research.cli import main
from research.prior_check.sampling import coverage, log_vg, project, projection_density, rank_samples, rates, tilt

ROOT = Path(__file__).resolve().parents[2]

# tests of the research package (src/research/prior_check): -m research
pytestmark = pytest.mark.research


def test_every_prior_check_rule_runs_one_research_command_with_its_code_fingerprint(research_rules):
    found = research_rules("workflow/prior_check.smk", "prior-check", ("prior_check", "prior_check_page"))
    assert set(found) == {"all", "prior_check", "prior_check_figure", "prior_check_page"}
    phase_map = (ROOT / "workflow/phase_map.smk").read_text()
    assert "prior_check.nc" not in phase_map and "fig_prior_check" not in phase_map and "--prior" not in phase_map


def test_the_prior_check_figure_and_page_record_their_research_concern(tmp_path, figure_sidecar):
    prior = str(ROOT / "docs/prior_check/prior_check.nc")
    png, page = tmp_path / "fig_prior_check.png", tmp_path / "prior_check.md"
    assert main(["prior-check-figure", "--prior", prior, "--out", str(png)]) == 0
    figure_sidecar(png, {"prior": prior}, concern="prior_check_page")
    assert main(["prior-check-page", "--prior", prior, "--out", str(page)]) == 0
    rec = json.loads(sidecar_path(page).read_text())
    assert rec["concern"] == "prior_check_page" and rec["code_fingerprint"] == prov.code_fingerprint("prior_check_page")
    assert {r: v["sha256"] for r, v in rec["inputs"].items()} == {"prior": sha256_file(prior)}
    text = page.read_text()
    assert text.startswith("# The prior when d_k < L, checked by sampling\n")
    assert "(prior_check/fig_prior_check.png)" in text and "[phase_map.md](phase_map.md)" in text


def test_log_vg_is_the_density_of_a_sum_of_products():
    # against scipy's Bessel K for small n, normalisation, and a direct sample of Σ ξη
    z = np.array([0.3, 1.0, 4.0])
    for n in (2, 5):
        nu = (n - 1) / 2
        ref = nu * np.log(z) + np.log(kve(nu, z)) - z - nu * np.log(2) - 0.5 * np.log(np.pi) - np.log(
            __import__("math").gamma(n / 2))
        assert np.allclose(log_vg(z, n), ref, rtol=0, atol=1e-9)
    grid = np.linspace(-40, 40, 2001)
    assert abs(np.trapezoid(np.exp(log_vg(grid, 6)), grid) - 1) < 1e-6
    rng = np.random.default_rng(1)
    s = np.sum(rng.standard_normal((200000, 6)) * rng.standard_normal((200000, 6)), axis=1)
    counts, edges = np.histogram(s, bins=np.linspace(-6, 6, 13))
    fine = np.linspace(-6, 6, 1201)
    dens = np.exp(log_vg(fine, 6))
    prob = [np.trapezoid(dens[(fine >= a) & (fine <= b)], fine[(fine >= a) & (fine <= b)]) for a, b in
            zip(edges[:-1], edges[1:])]
    assert np.allclose(counts / len(s), prob, rtol=0.04)


def test_tilted_draws_have_the_requested_projection():
    rng = np.random.default_rng(2)
    M, _, _, _ = rank_samples(0.7, 1.3, 8, 16, 4000, rng)
    x, mP = project(M)
    assert abs(x.mean() - 0.7) < 0.02 and abs(mP.mean() - 1.3) < 0.01
    assert np.allclose(tilt(1.3) / (1 - tilt(1.3) ** 2), 1.3)


@pytest.mark.parametrize("d_k", [4, 32])   # d_k < L and d_k > L
def test_sampled_projection_density_matches_exact_and_the_rate_error_is_measured(d_k):
    L = 8
    rng = np.random.default_rng(3)
    pts = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [2.0, 0.0]])
    mc, se = projection_density(pts, L, d_k, 6000, rng)
    r = rates(pts, L, d_k)
    rel = lambda a: a[1:] - a[0]
    # brute-force sampling agrees with the exact product of variance-gamma densities at any d_k
    assert np.max(np.abs(rel(mc) - rel(r["exact"]))) < 0.35
    # the large-deviation rate is off by the Cramér prefactor: a few nats, shrinking relative to the rate
    err = np.abs(rel(r["large_deviation"]) - rel(mc))
    assert np.max(err) < 3.5
    assert np.max(err / rel(mc)) < (0.4 if d_k == 4 else 0.06)
    # the Gaussian prior is off by far more on the copy line (its rate grows as mP², not |mP|)
    assert rel(r["gaussian"])[1] - rel(mc)[1] > 10 * err[1]


def test_rank_bound_on_the_copy_fraction():
    L, d_k = 12, 3
    rng = np.random.default_rng(4)
    M, _, _, _ = rank_samples(2.0, 2.0, L, d_k, 300, rng)
    Pi = np.eye(L) - np.ones((L, L)) / L
    frac = np.einsum("nab,ba->n", M, Pi) ** 2 / ((L - 1) * np.sum(M**2, axis=(1, 2)))
    assert np.all(frac <= d_k / (L - 1) + 1e-12)
    assert np.all(coverage(M) < 0.5)            # most of the norm is off span{J, I}
    big = rank_samples(2.0, 2.0, L, 256, 50, rng)[0]
    assert coverage(big).mean() > 0.8           # at d_k ≫ L the draws are close to the plane
