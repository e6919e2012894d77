# One rule per swept (attention, optimizer recipe); one job per P trains every seed of the recipe as one
# batch of chains and writes one netCDF per seed (docs/workflow.md: job granularity and why).


for _att, _opt, _seeds in train_jobs():

    rule:
        name:
            f"train_{_att}_{_opt}"
        output:
            [run_path(_att, _opt, "{P}", s) for s in _seeds],
        params:
            run_config=run_params(_att, _opt),
            seeds=" ".join(map(str, _seeds)),
            code=CODE["train"],
        conda:
            ENV
        log:
            f"results/logs/train/{_att}/{_opt}/P{{P}}.log",
        benchmark:
            f"results/benchmarks/train/{_att}/{_opt}/P{{P}}.tsv"
        group:
            "train"
        threads: 1
        resources:
            runtime=lambda w, attempt, a=_att, o=_opt: run_resources(a, o, w.P, attempt)["runtime"],
            mem_mb=lambda w, a=_att, o=_opt: run_resources(a, o, w.P)["mem_mb"],
            gpu=lambda w, a=_att, o=_opt: run_resources(a, o, w.P)["gpu"],
            **train_partition(),
        shell:
            "OMP_NUM_THREADS={threads} copyhead train --run-config {params.run_config:q}"
            " --P {wildcards.P} --seeds {params.seeds} --out {output} > {log} 2>&1"
