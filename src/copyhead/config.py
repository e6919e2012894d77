"""Loading and validating the experiment configuration (``config.yaml``).

This module owns the config contract: the JSON schema (``schemas/config.schema.yaml``, also reachable as
``workflow/schemas/config.schema.yaml``), the cross-field rules a schema cannot express, readable error
messages that name the offending key and the allowed values, and the *subsets* of the config that each
product depends on (one training run, the theory). Those subsets are what Snakemake's ``params:`` carry and
what run files record, so an edit reruns exactly the products it affects.
"""
from __future__ import annotations

import copy
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

ATTENTIONS = ("linear", "softmax")
METHODS = ("adam", "sgld")


class ConfigError(ValueError):
    """A config that cannot be run; the message lists every problem, each naming its key."""


def schema() -> dict:
    """The JSON schema of config.yaml (the package copy of workflow/schemas/config.schema.yaml)."""
    text = resources.files("copyhead").joinpath("schemas/config.schema.yaml").read_text()
    return yaml.safe_load(text)


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _describe(error, root_schema: dict) -> str:
    """One line for one jsonschema error, naming the key and, where known, the allowed values."""
    where = _key(error.absolute_path)
    v = error.validator
    if v == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        keys = ", ".join(f"'{_key([*error.absolute_path, k])}'" for k in extra)
        return f"unknown key {keys}; allowed keys here: {allowed}"
    if v == "required":
        return f"missing key '{_key([*error.absolute_path, error.message.split(chr(39))[1]])}'"
    if v == "enum":
        return f"'{where}' = {error.instance!r} is not allowed; allowed values: {error.validator_value}"
    if v == "const":
        return f"'{where}' = {error.instance!r}; expected {error.validator_value!r}"
    if v == "type":
        return (f"'{where}' must be of type {error.validator_value}, got {type(error.instance).__name__} "
                f"{error.instance!r}")
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[v]
        return f"'{where}' = {error.instance!r} is impossible; it must be {op} {error.validator_value}"
    if v == "pattern" or (v == "propertyNames"):
        return f"'{where}': name {error.instance!r} is not allowed ({error.message})"
    return f"'{where}': {error.message}"


def _leaf_errors(errors):
    for e in errors:
        if e.context:  # if/then, allOf: report the inner errors, they carry the real key
            yield from _leaf_errors(e.context)
        else:
            yield e


def _schema_problems(cfg: dict) -> list[str]:
    import jsonschema

    root = schema()
    validator = jsonschema.Draft202012Validator(root)
    msgs = []
    for err in sorted(validator.iter_errors(cfg), key=lambda e: list(map(str, e.absolute_path))):
        for leaf in _leaf_errors([err]):
            m = _describe(leaf, root)
            if m not in msgs:
                msgs.append(m)
    return msgs


def _cross_problems(cfg: dict) -> list[str]:
    """Rules across keys (run only on a schema-valid config)."""
    msgs = []
    task, model = cfg["task"], cfg["model"]
    if model["d_k"] < task["L"]:
        msgs.append(f"'model.d_k' = {model['d_k']} is impossible: it must be >= 'task.L' = {task['L']} "
                    "(M = Q^T K / d_k has rank <= d_k and could not represent the copy matrix I)")
    for name, rec in cfg["optimizers"].items():
        if rec["method"] == "sgld":
            if rec["burn_in"] + rec["thin"] > rec["steps"]:
                msgs.append(f"'optimizers.{name}.burn_in' + 'thin' = {rec['burn_in'] + rec['thin']} must be <= "
                            f"'optimizers.{name}.steps' = {rec['steps']} (no samples would be recorded)")
    known = sorted(cfg["optimizers"])
    for att, recipes in cfg["sweep"].items():
        for name in recipes:
            if name not in cfg["optimizers"]:
                msgs.append(f"'sweep.{att}.{name}': unknown optimizer recipe {name!r}; "
                            f"allowed values (keys of 'optimizers'): {known}")
    th = cfg["theory"]
    if th["P_min"] >= th["P_max"]:
        msgs.append(f"'theory.P_min' = {th['P_min']} must be < 'theory.P_max' = {th['P_max']}")
    fig = cfg["figures"]
    opt = fig["stage_optimizer"]
    if opt not in cfg["optimizers"]:
        msgs.append(f"'figures.stage_optimizer' = {opt!r} is not allowed; allowed values: {known}")
    for att, stages in fig["stages"].items():
        swept = cfg["sweep"].get(att, {}).get(opt, {}).get("P", [])
        for stage, P in stages.items():
            if P not in swept:
                msgs.append(f"'figures.stages.{att}.{stage}' = {P} is not a P of 'sweep.{att}.{opt}.P' "
                            f"(allowed values: {swept})")
    return msgs


def validate(cfg: Any) -> dict:
    """Validate a config mapping; return it (plain dict) or raise ConfigError listing every problem."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"config must be a mapping of sections, got {type(cfg).__name__}")
    cfg = json.loads(json.dumps(cfg))  # plain dicts/lists (Snakemake passes its own mapping types)
    msgs = _schema_problems(cfg)
    if not msgs:
        msgs = _cross_problems(cfg)
    if msgs:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(msgs))
    return cfg


def load(path: str | Path) -> dict:
    """Read and validate a YAML config file."""
    path = Path(path)
    try:
        cfg = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    try:
        return validate(cfg)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def canonical_json(obj: Any) -> str:
    """Stable JSON text (sorted keys, no whitespace) used for hashes and Snakemake params."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def config_hash(obj: Any) -> str:
    """sha256 of the canonical JSON of a config subset (first 16 hex digits)."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:16]


def run_config(cfg: dict, attention: str, optimizer: str, P: int | None = None,
               seed: int | None = None) -> dict:
    """The exact config one training run depends on.

    With P and seed omitted this is the part shared by all runs of one (attention, optimizer) — what the
    workflow puts in ``params:`` (P and seed are wildcards). A run file records the full version.
    """
    if attention not in ATTENTIONS:
        raise ConfigError(f"attention {attention!r} is not allowed; allowed values: {list(ATTENTIONS)}")
    if optimizer not in cfg["optimizers"]:
        raise ConfigError(f"optimizer {optimizer!r} is not allowed; allowed values: {sorted(cfg['optimizers'])}")
    out = {
        "attention": attention,
        "optimizer": optimizer,
        "recipe": copy.deepcopy(cfg["optimizers"][optimizer]),
        "task": copy.deepcopy(cfg["task"]),
        "model": copy.deepcopy(cfg["model"]),
        "numerics": copy.deepcopy(cfg["numerics"]),
    }
    if P is not None:
        if int(P) < 1:
            raise ConfigError(f"P = {P} is impossible; it must be >= 1")
        out["P"] = int(P)
    if seed is not None:
        if int(seed) < 0:
            raise ConfigError(f"seed = {seed} is impossible; it must be >= 0")
        out["seed"] = int(seed)
    return out


def theory_config(cfg: dict) -> dict:
    """The part of the config the theory depends on (no optimizer, sweep or figure settings)."""
    m = cfg["model"]
    return {
        "task": {"V": cfg["task"]["V"], "L": cfg["task"]["L"]},
        "model": {k: m[k] for k in ("d_k", "g_Q", "g_K", "g_O", "sigma2")},
        "theory": copy.deepcopy(cfg["theory"]),
    }


def runs(cfg: dict) -> list[tuple[str, str, int, int]]:
    """Every (attention, optimizer, P, seed) of the sweep, in a stable order."""
    out = []
    for att in ATTENTIONS:
        for opt, spec in cfg["sweep"].get(att, {}).items():
            for P in spec["P"]:
                for seed in spec["seeds"]:
                    out.append((att, opt, int(P), int(seed)))
    return out


# ==== typed run parameters (Recipe, RunConfig): owned by the engine work ====


# ==== typed theory parameters (TheoryParams): owned by the theory work ====
