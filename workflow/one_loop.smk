# The one-loop correction against the measured finite-size gaps, from the repository root:
#     snakemake -s workflow/one_loop.smk --cores 1
# renders docs/one_loop.md and docs/one_loop/fig_one_loop_gaps.png from docs/one_loop/*.nc (docs/theory.md,
# Sec. 13). Research beside the paper (src/research/one_loop; copyhead never imports it). Thin rules, each one
# `python -m research one-loop predict|figure|dataset-figure|remainder-figure|page` command: the measured
# points are read by research.one_loop.points, the predictions computed by research.one_loop (.predict),
# compared by research.one_loop.compare and rendered by research.one_loop.page (.page_tables, .page_dataset,
# .page_remainder) and research.one_loop.figures. Inputs: the committed studies results (docs/studies/studies.json), the
# studies' base config (g_Q, g_K, g_O, prior) and spec (the seeds), and the converged study at the default
# size (docs/results.json); the softmax points of the finite-size study (rule one_loop_softmax, Eq. (35)).
# Every product records its provenance (the netCDF files in their attributes with the sha256 of each input,
# the figure and the page in a <name>.provenance.json beside them). Each rule's params carry the code
# fingerprint of what makes its product (copyhead.provenance.code_fingerprint, read from the research
# package's source: one_loop for the predictions, one_loop_figures for the figures, one_loop_page for the
# page), so an edit of that code reruns it. Logs and benchmark tables go to logs/one_loop/ (git-ignored).
from copyhead.provenance import code_fingerprint

OUT = "docs/one_loop"
LOGS = "logs/one_loop"
STUDIES = ["finite_size", "finite_L"]
CODE = {concern: code_fingerprint(concern) for concern in ("one_loop", "one_loop_figures", "one_loop_page")}
RECIPE = "hmc"   # the measured chains: the reference posterior's prior-started recipe (the studies run no SGLD)


rule all:
    default_target: True
    input:
        "docs/one_loop.md",
        f"{OUT}/fig_one_loop_gaps.png",
        f"{OUT}/fig_one_loop_dataset_linear.png",
        f"{OUT}/fig_one_loop_dataset_softmax.png",
        f"{OUT}/fig_one_loop_remainder.png",


# {study}.nc: the default sub-grid (research.one_loop.posterior.SETTINGS); {study}_coarse9.nc: a 9²
# sub-grid, the page's check of how much the predictions depend on it
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
        code=CODE["one_loop"],
        recipe=RECIPE,
        coarse=lambda wc: "--coarse 9" if wc.grid else "",
    log:
        f"{LOGS}/{{study}}{{grid}}.log",
    benchmark:
        f"{LOGS}/{{study}}{{grid}}.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m research one-loop predict --studies {input.studies:q} --base {input.base:q}"
        " --spec {input.spec:q} --study {wildcards.study} {params.coarse} --recipe {params.recipe:q} --out {output:q} > {log:q} 2>&1"


rule one_loop_softmax:
    input:
        studies="docs/studies/studies.json",
        base="config/studies/base.yaml",
        spec="config/studies.yaml",
    output:
        f"{OUT}/finite_size_softmax.nc",
    params:
        code=CODE["one_loop"],
        recipe=RECIPE,
    log:
        f"{LOGS}/finite_size_softmax.log",
    benchmark:
        f"{LOGS}/finite_size_softmax.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m research one-loop predict --studies {input.studies:q} --base {input.base:q}"
        " --spec {input.spec:q} --study finite_size --attention softmax --recipe {params.recipe:q} --out {output:q} > {log:q} 2>&1"


rule one_loop_converged:
    input:
        "docs/results.json",
    output:
        f"{OUT}/converged.nc",
    params:
        code=CODE["one_loop"],
        recipe=RECIPE,
    log:
        f"{LOGS}/converged.log",
    benchmark:
        f"{LOGS}/converged.bench.tsv"
    shell:
        "OMP_NUM_THREADS=1 python -m research one-loop predict --results {input:q} --study converged --recipe {params.recipe:q}"
        " --out {output:q}"
        " > {log:q} 2>&1"


rule one_loop_figure:
    input:
        finite_size=f"{OUT}/finite_size.nc",
        finite_L=f"{OUT}/finite_L.nc",
    output:
        f"{OUT}/fig_one_loop_gaps.png",
        f"{OUT}/fig_one_loop_gaps.provenance.json",
    params:
        code=CODE["one_loop_figures"],
    log:
        f"{LOGS}/figure.log",
    shell:
        "python -m research one-loop figure --finite-size {input.finite_size:q} --finite-L {input.finite_L:q}"
        " --out {output[0]:q} > {log:q} 2>&1"


# the per-dataset one loop against the equivalent-kernel one, one figure per attention type: linear at the
# default size (the converged study), softmax at the finite-size study's points
rule one_loop_dataset_figure:
    input:
        lambda wc: f"{OUT}/converged.nc" if wc.attention == "linear" else f"{OUT}/finite_size_softmax.nc",
    output:
        f"{OUT}/fig_one_loop_dataset_{{attention}}.png",
        f"{OUT}/fig_one_loop_dataset_{{attention}}.provenance.json",
    wildcard_constraints:
        attention="linear|softmax",
    params:
        code=CODE["one_loop_figures"],
    log:
        f"{LOGS}/figure_dataset_{{attention}}.log",
    shell:
        "python -m research one-loop dataset-figure --predictions {input:q} --out {output[0]:q} > {log:q} 2>&1"


# what the pooling-sector one loop leaves of the ĉG gap against L/d_k, the three linear studies (Section 0b)
rule one_loop_remainder_figure:
    input:
        finite_size=f"{OUT}/finite_size.nc",
        finite_L=f"{OUT}/finite_L.nc",
        converged=f"{OUT}/converged.nc",
    output:
        f"{OUT}/fig_one_loop_remainder.png",
        f"{OUT}/fig_one_loop_remainder.provenance.json",
    params:
        code=CODE["one_loop_figures"],
    log:
        f"{LOGS}/figure_remainder.log",
    shell:
        "python -m research one-loop remainder-figure --finite-size {input.finite_size:q} --finite-L {input.finite_L:q}"
        " --converged {input.converged:q} --out {output[0]:q} > {log:q} 2>&1"


rule one_loop_page:
    input:
        finite_size=f"{OUT}/finite_size.nc",
        finite_L=f"{OUT}/finite_L.nc",
        check=f"{OUT}/finite_size_coarse9.nc",
        converged=f"{OUT}/converged.nc",
        softmax=f"{OUT}/finite_size_softmax.nc",
    output:
        "docs/one_loop.md",
        "docs/one_loop.md.provenance.json",
    params:
        code=CODE["one_loop_page"],
    log:
        f"{LOGS}/page.log",
    shell:
        "python -m research one-loop page --finite-size {input.finite_size:q} --finite-L {input.finite_L:q}"
        " --check {input.check:q} --converged {input.converged:q} --softmax {input.softmax:q}"
        " --out {output[0]:q} > {log:q} 2>&1"
