# The prior of the order parameters at d_k < L, = L, > L checked by sampling Q and K, and what it does to the
# transitions, from the repository root:
#     snakemake -s workflow/prior_check.smk --cores 1
# renders docs/prior_check.md and docs/prior_check/fig_prior_check.png from docs/prior_check/prior_check.nc
# (docs/theory.md, Sec. 12.3). Research beside the paper's phase map (src/research/prior_check; copyhead never
# imports it). Thin rules, each one `python -m research prior-check|prior-check-figure|prior-check-page`
# command (the work is in research.prior_check: sampling, effect, output; figure, page). Every product records
# its provenance (the netCDF file in its attributes, the figure and the page in a <name>.provenance.json beside
# them). Each rule's params carry the code fingerprint of what makes its product
# (copyhead.provenance.code_fingerprint, read from the research package's source: prior_check for the data,
# prior_check_page for the figure and the page), so an edit of that code reruns it. Logs and benchmark tables
# go to logs/prior_check/ (git-ignored).
from copyhead.provenance import code_fingerprint

OUT = "docs/prior_check"
LOGS = "logs/prior_check"
CODE = {concern: code_fingerprint(concern) for concern in ("prior_check", "prior_check_page")}


rule all:
    default_target: True
    input:
        "docs/prior_check.md",
        f"{OUT}/fig_prior_check.png",


rule prior_check:
    output:
        f"{OUT}/prior_check.nc",
    params:
        code=CODE["prior_check"],
    log:
        f"{LOGS}/prior_check.log",
    benchmark:
        f"{LOGS}/prior_check.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m research prior-check --out {output:q} > {log:q} 2>&1"


rule prior_check_figure:
    input:
        f"{OUT}/prior_check.nc",
    output:
        f"{OUT}/fig_prior_check.png",
        f"{OUT}/fig_prior_check.provenance.json",
    params:
        code=CODE["prior_check_page"],
    log:
        f"{LOGS}/figure.log",
    shell:
        "python -m research prior-check-figure --prior {input:q} --out {output[0]:q} > {log:q} 2>&1"


rule prior_check_page:
    input:
        f"{OUT}/prior_check.nc",
    output:
        "docs/prior_check.md",
        "docs/prior_check.md.provenance.json",
    params:
        code=CODE["prior_check_page"],
    log:
        f"{LOGS}/page.log",
    shell:
        "python -m research prior-check-page --prior {input:q} --out {output[0]:q} > {log:q} 2>&1"
