"""copyhead: reproduce 'Phase Transitions in Attention: A Bayesian Theory of Copy Head Emergence'.

Modules: ``task`` (copy-task data), ``model`` (single-head attention), ``train`` (Adam, SGLD),
``order_params`` (c1, cG, coverage), ``run`` (one training run -> one netCDF), ``theory`` (Bayesian
evidence, score priors, order-parameter action, transitions), ``aggregate`` (runs -> xarray), ``figures``,
``provenance`` (attributes, checksums, atomic writes, audit), ``config`` (validation), ``cli``.
"""
__version__ = "0.1.0"
