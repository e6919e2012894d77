# The studies (finite d_k, scaling in L and V, a fixed head dimension, the sigma^2 and step-size twins), from
# the repository root (docs/workflow.md, Studies):
#     snakemake -s workflow/studies.smk --cores 2              # every study and every comparison
#     snakemake -s workflow/studies.smk --cores 2 finite_size  # one group: finite_size, scaling, sigma2
#     snakemake -s workflow/studies.smk --cores 1 docs_studies # the published pages, from their studies.json
# config/studies.yaml lists the studies. Each is the main workflow (Snakefile) run in its own folder
# studies/<name>/ (a nested snakemake, so each keeps its own code-aware reruns, logs and provenance) with
# a config generated from the spec (copyhead study-config: the P grid sits at fixed multiples of the
# study's own closed-form transitions). The nested snakemake is entered whenever this workflow runs a
# study whose config or code (any concern's code fingerprint) changed; there it reruns only what the change
# affects.

import json
import shlex
from pathlib import Path

from copyhead.provenance import CODE_ROOTS, code_fingerprint
from copyhead.studies.spec import load_spec

SPEC_FILE = "config/studies.yaml"
SPEC = load_spec(SPEC_FILE)
GROUPS = SPEC.get("groups", {})
CODE = {c: code_fingerprint(c) for c in CODE_ROOTS}
STUDY_CONCERNS = ("aggregate", "figures", "results", "theory", "train")  # what a study's products use
STUDY_CODE = " ".join(f"{c}={CODE[c]}" for c in STUDY_CONCERNS)


def results_json(names):
    return [f"studies/{n}/results/docs/results.json" for n in names]


rule all_studies:
    default_target: True
    input:
        "studies/report/studies.md",


# The studies' tables (compute: every comparison across the studies, from their results JSON only) and the
# page with its figures rendered from them (render: studies.json alone, plus the converged default-size
# study, docs/results.json committed, for the table that puts it on the paper's sigma^2 = 1 scale).
# `copyhead publish-studies studies/report` copies the report to docs/studies/ and renders it there.
rule studies_tables:
    input:
        spec=SPEC_FILE,
        studies=results_json(SPEC["studies"]),
    output:
        "studies/report/studies.json",
    params:
        code=CODE["studies_tables"],
    log:
        "studies/logs/studies_tables.log",
    shell:
        "copyhead studies-report {input.spec:q} {input.studies:q} --out {output:q} > {log:q} 2>&1"


rule studies_report:
    input:
        tables="studies/report/studies.json",
        converged="docs/results.json",
    output:
        "studies/report/studies.md",
    params:
        code=CODE["studies"],
    log:
        "studies/logs/studies_report.log",
    shell:
        "copyhead studies-page {input.tables:q} --converged {input.converged:q} --out {output:q} > {log:q} 2>&1"


# One group's own report (e.g. the fixed head dimension d_k = 16), beside the whole one:
#     snakemake -s workflow/studies.smk --cores 2 studies/report_fixed_dk16/studies.md
#     copyhead publish-studies studies/report_fixed_dk16 --name studies_fixed_dk16
rule group_tables:
    input:
        spec=SPEC_FILE,
        studies=lambda w: results_json(GROUPS[w.group]),
    output:
        "studies/report_{group}/studies.json",
    wildcard_constraints:
        group="|".join(GROUPS) or "-",
    params:
        code=CODE["studies_tables"],
    log:
        "studies/logs/tables_{group}.log",
    shell:
        "copyhead studies-report {input.spec:q} {input.studies:q} --out {output:q} > {log:q} 2>&1"


rule group_report:
    input:
        tables="studies/report_{group}/studies.json",
    output:
        "studies/report_{group}/studies.md",
    wildcard_constraints:
        group="|".join(GROUPS) or "-",
    params:
        code=CODE["studies"],
    log:
        "studies/logs/report_{group}.log",
    shell:
        "copyhead studies-page {input.tables:q} --out {output:q} > {log:q} 2>&1"


# The published studies pages (docs/studies*/), rendered in place from their committed studies.json (the
# studies' tables, computed from the studies' results outside the checkout) and, where a page has sigma^2
# twins, the committed docs/results.json; each page and figure gets a provenance record, and the folder's
# publish manifest lists them.
DOCS_REPORTS = sorted(p.parent.name for p in Path("docs").glob("studies*/studies.json"))


def _has_twins(folder):
    return bool(json.loads(Path(f"docs/{folder}/studies.json").read_text()).get("twins"))


rule docs_studies:
    input:
        [f"docs/{f}/studies.md" for f in DOCS_REPORTS],


rule docs_studies_page:
    input:
        tables="docs/{folder}/studies.json",
        converged=lambda w: ["docs/results.json"] if _has_twins(w.folder) else [],
    output:
        "docs/{folder}/studies.md",
    wildcard_constraints:
        folder="|".join(DOCS_REPORTS) or "-",
    params:
        converged=lambda w, input: f" --converged {shlex.quote(input.converged[0])}" if input.converged else "",
        code=CODE["studies"],
    log:
        "studies/logs/docs_{folder}_page.log",
    shell:
        "copyhead studies-page {input.tables:q}{params.converged} --out {output:q} > {log:q} 2>&1"


for _group, _names in GROUPS.items():

    rule:
        name:
            _group
        input:
            results_json(_names),


rule study_config:
    input:
        spec=SPEC_FILE,
        base=SPEC["base_path"],
    output:
        "studies/{name}/config.yaml",
    params:
        code=CODE["study_config"],
    log:
        "studies/logs/{name}.study_config.log",
    shell:
        "copyhead study-config {input.spec:q} {wildcards.name:q} --out {output:q} > {log:q} 2>&1"


rule study:
    input:
        "studies/{name}/config.yaml",
    output:
        "studies/{name}/results/docs/results.json",
    params:
        code=STUDY_CODE,
    log:
        "studies/logs/{name}.log",
    threads: workflow.cores
    shell:
        "snakemake -s Snakefile --cores {threads} --configfile {input:q} --directory studies/{wildcards.name:q}"
        " results/docs/results.json > {log:q} 2>&1"
