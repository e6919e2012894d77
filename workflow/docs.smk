# Every published page, figure and table under docs/, regenerated from the committed inputs:
#     snakemake -s workflow/docs.smk --cores 2           # everything (the phase map alone takes ~10 min)
#     snakemake -s workflow/docs.smk --cores 2 docs_results   # the results page, its JSON and figures
# then `copyhead audit --docs docs` checks each against its provenance record, its committed inputs and
# the current code (CI runs the audit; a code change that touches a published product fails it until this
# target is run and its outputs committed). A plain run reruns on a code change only what this checkout's
# own .snakemake/ records made (not products committed from another clone):
#     copyhead audit --docs docs --remake     # reruns every product made by other code, and what is made
#                                             # from it (--forcerun), then audits again
#
# Committed inputs (published from where they were computed; their own inputs live outside the checkout):
#   docs/data/converged/aggregate_{linear,softmax}.nc  the converged study's aggregates
#        (snakemake --configfile config/converged.yaml --directory studies/converged, then
#         copyhead publish-aggregates studies/converged --config config/converged.yaml)
#   config/converged.yaml                              its config (the theory files are made from it)
#   docs/studies*/studies.json                         the studies' tables (workflow/studies.smk)
#   docs/studies/studies.json (+ config/studies.yaml, the studies' base config) for the one-loop page
# Everything else here is made by a rule below from those and the configs: the results page (rules
# docs_*), the phase map (workflow/phase_map.smk), the research package's prior check (workflow/prior_check.smk)
# and one-loop comparison (workflow/one_loop.smk), and the studies pages (workflow/studies.smk, docs_studies),
# the last four used as modules.
import json
import shlex
from pathlib import Path

from copyhead import config as chcfg
from copyhead.figures import FIGURES
from copyhead.provenance import code_fingerprint

# the converged study's config (`--config converged_config=<file>`: a test publishes a tiny study's)
CONVERGED = config.get("converged_config", "config/converged.yaml")
CONV = chcfg.load(CONVERGED)
ATTS = [a for a in chcfg.ATTENTIONS if a in CONV["sweep"]]
DATA = "docs/data/converged"     # published (copyhead publish-aggregates)
THEORY = "docs/data/theory"       # made here from the config
FIG = "docs/results_figures"
STUDY_REPORTS = sorted(str(p) for p in Path("docs").glob("studies*/studies.json"))
ROLE_PATHS = {"aggregate": DATA + "/aggregate_{}.nc", "theory": THEORY + "/theory_{}.nc",
              "datasets": THEORY + "/datasets_{}.nc"}


def roles(pairs):
    return {f"{kind}_{att}": ROLE_PATHS[kind].format(att) for kind, att in pairs}


DOC_FIGURES = [f for f in FIGURES.values() if f.available(ATTS)]


# the results page, its JSON and figures (from the published aggregates and the config)
RESULTS_TARGETS = ["docs/results.md", "docs/results_appendix.md", *[f"{FIG}/{f.name}.png" for f in DOC_FIGURES]]


# the side workflows' published products, their rules used as they are (prefixed with the module's name)
module phase_map:
    snakefile:
        "phase_map.smk"


use rule * from phase_map as phase_map_*


module prior_check:
    snakefile:
        "prior_check.smk"


use rule * from prior_check as prior_check_*


module one_loop:
    snakefile:
        "one_loop.smk"


use rule * from one_loop as one_loop_*


module studies:
    snakefile:
        "studies.smk"


use rule docs_studies, docs_studies_page from studies as studies_*


rule docs:
    default_target: True
    input:
        RESULTS_TARGETS,
        rules.phase_map_all.input,
        rules.prior_check_all.input,
        rules.one_loop_all.input,
        rules.studies_docs_studies.input,


rule docs_results:
    input:
        RESULTS_TARGETS,


rule docs_theory:
    input:
        CONVERGED,
    output:
        THEORY + "/theory_{attention}.nc",
    params:
        code=code_fingerprint("theory"),
    log:
        "logs/docs/theory_{attention}.log",
    shell:
        "copyhead theory --attention {wildcards.attention} --config {input:q} --out {output:q} > {log:q} 2>&1"


rule docs_theory_datasets:
    input:
        CONVERGED,
    output:
        THEORY + "/datasets_{attention}.nc",
    params:
        code=code_fingerprint("theory"),
    log:
        "logs/docs/datasets_{attention}.log",
    shell:
        "copyhead theory-datasets --attention {wildcards.attention} --config {input:q} --out {output:q}"
        " > {log:q} 2>&1"


rule docs_results_tables:
    input:
        **roles((kind, att) for att in ATTS for kind in ROLE_PATHS),
        config=CONVERGED,
    output:
        "docs/results.json",
    params:
        inputs=lambda w, input: json.dumps({k: v for k, v in input.items() if k != "config"}, sort_keys=True),
        code=code_fingerprint("results"),
    log:
        "logs/docs/results_tables.log",
    shell:
        "copyhead results --inputs {params.inputs:q} --config {input.config:q} --config-name {input.config:q}"
        " --out {output:q} > {log:q} 2>&1"


for _fig in DOC_FIGURES:

    rule:
        name:
            f"docs_{_fig.name}"
        input:
            **roles((*_fig.needs, *_fig.optional)),
            **({"results": "docs/results.json"} if _fig.results else {}),
        output:
            pdf=f"{FIG}/{_fig.name}.pdf",
            png=f"{FIG}/{_fig.name}.png",
            provenance=f"{FIG}/{_fig.name}.provenance.json",
        params:
            name=_fig.name,
            inputs=lambda w, input: json.dumps({k: v for k, v in input.items() if k != "results"}, sort_keys=True),
            results=lambda w, input: f"--results {shlex.quote(input.results)}" if "results" in input.keys() else "",
            options=chcfg.canonical_json(_fig.options(CONV)),
            code=code_fingerprint("figures"),
        log:
            f"logs/docs/{_fig.name}.log",
        shell:
            "copyhead figure {params.name} --inputs {params.inputs:q} --options {params.options:q}"
            " {params.results} --out {output.pdf:q} > {log:q} 2>&1"


rule docs_results_page:
    input:
        tables="docs/results.json",
        figures=[f"{FIG}/{f.name}.png" for f in DOC_FIGURES],
        studies=STUDY_REPORTS,
    output:
        md="docs/results.md",
        appendix="docs/results_appendix.md",
    params:
        code=code_fingerprint("results"),
    log:
        "logs/docs/results_page.log",
    shell:
        "copyhead results --tables {input.tables:q} --figure-dir results_figures --studies {input.studies:q}"
        " --out {output.md:q} > {log:q} 2>&1"
