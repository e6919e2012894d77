"""The prior of the order parameters checked by sampling Q and K, and its effect on the transitions
(docs/theory.md, Sec. 12.3; its page docs/prior_check.md). Research beside the paper's phase map, which
stays in copyhead (:mod:`copyhead.theory.phase_map`: the closed-form theory).

- ``sampling``: the exact density of the projection of M = QᵀK/d_k on span{J, I} estimated from sampled
  Q, K (tilted and reweighted), the rates it is compared with, the rank-deficient draws and their coverage;
- ``effect``: what the checked prior does to the softmax P* and the linear crossover (:func:`effect.compute_check`);
- ``output``: that dataset written with its provenance (``python -m research prior-check --out FILE``:
  docs/prior_check/prior_check.nc);
- ``figure``, ``page``: its figure and the page docs/prior_check.md (``prior-check-figure``,
  ``prior-check-page``; workflow/prior_check.smk), each with its provenance record.
"""
