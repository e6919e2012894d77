"""Left only so that ``workflow/rules/train.smk`` (``from copyhead.engine import RUN_STORE_ENV``) keeps
working while that file is being changed by another piece of work; nothing in the package imports it.

This module held two concerns (issue 50): the run store is now :mod:`copyhead.run_store`, the P-major
layout of a packed group (``points``) is in :mod:`copyhead.run` beside ``train_points``, the code that
trains it. Delete this module once train.smk imports ``copyhead.run_store``.
"""
from .run_store import RUN_STORE_ENV

__all__ = ["RUN_STORE_ENV"]
