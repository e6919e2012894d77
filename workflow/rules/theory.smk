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
        " --theory-config {params.theory_config:q} --out {output} > {log} 2>&1"
