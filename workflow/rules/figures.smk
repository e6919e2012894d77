# One rule per figure (generated from the registry copyhead.figures.FIGURES, so the inputs each figure
# needs are declared once). Each writes .pdf, .png and a .provenance.json sidecar.


for _fig in FIGURES.values():
    if not _fig.available(ATTENTIONS):
        continue

    rule:
        name:
            _fig.name
        input:
            **figure_inputs(_fig),
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
            inputs=lambda w, input: json.dumps(dict(input.items()), sort_keys=True),
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
            " --out {output.pdf} > {log} 2>&1"


# The results document (docs/results.md when published): agreement, transitions with bootstrap CIs,
# convergence, comparison with the paper, from the aggregates and theory files (copyhead.results). It
# is written with the figures it shows into results/docs/, a self-contained folder; docs/results.md in
# the repository is a verbatim copy of the one config/converged.yaml produces (README, docs/results.md).
rule results_doc:
    input:
        **role_paths((kind, att) for att in ATTENTIONS for kind in INPUT_PATHS),
        figures=[figure_path(f.name, "png") for f in FIGURES.values() if f.available(ATTENTIONS)],
    output:
        md="results/docs/results.md",
        json="results/docs/results.json",
        figures=directory("results/docs/results_figures"),
    params:
        inputs=lambda w, input: json.dumps({k: v for k, v in input.items() if k != "figures"}, sort_keys=True),
        config=chcfg.canonical_json(CONFIG),
        # named relative to the repository (the Snakefile's folder), not by an absolute path of this machine
        config_name=" ".join(os.path.relpath(f, workflow.basedir) if os.path.isabs(f) else str(f)
                             for f in (workflow.overwrite_configfiles or ["config.yaml"])),
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
        "mkdir -p {output.figures} && cp {input.figures} {output.figures}/ &&"
        " copyhead results --inputs {params.inputs:q} --config-json {params.config:q}"
        " --config-name {params.config_name:q} --figure-dir results_figures --out {output.md} > {log} 2>&1"
