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
import math
import re
from importlib import resources
from dataclasses import asdict, dataclass, fields
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
    if model["d_k"] < task["L"]:    # allowed for prior-started chains (the rank-deficient regime)
        for att, recipes in cfg["sweep"].items():
            for name in recipes:
                if cfg["optimizers"].get(name, {}).get("init") == "copy":
                    msgs.append(_copy_init_rank(f"'sweep.{att}.{name}' (init: copy)", model["d_k"], task["L"]))
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
    ConfigError listing every problem. NaN and infinite numbers are refused, naming the key."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"config must be a mapping of sections, got {type(cfg).__name__}")
    cfg = json.loads(json.dumps(cfg))  # plain dicts/lists (Snakemake passes its own mapping types)
    bad = _nonfinite(cfg)
    msgs = [f"'{k}' = {v} is not a finite number" for k, v in bad]
    msgs += [m for m in _schema_problems(cfg) if not any(m.startswith(f"'{k}'") for k, _ in bad)]
    if not msgs:
        msgs = _cross_problems(cfg)
    if msgs:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(msgs))
    root = schema()
    return _normalise(cfg, root, root)


class _StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (``<<`` merge keys may be
    overridden, as YAML intends)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in first:
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", node.start_mark,
                            f"duplicate key {key!r} (first given on line {first[key] + 1})", key_node.start_mark)
                    first[key] = key_node.start_mark.line
                except TypeError:   # unhashable key: SafeLoader reports it
                    pass
        return super().construct_mapping(node, deep)


# YAML 1.2 floats: PyYAML follows YAML 1.1, where a float needs a dot ("1.0e-2"), so "lr: 1e-2" would be
# the string '1e-2' and refused as "not a number". Read the way the user meant (and YAML 1.2 says).
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^[-+]?(?:[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                |[0-9][0-9_]*[eE][-+]?[0-9]+|\.inf|\.Inf|\.INF|\.nan|\.NaN|\.NAN)$""", re.X),
    list("-+0123456789."))


def _yaml_error(where: str, e: yaml.YAMLError) -> ConfigError:
    """One line naming the file (or --config entry), line and column."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    context = getattr(e, "context", None)
    at = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return ConfigError(f"{where}{at}: not valid YAML: {problem}" + (f" ({context})" if context else ""))


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file strictly (duplicate keys are errors); errors name the file and line."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as e:
        raise _yaml_error(str(path), e) from None


def load_mapping(path: str | Path) -> dict:
    """:func:`load_yaml` of a config file that must hold a mapping of sections (an empty file or a list
    is an error naming the file)."""
    cfg = load_yaml(path)
    if not isinstance(cfg, dict):
        what = "is empty" if cfg is None else f"holds a {type(cfg).__name__}, not a mapping of sections"
        raise ConfigError(f"{path}: the config file {what} (expected task:, model:, optimizers:, ... at the top level)")
    return cfg


def load(path: str | Path) -> dict:
    """Read and validate a YAML config file."""
    path = Path(path)
    cfg = load_mapping(path)
    try:
        return validate(cfg)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def _override_scalar(v):
    """A leaf of a ``--config`` mapping: Snakemake parses it with YAML's BaseLoader (every leaf a string);
    read it as YAML would (numbers and booleans typed)."""
    if isinstance(v, dict):
        return {k: _override_scalar(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_override_scalar(x) for x in v]
    if isinstance(v, str):
        try:
            x = yaml.load(v, Loader=_StrictLoader)
        except yaml.YAMLError:
            return v
        if isinstance(x, (bool, int, float)):
            return x
    return v


def parse_overrides(overrides) -> dict:
    """The values of Snakemake's ``--config key=value`` as YAML: ``--config 'model={d_k: 8}'`` overrides
    one key of the model section (Snakemake alone passes ``{'d_k': '8'}``, a string, or the whole text
    when it is not valid YAML). A value that looks like a mapping or list but does not parse is an error
    that shows the right syntax."""
    out = {}
    for key, v in dict(overrides or {}).items():
        if isinstance(v, str):
            text = v.strip()
            try:
                v = yaml.load(text, Loader=_StrictLoader) if text else v
            except yaml.YAMLError as e:
                if text[:1] in "{[":
                    err = _yaml_error(f"--config {key}={text}", e)
                    raise ConfigError(f"{err}; write a section's keys as --config '{key}={{a: 1, b: 2}}' "
                                      "(quoted, a space after each colon)") from None
        out[key] = _override_scalar(v)
    return out


def merge_overrides(cfg: dict, overrides: dict) -> dict:
    """``cfg`` with ``overrides`` merged in recursively (mappings merge, other values replace)."""
    out = dict(cfg)
    for k, v in overrides.items():
        out[k] = merge_overrides(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


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


def run_identity(run_cfg: dict, P: int, seed: int) -> dict:
    """The defining config a run file records (its ``config_json``): :func:`run_config` (P and seed
    omitted) normalised through :class:`RunConfig`, plus P and seed. Two runs with equal identities are
    the same computation; the aggregate and the audit compare a run file's record with it."""
    return dict(RunConfig.from_dict(run_cfg).as_dict(), P=int(P), seed=int(seed))


def config_diff(got: Any, want: Any, path=()) -> list[str]:
    """Every key where ``got`` differs from ``want``, as "'key' = got (expected want)" lines."""
    if isinstance(got, dict) and isinstance(want, dict):
        return [d for k in sorted(set(got) | set(want), key=str)
                for d in config_diff(got.get(k, "<absent>"), want.get(k, "<absent>"), (*path, k))]
    if got == want:
        return []
    return [f"'{_key(path)}' = {got!r} (expected {want!r})"]


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

@dataclass(frozen=True)
class Recipe:
    """One training recipe (a key of ``optimizers:``), typed. Keys a method does not use keep their
    neutral default (e.g. ``eta`` for Adam), so the dataclass is the one place defaults live."""
    name: str
    method: str
    steps: int
    log_points: int
    init: str = "prior"
    init_scale: float = 1.0
    copy_beta: float = 3.0
    # Adam
    lr: float = 0.0
    schedule: str = "cosine"
    warmup: int = 0
    prior_weight: float = 1.0
    prior_warmup: int = 0
    # SGLD
    eta: float = 0.0
    temperature: float = 1.0
    burn_in: int = 0
    thin: int = 1
    checkpoint_every: int = 0

    @classmethod
    def from_dict(cls, name: str, d: dict) -> "Recipe":
        return cls(name=name, **_typed_fields(cls, d, skip=("name",)))

    @property
    def sgld(self) -> bool:
        return self.method == "sgld"


@dataclass(frozen=True)
class TaskParams:
    V: int
    L: int
    n_test: int


@dataclass(frozen=True)
class ModelParams:
    scores: str
    d_k: int
    g_Q: float
    g_K: float
    g_O: float
    sigma2: float


@dataclass(frozen=True)
class RunConfig:
    """What one training job depends on (built once from :func:`run_config`'s dict, which stays the
    serialised form carried by Snakemake params and recorded in run files)."""
    attention: str
    optimizer: str
    recipe: Recipe
    task: TaskParams
    model: ModelParams
    dtype: str
    device: str

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        return cls(attention=d["attention"], optimizer=d["optimizer"],
                   recipe=Recipe.from_dict(d["optimizer"], d["recipe"]),
                   task=TaskParams(**_typed_fields(TaskParams, d["task"])),
                   model=ModelParams(**_typed_fields(ModelParams, d["model"])),
                   dtype=d["numerics"]["dtype"], device=d["numerics"]["device"])

    def as_dict(self) -> dict:
        """The serialised run config (the inverse of :meth:`from_dict`, numbers normalised)."""
        rec = {f.name: getattr(self.recipe, f.name) for f in fields(Recipe) if f.name != "name"}
        return {"attention": self.attention, "optimizer": self.optimizer, "recipe": rec,
                "task": asdict(self.task), "model": asdict(self.model),
                "numerics": {"dtype": self.dtype, "device": self.device}}


def _typed_fields(cls, d: dict, skip=()) -> dict:
    """The entries of ``d`` that are fields of ``cls``, converted to the field's type (int/float/str);
    unknown keys are a ConfigError (the schema normally stops them first)."""
    types = {f.name: f.type for f in fields(cls) if f.name not in skip}
    unknown = sorted(set(d) - set(types))
    if unknown:
        raise ConfigError(f"{cls.__name__}: unknown keys {unknown}; allowed: {sorted(types)}")
    conv = {"int": int, "float": float, "str": str}
    return {k: conv[types[k]](v) for k, v in d.items()}



def validate_run_config(rc) -> dict:
    """Validate a serialised run config (what ``copyhead train --run-config`` receives: the output of
    :func:`run_config`, optionally with P and seed) against the same schema pieces as config.yaml; return
    it or raise ConfigError naming every bad key."""
    import jsonschema

    if not isinstance(rc, dict):
        raise ConfigError(f"run config must be a JSON object, got {type(rc).__name__}")
    root = schema()
    props = root["properties"]
    sub = {"$defs": root["$defs"], "type": "object", "additionalProperties": False,
           "required": ["attention", "optimizer", "recipe", "task", "model", "numerics"],
           "properties": {"attention": {"enum": list(ATTENTIONS)}, "optimizer": {"type": "string"},
                          "recipe": props["optimizers"]["additionalProperties"], "task": props["task"],
                          "model": props["model"], "numerics": props["numerics"],
                          "P": {"type": "integer", "minimum": 1}, "seed": {"type": "integer", "minimum": 0}}}
    msgs = []
    for err in jsonschema.Draft202012Validator(sub).iter_errors(rc):
        for leaf in _leaf_errors([err]):
            m = _describe(leaf, sub)
            if m not in msgs:
                msgs.append(m)
    if not msgs and rc["recipe"]["init"] == "copy" and rc["model"]["d_k"] < rc["task"]["L"]:
        msgs.append(_copy_init_rank(f"recipe {rc['optimizer']!r} (init: copy)", rc["model"]["d_k"], rc["task"]["L"]))
    if msgs:
        raise ConfigError("invalid run config:\n  - " + "\n  - ".join(msgs))
    return rc


# ==== typed theory parameters (TheoryParams): owned by the theory work ====
# The theory's parameters, typed and normalised once (docs/theory.md): `theory_params(theory_config(cfg))`.
# Integer fields hold ints (an integral 32.0 becomes 32), real fields floats (so `g_Q: 1` and `g_Q: 1.0`
# give equal, hashable params), P lists read as sets are sorted without repeats. The defaults of the
# optional keys (scaling V and d_k) are the field defaults below, and nowhere else.
import dataclasses as _dc  # noqa: E402  (this section is self-contained)

_P_SET = {"as_set": True}    # field metadata: a P list read as a set (sorted, repeats dropped)


def _typed(value, kind: str, name: str, as_set: bool = False):
    """``value`` as the annotated type ``kind`` (int, float, str or a tuple of them); other kinds (the
    nested dataclasses) are returned unchanged. An int takes integral numbers only."""
    if kind.startswith("tuple["):
        item = kind[len("tuple["):].split(",")[0]
        vals = [_typed(v, item, name) for v in value]
        return tuple(sorted(set(vals))) if as_set else tuple(vals)
    if kind == "int":
        if isinstance(value, bool) or value != int(value):
            raise ConfigError(f"'{name}' = {value!r} must be an integer")
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "str":
        return str(value)
    return value


class _Normalised:
    """Frozen-dataclass mixin: every field is coerced to its annotated type on construction (also by
    ``dataclasses.replace``)."""

    def __post_init__(self):
        for f in _dc.fields(self):
            object.__setattr__(self, f.name, _typed(getattr(self, f.name), f.type, f.name,
                                                    f.metadata.get("as_set", False)))


@_dc.dataclass(frozen=True)
class ActionParams(_Normalised):
    """What the order-parameter action S depends on (docs/theory.md, Sec. 1-4): the task (V, L), the
    model (d_k, g_Q, g_K, g_O, sigma2) and the prior over the scores."""
    V: int
    L: int
    d_k: int
    g_Q: float
    g_K: float
    g_O: float
    sigma2: float
    prior: str

    def replace(self, **changes) -> "ActionParams":
        """A copy with some fields changed (and normalised), e.g. ``p.replace(prior="gaussian")``."""
        return _dc.replace(self, **changes)


@_dc.dataclass(frozen=True)
class ExactSettings(_Normalised):
    """``theory.exact``: the action averaged exactly over n_datasets nested datasets at the integer P."""
    n_datasets: int
    P: tuple[int, ...] = _dc.field(metadata=_P_SET)
    seed: int

    @property
    def enabled(self) -> bool:
        return self.n_datasets > 0 and len(self.P) > 0


@_dc.dataclass(frozen=True)
class LandscapeP(_Normalised):
    """``theory.landscape_P``: P of the action landscapes per attention type (empty: chosen from the
    predicted transitions)."""
    linear: tuple[float, ...] = _dc.field(metadata=_P_SET)
    softmax: tuple[float, ...] = _dc.field(metadata=_P_SET)

    def of(self, attention: str) -> tuple[float, ...]:
        return getattr(self, attention)


@_dc.dataclass(frozen=True)
class ScalingSettings(_Normalised):
    """``theory.scaling``: values of L, V and d_k (one varied at a time) of the scaling study, in order."""
    L: tuple[int, ...]
    V: tuple[int, ...] = ()
    d_k: tuple[int, ...] = ()


@_dc.dataclass(frozen=True)
class TheoryParams(_Normalised):
    """Everything ``copyhead theory`` depends on, built by :func:`theory_params`."""
    action: ActionParams
    P_min: float
    P_max: float
    n_P: int
    grid_n: int
    landscape_P: LandscapeP
    exact: ExactSettings
    scaling: ScalingSettings


def _theory_subset_schema() -> dict:
    """The schema of :func:`theory_config`'s subset, cut from the config schema."""
    root = schema()
    props = root["properties"]
    model_keys = [f.name for f in _dc.fields(ActionParams) if f.name not in ("V", "L", "prior")]

    def part(section, keys):
        return {"type": "object", "additionalProperties": False, "required": list(keys),
                "properties": {k: props[section]["properties"][k] for k in keys}}

    return {"$defs": root.get("$defs", {}), "type": "object", "additionalProperties": False,
            "required": ["task", "model", "theory"],
            "properties": {"task": part("task", ("V", "L")), "model": part("model", model_keys),
                           "theory": props["theory"]}}


def theory_params(theory_cfg: dict) -> TheoryParams:
    """Typed theory parameters from :func:`theory_config`'s subset (checked against the schema, so a
    hand-written ``--theory-config`` gets the same readable errors as config.yaml)."""
    import jsonschema

    sub = _theory_subset_schema()
    errors = jsonschema.Draft202012Validator(sub).iter_errors(json.loads(json.dumps(theory_cfg)))
    msgs = sorted({_describe(e, sub) for err in errors for e in _leaf_errors([err])})
    if msgs:
        raise ConfigError("invalid theory config:\n  - " + "\n  - ".join(msgs))
    t, m, th = theory_cfg["task"], theory_cfg["model"], theory_cfg["theory"]
    return TheoryParams(
        action=ActionParams(V=t["V"], L=t["L"], prior=th["prior"], **m),
        P_min=th["P_min"], P_max=th["P_max"], n_P=th["n_P"], grid_n=th["grid_n"],
        landscape_P=LandscapeP(**th["landscape_P"]), exact=ExactSettings(**th["exact"]),
        scaling=ScalingSettings(**th["scaling"]))
