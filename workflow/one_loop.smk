# The one-loop correction against the measured finite-size gaps (issue 21 item 4), from the repository root:
#     snakemake -s workflow/one_loop.smk --cores 1
# renders docs/one_loop.md and docs/one_loop/fig_one_loop_gaps.png from docs/one_loop/*.nc (docs/theory.md,
# Sec. 13). Thin rules: the work is in copyhead.theory.one_loop_predict (posterior means),
# copyhead.analysis.one_loop_compare (z, fits, flags), copyhead.results.one_loop_page and .one_loop_tables
# (the page) and copyhead.figures.one_loop. Inputs:
# the committed studies results (docs/studies/studies.json), the studies' base config (g_Q, g_K, g_O,
# prior) and the converged study at the default size (docs/results.json); the softmax points of the
# finite-size study (rule one_loop_softmax, Eq. (35)). Every rule's params carry a
# digest of the code it runs (the computing rules: the theory package without phase_map_page; the page
# and the figure: their modules and one_loop_compare), so a code edit reruns it.
import hashlib
from pathlib import Path

OUT = "docs/one_loop"
STUDIES = ["finite_size", "finite_L"]
CODE = hashlib.sha256(b"".join(f.read_bytes() for f in sorted(Path("src/copyhead/theory").glob("*.py"))
                               if f.name != "phase_map_page.py")).hexdigest()[:16]


def digest(*files):
    return hashlib.sha256(b"".join(Path(f).read_bytes() for f in files)).hexdigest()[:16]


COMPARE = "src/copyhead/analysis/one_loop_compare.py"


rule all:
    default_target: True
    input:
        "docs/one_loop.md",
        f"{OUT}/fig_one_loop_gaps.png",


# {study}.nc: the default sub-grid (one_loop_predict.SETTINGS); {study}_coarse9.nc: a 9² sub-grid, the
# page's check of how much the predictions depend on it
rule one_loop_predict:
    input:
        studies="docs/studies/studies.json",
        base="config/studies/base.yaml",
        spec="config/studies.yaml",  # the studies' seeds: the runs whose datasets the g⊥ variant uses
    output:
        f"{OUT}/{{study}}{{grid}}.nc",
    wildcard_constraints:
        study="|".join(STUDIES),
        grid="|_coarse9",
    params:
        code=CODE,
        coarse=lambda wc: "--coarse 9" if wc.grid else "",
    log:
        f"{OUT}/logs/{{study}}{{grid}}.log",
    benchmark:
        f"{OUT}/logs/{{study}}{{grid}}.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m copyhead.theory.one_loop_predict --studies {input.studies:q}"
        " --base {input.base:q} --spec {input.spec:q} --study {wildcards.study} {params.coarse} --out {output:q}"
        " > {log:q} 2>&1"


rule one_loop_softmax:
    input:
        studies="docs/studies/studies.json",
        base="config/studies/base.yaml",
        spec="config/studies.yaml",
    output:
        f"{OUT}/finite_size_softmax.nc",
    params:
        code=CODE,
    log:
        f"{OUT}/logs/finite_size_softmax.log",
    benchmark:
        f"{OUT}/logs/finite_size_softmax.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m copyhead.theory.one_loop_predict --studies {input.studies:q}"
        " --base {input.base:q} --spec {input.spec:q} --study finite_size --attention softmax --out {output:q}"
        " > {log:q} 2>&1"


rule one_loop_converged:
    input:
        "docs/results.json",
    output:
        f"{OUT}/converged.nc",
    params:
        code=CODE,
    log:
        f"{OUT}/logs/converged.log",
    benchmark:
        f"{OUT}/logs/converged.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m copyhead.theory.one_loop_predict --results {input:q} --study converged"
        " --out {output:q} > {log:q} 2>&1"


rule one_loop_figure:
    input:
        expand(f"{OUT}/{{study}}.nc", study=STUDIES),
    output:
        f"{OUT}/fig_one_loop_gaps.png",
    params:
        code=digest("src/copyhead/figures/one_loop.py", COMPARE),
    log:
        f"{OUT}/logs/figure.log",
    shell:
        "python -m copyhead.figures.one_loop --finite-size {input[0]:q} --finite-L {input[1]:q} --out {output:q}"
        " > {log:q} 2>&1"


rule one_loop_page:
    input:
        expand(f"{OUT}/{{study}}.nc", study=STUDIES),
        f"{OUT}/finite_size_coarse9.nc",
        f"{OUT}/converged.nc",
        f"{OUT}/finite_size_softmax.nc",
    output:
        "docs/one_loop.md",
    params:
        code=digest("src/copyhead/results/one_loop_page.py", "src/copyhead/results/one_loop_tables.py", COMPARE),
    log:
        f"{OUT}/logs/page.log",
    shell:
        "python -m copyhead.results.one_loop_page --finite-size {input[0]:q} --finite-L {input[1]:q}"
        " --check {input[2]:q} --converged {input[3]:q} --softmax {input[4]:q} --out {output:q}"
        " > {log:q} 2>&1"
