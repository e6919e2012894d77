# copyhead: from config.yaml to every figure of "Phase Transitions in Attention" (Lavie et al., 2026).
# The rules are thin: each names inputs, outputs, params, resources, log and benchmark and calls the
# package (src/copyhead). See docs/workflow.md.

from snakemake.logging import logger
from snakemake.utils import min_version

import json
import os

from copyhead import config as chcfg
from copyhead import datafiles, recovery

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


# Every product records the config file(s) it was made from (and the `--config` overrides), so that
# `copyhead audit` compares it with those, not with whatever config.yaml lies beside it: named here, in the
# jobs' environment (copyhead.datafiles.config_source).
os.environ[datafiles.CONFIG_FILES_ENV] = json.dumps(
    [datafiles.config_path_record(f) for f in workflow.overwrite_configfiles] or ["config.yaml"])
try:
    os.environ[datafiles.CONFIG_OVERRIDES_ENV] = json.dumps(chcfg.parse_overrides(workflow.config_settings.config))
except chcfg.ConfigError:
    pass   # named by the validation (common.smk)


# config.yaml is the default experiment; `--configfile other.yaml` replaces it (instead of Snakemake's
# default of merging the two, which would leave keys of config.yaml behind). `--config key=value` still
# overrides single keys of whichever file is used.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# After a `kill -9` of snakemake: its directory locks are removed here when the killed run was on this
# machine (copyhead.recovery) and none of the jobs it started still runs here; temporary files of killed
# writes are removed when the next run starts. Every job records itself (pid, command, which snakemake
# started it) under .snakemake/copyhead-jobs, so that a job left running is found and named.
_stale = recovery.clear_stale_locks(".snakemake")
if _stale:
    logger.warning(_stale)
elif workflow.is_main_process and (_held := recovery.lock_holders(".snakemake")):
    logger.warning(_held)   # Snakemake's own refusal that follows names no process
if workflow.is_main_process:
    os.environ.update(recovery.job_environment(".snakemake"))


onstart:
    # the locks were removed by hand (`snakemake --unlock`) while a killed run's job still runs: refuse too
    if _orphans := recovery.orphaned_jobs(".snakemake"):
        raise WorkflowError(recovery.orphans_message(_orphans, locks_kept=False))
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
