"""The prior of the order parameters checked by sampling Q and K, and its effect on the transitions
(docs/theory.md, Sec. 12.3; rendered on docs/phase_map.md). Research beside the paper's phase map, which
stays in copyhead (:mod:`copyhead.theory.phase_map`: the closed-form theory).

- ``sampling``: the exact density of the projection of M = QᵀK/d_k on span{J, I} estimated from sampled
  Q, K (tilted and reweighted), the rates it is compared with, the rank-deficient draws and their coverage;
- ``effect``: what the checked prior does to the softmax P* and the linear crossover (:func:`effect.compute_check`);
- ``output``: that dataset written with its provenance (``python -m research prior-check --out FILE``;
  the only module here that writes a file).
"""
