"""The one place where the command line loads the package lazily: ``call("module:function", ...)`` imports
``copyhead.<module>`` when a command runs and calls the function.

Why: the package's heavy dependencies (torch for training, the order parameters and the statistics; xarray
for every netCDF file; scipy for the theory; matplotlib for the figures) take seconds to import, and every
rule of the workflow and many tests start a `copyhead` process; a command pays only for what it uses, and
`copyhead --help` or `copyhead check-config` stays instant. Everything else in the package imports at
module top.
"""
from __future__ import annotations

import importlib


def call(target: str, *args, **kwargs):
    """Call ``copyhead.<module>:<function>`` (imported now) with the given arguments."""
    module, name = target.split(":")
    return getattr(importlib.import_module(f"copyhead.{module}"), name)(*args, **kwargs)


def attribute(target: str):
    """``copyhead.<module>:<name>`` itself (imported now), e.g. an exception class to catch."""
    module, name = target.split(":")
    return getattr(importlib.import_module(f"copyhead.{module}"), name)
