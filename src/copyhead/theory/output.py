"""The theory product: one netCDF file per attention type (docs/theory.md, "Output file").

``compute_theory`` builds the xarray Dataset (closed-form predictions on the dense P grid with the
configured prior and, cheaply, the other prior; the exact dataset-averaged predictions at the configured
P; landscapes; the transition table; transition points vs L). ``write_theory`` adds the provenance
attributes and writes it atomically; it is what ``copyhead theory`` calls. ``write_same_dataset_theory``
does the same for the same-dataset theory (``copyhead.theory.same_dataset``); it is what ``copyhead
theory-datasets`` calls.
"""
from __future__ import annotations

import json
import pathlib
import time

import numpy as np
import xarray as xr

from copyhead.config import TheoryParams, theory_params
from copyhead.provenance import provenance_attrs, write_dataset

from .action import ExactAverage
from .prior import PRIORS
from .ranges import auto_landscape_P, exact_P_grid, family, make_model, theory_grid
from .scaling import scaling
from .same_dataset import same_dataset_theory
from .scan import analyse, landscape, scan
from .transitions import TRANSITION_KEYS

SEQ = "sequences"
TR_LONG = {"P_onset": "second-order onset: Hessian of S at the origin loses positivity (Eq. 19)",
           "P_crossover": "crossover: cG of the global minimiser overtakes c1 (Eq. 20)",
           "P_fastest_growth": "P where dcG/dP of the global minimiser is largest (Eq. 20)",
           "P_star": "first-order point: global minimum switches branch (Eq. 21)",
           "P_spinodal_low": "lower spinodal: the high-P branch stops being a local minimum (Eq. 21)",
           "P_spinodal_high": "upper spinodal: the low-P branch stops being a local minimum (Eq. 21)"}


def _jsonable(o):
    if isinstance(o, dict):
        return {k: _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, (float, np.floating)):
        return None if not np.isfinite(o) else float(o)
    if isinstance(o, np.integer):
        return int(o)
    return o


def _curve_vars(ds, attention, dim, op, sc, suffix, label, sd=None):
    """Saddle / mean / action_min variables of one prediction curve."""
    fam = family(attention)
    names = {"c1": "pooling order parameter c1 = m1 + mP/L",
             "cG": "copy order parameter cG = mP sqrt(L-1)/L",
             "m1": "coefficient m1 of A = (m1 J + mP I)/L" + fam.coefficient_note,
             "mP": "coefficient mP of A = (m1 J + mP I)/L" + fam.coefficient_note,
             "beta": "softmax copy logit beta (scores beta delta_ab; uniform score is a gauge)"}
    for k in fam.variables:
        ds[f"{k}_saddle{suffix}"] = (dim, np.asarray(op[k], float),
                                     {"long_name": f"{names[k]}, global minimiser of S ({label})", "units": "1"})
        ds[f"{k}_mean{suffix}"] = (dim, np.asarray(sc["mean"][k], float),
                                   {"long_name": f"{names[k]}, posterior mean over exp(-S) ({label})",
                                    "units": "1"})
        if sd is not None:
            ds[f"{k}_saddle{suffix}_sd"] = (dim, np.asarray(sd[k], float),
                                            {"long_name": f"{names[k]}: sd across datasets of the "
                                                          f"per-dataset global minimiser ({label})",
                                             "units": "1"})
    ds[f"action_min{suffix}"] = (dim, np.asarray(sc["S_min"], float),
                                 {"long_name": f"minimum of the action S = -ln p(Y|m) - ln p(m) + const "
                                               f"({label})", "units": "1"})


def refined(grid_n: int, factor: int) -> int:
    """The grid size with ``factor`` times finer spacing over the same range (same end points)."""
    return factor * (grid_n - 1) + 1


def _grid_error_vars(ds, attention, dim, coarse: dict, fine: dict, suffix, label, fine_n):
    """``{k}_{kind}{suffix}_grid_err``: |value on the configured grid − value on the ``fine_n`` grid| of the
    minimiser (saddle) and the posterior mean: the theory's own numerical error at each P, which the
    agreement adds to the theory's error and checks against the experimental error (docs/theory.md)."""
    for kind in ("saddle", "mean"):
        for k in family(attention).variables:
            if k not in coarse[kind] or k not in fine[kind]:
                continue
            d = np.abs(np.asarray(coarse[kind][k], float) - np.asarray(fine[kind][k], float))
            ds[f"{k}_{kind}{suffix}_grid_err"] = (dim, d, {
                "long_name": f"grid error of {k} ({kind}, {label}): |value at grid_n − value at {fine_n}|",
                "units": "1"})


def _transition_vars(ds, tr, suffix, label):
    for k in TRANSITION_KEYS:
        ds[k + suffix] = ((), float(tr[k]), {"long_name": f"{TR_LONG[k]} ({label}); NaN: not applicable",
                                             "units": SEQ})
    ds["onset_direction" + suffix] = ("component", np.asarray(tr["onset_direction"], float),
                                      {"long_name": f"unstable direction (c1, cG) at the onset, unit norm, "
                                                    f"c1 >= 0 ({label})", "units": "1"})


def compute_theory(th: TheoryParams, attention: str, log=print) -> xr.Dataset:
    """All theory predictions for one attention type as an xarray Dataset (no provenance attrs)."""
    fam = family(attention)          # ValueError for a name that is not an attention variant
    t0 = time.perf_counter()
    p = th.action
    prior = p.prior
    other = [q for q in PRIORS if q != prior][0]
    po = p.replace(prior=other)
    grid_n = th.grid_n
    P = np.geomspace(th.P_min, th.P_max, th.n_P)
    ex = th.exact
    P_exact = list(ex.P)
    n_ds = ex.n_datasets
    do_exact = ex.enabled
    P_ref, ranges = theory_grid(th, attention)    # one grid for both priors (exact statistics shared)
    model = make_model(attention, p, grid_n, P_ref, ranges=ranges)
    sc, op, tr = analyse(model, P)
    if sc["boundary_hits"]:
        log(f"theory {attention}: warning: the global minimum is on the grid boundary at "
            f"{sc['boundary_hits']} P values (grid range {ranges})")
    lP = list(th.landscape_P.of(attention)) or auto_landscape_P(attention, tr, P)
    land = landscape(model, lP)
    sc_o, op_o, tr_o = analyse(make_model(attention, po, grid_n, P_ref, ranges=ranges), P)
    log(f"theory {attention}: closed form done in {time.perf_counter() - t0:.1f} s")

    ds = xr.Dataset(coords={
        "P": ("P", P, {"long_name": "training-set size P (dense log-spaced grid)", "units": SEQ}),
        "component": ("component", np.array(["c1", "cG"]), {"long_name": "order-parameter component"}),
        "landscape_P": ("landscape_P", np.asarray(lP, float),
                        {"long_name": "P of the action landscapes (closed form)", "units": SEQ})})
    lab = f"closed form (equivalent kernel), {prior} prior"
    _curve_vars(ds, attention, "P", op, sc, "", lab)
    _curve_vars(ds, attention, "P", op_o, sc_o, f"_{other}", f"closed form (equivalent kernel), {other} prior")
    _transition_vars(ds, tr, "", lab)
    fine_n = refined(grid_n, 4)
    sc_f, op_f, _ = analyse(make_model(attention, p, fine_n, P_ref, ranges=ranges), P)
    _grid_error_vars(ds, attention, "P", {"saddle": op, "mean": sc["mean"]}, {"saddle": op_f, "mean": sc_f["mean"]},
                     "", lab, fine_n)
    _transition_vars(ds, tr_o, f"_{other}", f"closed form, {other} prior")
    ds = ds.assign_coords({name: (name, axis, {"long_name": long_name, "units": "1"})
                           for (name, long_name), axis in zip(fam.grid_coords, model.axes)})
    ldims = ("landscape_P",) + tuple(name for name, _ in fam.grid_coords)
    ds["action_landscape"] = (ldims, land, {"long_name": f"S - min S at each landscape P ({lab})",
                                            "units": "1"})
    attrs = {"attention": attention, "prior": prior, "other_prior": other,
             "transitions_json": json.dumps(_jsonable(tr["transitions"])),
             f"transitions_{other}_json": json.dumps(_jsonable(tr_o["transitions"])),
             "posterior_mean_measure": fam.mean_measure,
             "grid_range": json.dumps(_jsonable(list(np.atleast_1d(ranges)))),
             "grid_n": grid_n, "grid_boundary_hits": int(sc["boundary_hits"] + sc_o["boundary_hits"]),
             "docs": "docs/theory.md"}

    if do_exact:
        t1 = time.perf_counter()
        exact = ExactAverage(p, n_ds, max(P_exact), ex.seed)
        Pg = exact_P_grid(P_exact)
        sel = np.searchsorted(Pg, np.asarray(P_exact, float))
        assert np.array_equal(Pg[sel], P_exact), "exact_P_grid must contain every configured P"
        all_integers = len(Pg) == Pg[-1] - Pg[0] + 1
        grid_words = "" if all_integers else f"{len(Pg)} log-spaced (configured P included) "
        ds = ds.assign_coords(P_exact=("P_exact", np.asarray(P_exact, float),
                                       {"long_name": "P of the exact dataset-averaged action", "units": SEQ}))
        for pr, suffix in ((p, "_exact"), (po, f"_exact_{other}")):
            m = make_model(attention, pr, grid_n, P_ref, exact=exact, ranges=ranges)
            sce, ope, tre = analyse(m, Pg, continuous=False, per_dataset=True, keep=P_exact)
            sub = {"mean": {k: v[sel] for k, v in sce["mean"].items()}, "S_min": sce["S_min"][sel]}
            # sd of the per-dataset minimiser, mapped through the same order-parameter functions
            sd = m.order_params_sd(sce["x"][sel], sce["x_sd"][sel])
            lbl = f"exact action averaged over {n_ds} nested datasets, {pr.prior} prior"
            _curve_vars(ds, attention, "P_exact", {k: v[sel] for k, v in ope.items()}, sub, suffix, lbl, sd)
            _transition_vars(ds, tre, suffix, lbl + f", transitions on {grid_words}integer P in "
                                                    f"[{int(Pg[0])}, {int(Pg[-1])}]")
            attrs[f"transitions{suffix}_json"] = json.dumps(_jsonable(tre["transitions"]))
            if pr is p:   # its grid error: the same average on a twice finer grid
                mf = make_model(attention, pr, refined(grid_n, 2), P_ref, exact=exact, ranges=ranges)
                scf = scan(mf, Pg)
                opf = mf.order_params(scf["x"])
                _grid_error_vars(ds, attention, "P_exact", {"saddle": {k: v[sel] for k, v in ope.items()},
                                                            "mean": sub["mean"]},
                                 {"saddle": {k: v[sel] for k, v in opf.items()},
                                  "mean": {k: v[sel] for k, v in scf["mean"].items()}},
                                 suffix, lbl, refined(grid_n, 2))
                ds["action_landscape_exact"] = ((("P_exact",) + ldims[1:]),
                                                 np.array([sce["landscapes"][float(x)] for x in P_exact]),
                                                 {"long_name": f"S - min S at each P_exact ({lbl})",
                                                  "units": "1"})
        attrs.update({"exact_n_datasets": n_ds, "exact_seed": ex.seed,
                      "exact_data": "uncentred one-hot copy-task data, numpy SeedSequence(seed).spawn(n), "
                                    "nested in P (copyhead.theory.data)"})
        log(f"theory {attention}: exact average done in {time.perf_counter() - t1:.1f} s")

    t2 = time.perf_counter()
    for name, unit in (("L", "1"), ("V", "1"), ("d_k", "1")):   # V, d_k: optional keys (docs Sec. 6)
        vals = getattr(th.scaling, name)
        if not vals:
            continue
        sl = scaling(p, attention, grid_n=grid_n, **{name: vals})[name]
        ds = ds.assign_coords({f"scaling_{name}": (f"scaling_{name}", np.asarray(vals, float),
                                                   {"long_name": f"{name} of the scaling study", "units": unit})})
        for k in ("P_onset", "P_crossover", "P_star", "P_spinodal_low", "P_spinodal_high"):
            ds[f"{k}_vs_{name}"] = (f"scaling_{name}", np.asarray(sl[k], float),
                                    {"long_name": f"{TR_LONG[k]} vs {name} (closed form, {prior} prior; other "
                                                  "parameters from the config); NaN: not applicable",
                                     "units": SEQ})
        log(f"theory {attention}: scaling vs {name} done in {time.perf_counter() - t2:.1f} s")
    attrs["compute_seconds"] = round(time.perf_counter() - t0, 2)
    ds.attrs.update(attrs)
    return ds


def write_theory(theory_cfg: dict, attention: str, out: pathlib.Path) -> xr.Dataset:
    """Compute the theory for one attention type and write it atomically with provenance attributes
    (``theory_cfg``: ``config.theory_config(cfg)``, recorded as the product's config)."""
    ds = compute_theory(theory_params(theory_cfg), attention)
    prov = provenance_attrs("theory", theory_cfg,
                            title=f"copyhead theory: {attention} attention, order-parameter predictions vs P")
    ds.attrs.update(prov)
    write_dataset(ds, pathlib.Path(out))
    return ds


def write_same_dataset_theory(th_cfg: dict, attention: str, pairs: list[tuple[int, int]],
                              out: pathlib.Path) -> xr.Dataset:
    """Same-dataset theory for one attention type and the runs' (P, seed) ``pairs``, written atomically
    with provenance attributes (kind ``theory_datasets``) to ``out``
    (results/theory/{attention}_datasets.nc). ``th_cfg``: ``config.theory_config(cfg)``."""
    th = theory_params(th_cfg)
    ds = same_dataset_theory(th, attention, pairs)
    effective = dict(th_cfg, same_dataset={"attention": attention, "pairs": json.loads(ds.attrs["pairs_json"])})
    ds.attrs.update(provenance_attrs(
        "theory_datasets", effective,
        title=f"copyhead same-dataset theory: {attention} attention, exact action of each run's training set"))
    write_dataset(ds, pathlib.Path(out))
    return ds
