# Theory predictions for one attention type; depends only on the theory part of the config and the
# theory code (fingerprint of copyhead.theory and copyhead.config).


rule theory:
    output:
        "results/theory/{attention}.nc",
    params:
        theory_config=chcfg.canonical_json(chcfg.theory_config(CONFIG)),
        code=CODE["theory"],
    conda:
        ENV
    log:
        "results/logs/theory/{attention}.log",
    benchmark:
        "results/benchmarks/theory/{attention}.tsv"
    threads: 1
    resources:
        runtime=30,
        mem_mb=4000,
    shell:
        "OMP_NUM_THREADS={threads} copyhead theory --attention {wildcards.attention}"
        " --theory-config {params.theory_config:q} --out {output:q} > {log:q} 2>&1"


# Same-dataset theory: the exact action's minima on each run's own training set, for every (P, seed) the
# sweep trains for this attention type (copyhead.theory.same_dataset; docs/theory.md §4.4).
rule theory_datasets:
    output:
        "results/theory/{attention}_datasets.nc",
    params:
        theory_config=chcfg.canonical_json(chcfg.theory_config(CONFIG)),
        pairs=lambda w: json.dumps(same_dataset_pairs(w.attention)),
        code=CODE["theory"],
    conda:
        ENV
    log:
        "results/logs/theory/{attention}_datasets.log",
    benchmark:
        "results/benchmarks/theory/{attention}_datasets.tsv"
    threads: 1
    resources:
        runtime=30,
        mem_mb=4000,
    shell:
        "OMP_NUM_THREADS={threads} copyhead theory-datasets --attention {wildcards.attention}"
        " --theory-config {params.theory_config:q} --pairs {params.pairs:q} --out {output:q} > {log:q} 2>&1"
