"""research: the questions beyond the paper (issue 50), built on copyhead.

copyhead is what a user runs to reproduce and extend the paper; this package holds what goes further:
umbrella sampling with MBAR at the softmax jump (:mod:`research.umbrella`) and the research measurements
whose pages are published under docs/benchmarks/ (:mod:`research.benchmarks`: column response, prior force,
column share and its scaling, column fluctuations, exact one-loop checks, metastability).

research imports copyhead; copyhead never imports research (tests/test_architecture.py checks both). Its
pages stay auditable through copyhead's provenance: a concern of copyhead.fingerprint.CODE_ROOTS may name a
research entry point by its full module path (``"research.umbrella:mbar"``), which the fingerprint reads
from this package's source files without importing it. Its tests run behind the ``research`` marker
(``pytest -m research``).
"""
