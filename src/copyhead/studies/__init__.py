"""Studies: families of whole sweeps compared with each other (issue 13: finite d_k, scaling in L and V,
the σ² collapse).

A study is the main workflow (Snakefile) run in its own folder ``studies/<name>`` with a config generated
from ``config/studies.yaml`` (:mod:`copyhead.studies.spec`): a shared base config (model, SGLD recipes,
theory settings) plus the study's (L, V, d_k, σ²), with a P grid placed at fixed multiples of the study's
own closed-form transitions (they move with d_k, L, V and σ²). The comparisons across studies read the
studies' results JSON files (``copyhead results``): :mod:`copyhead.studies.tables` (the numbers: gaps and
transitions against 1/size, scaling in L and V, the σ² and step-size twins; fits in
:mod:`copyhead.analysis.fits`) and :mod:`copyhead.studies.report` (the page and its figures).
"""
