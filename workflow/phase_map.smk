# The phase map and the prior check (issue 20, items 1-2), from the repository root:
#     snakemake -s workflow/phase_map.smk --cores 1
# renders docs/phase_map.md and its figures from docs/phase_map/*.nc (docs/theory.md, Sec. 12).
# Thin rules: the work is in copyhead.theory.phase_map, .prior_effect, .phase_map_page and
# copyhead.figures.phase_map. The computing rules' params carry a digest of the theory code they run (the
# theory package without the page writer), so a code edit reruns them; after editing only the page or
# the figure module, add --forcerun phase_map_page (or phase_map_figures).
import hashlib
from pathlib import Path

OUT = "docs/phase_map"
CODE = hashlib.sha256(b"".join(f.read_bytes() for f in sorted(Path("src/copyhead/theory").glob("*.py"))
                               if f.name != "phase_map_page.py" and not f.name.startswith("one_loop"))).hexdigest()[:16]


rule all:
    default_target: True
    input:
        "docs/phase_map.md",
        f"{OUT}/fig_phase_map.png",
        f"{OUT}/fig_prior_check.png",


rule phase_map:
    output:
        f"{OUT}/map.nc",
    params:
        code=CODE,
    log:
        f"{OUT}/logs/map.log",
    benchmark:
        f"{OUT}/logs/map.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m copyhead.theory.phase_map map --out {output:q} > {log:q} 2>&1"


rule phase_map_exact:
    input:
        f"{OUT}/map.nc",
    output:
        f"{OUT}/exact.nc",
    params:
        code=CODE,
    log:
        f"{OUT}/logs/exact.log",
    benchmark:
        f"{OUT}/logs/exact.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m copyhead.theory.phase_map exact --map {input:q} --out {output:q} > {log:q} 2>&1"


rule prior_check:
    output:
        f"{OUT}/prior_check.nc",
    params:
        code=CODE,
    log:
        f"{OUT}/logs/prior_check.log",
    benchmark:
        f"{OUT}/logs/prior_check.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m copyhead.theory.prior_effect --out {output:q} > {log:q} 2>&1"


rule phase_map_figures:
    input:
        map=f"{OUT}/map.nc",
        exact=f"{OUT}/exact.nc",
        prior=f"{OUT}/prior_check.nc",
    output:
        f"{OUT}/fig_phase_map.png",
        f"{OUT}/fig_prior_check.png",
    log:
        f"{OUT}/logs/figures.log",
    shell:
        "python -m copyhead.figures.phase_map --map {input.map:q} --exact {input.exact:q} --prior {input.prior:q}"
        " --out {OUT:q} > {log:q} 2>&1"


rule phase_map_page:
    input:
        map=f"{OUT}/map.nc",
        exact=f"{OUT}/exact.nc",
        prior=f"{OUT}/prior_check.nc",
    output:
        "docs/phase_map.md",
    log:
        f"{OUT}/logs/page.log",
    shell:
        "python -m copyhead.theory.phase_map_page --map {input.map:q} --exact {input.exact:q} --prior {input.prior:q}"
        " --out {output:q} > {log:q} 2>&1"
