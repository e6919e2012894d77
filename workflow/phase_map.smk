# The phase map, from the repository root:
#     snakemake -s workflow/phase_map.smk --cores 1
# renders docs/phase_map.md and its figures from docs/phase_map/*.nc (docs/theory.md, Sec. 12).
# Thin rules, each one command: `copyhead phase-map map|exact|figures|page` (the work is in
# copyhead.theory.phase_map, copyhead.figures.phase_map and copyhead.results.phase_map_page). The prior at
# d_k < L checked by sampling is the research package's, with its own page: workflow/prior_check.smk. Every
# product records its provenance (the netCDF files in their attributes, the figure and the page in a
# <name>.provenance.json beside them). Each rule's params carry the code fingerprint of what makes its
# product (copyhead.provenance.code_fingerprint: phase_map for the map and its exact slice, figures and
# results for the figure and the page), so an edit of that code reruns exactly those rules. Logs and
# benchmark tables go to logs/phase_map/ (git-ignored).
from copyhead.provenance import code_fingerprint

OUT = "docs/phase_map"
LOGS = "logs/phase_map"
CODE = {concern: code_fingerprint(concern) for concern in ("phase_map", "figures", "results")}


rule all:
    default_target: True
    input:
        "docs/phase_map.md",
        f"{OUT}/fig_phase_map.png",


rule phase_map:
    output:
        f"{OUT}/map.nc",
    params:
        code=CODE["phase_map"],
    log:
        f"{LOGS}/map.log",
    benchmark:
        f"{LOGS}/map.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 copyhead phase-map map --out {output:q} > {log:q} 2>&1"


rule phase_map_exact:
    input:
        f"{OUT}/map.nc",
    output:
        f"{OUT}/exact.nc",
    params:
        code=CODE["phase_map"],
    log:
        f"{LOGS}/exact.log",
    benchmark:
        f"{LOGS}/exact.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 copyhead phase-map exact --map {input:q} --out {output:q} > {log:q} 2>&1"


rule phase_map_figures:
    input:
        map=f"{OUT}/map.nc",
        exact=f"{OUT}/exact.nc",
    output:
        f"{OUT}/fig_phase_map.png",
        f"{OUT}/fig_phase_map.provenance.json",
    params:
        code=CODE["figures"],
        out_dir=OUT,
    log:
        f"{LOGS}/figures.log",
    shell:
        "copyhead phase-map figures --map {input.map:q} --exact {input.exact:q}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule phase_map_page:
    input:
        map=f"{OUT}/map.nc",
        exact=f"{OUT}/exact.nc",
    output:
        "docs/phase_map.md",
        "docs/phase_map.md.provenance.json",
    params:
        code=CODE["results"],
    log:
        f"{LOGS}/page.log",
    shell:
        "copyhead phase-map page --map {input.map:q} --exact {input.exact:q}"
        " --out {output[0]:q} > {log:q} 2>&1"
