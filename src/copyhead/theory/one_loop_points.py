"""The measured gaps the one-loop predictions are compared with (docs/one_loop.md, issue 21 item 4): the
finite-size studies' points (docs/studies/studies.json) and a pipeline run's results JSON (docs/results.json),
read into (ActionParams per size, {(ratio, x, param): point})."""
from __future__ import annotations

import numpy as np

from copyhead.config import ActionParams

PARAMS = ("c1", "cG")         # the linear order parameters compared
SOFTMAX_PARAMS = ("aG",)      # the softmax one (mP/L)


def study_points(studies: dict, study: str, base: dict, recipe="sgld", attention="linear"):
    """The measured gaps (``attention``: linear ĉ1, ĉG; softmax âG) of one finite-size study of
    docs/studies/studies.json (``finite_size``: d_k at L = 16; ``finite_L``: L at d_k = 2L): (ActionParams per size x, {(ratio, x, param): point}) with
    point = dict(P, experiment, error, theory (the same-dataset posterior mean), gap, closed (the studies'
    closed-form posterior mean at that P, large-deviation prior, for a consistency check)).
    ``base``: the studies' base config (g_Q, g_K, g_O, prior; config/studies/base.yaml)."""
    fs = studies[study]
    names = {a["x"]: a["name"] for a in fs["agreement"] if a["attention"] == attention}
    keep = PARAMS if attention == "linear" else SOFTMAX_PARAMS
    by_name = {s["name"]: s for s in studies["studies"]}
    m, prior = base["model"], base["theory"]["prior"]
    params, closed = {}, {}
    for x, name in names.items():
        s = by_name[name]
        params[x] = ActionParams(V=s["V"], L=s["L"], d_k=s["d_k"], g_Q=m["g_Q"], g_K=m["g_K"], g_O=m["g_O"],
                                 sigma2=s["sigma2"], prior=prior)
        for r in s["attentions"][attention]["rows"]:
            if r["curve"] == "closed_mean" and r["recipe"] == recipe:
                closed[(x, float(r["P"]), r["param"])] = r["theory"]
    points = {}
    for g in fs["gaps"]:
        if g["attention"] != attention or g["recipe"] != recipe or g["param"] not in keep:
            continue
        for q in g["points"]:
            points[(float(g["ratio"]), q["x"], g["param"])] = {
                "P": float(q["P"]), "experiment": q["experiment"], "error": q["error"], "theory": q["theory"],
                "gap": q["gap"], "closed": closed.get((q["x"], float(q["P"]), g["param"]), np.nan)}
    return params, points


def converged_points(results: dict, recipe="sgld"):
    """The measured linear gaps of one pipeline run's results JSON (docs/results.json: the converged study at
    the default size), in the form of study_points: x = d_k, ratio = P / its closed-form crossover P_ref,
    gap = SGLD − the same-dataset posterior mean, error = the row's error and its theory error in quadrature
    (the definition of copyhead.analysis.fits.row_error; the theory package does not import the analysis)."""
    import json
    import math

    def row_error(r):
        return math.hypot(r["error"] if r["error"] is not None else math.nan, r.get("theory_error") or 0.0)
    cfg = json.loads(results["config"]["json"])
    lin = results["attentions"]["linear"]
    m, t = cfg["model"], cfg["task"]
    p = ActionParams(V=t["V"], L=t["L"], d_k=m["d_k"], g_Q=m["g_Q"], g_K=m["g_K"], g_O=m["g_O"],
                     sigma2=m["sigma2"], prior=cfg["theory"]["prior"])
    P_ref = float(lin["theory"]["P_crossover"])
    rows = [r for r in lin["agreement"] if r.get("recipe") == recipe]
    closed = {(float(r["P"]), r["param"]): r["theory"] for r in rows if r["curve"] == "closed_mean"}
    points = {(float(r["P"]) / P_ref, p.d_k, r["param"]): {
        "P": float(r["P"]), "experiment": r["experiment"], "error": row_error(r), "theory": r["theory"],
        "gap": r["experiment"] - r["theory"], "closed": closed.get((float(r["P"]), r["param"]), np.nan)}
        for r in rows if r["curve"] == "same_mean" and r["param"] in PARAMS}
    return {p.d_k: p}, points
