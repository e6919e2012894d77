# The issue-13 studies, from the repository root (docs/studies.md):
#     snakemake -s workflow/studies.smk --cores 2              # every study and every comparison
#     snakemake -s workflow/studies.smk --cores 2 finite_size  # one group: finite_size, scaling, sigma2
# config/studies.yaml lists the studies. Each is the main workflow (Snakefile) run in its own folder
# studies/<name>/ (a nested snakemake, so each keeps its own code-aware reruns, logs and provenance) with
# a config generated from the spec (copyhead study-config: the P grid sits at fixed multiples of the
# study's own closed-form transitions). The nested snakemake is entered whenever this workflow runs a
# study whose config or code (any concern's code fingerprint) changed; there it reruns only what the change
# affects.

from copyhead.provenance import CODE_MODULES, code_fingerprint
from copyhead.studies.spec import load_spec

SPEC_FILE = "config/studies.yaml"
SPEC = load_spec(SPEC_FILE)
GROUPS = SPEC.get("groups", {})
CODE = {c: code_fingerprint(c) for c in CODE_MODULES}
STUDY_CODE = " ".join(f"{c}={v}" for c, v in sorted(CODE.items()) if c != "studies")  # what a study's products use


def results_json(names):
    return [f"studies/{n}/results/docs/results.json" for n in names]


rule all_studies:
    default_target: True
    input:
        "studies/report/studies.md",


# The cross-study report (finite d_k, scaling in L and V, sigma^2 collapse); docs/studies/ in the repository
# is a verbatim copy of this folder. The converged default-size study (docs/results.json, committed) is
# put on the paper's sigma^2 = 1 scale.
rule studies_report:
    input:
        spec=SPEC_FILE,
        studies=results_json(SPEC["studies"]),
        converged="docs/results.json",
    output:
        md="studies/report/studies.md",
        json="studies/report/studies.json",
    params:
        code=CODE["studies"],
    log:
        "studies/logs/studies_report.log",
    shell:
        "copyhead studies-report {input.spec:q} {input.studies:q} --converged {input.converged:q} --out {output.md:q}"
        " > {log:q} 2>&1"


# One group's own report (e.g. the fixed head dimension of issue 20), beside the whole one:
#     snakemake -s workflow/studies.smk --cores 2 studies/report_fixed_dk16/studies.md
#     copyhead publish-studies studies/report_fixed_dk16 --name studies_fixed_dk16
rule group_report:
    input:
        spec=SPEC_FILE,
        studies=lambda w: results_json(GROUPS[w.group]),
    output:
        md="studies/report_{group}/studies.md",
        json="studies/report_{group}/studies.json",
    wildcard_constraints:
        group="|".join(GROUPS) or "-",
    params:
        code=CODE["studies"],
    log:
        "studies/logs/report_{group}.log",
    shell:
        "copyhead studies-report {input.spec:q} {input.studies:q} --out {output.md:q} > {log:q} 2>&1"


for _group, _names in GROUPS.items():

    rule:
        name:
            _group
        input:
            results_json(_names),


rule study_config:
    input:
        spec=SPEC_FILE,
        base=SPEC["base_path"],
    output:
        "studies/{name}/config.yaml",
    params:
        code=CODE["theory"],
    log:
        "studies/logs/{name}.study_config.log",
    shell:
        "copyhead study-config {input.spec:q} {wildcards.name} --out {output:q} > {log:q} 2>&1"


rule study:
    input:
        "studies/{name}/config.yaml",
    output:
        "studies/{name}/results/docs/results.json",
    params:
        code=STUDY_CODE,
    log:
        "studies/logs/{name}.log",
    threads: workflow.cores
    shell:
        "snakemake -s Snakefile --cores {threads} --configfile {input:q} --directory studies/{wildcards.name:q}"
        " results/docs/results.json > {log:q} 2>&1"
