"""The studies' commands: study-config, studies-report, publish-studies (workflow/studies.smk)."""
from __future__ import annotations

from pathlib import Path


def _cmd_study_config(a) -> int:
    from ..studies.spec import write_study_config
    write_study_config(a.spec, a.name, Path(a.out))
    return 0


def _cmd_studies_report(a) -> int:
    from ..studies.report import write_report
    write_report(a.spec, a.studies, Path(a.out), converged=a.converged)
    return 0


def _cmd_publish_studies(a) -> int:
    from ..studies.publish import publish
    print(f"published to {publish(a.report, a.docs, a.name)}")
    return 0



def register(sub) -> None:
    sc = sub.add_parser("study-config", help="write one study's config from config/studies.yaml (P grid placed "
                                             "around the study's own closed-form transitions)")
    sc.add_argument("spec", help="the study spec (config/studies.yaml)")
    sc.add_argument("name", help="the study's name in the spec")
    sc.add_argument("--out", required=True, help="output config .yaml")
    sc.set_defaults(func=_cmd_study_config)

    sr = sub.add_parser("studies-report", help="finite-size, scaling and sigma^2 comparisons of the studies "
                                               "-> Markdown + JSON + figures (docs/studies/studies.md)")
    sr.add_argument("spec", help="the study spec (config/studies.yaml)")
    sr.add_argument("studies", nargs="+", help="results JSON of each study (studies/<name>/results/docs/results.json)")
    sr.add_argument("--converged", help="results JSON of the default-size study, put on the paper's sigma^2 = 1 scale")
    sr.add_argument("--out", required=True, help="output .md (the .json and the figures go beside it)")
    sr.set_defaults(func=_cmd_studies_report)

    ps = sub.add_parser("publish-studies", help="copy a studies report to DOCS/studies/ (or DOCS/<name>/)")
    ps.add_argument("report", nargs="?", default="studies/report", help="the report folder (studies/report)")
    ps.add_argument("--docs", default="docs", help="the docs folder (docs)")
    ps.add_argument("--name", default="studies", help="one plain folder name under DOCS (studies; studies_<group> for a group's report); only a folder "
                         "an earlier publish wrote, unchanged, is replaced")
    ps.set_defaults(func=_cmd_publish_studies)

