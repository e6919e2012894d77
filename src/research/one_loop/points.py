"""The measured gaps the one-loop predictions are compared with (docs/one_loop.md): the finite-size studies'
points (docs/studies/studies.json) and a pipeline run's results JSON (docs/results.json), read into
(ActionParams per size, {(ratio, x, param): point}) — what ``research.one_loop.predict`` computes the
corrected and uncorrected posterior means at (``python -m research one-loop predict`` calls :func:`read_points`, then
``research.one_loop.predict_output.write_predictions``)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from copyhead.analysis.fits import row_error
from copyhead.config import ActionParams, load_yaml

STUDIES = ("finite_size", "finite_L")      # the finite-size studies of docs/studies/studies.json compared
# the order parameters compared per attention type (the ones the one-loop theory predicts:
# research.one_loop.posterior.PARAMS, SOFTMAX_PARAMS)
COMPARED = {"linear": ("c1", "cG"), "softmax": ("aG",)}


def study_points(studies: dict, study: str, base: dict, recipe="hmc", attention="linear"):
    """The measured gaps (``attention``: linear ĉ1, ĉG; softmax âG) of one finite-size study of
    docs/studies/studies.json (``finite_size``: d_k at L = 16; ``finite_L``: L at d_k = 2L): (ActionParams per
    size x, {(ratio, x, param): point}) with point = dict(P, experiment, error, theory (the same-dataset
    posterior mean), gap, closed (the studies' closed-form posterior mean at that P, large-deviation prior,
    for a consistency check)), measured by ``recipe``'s prior-started chains (default hmc: the reference
    posterior; the studies run no SGLD chains). ``base``: the studies' base config (g_Q, g_K, g_O, prior;
    config/studies/base.yaml)."""
    fs = studies[study]
    names = {a["x"]: a["name"] for a in fs["agreement"] if a["attention"] == attention}
    keep = COMPARED[attention]
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


def converged_points(results: dict, recipe="hmc"):
    """The measured linear gaps of one pipeline run's results JSON (docs/results.json: the converged study at
    the default size), in the form of study_points: x = d_k, ratio = P / its closed-form crossover P_ref,
    gap = ``recipe``'s chains − the same-dataset posterior mean, error = :func:`copyhead.analysis.fits.row_error` (the
    row's error and its theory error in quadrature)."""
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
        for r in rows if r["curve"] == "same_mean" and r["param"] in COMPARED["linear"]}
    return {p.d_k: p}, points


def read_points(study, studies=None, base=None, spec=None, results=None, attention="linear", recipe="hmc") -> dict:
    """Everything the one-loop predictions of ``study`` need, read from its input files: dict(params,
    points, attrs (the dataset's attributes: study, by, recipe), seeds (the runs whose training sets the
    one_loop_g variant and the per-dataset one loop use), inputs (the paths read)). ``finite_size``/``finite_L``:
    from the studies' results JSON ``studies``, their base config ``base`` and spec ``spec`` (its seeds);
    ``converged``: from the results JSON ``results`` (the seeds of its linear ``recipe`` sweep; linear only)."""
    if study == "converged":
        res = json.loads(Path(results).read_text())
        params, points = converged_points(res, recipe)
        seeds = json.loads(res["config"]["json"])["sweep"]["linear"][recipe]["seeds"]
        return {"params": params, "points": points, "seeds": list(seeds), "inputs": [results],
                "attrs": {"study": "converged", "by": "d_k", "recipe": recipe, "source": str(results)}}
    if study not in STUDIES:
        raise ValueError(f"study {study!r} is not allowed; allowed values: {[*STUDIES, 'converged']}")
    data = json.loads(Path(studies).read_text())
    params, points = study_points(data, study, load_yaml(base), recipe, attention)
    seeds = list(load_yaml(spec)["seeds"])
    return {"params": params, "points": points, "seeds": seeds, "inputs": [studies, base, spec],
            "attrs": {"study": study, "by": data[study]["by"], "recipe": recipe}}
