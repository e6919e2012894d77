"""The studies' commands (workflow/studies.smk): study-config; studies-report (compute: the studies' tables,
studies.json) and studies-page (render: the page and its figures from studies.json); publish-studies.

The tables and the page are imported inside their command's function, when it runs: they load torch, xarray
and matplotlib (via copyhead.analysis and the figures), which every other command would otherwise pay for."""
from __future__ import annotations

from pathlib import Path

from ..publish import publish
from ..studies.spec import write_study_config


def _cmd_study_config(a) -> int:
    write_study_config(a.spec, a.name, Path(a.out))
    return 0


def _cmd_studies_report(a) -> int:
    if not a.studies and not a.carry:
        raise SystemExit("copyhead studies-report: give the studies' results JSON files, or --carry a studies.json")
    from ..studies.tables import write_tables
    write_tables(a.spec, a.studies, Path(a.out), carry=a.carry)
    return 0


def _cmd_studies_page(a) -> int:
    from ..studies.report import write_page
    write_page(a.tables, Path(a.out), converged=a.converged)
    return 0


def _cmd_publish_studies(a) -> int:
    dest = publish(a.report, a.docs, a.name)
    if (dest / "studies.json").is_file():   # render again in place: the records name the published tables
        converged = a.converged or (Path(a.docs) / "results.json")
        from ..studies.report import write_page
        write_page(dest / "studies.json", dest / "studies.md",
                   converged=converged if Path(converged).is_file() else None)
    print(f"published to {dest}")
    return 0


def register(sub) -> None:
    sc = sub.add_parser("study-config", help="write one study's config from config/studies.yaml (P grid placed "
                                             "around the study's own closed-form transitions)")
    sc.add_argument("spec", help="the study spec (config/studies.yaml)")
    sc.add_argument("name", help="the study's name in the spec")
    sc.add_argument("--out", required=True, help="output config .yaml")
    sc.set_defaults(func=_cmd_study_config)

    sr = sub.add_parser("studies-report", help="the studies' tables: finite-size, scaling and twin (sigma^2, step "
                                               "size) comparisons of the studies' results -> studies.json (render "
                                               "the page with studies-page)")
    sr.add_argument("spec", help="the study spec (config/studies.yaml)")
    sr.add_argument("studies", nargs="*", help="results JSON of each study (studies/<name>/results/docs/results.json)")
    sr.add_argument("--carry", help="a published studies.json (docs/studies/studies.json) whose other studies join "
                                    "these, each marked with the commit it was carried from: rerun a group a few "
                                    "studies at a time")
    sr.add_argument("--out", required=True, help="output studies.json (with studies.json.provenance.json beside it)")
    sr.set_defaults(func=_cmd_studies_report)

    sp = sub.add_parser("studies-page", help="render the studies page and its figures from studies.json "
                                             "(docs/studies/studies.md), each with a provenance record")
    sp.add_argument("tables", help="the studies' tables (studies.json of studies-report)")
    sp.add_argument("--converged", help="results JSON of the converged default-size study (docs/results.json): "
                                        "its transitions on the paper's sigma^2 = 1 scale, where the page has "
                                        "sigma^2 twins")
    sp.add_argument("--out", required=True, help="output page .md (the figures go beside it)")
    sp.set_defaults(func=_cmd_studies_page)

    ps = sub.add_parser("publish-studies", help="copy a studies report to DOCS/studies/ (or DOCS/<name>/) and "
                                                "render its page there")
    ps.add_argument("report", nargs="?", default="studies/report", help="the report folder (studies/report)")
    ps.add_argument("--docs", default="docs", help="the docs folder (docs)")
    ps.add_argument("--name", default="studies", help="one plain folder name under DOCS (studies; studies_<group> for a group's report); only a folder "
                         "an earlier publish wrote, unchanged, is replaced")
    ps.add_argument("--converged", help="results JSON of the converged study for the page (default: "
                                        "DOCS/results.json where it exists)")
    ps.set_defaults(func=_cmd_publish_studies)
