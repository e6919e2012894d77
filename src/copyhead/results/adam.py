"""The local minima of an action landscape, where copyhead.figures imports them from; defined (with Adam
against the theory's landscape) in copyhead.analysis.adam."""
from ..analysis.adam import local_minima_1d as _local_minima_1d

__all__ = ["_local_minima_1d"]
