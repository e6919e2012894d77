# Config validation (before the DAG is built) and the helpers the rules share.
import json
import os
from functools import lru_cache

from copyhead import config as chcfg
from copyhead.figures import FIGURES
from copyhead.provenance import CODE_ROOTS, code_fingerprint
from copyhead.resources import check_sweep_fits, memory_limits, train_resources

# Validate against workflow/schemas/config.schema.yaml (the package's schema) plus the cross-field rules:
# a typo stops here, naming the key and the allowed values, before any job starts. `--config` values are
# read as YAML first (Snakemake leaves `--config 'model={d_k: 8}'` as strings); numbers come out typed by
# the schema, so `g_Q: 1` and `g_Q: 1.0` give the same params. Then a point no machine can hold (this machine's
# RAM and the largest SLURM node, copyhead.resources) is refused, also before any job.
try:
    CONFIG = check_sweep_fits(chcfg.validate(
        chcfg.merge_overrides(FILE_CONFIG, chcfg.parse_overrides(workflow.config_settings.config))
    ))
except chcfg.ConfigError as err:
    raise WorkflowError(str(err)) from None

# The memory check asked SLURM once for its largest node's memory (sinfo; cached). The jobs inherit the answer
# instead of each asking again: every copyhead command checks that a job fits before any compute, and a
# sinfo that cannot reach a controller takes ~9 s to fail (docs/workflow.md "Failures"). A value the user
# set is kept; 0 means no SLURM node is known, as when sinfo fails.
os.environ.setdefault("COPYHEAD_MAX_NODE_MEM_MB", str(memory_limits()["slurm_node"]))

ATTENTIONS = [a for a in chcfg.ATTENTIONS if a in CONFIG["sweep"]]
RUNS = chcfg.runs(CONFIG)
# Fingerprint of the code behind each kind of product (comments and docstrings excluded): in the rules'
# params, so a code edit reruns exactly the products that code makes. Computed when a rule first asks for
# its concern, so a workflow computes only the concerns its rules use (the main pipeline never follows
# the research package's code, which it does not run).
class _Fingerprints(dict):
    def __missing__(self, concern):
        if concern not in CODE_ROOTS:
            raise KeyError(f"no code concern {concern!r}; known: {sorted(CODE_ROOTS)}")
        self[concern] = code_fingerprint(concern)
        return self[concern]


CODE = _Fingerprints()


# Numbers without leading zeros: `seed007` or `P04` must not name (and rebuild) seed 7 or P 4.
wildcard_constraints:
    attention="linear|softmax",
    optimizer="[a-z][a-z0-9_]*",
    P="[1-9][0-9]*",
    seed="0|[1-9][0-9]*",


def same_dataset_pairs(attention):
    """(P, seed) of every run of one attention type: the training sets of the same-dataset theory."""
    return sorted({(P, seed) for att, _, P, seed in RUNS if att == attention})


def run_path(attention, optimizer, P, seed):
    return f"results/runs/{attention}/{optimizer}/P{P}/seed{seed}.nc"


def run_files(wildcards):
    """Every run file of one attention type (the aggregate's inputs)."""
    return [run_path(*r) for r in RUNS if r[0] == wildcards.attention]


def train_jobs():
    """(attention, optimizer, seeds) of every training rule: one rule per swept recipe, one job per P
    that trains all its seeds as one batch of chains (copyhead.run.train_job)."""
    return [(att, opt, [int(s) for s in spec["seeds"]])
            for att in ATTENTIONS for opt, spec in CONFIG["sweep"][att].items()]


def run_params(attention, optimizer):
    """The config subset shared by the runs of one (attention, optimizer), as canonical JSON.

    Snakemake compares params by repr(): canonical JSON (sorted keys) changes exactly when a setting the
    run depends on changes, so an SGLD edit reruns SGLD jobs only.
    """
    return chcfg.canonical_json(chcfg.run_config(CONFIG, attention, optimizer))


@lru_cache(maxsize=None)
def run_resources(attention, optimizer, P, attempt=1):
    """Scheduler resources of one training job (all seeds of one (recipe, P) as a batch;
    copyhead.resources), computed once per (recipe, P, attempt)."""
    return train_resources(CONFIG, attention, optimizer, int(P), attempt)


INPUT_PATHS = {"aggregate": "results/aggregate/{}.nc", "theory": "results/theory/{}.nc",
               "datasets": "results/theory/{}_datasets.nc"}


def role_paths(pairs):
    """Input role <kind>_<attention> -> path, for (kind, attention) pairs (kinds: keys of INPUT_PATHS)."""
    return {f"{kind}_{att}": INPUT_PATHS[kind].format(att) for kind, att in pairs}


def figure_inputs(fig):
    """Input role -> path for one figure: the aggregates and theory files of the attention types it shows
    (``needs``), and the same-dataset theory where it draws it (``optional``: always made by the workflow,
    optional only for a figure drawn by hand)."""
    return role_paths((*fig.needs, *fig.optional))


def figure_path(name, ext):
    return f"results/figures/{name}.{ext}"


def all_figures():
    return [figure_path(f.name, ext) for f in FIGURES.values() if f.available(ATTENTIONS)
            for ext in ("pdf", "png")]


def train_partition():
    """sbatch -p of the training jobs from the environment (docs/slurm.md), or {} (the default)."""
    part = os.environ.get("COPYHEAD_SLURM_GPU_PARTITION") or os.environ.get("COPYHEAD_SLURM_PARTITION")
    return {"slurm_partition": part} if part else {}


# Software environment of every rule for `--software-deployment-method conda` (ignored otherwise).
ENV = "../../envs/copyhead.yaml"
