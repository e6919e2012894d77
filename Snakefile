# copyhead: from config.yaml to every figure of "Phase Transitions in Attention" (Lavie et al., 2026).
# The rules are thin: each names inputs, outputs, params, resources, log and benchmark and calls the
# package (src/copyhead). See docs/workflow.md.

from snakemake.logging import logger
from snakemake.utils import min_version

from copyhead import config as chcfg
from copyhead import recovery

min_version("9.0")


# The config files are read strictly first: a YAML syntax error or a key given twice stops here naming
# the file, line and column (Snakemake's own reader names neither and lets the last duplicate win). What
# this reader gives is the config the workflow uses (common.smk): it also reads YAML 1.2 numbers such as
# `lr: 1e-2`, which Snakemake's YAML 1.1 reader leaves as the string '1e-2'.
FILE_CONFIG = {}
for _cfgfile in workflow.overwrite_configfiles or ["config.yaml"]:
    try:
        FILE_CONFIG = chcfg.merge_overrides(FILE_CONFIG, chcfg.load_mapping(_cfgfile))
    except chcfg.ConfigError as err:
        raise WorkflowError(str(err)) from None


# config.yaml is the default experiment; `--configfile other.yaml` replaces it (instead of Snakemake's
# default of merging the two, which would leave keys of config.yaml behind). `--config key=value` still
# overrides single keys of whichever file is used.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# After a `kill -9` of snakemake: its directory locks are removed here when the killed run was on this
# machine (copyhead.recovery); temporary files of killed writes are removed when the next run starts.
_stale = recovery.clear_stale_locks(".snakemake")
if _stale:
    logger.warning(_stale)
elif workflow.is_main_process and (_held := recovery.lock_holders(".snakemake")):
    logger.warning(_held)   # Snakemake's own refusal that follows names no process


onstart:
    recovery.record_owner(".snakemake")
    for _tmp in recovery.remove_stale_temps("results"):
        logger.info(f"removed {_tmp} (temporary file of a killed write)")


onsuccess:
    recovery.release_owner(".snakemake")
    # runs left out of every mean (non-finite or made with another config) are named in one line
    from copyhead.aggregate import left_out_summary

    _left = left_out_summary([f"results/aggregate/{a}.nc" for a in ATTENTIONS])
    if _left:
        logger.warning(_left)


onerror:
    recovery.release_owner(".snakemake")


include: "workflow/rules/common.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/figures.smk"


rule all:
    default_target: True
    input:
        all_figures(),
        "results/docs/results.md",
