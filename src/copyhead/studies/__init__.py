"""Studies: families of whole sweeps compared with each other (finite d_k, scaling in L and V, a fixed head
dimension, the σ² collapse and the SGLD step size).

A study is the main workflow (Snakefile) run in its own folder ``studies/<name>`` with a config generated
from ``config/studies.yaml`` (:mod:`copyhead.studies.spec`): a shared base config (model, SGLD recipes,
theory settings) plus the study's (L, V, d_k, σ²), with a P grid placed at fixed multiples of the study's
own closed-form transitions (they move with d_k, L, V and σ²). The comparisons across studies are two steps:

- compute, ``copyhead studies-report``: :mod:`copyhead.studies.tables` reads the studies' results JSON files
  (``copyhead results``) and writes studies.json (the statistics: :mod:`copyhead.analysis.finite_size`,
  :mod:`copyhead.analysis.scaling_claims`, :mod:`copyhead.analysis.twins`, fits in :mod:`copyhead.analysis.fits`);
- render, ``copyhead studies-page``: :mod:`copyhead.studies.report` writes the page and its figures
  (:mod:`copyhead.figures.studies`) from studies.json alone, plus the converged study's current results JSON
  for the paper-scale table; the conclusions are rules in :mod:`copyhead.studies.conclude`.

:mod:`copyhead.publish` copies a report into docs/ (``copyhead publish-studies``) and keeps each
published folder's manifest.
"""
