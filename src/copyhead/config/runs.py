"""The subsets of the config each product depends on (one training run, the theory) and the typed run
parameters (:class:`RunConfig`, :class:`Recipe`). Those subsets are what Snakemake's ``params:`` carry
and what run files record, so an edit reruns exactly the products it affects."""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, fields
from typing import Any

from .schema import ATTENTIONS, ConfigError, _copy_init_rank, _key, recipe, schema, schema_problems


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
        "recipe": recipe(cfg, attention, optimizer),
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


def config_differences(got: Any, want: Any, path=()) -> list[tuple[str, Any, Any]]:
    """Every (dotted key, got, want) where ``got`` differs from ``want`` (an absent key: "<absent>")."""
    if isinstance(got, dict) and isinstance(want, dict):
        return [d for k in sorted(set(got) | set(want), key=str)
                for d in config_differences(got.get(k, "<absent>"), want.get(k, "<absent>"), (*path, k))]
    return [] if got == want else [(_key(path), got, want)]


def config_diff(got: Any, want: Any, path=()) -> list[str]:
    """Every key where ``got`` differs from ``want``, as "'key' = got (expected want)" lines."""
    return [f"'{k}' = {g!r} (expected {w!r})" for k, g, w in config_differences(got, want, path)]


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
    # HMC (burn_in: warm-up iterations, thin, checkpoint_every as for SGLD; steps count iterations)
    n_leapfrog: int = 16
    step_size: float = 0.0
    target_accept: float = 0.7

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
    return {k: _typed(v, types[k], k) for k, v in d.items()}



def validate_run_config(rc) -> dict:
    """Validate a serialised run config (what ``copyhead train --run-config`` receives: the output of
    :func:`run_config`, optionally with P and seed) against the same schema pieces as config.yaml; return
    it or raise ConfigError naming every bad key."""
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
    msgs = schema_problems(rc, sub)
    if not msgs and rc["recipe"]["init"] == "copy" and rc["model"]["d_k"] < rc["task"]["L"]:
        msgs.append(_copy_init_rank(f"recipe {rc['optimizer']!r} (init: copy)", rc["model"]["d_k"], rc["task"]["L"]))
    if msgs:
        raise ConfigError("invalid run config:\n  - " + "\n  - ".join(msgs))
    return rc
