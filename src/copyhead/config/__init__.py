"""The experiment configuration (``config.yaml``): one place, four parts.

- :mod:`.schema` — the JSON schema, readable problems naming each key (one loop over schema errors), the
  cross-field rules a schema cannot express, and :func:`validate` (numbers typed as the schema says);
- :mod:`.files` — reading config files strictly (file, line and column in every error; YAML 1.2
  numbers), ``--config`` overrides, canonical JSON and hashes;
- :mod:`.runs` — the subset one training run depends on (:func:`run_config`, :func:`run_identity`) and
  its typed form (:class:`RunConfig`, :class:`Recipe`);
- :mod:`.theory` — the theory subset's typed form (:class:`TheoryParams`).

Numbers are typed in two layers, each once: a config mapping by the schema (:func:`validate`, so ``g_Q: 1``
and ``g_Q: 1.0`` give identical params and hashes), a typed dataclass by its field annotations
(:func:`.runs._typed`, used by RunConfig, Recipe and TheoryParams). Everything is importable from
``copyhead.config``.
"""
from .files import (_StrictLoader, canonical_json, config_hash, load, load_mapping, load_yaml,
                    merge_overrides, parse_overrides)
from .runs import (ModelParams, Recipe, RunConfig, TaskParams, config_diff, config_differences, run_config,
                   run_identity, runs,
                   theory_config, validate_run_config)
from .schema import ATTENTIONS, METHODS, ConfigError, schema, schema_problems, validate
from .theory import (ActionParams, ExactSettings, LandscapeP, ScalingSettings, TheoryParams,
                     theory_params)

__all__ = ["ATTENTIONS", "METHODS", "ActionParams", "ConfigError", "ExactSettings",
           "LandscapeP", "ModelParams",
           "Recipe", "RunConfig", "ScalingSettings", "TaskParams", "TheoryParams", "_StrictLoader",
           "canonical_json", "config_diff", "config_differences", "config_hash", "load", "load_mapping", "load_yaml",
           "merge_overrides", "parse_overrides", "run_config", "run_identity", "runs", "schema",
           "schema_problems", "theory_config", "theory_params", "validate", "validate_run_config"]
