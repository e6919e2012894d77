"""The config schema and validation: the JSON schema (``schemas/config.schema.yaml``, also reachable as
``workflow/schemas/config.schema.yaml``), one readable line per problem naming the key and the allowed
values (:func:`schema_problems`, the one loop over schema errors), the cross-field rules a schema
cannot express, and the schema-driven typing of numbers (:func:`validate`)."""
from __future__ import annotations

import copy
import json
import math
from importlib import resources
from typing import Any

import yaml

from ..attention import ATTENTIONS as _VARIANTS

ATTENTIONS = tuple(_VARIANTS)   # the attention types: the keys of the registry copyhead.attention.ATTENTIONS
METHODS = ("adam", "sgld", "hmc")
SAMPLERS = ("sgld", "hmc")   # the methods that sample the posterior (their runs estimate its mean)


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


def schema_problems(instance, sub: dict) -> list[str]:
    """Every problem of ``instance`` against the schema ``sub`` (the whole config schema or a piece cut
    from it), one readable line each, in key order, without repeats: the one loop over schema errors."""
    import jsonschema

    msgs = []
    errors = jsonschema.Draft202012Validator(sub).iter_errors(instance)
    for err in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        for leaf in _leaf_errors([err]):
            m = _describe(leaf, sub)
            if m not in msgs:
                msgs.append(m)
    return msgs


def recipe(cfg: dict, attention: str, optimizer: str) -> dict:
    """The recipe ``optimizer`` runs with for ``attention``: ``optimizers.<optimizer>`` with the keys that
    the sweep entry ``sweep.<attention>.<optimizer>.recipe`` overrides (e.g. fewer HMC iterations where one
    attention type mixes faster). Method and start are not overridable: a recipe name means one sampler."""
    out = copy.deepcopy(cfg["optimizers"][optimizer])
    out.update(copy.deepcopy(cfg.get("sweep", {}).get(attention, {}).get(optimizer, {}).get("recipe", {})))
    return out


def _cross_problems(cfg: dict) -> list[str]:
    """Rules across keys (run only on a schema-valid config)."""
    msgs = []
    task, model = cfg["task"], cfg["model"]
    if model["d_k"] < task["L"]:    # allowed for prior-started chains (the rank-deficient regime)
        for att, recipes in cfg["sweep"].items():
            for name in recipes:
                if cfg["optimizers"].get(name, {}).get("init") == "copy":
                    msgs.append(_copy_init_rank(f"'sweep.{att}.{name}' (init: copy)", model["d_k"], task["L"]))
    for name, rec in cfg["optimizers"].items():
        if rec["method"] == "hmc" and model["scores"] != "position":
            msgs.append(f"'optimizers.{name}': method hmc samples the collapsed posterior of position-only "
                        f"scores; 'model.scores' is {model['scores']!r} (use sgld, or scores: position)")
        msgs += _sample_window(rec, f"'optimizers.{name}")
    known = sorted(cfg["optimizers"])
    for att, recipes in cfg["sweep"].items():
        for name, entry in recipes.items():
            if name not in cfg["optimizers"]:
                msgs.append(f"'sweep.{att}.{name}': unknown optimizer recipe {name!r}; "
                            f"allowed values (keys of 'optimizers'): {known}")
            elif "recipe" in entry:
                rec = recipe(cfg, att, name)
                over = entry["recipe"]
                unused = sorted(set(over) - set(cfg["optimizers"][name]))
                if unused:
                    msgs.append(f"'sweep.{att}.{name}.recipe' overrides {unused}, keys that recipe "
                                f"'optimizers.{name}' does not have (allowed: {sorted(cfg['optimizers'][name])})")
                else:
                    root = schema()
                    sub = {"$defs": root["$defs"], **root["properties"]["optimizers"]["additionalProperties"]}
                    bad = [f"'sweep.{att}.{name}.recipe': {m}" for m in schema_problems(rec, sub)]
                    msgs += bad or _sample_window(rec, f"'sweep.{att}.{name}.recipe")
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


def _sample_window(rec: dict, where: str) -> list[str]:
    """A sampler recipe must record at least one sample after its burn-in."""
    if rec["method"] not in ("sgld", "hmc") or rec["burn_in"] + rec["thin"] <= rec["steps"]:
        return []
    return [f"{where}.burn_in' + 'thin' = {rec['burn_in'] + rec['thin']} must be <= {where}.steps' = "
            f"{rec['steps']} (no samples would be recorded)"]


def _copy_init_rank(what: str, d_k: int, L: int) -> str:
    return (f"{what} needs 'model.d_k' >= 'task.L', got 'model.d_k' = {d_k} < 'task.L' = {L}: M = Q^T K / d_k "
            "has rank <= d_k and cannot start at the copy matrix beta*I (prior-started recipes may use d_k < L)")


def _nonfinite(obj, path=()) -> list[tuple[str, float]]:
    """(key, value) of every NaN or infinite number in a config (YAML's .inf / .nan)."""
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in _nonfinite(v, (*path, k))]
    if isinstance(obj, list):
        return [x for i, v in enumerate(obj) for x in _nonfinite(v, (*path, i))]
    if isinstance(obj, float) and not math.isfinite(obj):
        return [(_key(path), obj)]
    return []


def _normalise(value, node: dict, root: dict):
    """``value`` with every number typed as its schema says: ``number`` -> float, ``integer`` -> int (so
    ``g_Q: 1`` and ``g_Q: 1.0`` give identical params and hashes). Run on a schema-valid config only."""
    while isinstance(node, dict) and "$ref" in node:       # "#/$defs/name"
        target = root
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    if not isinstance(node, dict):
        return value
    for sub in node.get("allOf", []):                      # if/then per recipe method
        cond = sub.get("if")
        if cond is None:
            value = _normalise(value, sub, root)
        elif _matches(value, cond) and "then" in sub:
            value = _normalise(value, sub["then"], root)
    if isinstance(value, bool):
        return value
    t = node.get("type")
    if t == "number" and isinstance(value, (int, float)):
        return float(value)
    if t == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        props, extra = node.get("properties", {}), node.get("additionalProperties")
        return {k: _normalise(v, props.get(k, extra if isinstance(extra, dict) else {}), root)
                for k, v in value.items()}
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        return [_normalise(v, node["items"], root) for v in value]
    return value


def _matches(value, cond: dict) -> bool:
    import jsonschema
    return jsonschema.Draft202012Validator(cond).is_valid(value)


def validate(cfg: Any) -> dict:
    """Validate a config mapping; return it (plain dict, numbers typed as the schema says) or raise
    ConfigError listing every problem. NaN and infinite numbers are refused, naming the key. Whether each
    point of the sweep fits a machine is not asked here (no Slurm query in validation): the workflow and
    ``copyhead check-config`` ask :func:`copyhead.resources.check_sweep_fits` next."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"config must be a mapping of sections, got {type(cfg).__name__}")
    cfg = json.loads(json.dumps(cfg))  # plain dicts/lists (Snakemake passes its own mapping types)
    bad = _nonfinite(cfg)
    msgs = [f"'{k}' = {v} is not a finite number" for k, v in bad]
    msgs += [m for m in schema_problems(cfg, schema()) if not any(m.startswith(f"'{k}'") for k, _ in bad)]
    if not msgs:
        msgs = _cross_problems(cfg)
    if msgs:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(msgs))
    root = schema()
    return _normalise(cfg, root, root)
