"""The order-parameter keys, their names and the theory curves, where copyhead.figures and copyhead.studies
import them from; they are defined in copyhead.analysis.experiments and copyhead.analysis.curves."""
from ..analysis.curves import CURVES
from ..analysis.experiments import COPY_KEY, KEYS, NAMES

__all__ = ["COPY_KEY", "CURVES", "KEYS", "NAMES"]
