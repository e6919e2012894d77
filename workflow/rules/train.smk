# One rule per swept (attention, optimizer recipe). By default ONE job per (attention, recipe) trains every
# (P, seed) of it as one batched process (`copyhead train` given every P): on 2 cores the default sweep's
# 8 packed jobs take ~2/3 of the time of 40 per-P jobs, which each pay 2-3 s to start Python and torch
# (docs/benchmarks/dag.md). COPYHEAD_TRAIN_PACK=point instead makes one job per P that trains every seed of
# the recipe as one batch of chains (more jobs to spread over a cluster's nodes; docs/workflow.md: job
# granularity). Both write one netCDF per (P, seed), equal number for number.
# Packing is an execution detail: both modes have the same shell command and the same recorded params
# (the P list is derived from the outputs, which Snakemake does not compare), so switching the mode on or
# off reruns nothing that is up to date (tests/test_workflow.py).
# Every training job keeps the files it writes in the run store (COPYHEAD_RUN_STORE, default
# results/.runs; empty or 'off': none) and takes a (P, seed) whose identical run is stored from there
# instead of training it (copyhead.run_store.RunStore): a packed job rerun after one P was added, or one
# file lost, trains only the missing chains. Set in the jobs' environment, not in the shell command, so
# the store's location is no rerun trigger either (docs/workflow.md: the run store).
from copyhead.run_store import RUN_STORE_ENV
from copyhead.resources import packed_resources

os.environ.setdefault(RUN_STORE_ENV, "results/.runs")

TRAIN_PACK = os.environ.get("COPYHEAD_TRAIN_PACK", "recipe")
if TRAIN_PACK not in ("recipe", "point"):
    raise WorkflowError(f"COPYHEAD_TRAIN_PACK must be unset, 'recipe' (the default: one job per recipe) or "
                        f"'point' (one job per P), got {TRAIN_PACK!r}")


def train_Ps(attention, optimizer):
    return sorted(int(P) for P in CONFIG["sweep"][attention][optimizer]["P"])


def train_mode(attention, optimizer, seeds):
    """outputs, log, benchmark, the P list (a function of the outputs) and resources of the training rule
    of one recipe, packed (default: one job for every P) or per P."""
    if TRAIN_PACK == "recipe":
        Ps = train_Ps(attention, optimizer)
        res = lambda w, attempt=1: packed_resources(CONFIG, attention, optimizer, attempt)
        return dict(output=[run_path(attention, optimizer, P, s) for P in Ps for s in seeds],
                    log=f"results/logs/train/{attention}/{optimizer}/packed.log",
                    benchmark=f"results/benchmarks/train/{attention}/{optimizer}/packed.tsv",
                    Ps=lambda w, output: " ".join(map(str, Ps)), resources=res)
    return dict(output=[run_path(attention, optimizer, "{P}", s) for s in seeds],
                log=f"results/logs/train/{attention}/{optimizer}/P{{P}}.log",
                benchmark=f"results/benchmarks/train/{attention}/{optimizer}/P{{P}}.tsv",
                Ps=lambda w, output: w.P,
                resources=lambda w, attempt=1: run_resources(attention, optimizer, w.P, attempt))


for _att, _opt, _seeds in train_jobs():
    _mode = train_mode(_att, _opt, _seeds)

    rule:
        name:
            f"train_{_att}_{_opt}"
        output:
            _mode["output"],
        params:
            run_config=run_params(_att, _opt),
            seeds=" ".join(map(str, _seeds)),
            Ps=_mode["Ps"],
            code=CODE["train"],
        conda:
            ENV
        log:
            _mode["log"],
        benchmark:
            _mode["benchmark"]
        group:
            "train"
        threads: 1
        resources:
            runtime=lambda w, attempt, r=_mode["resources"]: r(w, attempt)["runtime"],
            mem_mb=lambda w, r=_mode["resources"]: r(w)["mem_mb"],
            gpu=lambda w, r=_mode["resources"]: r(w)["gpu"],
            **train_partition(),
        shell:
            "OMP_NUM_THREADS={threads} copyhead train --run-config {params.run_config:q}"
            " --P {params.Ps} --seeds {params.seeds} --out {output:q} > {log:q} 2>&1"
