# copyhead: from config.yaml to every figure of "Phase Transitions in Attention" (Lavie et al., 2026).
# The rules are thin: each names inputs, outputs, params, resources, log and benchmark and calls the
# package (src/copyhead). See docs/workflow.md.

from snakemake.utils import min_version

min_version("9.0")


# config.yaml is the default experiment; `--configfile other.yaml` replaces it (instead of Snakemake's
# default of merging the two, which would leave keys of config.yaml behind). `--config key=value` still
# overrides single keys of whichever file is used.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"



include: "workflow/rules/common.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/figures.smk"


rule all:
    default_target: True
    input:
        all_figures(),
