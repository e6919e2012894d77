"""Statistics of an aggregate dataset (dims ``optimizer, P, seed``; copyhead.aggregate) for the figures.

The figures plot the aggregate's ``<var>_mean`` / ``<var>_sem`` (the definition of
:func:`copyhead.analysis.stats.mean_sem`) and use :func:`~copyhead.analysis.stats.seed_mean_sem` only for
quantities the aggregate does not store (e.g. :func:`theory_pattern_cosine`). The experimental transition
points are the results model's (:mod:`copyhead.analysis.summary`), one estimator per kind.
"""
from __future__ import annotations

import json

import numpy as np


def sequence_length(ds) -> int:
    """L of a run, aggregate or theory dataset: from its config, else from its attention matrix."""
    cfg = json.loads(ds.attrs.get("config_json", "{}"))
    if "task" in cfg:
        return int(cfg["task"]["L"])
    return int(ds.sizes["query"])


def ok_runs(ag, var: str):
    """``ag[var]`` with every run whose status is not "ok" (diverged, absent) set to NaN."""
    return ag[var].where(ag["status"] == "ok")


def theory_pattern_cosine(ag, th):
    """cos(Ā, A_th) per (optimizer, P, seed): Frobenius cosine between the learned mean attention and the
    theory's predicted pattern A_th = (m1 J + mP I)/L at the nearest theory P (closed-form saddle).
    NaN where the theory predicts A_th = 0 (linear attention before the onset)."""
    L = sequence_length(ag)
    Pth = th["P"].values
    A = ok_runs(ag, "attention").values  # (optimizer, P, seed, query, key)
    out = np.full(A.shape[:3], np.nan)
    I, J = np.eye(L), np.ones((L, L))
    for j, P in enumerate(ag["P"].values):
        k = int(np.argmin(np.abs(np.log(Pth) - np.log(P))))
        At = (float(th["m1_saddle"][k]) * J + float(th["mP_saddle"][k]) * I) / L
        nt = np.linalg.norm(At)
        if nt < 1e-12:
            continue
        a = A[:, j]
        out[:, j] = np.einsum("osqk,qk->os", a, At) / (np.linalg.norm(a, axis=(-2, -1)) * nt)
    return ag["c1"].copy(data=out)


def posterior(ag, optimizer: str, P=None):
    """The SGLD samples of one recipe as the posterior group ArviZ reads: every ``<var>_sample`` of the
    aggregate renamed to ``<var>`` with dims ``chain`` (the seeds: independent chains, each its own dataset
    and noise stream) and ``draw`` (the recorded samples, burn-in removed), e.g.
    ``arviz_stats.summary(posterior(ag, "sgld", P=16), kind="diagnostics")``. With ``P`` the chains
    that are not ok (diverged, absent, left out) are dropped; without it they are NaN (their P get NaN
    diagnostics). Draws that no kept chain has (a shorter recipe in the same aggregate) are cut."""
    names = [v for v in ag.data_vars if v.endswith("_sample")]
    if not names or "sample" not in ag.dims:
        raise ValueError(f"the aggregate has no SGLD samples (no <var>_sample variables) for {optimizer!r}")
    sel = ag.sel(optimizer=optimizer) if P is None else ag.sel(optimizer=optimizer, P=P)
    ok = sel["status"] == "ok"
    post = sel[names].where(ok)
    if P is not None:
        post = post.isel(seed=np.flatnonzero(ok.values))
    post = post.rename({v: v[:-len("_sample")] for v in names}).rename({"seed": "chain", "sample": "draw"})
    have = np.isfinite(post[names[0][:-len("_sample")]]).any([d for d in post.dims if d != "draw"]).values
    post = post.isel(draw=slice(0, int(have.nonzero()[0][-1]) + 1 if have.any() else 0))
    post.attrs = {"optimizer": optimizer, "source": "copyhead.analysis.posterior of an aggregate"}
    return post.drop_vars([c for c in ("optimizer", "P") if c in post.coords and c not in post.dims])
