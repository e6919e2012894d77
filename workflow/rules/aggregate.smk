# All runs of one attention type -> one xarray Dataset (optimizer, P, seed, step, ...). The code
# fingerprint in params reruns it when copyhead.aggregate changes (not on comments/docstrings).


rule aggregate:
    input:
        run_files,
    output:
        "results/aggregate/{attention}.nc",
    params:
        # the defining config of every recipe: a run made with another config is named and left out
        run_configs=lambda w: chcfg.canonical_json(
            {opt: chcfg.run_config(CONFIG, w.attention, opt) for opt in CONFIG["sweep"][w.attention]}),
        code=CODE["aggregate"],
    conda:
        ENV
    log:
        "results/logs/aggregate/{attention}.log",
    benchmark:
        "results/benchmarks/aggregate/{attention}.tsv"
    resources:
        runtime=10,
        mem_mb=2000,
    shell:
        "copyhead aggregate --attention {wildcards.attention} --run-configs {params.run_configs:q}"
        " --out {output:q} {input:q} > {log:q} 2>&1"
