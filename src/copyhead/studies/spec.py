"""The study specification (``config/studies.yaml``) and the config each study runs with.

The P grid of a study is ``round(r · P_ref)`` for each ratio r of the spec, where P_ref is the study's own
closed-form transition (linear: the crossover ĉG = ĉ1; softmax: the first-order point P*, or its fastest
growth where the closed form has no first-order point), so every study samples the same stretch of its
transition; a study may list its P grid instead (``P: {linear: [...], softmax: [...]}``, e.g. a dense grid
across a jump). A study with ``P_like: other`` uses the other study's grid scaled by σ²/σ²_other instead (the
σ² collapse compares the two at equal P/σ²). Everything else comes from the base config; a study may
override recipes (``optimizers``) and list the recipes it runs (``recipes``).
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import yaml

from copyhead import config as cfgmod
from copyhead.config import ATTENTIONS, ActionParams, ConfigError

SPEC_KEYS = {"base", "ratios", "seeds", "recipes", "studies", "groups"}
STUDY_KEYS = {"L", "V", "d_k", "sigma2", "P_like", "recipes", "optimizers", "ratios", "P", "note"}
# the rule names of workflow/studies.smk (a group is a target of the same name, so it must not be one)
RULES = ("all_studies", "study", "study_config", "studies_tables", "studies_report", "group_tables", "group_report",
         "docs_studies", "docs_studies_page")
# the closed-form transition each attention type's P grid is placed around (copyhead.theory.transitions)
REFERENCE = {"linear": ("P_crossover",), "softmax": ("P_star", "P_fastest_growth")}


def load_spec(path: str | Path) -> dict:
    """Read and check ``config/studies.yaml``; errors name the key."""
    path = Path(path)
    spec = cfgmod.load_yaml(path)
    problems = []
    if not isinstance(spec, dict):
        raise ConfigError(f"{path}: a study spec must be a mapping")
    problems += [f"unknown key {k!r} (allowed: {sorted(SPEC_KEYS)})" for k in spec if k not in SPEC_KEYS]
    problems += [f"missing key {k!r}" for k in ("base", "ratios", "seeds", "recipes", "studies") if k not in spec]
    studies = spec.get("studies") or {}
    for name, s in studies.items():
        if not re.fullmatch(r"[A-Za-z0-9_]+", str(name)):
            problems.append(f"studies.{name}: a study name is a folder name: letters, digits and _ only")
        if not isinstance(s, dict):
            problems.append(f"studies.{name} must be a mapping")
            continue
        problems += [f"studies.{name}: unknown key {k!r} (allowed: {sorted(STUDY_KEYS)})" for k in s
                     if k not in STUDY_KEYS]
        if s.get("P_like") is not None and s["P_like"] not in studies:
            problems.append(f"studies.{name}.P_like = {s['P_like']!r} is not a study")
        if "P" in s:
            grids = s["P"] if isinstance(s["P"], dict) else {}
            if sorted(grids) != sorted(ATTENTIONS) or s.get("P_like") is not None:
                problems.append(f"studies.{name}.P must map every attention type {sorted(ATTENTIONS)} to a list of "
                                "training-set sizes (and cannot be combined with P_like)")
            problems += [f"studies.{name}.P.{att} must be a non-empty list of integers >= 2" for att, g in grids.items()
                         if not g or any(not isinstance(x, int) or isinstance(x, bool) or x < 2 for x in g)]
    for att in ATTENTIONS:
        r = (spec.get("ratios") or {}).get(att)
        if not r or any(not isinstance(x, (int, float)) or x <= 0 for x in r):
            problems.append(f"ratios.{att} must be a non-empty list of positive numbers")
    for group, names in (spec.get("groups") or {}).items():
        if not str(group).isidentifier() or group in RULES:
            problems.append(f"groups.{group}: a group name is a Snakemake target: a Python identifier, not a rule "
                            "name of workflow/studies.smk")
        problems += [f"groups.{group}: {n!r} is not a study" for n in names if n not in studies]
    if problems:
        raise ConfigError(f"{path}:\n  - " + "\n  - ".join(problems))
    spec["base_path"] = str((path.parent / spec["base"]) if not Path(spec["base"]).exists() else spec["base"])
    return spec


def spec_view(path: str | Path, names) -> str:
    """The sha256 of what a product of the studies ``names`` reads from the spec at ``path``: every key but
    ``studies``, the entries of those studies (and of the studies their ``P_like`` names) and the base config's
    text. An edit to another study's entry leaves it unchanged, so a report's provenance records this view
    beside the file's sha256 (:func:`copyhead.provenance.product_record`'s ``views``) and the audit does not
    call the report older than its spec for a change it never read."""
    import hashlib
    import json

    spec = load_spec(path)
    keep, todo = set(), [n for n in names if n in spec["studies"]]
    while todo:
        n = todo.pop()
        if n not in keep:
            keep.add(n)
            todo += [spec["studies"][n]["P_like"]] if spec["studies"][n].get("P_like") else []
    view = {k: v for k, v in spec.items() if k not in ("studies", "base_path")}
    view.update(studies={n: spec["studies"][n] for n in sorted(keep)}, base_text=Path(spec["base_path"]).read_text())
    return hashlib.sha256(json.dumps(view, sort_keys=True, default=str).encode()).hexdigest()


def action_params(cfg: dict) -> ActionParams:
    m, t = cfg["model"], cfg["task"]
    return ActionParams(V=t["V"], L=t["L"], d_k=m["d_k"], g_Q=m["g_Q"], g_K=m["g_K"], g_O=m["g_O"],
                        sigma2=m["sigma2"], prior=cfg["theory"]["prior"])


def reference_transitions(p: ActionParams, grid_n: int = 161) -> dict:
    """{attention: (name, P)}: the closed-form transition each P grid is placed around."""
    # scipy (0.8 s): loaded when a study's config is made, not when workflow/studies.smk or the CLI load the spec
    from copyhead.theory.scaling import closed_form_transitions

    out = {}
    for att in ATTENTIONS:
        res = closed_form_transitions(att, p, grid_n)
        for key in REFERENCE[att]:
            if math.isfinite(res[key]):
                out[att] = (key, float(res[key]))
                break
        else:
            raise ConfigError(f"{att} attention has no {' or '.join(REFERENCE[att])} at {p}: no P grid")
    return out


def _grid(ratios, P_ref: float) -> list[int]:
    return sorted({max(2, int(round(r * P_ref))) for r in ratios})


def study_config(spec: dict, name: str, _seen=()) -> tuple[dict, dict]:
    """(validated config, notes) of study ``name``; notes: the reference transitions and ratios."""
    if name not in spec["studies"]:
        raise ConfigError(f"unknown study {name!r}; known: {sorted(spec['studies'])}")
    s = spec["studies"][name]
    base = cfgmod.load_yaml(spec["base_path"])
    cfg = cfgmod.merge_overrides(base, {"optimizers": s.get("optimizers", {})})
    cfg["task"] = dict(cfg["task"], **{k: s[k] for k in ("L", "V") if k in s})
    cfg["model"] = dict(cfg["model"], **{k: s[k] for k in ("d_k", "sigma2") if k in s})
    ref = reference_transitions(action_params(cfg), cfg["theory"]["grid_n"])
    ratios = {att: s.get("ratios", {}).get(att, spec["ratios"][att]) for att in ATTENTIONS}
    if s.get("P_like"):
        if s["P_like"] in _seen:
            raise ConfigError(f"studies.{name}.P_like makes a cycle")
        other, _ = study_config(spec, s["P_like"], _seen + (name,))
        scale = cfg["model"]["sigma2"] / other["model"]["sigma2"]
        grids = {att: sorted({int(round(P * scale)) for P in other["sweep"][att][other["figures"]["stage_optimizer"]]["P"]})
                 for att in ATTENTIONS}
    elif s.get("P"):
        grids = {att: sorted(set(s["P"][att])) for att in ATTENTIONS}
    else:
        grids = {att: _grid(ratios[att], ref[att][1]) for att in ATTENTIONS}
    recipes = s.get("recipes", spec["recipes"])
    missing = [r for r in recipes if r not in cfg["optimizers"]]
    if missing:
        raise ConfigError(f"studies.{name}: recipes {missing} are not in the base config's optimizers")
    cfg["sweep"] = {att: {r: {"P": grids[att], "seeds": list(spec["seeds"])} for r in recipes} for att in ATTENTIONS}
    all_P = sorted({P for g in grids.values() for P in g})
    th = cfg["theory"]
    th["exact"] = dict(th["exact"], P=all_P)
    th["P_max"] = float(max(th["P_max"], 3 * all_P[-1]))
    th["P_min"] = float(min(th["P_min"], all_P[0] / 4))
    cfg["figures"] = {"stage_optimizer": recipes[0],
                      "stages": {att: {"below": grids[att][0], "above": grids[att][-1]} for att in ATTENTIONS}}
    notes = {"study": name, "reference": {att: {"name": k, "P": P} for att, (k, P) in ref.items()},
             "ratios": ratios, "P_like": s.get("P_like"), "P_listed": bool(s.get("P")), "note": s.get("note", "")}
    return cfgmod.validate(cfg), notes


def write_study_config(spec_path: str | Path, name: str, out: str | Path) -> dict:
    """Write study ``name``'s config (YAML, with the P-grid derivation as a header comment)."""
    spec = load_spec(spec_path)
    cfg, notes = study_config(spec, name)
    ref = ", ".join(f"{att} {v['name']} = {v['P']:.4g}" for att, v in notes["reference"].items())
    head = [f"# Study {name!r}: generated by `copyhead study-config {spec_path} {name}` from {spec['base']};",
            "# do not edit (edit the spec and rerun the studies workflow).",
            f"# Closed-form transitions of this (L, V, d_k, sigma2): {ref}.",
            (f"# P grid: study {notes['P_like']!r}'s, scaled by sigma2." if notes["P_like"] else
             "# P grid: listed in the spec." if notes["P_listed"] else
             "# P grid: round(r * P_ref) for r in " + "; ".join(f"{a}: {notes['ratios'][a]}" for a in ATTENTIONS) + ".")]
    if notes["note"]:
        head.append(f"# {notes['note']}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(head) + "\n" + yaml.safe_dump(cfg, sort_keys=False, default_flow_style=None)
    if not out.exists() or out.read_text() != text:   # unchanged text keeps its mtime (no needless reruns)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(out)
    return cfg
