"""Figures of the paper: the registry ``FIGURES`` and ``make_figure``.

This module is what the Snakefile imports (``workflow/rules/common.smk``, ``figures.smk``): per figure its
name, which aggregate/theory files it needs, which config options it depends on, and the name of its
drawing function. It imports neither matplotlib nor torch, so building the DAG (``snakemake -n``) stays
fast; the drawings live in :mod:`copyhead.figures.draw` (plot conventions in :mod:`.style`) and are
loaded when a figure is drawn. ``make_figure`` writes the PDF and PNG atomically plus a
``<name>.provenance.json`` sidecar (``copyhead.provenance.figure_record``: the sha256 of every input, also
embedded in the PDF/PNG metadata). Statistics (seed means, transitions from data) are in ``copyhead.analysis``.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from ..provenance import figure_record, sha256_file, write_product


@dataclass(frozen=True)
class Figure:
    name: str
    function: str                         # drawing function in copyhead.figures.draw (fig3/fig4, 3b/4b: .orders)
    needs: tuple = ()                     # (kind, attention) pairs: kind in {aggregate, theory}
    options: Callable[[dict], dict] = field(default=lambda cfg: {})
    attention: str = ""                   # passed to the drawing function when set (one function, two figures)
    # (kind, attention) pairs the drawing uses when given, e.g. ("datasets", "linear"): the same-dataset
    # theory results/theory/linear_datasets.nc (copyhead.theory.same_dataset), role "datasets_linear"
    optional: tuple = ()
    # marks the experimental transitions of the results model (results/docs/results.json, its ``summary``:
    # copyhead.analysis.summary), passed as ``--results``; without it those marks are left out, and said so
    results: bool = False

    @property
    def draw(self) -> Callable:
        """``draw(inputs, options) -> matplotlib Figure`` (imports the drawing code on first use)."""
        from . import draw, orders
        f = getattr(draw, self.function, None) or getattr(orders, self.function)
        return partial(f, attention=self.attention) if self.attention else f

    def available(self, attentions) -> bool:
        """Drawable when every aggregate it needs is swept (theory files always exist)."""
        return all(att in attentions for kind, att in self.needs if kind == "aggregate")


def _recipes(attention: str) -> Callable[[dict], dict]:
    """Options of a figure that tells recipes apart: method and start of each recipe swept for ``attention``."""
    def options(cfg: dict) -> dict:
        return {"recipes": {name: {"method": cfg["optimizers"][name]["method"],
                                   "init": cfg["optimizers"][name].get("init", "prior")}
                            for name in sorted(cfg["sweep"].get(attention, {})) if name in cfg["optimizers"]}}
    return options


_BOTH = (("aggregate", "linear"), ("aggregate", "softmax"))
_THEORY = (("theory", "linear"), ("theory", "softmax"))
FIGURES = {f.name: f for f in [
    Figure("fig1_stages", "fig_stages", _BOTH,
           lambda cfg: {"stage_optimizer": cfg["figures"]["stage_optimizer"],
                        "stages": {a: [[k, v] for k, v in st.items()] for a, st in cfg["figures"]["stages"].items()}}),
    Figure("fig2_landscapes", "fig_landscapes", _THEORY),
    # fig3/fig4: ĉ1, ĉG (linear) or â1, âG (softmax) vs P in the paper's style: HMC (prior and copy start),
    # SGLD, Adam as markers, theory lines named in the legend, transitions in a strip above the panel;
    # fig3b/fig4b: their diagnostics for every recipe (residuals, test loss, split-R̂), the same inputs
    Figure("fig3_linear_order_params", "fig_order_params", (("aggregate", "linear"), ("theory", "linear")),
           _recipes("linear"), attention="linear", optional=(("datasets", "linear"),), results=True),
    Figure("fig3b_linear_diagnostics", "fig_diagnostics", (("aggregate", "linear"), ("theory", "linear")),
           _recipes("linear"), attention="linear", optional=(("datasets", "linear"),)),
    Figure("fig4_softmax_order_params", "fig_order_params", (("aggregate", "softmax"), ("theory", "softmax")),
           _recipes("softmax"), attention="softmax", optional=(("datasets", "softmax"),), results=True),
    Figure("fig4b_softmax_diagnostics", "fig_diagnostics", (("aggregate", "softmax"), ("theory", "softmax")),
           _recipes("softmax"), attention="softmax", optional=(("datasets", "softmax"),)),
    Figure("fig5_coverage", "fig_coverage", _BOTH + _THEORY),
    # fig6/fig7: test loss vs training step per P (median and range over seeds), one panel per Adam recipe
    Figure("fig6_linear_loss_curves", "fig_loss_curves", (("aggregate", "linear"),), _recipes("linear"),
           attention="linear"),
    Figure("fig7_softmax_loss_curves", "fig_loss_curves", (("aggregate", "softmax"),), _recipes("softmax"),
           attention="softmax"),
    Figure("fig8_scaling", "fig_scaling", _THEORY + _BOTH, results=True),
]}


def make_figure(name: str, inputs: dict, out_pdf: Path, options: dict | None = None,
                results: str | Path | None = None) -> dict:
    """Draw figure ``name`` from ``inputs`` (role -> path) and, where it marks them, the transitions of the
    results JSON ``results``; write .pdf, .png, .provenance.json (which records the results file's sha256)."""
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; allowed values: {sorted(FIGURES)}")
    options = options or {}
    out_pdf = Path(out_pdf)
    rec = figure_record(name, inputs, options)
    if results:
        rec["results"] = {"path": str(results), "sha256": sha256_file(results)}
    fig = FIGURES[name].draw(dict(inputs, results=str(results)) if results else inputs, options)
    return write_figure(fig, out_pdf, rec)


def write_figure(fig, out: str | Path, record: dict, formats: tuple[str, ...] = ("pdf", "png")) -> dict:
    """Render a matplotlib figure to ``formats`` beside ``out`` (its suffix is replaced) and write the
    images and ``record`` (a figure's :func:`copyhead.provenance.product_record`, kind ``figure``) as
    ``<stem>.provenance.json``: every figure of the project, main DAG or side workflow, is written here.

    The images are rendered in memory, then written with the sidecar as one product
    (datafiles.atomic_write_all): a full disk fails a plain write (one line naming the file; matplotlib
    writing to the file itself fails again in its cleanup) and leaves the earlier outputs as they were."""
    import io

    import matplotlib.pyplot as plt

    out = Path(out)
    name = record.get("figure") or record.get("product", out.stem)
    # no stamps in the images (code version, dates): a remake that changes no number changes no byte
    short = json.dumps({"figure": name, "inputs": {r: v["sha256"] for r, v in record["inputs"].items()}},
                       sort_keys=True)
    meta = {"pdf": {"Title": name, "Creator": f"copyhead {record['package_version']}", "Subject": short,
                    "Keywords": "copyhead provenance; see " + out.with_suffix(".provenance.json").name,
                    "CreationDate": None},
            "png": {"Title": name, "Software": "copyhead", "Description": short}}
    images = {ext: io.BytesIO() for ext in formats}
    try:
        for ext, image in images.items():
            fig.savefig(image, format=ext, metadata=meta.get(ext))
        record = dict(record, figure_data=figure_data(fig))
    finally:
        plt.close(fig)
    return write_product({out.with_suffix("." + ext): image.getvalue() for ext, image in images.items()},
                         record, sidecar=out.with_suffix(".provenance.json"))


def _numbers(values, limit: int = 400) -> dict | list:
    """An array's numbers as the record keeps them: all (6 significant digits) up to ``limit``, else its
    shape, finite count, range, mean and ``limit`` evenly spaced entries."""
    import numpy as np
    a = np.ma.filled(np.ma.asarray(values, dtype=float), np.nan)
    r = lambda x: [None if not np.isfinite(v) else float(f"{v:.6g}") for v in np.ravel(x)]
    if a.size <= limit:
        return r(a)
    fin = a[np.isfinite(a)]
    stats = [fin.min(), fin.max(), fin.mean()] if fin.size else []
    return {"shape": list(a.shape), "finite": int(fin.size), "min_max_mean": r(stats),
            "samples": r(a.ravel()[np.linspace(0, a.size - 1, limit).astype(int)])}


def figure_data(fig) -> dict:
    """What a figure shows, as numbers and words (its record's ``figure_data``; the audit compares a remade
    figure by these, not by its pixels): per axes its title, labels, limits and scales, and every line,
    collection (markers, error bars, bands, meshes), patch (bars), image and text, in drawing order."""
    from matplotlib.collections import Collection
    from matplotlib.image import AxesImage
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle
    from matplotlib.text import Text

    out = {"axes": [], "texts": [t.get_text() for t in fig.texts if t.get_text()]}
    for ax in fig.axes:
        a = {"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
             "xlim": _numbers(ax.get_xlim()), "ylim": _numbers(ax.get_ylim()),
             "scale": [ax.get_xscale(), ax.get_yscale()],
             "ticks": [[t.get_text() for t in ax.get_xticklabels()], [t.get_text() for t in ax.get_yticklabels()]],
             "artists": []}
        leg = ax.get_legend()
        if leg is not None:
            a["legend"] = [t.get_text() for t in leg.get_texts()]
        for art in ax.get_children():
            if not art.get_visible():
                continue
            if isinstance(art, Line2D):
                a["artists"].append({"line": art.get_label() if not art.get_label().startswith("_") else "",
                                     "xy": _numbers(art.get_xydata())})
            elif isinstance(art, AxesImage):
                a["artists"].append({"image": _numbers(art.get_array())})
            elif isinstance(art, Collection):
                entry = {"collection": type(art).__name__, "offsets": _numbers(art.get_offsets())}
                arr = art.get_array()
                if arr is not None:
                    entry["values"] = _numbers(arr)
                if not len(art.get_offsets()) or type(art).__name__ in ("LineCollection", "PolyCollection",
                                                                        "FillBetweenPolyCollection"):
                    entry["paths"] = _numbers([v for p in art.get_paths()[:200] for v in p.vertices.ravel()])
                a["artists"].append(entry)
            elif isinstance(art, Rectangle) and art is not ax.patch:
                a["artists"].append({"bar": _numbers([art.get_x(), art.get_y(), art.get_width(), art.get_height()])})
            elif isinstance(art, Text) and art.get_text() and art not in (ax.title, ax._left_title, ax._right_title):
                a["artists"].append({"text": art.get_text()})
        out["axes"].append(a)
    return out


# Names that lived in the former single-module copyhead.figures, loaded on first use (PEP 562).
_MOVED = {"_status_note": ("copyhead.figures.style", "status_note")}


def __getattr__(name):
    if name in _MOVED:
        module, attr = _MOVED[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
