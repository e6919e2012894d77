"""The one-loop predictions against the measured gaps: predicted shifts, z, RMS z, the 1/d_k coefficients
and the flags, as pure functions of the datasets of ``research.one_loop.predict.compute`` (at the
points of :mod:`research.one_loop.points`).
Used by the page (``one_loop_page``) and the figure (``research.one_loop.figures``).

The measured gap is the prior-started chains of the recipe named in the datasets' ``recipe`` attribute
(HMC, the reference posterior) minus the studies' same-dataset posterior mean; the predicted gap is
the one-loop shift of the equivalent-kernel posterior mean, ⟨O⟩_{S+ΔS} − ⟨O⟩_S (Eqs. (18), (32)); so the
corrected theory a point is compared with is "same-dataset posterior mean + shift", the uncorrected one the
same-dataset posterior mean itself (z = gap / error).
"""
from __future__ import annotations

import numpy as np

from copyhead.analysis.fits import fit_inverse_dk
from copyhead.analysis.summary import AGREE_TOLERANCE

# the effect-size tolerance every verdict of docs/one_loop.md is judged against first (issue 49): copyhead's
# agreement tolerance |Δ| ≤ 0.02 in each order parameter, fixed before looking (copyhead.analysis.summary)
TOLERANCE = AGREE_TOLERANCE


def flag_weight(ds) -> float:
    """The share of the one-loop posterior weight above which a point is flagged: the setting the
    predictions were computed with (``setting_flag``, research.one_loop.posterior.SETTINGS)."""
    return float(ds.attrs["setting_flag"])


# the per-dataset one loop (research.one_loop.dataset): its shift is taken against its own uncorrected
# mean (each run's 2-D action) and its flags from its own weights
DATASET = "one_loop_dataset"
# the same with the pooling sector (Eq. (37)): against the same base, with its own weights
POOLING = "pooling_dataset"


def _suffix(variant):
    """The suffix of ``variant``'s base (mean_none<suffix>) and weights (soft_weight<weights>)."""
    return "_dataset" if variant in (DATASET, POOLING) else ""


def _weights(variant):
    return {DATASET: "_dataset", POOLING: "_pooling_dataset"}.get(variant, "")


def shift(ds, variant="one_loop"):
    """Predicted gap ⟨O⟩_variant − ⟨O⟩_S (ratio, x, param); variant "none" gives 0. The per-dataset one
    loop (DATASET, POOLING) is taken against its own uncorrected mean (mean_none_dataset)."""
    return ds[f"mean_{variant}"] - ds[f"mean_none{_suffix(variant)}"]


def flags(ds, weight=None, variant="one_loop"):
    """Boolean (ratio, x) masks of ``variant``'s correction (one_loop: the equivalent kernel's; DATASET, POOLING:
    the per-dataset one, from its own weights averaged over the runs): "soft" (most of the one-loop posterior weight
    on sub-grid points with a near-critical transverse mode, 1 + eig Σ^½H_E⊥Σ^½ < ds.setting_soft: the
    Gaussian order is not reliable, no prediction), "near" (most of it within one sub-grid cell of a point
    where Eq. (33) fails: a prediction, marked), "none" (no stable sub-grid point)."""
    weight = flag_weight(ds) if weight is None else weight
    sfx = _weights(variant)
    nan = ~np.isfinite(ds[f"mean_{variant if sfx else 'one_loop'}"]).all("param")
    return {"soft": (ds[f"soft_weight{sfx}"] > weight) & ~nan,
            "near": (ds[f"near_unstable_weight{sfx}"] > weight) & ~nan, "none": nan}


def usable(ds, weight=None, exclude_near=False, variant="one_loop"):
    """(ratio, x): a point with a measured gap and a one-loop prediction (of ``variant``: its own flags) that
    is not soft-flagged (nor near-unstable, with exclude_near)."""
    f = flags(ds, weight, variant)
    ok = np.isfinite(ds["gap"]).all("param") & ~f["soft"] & ~f["none"]
    return ok & ~f["near"] if exclude_near else ok


def z(ds, variant=None):
    """(measured gap − predicted gap) / measured error; variant None: the uncorrected z = gap / error."""
    pred = 0.0 if variant is None else shift(ds, variant)
    return (ds["gap"] - pred) / ds["error"]


def counted(ds, weight=None, exclude_near=False, over="one_loop"):
    """(ratio, x, param): the points usable under the flags of ``over`` (a variant, or a tuple of them: usable
    under each), both parameters: what :func:`rms_z` and :func:`largest_delta` are taken over."""
    m = True
    for v in (over,) if isinstance(over, str) else over:
        m = usable(ds, weight, exclude_near, v) & m
    return m.broadcast_like(ds["gap"])


def delta(ds, variant=None):
    """Δ = measured − theory (ratio, x, param): the theory is the same-dataset posterior mean plus ``variant``'s
    shift (None: uncorrected), so Δ = measured gap − predicted gap."""
    return ds["gap"] - (0.0 if variant is None else shift(ds, variant))


def largest_delta(ds, variant=None, weight=None, exclude_near=False, over="one_loop"):
    """The effect size of a comparison, before its significance (issue 49): per x, the largest |Δ| (:func:`delta`)
    over the points :func:`rms_z` counts, and that Δ relative to the theory's value there (Δ / (measured − Δ)):
    (x → |Δ|, x → Δ relative); NaN where no point counts."""
    m = counted(ds, weight, exclude_near, over)
    d = delta(ds, variant).where(m).stack(pt=("ratio", "param"))
    value = (ds["experiment"].broadcast_like(m).stack(pt=("ratio", "param")) - d)
    worst = np.abs(d).fillna(-1.0).argmax("pt")
    has = m.any(("ratio", "param"))
    return np.abs(d.isel(pt=worst)).where(has), (d / value).isel(pt=worst).where(has)


def rms_z(ds, variant=None, weight=None, exclude_near=False, over="one_loop"):
    """RMS z per x over the points :func:`counted` under the flags of ``over`` (all ratios, both parameters):
    (x → (rms, n))."""
    m = counted(ds, weight, exclude_near, over)
    zz = z(ds, variant).where(m)
    n = m.sum(("ratio", "param"))
    return np.sqrt((zz**2).sum(("ratio", "param")) / n.where(n > 0)), n


def coefficient_fits(ds, ratio, param, variant="one_loop", exclude_near=False):
    """Weighted fits gap = a + b/d_k (copyhead.analysis.fits.fit_inverse_dk, weights 1/error²) of the
    measured and the predicted gaps at one (ratio, param), over the usable points, and the z of the
    measured b against the predicted one (measured error only)."""
    sel = ds.sel(ratio=ratio, param=param)
    ok = usable(ds, exclude_near=exclude_near).sel(ratio=ratio).values
    d_k = ds["d_k"].values[ok]
    err = sel["error"].values[ok]
    meas = fit_inverse_dk(d_k, sel["gap"].values[ok], err)
    pred = fit_inverse_dk(d_k, shift(ds, variant).sel(ratio=ratio, param=param).values[ok], err)
    zb = (meas["b"] - pred["b"]) / meas["b_err"] if meas["b_err"] > 0 else np.nan
    return {"measured": meas, "predicted": pred, "z_b": float(zb), "n": int(ok.sum())}


def consistency(ds):
    """Checks: |uncorrected mean − the studies' closed-form posterior mean at the same P| (the same theory,
    computed by the studies' pipeline): largest, where (ratio, x, param), in measured errors, and the largest
    at P/P_ref ≥ 1; |shift(one_loop_pref) − shift(one_loop)| (what ΔS_pref moves): largest, in errors."""
    d = np.abs(ds["mean_none"] - ds["closed"])
    at = d.where(np.isfinite(d), -1.0).argmax(...)
    p = np.abs(shift(ds, "one_loop_pref") - shift(ds, "one_loop")).where(usable(ds))
    return {"closed_max_abs": float(d.max()), "closed_max_err": float((d / ds["error"]).max()),
            "closed_at": {k: ds[k].values[int(v)] for k, v in at.items()},
            "closed_max_abs_above": float(d.where(ds["ratio"] >= 1).max()),
            "pref_max_abs": float(p.max()), "pref_max_err": float((p / ds["error"]).max())}


def subgrid_change(ds, other):
    """|predicted gap × d_k on ds − on other| (the same points, another sub-grid) over the points usable in
    both: (largest, its (ratio, x, param), median)."""
    ok = (usable(ds) & usable(other)).broadcast_like(ds["gap"])
    d = (np.abs(shift(ds) - shift(other)) * ds["d_k"]).where(ok)
    at = d.fillna(-1.0).argmax(...)
    return {"max": float(d.max()), "at": {k: ds[k].values[int(v)] for k, v in at.items()},
            "median": float(d.median())}
