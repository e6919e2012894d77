"""The one-loop (Gaussian) correction from the L² − 2 transverse directions of the score matrix, and the
pooling sector beyond it (docs/theory.md, Sec. 13), and their comparison with the measured finite-size gaps
(docs/one_loop.md, made by workflow/one_loop.smk through ``python -m research one-loop ...``). Research beside
the paper: it was ``copyhead.theory.one_loop`` (with copyhead.analysis.one_loop_*, copyhead.results.one_loop_*
and copyhead.figures.one_loop) until issue 50 moved it here; copyhead imports none of it.

The 2-D theory keeps M = m1 J + mP I; around such a point the full score matrix fluctuates in the orthogonal
complement of span{I, J} (Frobenius), and integrating those fluctuations at Gaussian order corrects the action
and the posterior means. Pure numpy/scipy (the page and the figures: xarray, matplotlib).

Modules, in the order they build on each other:
- ``blocks``: the isotypic decomposition of R^{L×L} under permutations (Eq. (29)), the transverse basis,
  the block directions;
- ``evidence``: E(M) = −ln p(Y|A(M)) of one dataset or of the equivalent kernel (Eqs. (4), (11)) and the
  softmax observable âG(M), with exact gradients and Hessian-vector products;
- ``prior``: the Hessian of the prior rate (Eq. (28)) and the plane prefactor (Eq. (30));
- ``correction``: the Gaussian integral (Eq. (31)), its stability (Eq. (33)), the block form for the
  equivalent kernel (Eq. (32)), the softest mode, a dataset's gradient term (Eq. (34));
- ``softmax``: the softmax expansion point and the observable's second-order term (Eq. (35));
- ``posterior``: the posterior means with and without the correction at one P (Eq. (18));
- ``pooling``: the pooling sector (Eq. (37)): the column modes 1wᵀ beyond Gaussian order, with the exact prior
  of the pooling vector Mᵀ1̂, the equivalent-kernel evidence along their norm and a dataset's column tilt;
- ``dataset``: the consistent per-dataset one loop: each run's own evidence Hessian and gradient (in closed
  form from its second moments) around its own 2-D action, with or without the pooling sector;
- ``predict``: those means at given measured points, as the dataset of docs/one_loop/*.nc;
- ``predict_output``: that dataset written with its provenance (``python -m research one-loop predict``; the only
  module here that writes a file);
- ``curve``: the corrected and uncorrected means along a P grid and the corrected transition;
- ``points``: the measured points of a study (its gaps, errors, closed-form values) the predictions are for;
- ``compare``: predictions against the measured gaps (z, RMS z, shifts, flags, effect sizes |Δ|);
- ``remainder_fit``: what the pooling sector leaves of the ĉG gap against L/d_k;
- ``page`` (with ``page_tables``, ``page_dataset``, ``page_remainder``: its Markdown lines) and ``figures``:
  docs/one_loop.md and its figures, each with its provenance record.
Vectorisation convention: vec(M) = M.reshape(-1) (row-major, index a·L + b).
"""
