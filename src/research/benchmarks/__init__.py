"""The research measurements: each module is a script whose page is published under docs/benchmarks/
(``python src/research/benchmarks/<name>.py --md docs/benchmarks/<name>.md``); questions beyond the paper,
not performance benchmarks (those stay in benchmarks/).

- column_response: one training set's full transverse action at a plane point, its saddle and tadpole;
- prior_force: the exact prior force against the evidence force on exact posterior draws;
- column_share_scaling, one_loop_column_share, column_fluctuations: the column sector of the one loop;
- one_loop_exact: exact posterior draws of one training set against the per-dataset one loop;
- one_loop_gaps, one_loop_gperp_curvature: the one loop's gaps and transverse curvature (no page);
- metastability: the latent heat at the softmax jump and umbrella sampling across it (research.umbrella).

Each imports benchmarks/common.py (the page writer with its provenance record, shared with the benchmarks;
one copy) by putting the checkout's benchmarks/ on ``sys.path``: run them from a checkout.
"""
