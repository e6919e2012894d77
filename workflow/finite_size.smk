# The finite-d_k probe (issue 13, first step), from the repository root:
#     snakemake -s workflow/finite_size.smk --cores 2
# Each study is the main workflow (Snakefile) run in its own directory studies/<name> with its config (a
# nested snakemake, so each keeps its own code-aware reruns, logs and provenance); the comparison reads
# their results JSON files (copyhead finite-size: the theory-experiment gap against 1/d_k, fig9).
# A study whose results.json exists is not re-entered: run its own command (in its config's header) to
# update it, then this file again.

STUDIES = {
    "converged": "config/converged.yaml",          # d_k = 32
    "dk64": "config/finite_dk/dk64.yaml",
    "dk128": "config/finite_dk/dk128.yaml",
}


rule finite_size:
    input:
        expand("studies/{name}/results/docs/results.json", name=STUDIES),
    output:
        md="studies/finite_dk/finite_size.md",
        json="studies/finite_dk/finite_size.json",
        png="studies/finite_dk/fig9_finite_size.png",
    log:
        "studies/finite_dk/finite_size.log",
    shell:
        "copyhead finite-size {input} --out {output.md} > {log} 2>&1"


rule study:
    output:
        "studies/{name}/results/docs/results.json",
    params:
        config=lambda w: STUDIES[w.name],
    threads: workflow.cores
    shell:
        "snakemake -s Snakefile --cores {threads} --configfile {params.config} --directory studies/{wildcards.name}"
        " results/docs/results.json"
