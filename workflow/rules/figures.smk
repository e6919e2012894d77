# One rule per figure (generated from the registry copyhead.figures.FIGURES, so the inputs each figure
# needs are declared once). Each writes .pdf, .png and a .provenance.json sidecar.


def figure_inputs(fig):
    """Input role -> path for one figure (aggregates and theory files of the attention types it shows)."""
    paths = {"aggregate": "results/aggregate/{}.nc", "theory": "results/theory/{}.nc"}
    return {f"{kind}_{att}": paths[kind].format(att) for kind, att in fig.needs}


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
