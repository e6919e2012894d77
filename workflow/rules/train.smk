# One rule per swept (attention, optimizer recipe); one job per P trains every seed of the recipe as one
# batch of chains and writes one netCDF per seed (docs/workflow.md: job granularity and why).
# COPYHEAD_TRAIN_PACK=recipe instead makes ONE job per (attention, recipe) that trains every (P, seed)
# of it as one batched process (python -m copyhead.engine; for GPU nodes, docs/slurm.md); its files
# equal the per-P jobs' files number for number.
from copyhead.resources import packed_resources

TRAIN_PACK = os.environ.get("COPYHEAD_TRAIN_PACK", "")
if TRAIN_PACK not in ("", "recipe"):
    raise WorkflowError(f"COPYHEAD_TRAIN_PACK must be unset or 'recipe', got {TRAIN_PACK!r}")


for _att, _opt, _seeds in train_jobs() if not TRAIN_PACK else []:

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


for _att, _opt, _seeds in train_jobs() if TRAIN_PACK else []:
    _Ps = sorted(int(P) for P in CONFIG["sweep"][_att][_opt]["P"])

    rule:
        name:
            f"train_{_att}_{_opt}"
        output:
            [run_path(_att, _opt, P, s) for P in _Ps for s in _seeds],
        params:
            run_config=run_params(_att, _opt),
            seeds=" ".join(map(str, _seeds)),
            Ps=" ".join(map(str, _Ps)),
            code=CODE["train"],
        conda:
            ENV
        log:
            f"results/logs/train/{_att}/{_opt}/packed.log",
        benchmark:
            f"results/benchmarks/train/{_att}/{_opt}/packed.tsv"
        group:
            "train"
        threads: 1
        resources:
            runtime=lambda w, attempt, a=_att, o=_opt: packed_resources(CONFIG, a, o, attempt)["runtime"],
            mem_mb=lambda w, a=_att, o=_opt: packed_resources(CONFIG, a, o)["mem_mb"],
            gpu=lambda w, a=_att, o=_opt: packed_resources(CONFIG, a, o)["gpu"],
            **train_partition(),
        shell:
            "OMP_NUM_THREADS={threads} python -m copyhead.engine --run-config {params.run_config:q}"
            " --P {params.Ps} --seeds {params.seeds} --out {output} > {log} 2>&1"
