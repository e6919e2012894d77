# One rule per figure (generated from the registry copyhead.figures.FIGURES, so the inputs each figure
# needs are declared once). Each writes .pdf, .png and a .provenance.json sidecar. fig3/fig4/fig8 also read
# the results model (RESULTS_JSON, rule results_tables below) for the experimental transitions they mark.
import os
import shlex

RESULTS_JSON = "results/docs/results.json"
# The main pipeline reads nothing under the repository's docs/ (its products are made from the config
# alone): its results page gets no studies reports and points to the published pages for the scaling
# claims; the published page (workflow/docs.smk) passes the committed studies reports with --studies.


for _fig in FIGURES.values():
    if not _fig.available(ATTENTIONS):
        continue

    rule:
        name:
            _fig.name
        input:
            **figure_inputs(_fig),
            # the results model (transition estimates with CIs) for the figures that mark them
            **({"results": RESULTS_JSON} if _fig.results else {}),
        output:
            pdf=figure_path(_fig.name, "pdf"),
            png=report(
                figure_path(_fig.name, "png"),
                caption=f"../report/{_fig.name}.rst",
                category="Figures",
            ),
            provenance=figure_path(_fig.name, "provenance.json"),
        params:
            name=_fig.name,
            inputs=lambda w, input: json.dumps({k: v for k, v in input.items() if k != "results"}, sort_keys=True),
            results=lambda w, input: f"--results {shlex.quote(input.results)}" if "results" in input.keys() else "",
            options=chcfg.canonical_json(_fig.options(CONFIG)),
            code=CODE["figures"],
        conda:
            ENV
        log:
            f"results/logs/figures/{_fig.name}.log",
        benchmark:
            f"results/benchmarks/figures/{_fig.name}.tsv"
        resources:
            runtime=10,
            mem_mb=2000,
        shell:
            "copyhead figure {params.name} --inputs {params.inputs:q} --options {params.options:q}"
            " {params.results} --out {output.pdf:q} > {log:q} 2>&1"


# The results model (copyhead.results): agreement, transitions with bootstrap CIs, convergence, the paper's
# numbers and the summary every page and figure reads (analysis.summary), as one JSON file; then the pages
# rendered from it with the figures they show, into results/docs/ (a self-contained folder). docs/results.md
# in the repository is a verbatim copy of the one config/converged.yaml produces (README).
rule results_tables:
    input:
        **role_paths((kind, att) for att in ATTENTIONS for kind in INPUT_PATHS),
    output:
        RESULTS_JSON,
    params:
        inputs=lambda w, input: json.dumps(dict(input.items()), sort_keys=True),
        config=chcfg.canonical_json(CONFIG),
        # named relative to the repository (the Snakefile's folder), not by an absolute path of this machine
        config_name=" ".join(os.path.relpath(f, workflow.basedir) if os.path.isabs(f) else str(f)
                             for f in (workflow.overwrite_configfiles or ["config.yaml"])),
        code=CODE["results"],
    conda:
        ENV
    log:
        "results/logs/results_tables.log",
    benchmark:
        "results/benchmarks/results_doc/results_tables.tsv"
    resources:
        runtime=10,
        mem_mb=2000,
    shell:
        "copyhead results --inputs {params.inputs:q} --config-json {params.config:q}"
        " --config-name {params.config_name:q} --out {output:q} > {log:q} 2>&1"


rule results_doc:
    input:
        tables=RESULTS_JSON,
        figures=[figure_path(f.name, "png") for f in FIGURES.values() if f.available(ATTENTIONS)],
    output:
        md="results/docs/results.md",
        appendix="results/docs/results_appendix.md",
        figures=directory("results/docs/results_figures"),
    params:
        code=CODE["results"],
    conda:
        ENV
    log:
        "results/logs/results_doc.log",
    benchmark:
        "results/benchmarks/results_doc/results_doc.tsv"
    resources:
        runtime=10,
        mem_mb=2000,
    shell:
        "mkdir -p {output.figures:q} && cp {input.figures:q} {output.figures:q}/ &&"
        " copyhead results --tables {input.tables:q} --figure-dir results_figures"
        " --out {output.md:q} > {log:q} 2>&1"
