"""The results: results.json (every number, :func:`copyhead.analysis.results_tables.build_tables`, with the inputs'
sha256, the config and the code version), the results page results.md and its appendix
results_appendix.md rendered from that JSON; each file is written with its provenance record
(``<file>.provenance.json``: its inputs with their sha256, the code and the options).

- :mod:`.page` — the short page: per attention type the transitions against the theory, one agreement line
  per method, what the convergence diagnostics mean, the key figures, the studies' findings
  (:mod:`.findings`).
- :mod:`.appendix` — every table behind the page.
- :mod:`copyhead.format` — number formatting and Markdown tables (below the results and the figures).
Nothing is computed or judged here: the numbers and verdicts are read from the JSON.

``write_results(inputs, out, ...)`` reads the input files (roles: ``aggregate_<attention>``,
``theory_<attention>``, optional ``datasets_<attention>``) and writes the JSON (and, for an ``out`` ending in
.md, the pages); ``write_pages(json, out_md, ...)`` renders the page and its appendix from a results JSON.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..analysis.convergence import RHAT_MAX
from ..analysis.results_model import read_studies
from ..analysis.summary import build_summary
from ..analysis.results_tables import build_tables, jsonable
from ..config import canonical_json, config_hash
from ..provenance import json_text, product_record, read_dataset, sha256_file, write_product
from .appendix import render_appendix
from .page import render_page

__all__ = ["write_pages", "write_results"]


def write_results(inputs: dict, out: Path, out_json: Path | None = None, config: dict | None = None, *,
                  config_name: str = "", figure_dir: str = "../results/figures", n_boot: int = 1000,
                  away_factor: float = 1.5, rhat_max: float = RHAT_MAX, seed: int = 0) -> dict:
    """Read the input files (role -> path; missing optional roles are skipped), build the tables and write
    them as JSON (NaN as null, plus the inputs' sha256) with its provenance record: to ``out`` when it ends
    in .json, else to ``out_json`` (default: ``out`` with suffix .json) and the pages (:func:`write_pages`)
    to ``out``. ``config``: the validated config the sweep ran with (recipes' method and start; its name
    ``config_name`` is quoted in the page). Returns the JSON-ready tables."""
    inputs = {k: Path(v) for k, v in inputs.items() if v}
    datasets = {k: read_dataset(p) for k, p in inputs.items()}
    tables = build_tables(datasets, config, n_boot=n_boot, away_factor=away_factor, rhat_max=rhat_max, seed=seed)
    tables["inputs"] = {k: {"path": str(p), "sha256": sha256_file(p),
                            "config_hash": str(datasets[k].attrs.get("config_hash", "")),
                            "kind": str(datasets[k].attrs.get("copyhead_kind", ""))} for k, p in sorted(inputs.items())}
    tables["config_name"] = config_name
    if config is not None:
        tables["config"] = {"hash": config_hash(config), "json": canonical_json(config)}
    tables = jsonable(tables)
    out = Path(out)
    out_json = out if out.suffix == ".json" else Path(out_json) if out_json else out.with_suffix(".json")
    options = {"config_name": config_name, "config_hash": (tables.get("config") or {}).get("hash", ""),
               "n_boot": n_boot, "away_factor": away_factor, "rhat_max": rhat_max, "bootstrap_seed": seed}
    write_product({out_json: json_text(tables)}, product_record("results_tables", "results", inputs, options))
    if out != out_json:
        write_pages(out_json, out, figure_dir=figure_dir)
    return tables


def _study_roles(studies) -> dict[str, Path]:
    """Input role -> path of the studies reports' JSON files: the report's folder name (docs/<folder>/
    studies.json), numbered where two share one."""
    roles: dict[str, Path] = {}
    for p in map(Path, studies):
        role = p.parent.name or "studies"
        roles[role if role not in roles else f"{role}_{len(roles)}"] = p
    return roles


def write_pages(tables_json: Path, out_md: Path, figure_dir: str = "../results/figures", studies=()) -> None:
    """The results page ``out_md`` and its appendix (``<stem>_appendix.md`` beside it) from a results JSON
    (:func:`write_results`), each with its provenance record; every number is read from that file and, for
    the page's Studies section, from the studies reports' JSON files ``studies`` (docs/studies*/studies.json)."""
    tables_json, out_md = Path(tables_json), Path(out_md)
    tables = json.loads(tables_json.read_text())
    # the verdicts are the current code's reading of the JSON's tables (copyhead.analysis.summary: effect sizes,
    # tolerance, rules), so a change of a verdict rule does not need the tables computed again
    tables["summary"] = jsonable(build_summary(tables))
    appendix = out_md.with_name(out_md.stem + "_appendix.md")
    roles = _study_roles(studies)
    reps = [(p.parent.name, read_studies(p)) for p in roles.values()]
    page = render_page(tables, figure_dir=figure_dir, appendix_name=appendix.name, json_name=tables_json.name,
                       studies=reps)
    text = render_appendix(tables, json_name=tables_json.name, page_name=out_md.name)
    write_product({appendix: text}, product_record("results_appendix", "results", {"results": tables_json},
                                                   {"page": out_md.name}))
    write_product({out_md: page}, product_record("results_page", "results", {"results": tables_json, **roles},
                                                 {"figure_dir": figure_dir, "appendix": appendix.name}))
