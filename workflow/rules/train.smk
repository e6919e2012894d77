# One job per (attention, optimizer recipe, P, seed): train and measure, write one netCDF.


rule train:
    output:
        "results/runs/{attention}/{optimizer}/P{P}/seed{seed}.nc",
    params:
        run_config=run_params,
    conda:
        ENV
    log:
        "results/logs/train/{attention}/{optimizer}/P{P}/seed{seed}.log",
    benchmark:
        "results/benchmarks/train/{attention}/{optimizer}/P{P}/seed{seed}.tsv"
    group:
        "train"
    threads: 1
    resources:
        runtime=lambda w, attempt: run_resources(w.attention, w.optimizer, w.P, attempt)["runtime"],
        mem_mb=lambda w: run_resources(w.attention, w.optimizer, w.P)["mem_mb"],
        gpu=lambda w: run_resources(w.attention, w.optimizer, w.P)["gpu"],
    shell:
        "OMP_NUM_THREADS={threads} copyhead train --run-config {params.run_config:q}"
        " --P {wildcards.P} --seed {wildcards.seed} --out {output} > {log} 2>&1"
