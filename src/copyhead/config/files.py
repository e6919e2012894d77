"""Reading config files and ``--config`` values: a strict YAML reader (a key given twice is an error;
YAML 1.2 numbers such as ``1e-2``), errors naming the file, line and column, Snakemake's
``--config`` overrides read as YAML, and the canonical JSON and hash of a config subset."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml

from .schema import ConfigError, validate


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
