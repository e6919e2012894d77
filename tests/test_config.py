"""Config validation: every kind of bad input fails at once with a message naming the key."""
import copy
from pathlib import Path

import pytest
import yaml

from copyhead import config as c

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def default():
    return c.load(ROOT / "config.yaml")


def _fails(cfg, *needles):
    with pytest.raises(c.ConfigError) as e:
        c.validate(cfg)
    msg = str(e.value)
    for n in needles:
        assert n in msg, msg
    return msg


def test_default_and_tiny_configs_are_valid(default):
    c.load(ROOT / "tests/configs/tiny.yaml")
    assert len(c.runs(default)) > 50
    # the schema the workflow names is the package's schema
    assert (ROOT / "workflow/schemas/config.schema.yaml").resolve().read_text() == \
        (ROOT / "src/copyhead/schemas/config.schema.yaml").read_text()


def test_unknown_key_names_key_and_allowed(default):
    cfg = copy.deepcopy(default)
    cfg["model"]["sigma_2"] = 0.1
    _fails(cfg, "unknown key 'model.sigma_2'", "sigma2")


def test_the_one_loop_option_is_gone_from_the_paper_pipeline(default):
    """theory.fluctuations (the one-loop curves in the theory files) moved out with the one loop (issue 50:
    research.one_loop): the key is refused, named, with the keys the theory section allows."""
    cfg = copy.deepcopy(default)
    cfg["theory"]["fluctuations"] = {"kind": "one_loop"}
    msg = _fails(cfg, "unknown key 'theory.fluctuations'", "scaling")
    assert "one_loop" not in msg.split("unknown key")[0]


def test_unknown_top_level_section(default):
    cfg = copy.deepcopy(default)
    cfg["thoery"] = {}
    _fails(cfg, "'thoery'", "theory")


def test_wrong_type(default):
    cfg = copy.deepcopy(default)
    cfg["task"]["L"] = "32"
    _fails(cfg, "'task.L'", "integer")


@pytest.mark.parametrize("path,value,needle", [
    (("sweep", "linear", "adam", "P"), [0, 4], "sweep.linear.adam.P.0"),
    (("sweep", "linear", "adam", "P"), [-3], "must be >= 1"),
    (("model", "sigma2"), 0.0, "'model.sigma2' = 0.0 is impossible"),
    (("model", "attention_bogus"), 1, "unknown key"),
    (("numerics", "device"), "gpu", "allowed values: ['auto', 'cpu', 'cuda']"),
    (("model", "scores"), "token", "allowed values: ['position', 'token+position']"),
    (("optimizers", "adam", "schedule"), "linear", "allowed values: ['cosine', 'constant']"),
    (("optimizers", "sgld", "eta"), -1e-3, "'optimizers.sgld.eta'"),
])
def test_impossible_values(default, path, value, needle):
    cfg = copy.deepcopy(default)
    d = cfg
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    _fails(cfg, needle)


def test_unknown_attention_type_in_sweep(default):
    cfg = copy.deepcopy(default)
    cfg["sweep"]["sofmax"] = cfg["sweep"].pop("softmax")
    _fails(cfg, "'sweep.sofmax'", "linear", "softmax")


def test_d_k_below_L_is_refused_only_for_copy_initialised_recipes(default):
    cfg = copy.deepcopy(default)
    cfg["model"]["d_k"] = 8
    copy_recipes = [n for n, r in cfg["optimizers"].items() if r["init"] == "copy"]
    assert copy_recipes
    _fails(cfg, "'model.d_k' = 8", f"'task.L' = {cfg['task']['L']}", "init: copy", "rank <= d_k")
    for recipes in cfg["sweep"].values():          # prior-started recipes only: the rank-deficient regime
        for name in copy_recipes:
            recipes.pop(name, None)
    cfg["figures"]["stage_optimizer"] = next(n for n in cfg["optimizers"] if n not in copy_recipes)
    c.validate(cfg)
    rc = c.run_config(cfg, "linear", cfg["figures"]["stage_optimizer"], 8, 0)
    c.validate_run_config(rc)
    rc_copy = c.run_config(cfg, "linear", copy_recipes[0], 8, 0)
    with pytest.raises(c.ConfigError, match="init: copy"):
        c.validate_run_config(rc_copy)


def test_sweep_recipe_must_exist(default):
    cfg = copy.deepcopy(default)
    cfg["sweep"]["linear"]["adamw"] = {"P": [4], "seeds": [0]}
    _fails(cfg, "'sweep.linear.adamw'", "hmc_copy")


def test_burn_in_must_leave_samples(default):
    cfg = copy.deepcopy(default)
    cfg["optimizers"]["sgld"]["burn_in"] = cfg["optimizers"]["sgld"]["steps"]
    _fails(cfg, "'optimizers.sgld.burn_in'")


def test_recipe_keys_checked_per_method(default):
    cfg = copy.deepcopy(default)
    cfg["optimizers"]["adam"]["eta"] = 1e-3      # an SGLD key on an Adam recipe
    _fails(cfg, "unknown key 'optimizers.adam.eta'")
    cfg = copy.deepcopy(default)
    del cfg["optimizers"]["sgld"]["thin"]
    _fails(cfg, "missing key 'optimizers.sgld.thin'")


def test_figure_stage_must_be_swept(default):
    cfg = copy.deepcopy(default)
    cfg["figures"]["stages"]["linear"]["copy"] = 1000
    _fails(cfg, "'figures.stages.linear.copy' = 1000")


def test_yaml_errors_name_the_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("task: [unclosed\n")
    with pytest.raises(c.ConfigError, match="bad.yaml"):
        c.load(p)
    with pytest.raises(c.ConfigError, match="not found"):
        c.load(tmp_path / "nope.yaml")


def test_run_config_subsets_are_independent(default):
    """An SGLD edit changes SGLD runs' params only; a theory edit changes no run."""
    base_adam = c.canonical_json(c.run_config(default, "linear", "adam"))
    base_sgld = c.canonical_json(c.run_config(default, "linear", "sgld"))
    base_th = c.canonical_json(c.theory_config(default))
    cfg = copy.deepcopy(default)
    cfg["optimizers"]["sgld"]["eta"] *= 2
    cfg["theory"]["grid_n"] = 99
    assert c.canonical_json(c.run_config(cfg, "linear", "adam")) == base_adam
    assert c.canonical_json(c.run_config(cfg, "linear", "sgld")) != base_sgld
    assert c.canonical_json(c.theory_config(cfg)) != base_th
    assert c.config_hash(c.run_config(cfg, "linear", "adam", 4, 0)) != c.config_hash(
        c.run_config(cfg, "linear", "adam", 8, 0))


def test_cli_reports_config_error_without_traceback(tmp_path, capsys):
    from copyhead.cli import main
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    cfg["model"]["d_k"] = "big"
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    rc = main(["train", "--config", str(p), "--attention", "linear", "--optimizer", "adam", "--P", "4",
               "--seed", "0", "--out", str(tmp_path / "r.nc")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "'model.d_k'" in err and "Traceback" not in err
    assert not (tmp_path / "r.nc").exists()


# ------------------------------------------------------------------------------ issue 12 (config)
@pytest.mark.parametrize("path,text,needle", [
    (("optimizers", "adam", "lr"), ".inf", "'optimizers.adam.lr' = inf is not a finite number"),
    (("optimizers", "sgld", "eta"), ".nan", "'optimizers.sgld.eta' = nan is not a finite number"),
    (("model", "g_Q"), "-.inf", "'model.g_Q' = -inf is not a finite number"),
    (("theory", "P_max"), ".inf", "'theory.P_max' = inf is not a finite number"),
])
def test_non_finite_numbers_refused_naming_the_key(tmp_path, path, text, needle):
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    d = cfg
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = "__X__"
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg).replace("__X__", text))
    with pytest.raises(c.ConfigError) as e:
        c.load(p)
    assert needle in str(e.value)
    assert str(e.value).count(f"'{'.'.join(path)}'") == 1, str(e.value)    # one message for the key


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("task: {V: 4, L: 6, n_test: 32}\nmodel: {scores: position\nnumerics: {}\n")
    with pytest.raises(c.ConfigError, match=r"bad\.yaml, line \d+, column \d+: not valid YAML"):
        c.load(p)


def test_duplicate_yaml_key_is_an_error_naming_it(tmp_path):
    text = (ROOT / "tests/configs/tiny.yaml").read_text()
    p = tmp_path / "dup.yaml"
    p.write_text(text.replace("    lr: 0.01\n", "    lr: 0.01\n    lr: 0.5\n"))
    with pytest.raises(c.ConfigError, match=r"dup\.yaml, line 13, column 5: .*duplicate key 'lr' "
                                            r"\(first given on line 12\)"):
        c.load(p)
    # YAML merge keys ('<<: *sgld' then 'init: copy') are overrides, not duplicates
    assert c.load(ROOT / "tests/configs/tiny.yaml")["optimizers"]["sgld_copy"]["init"] == "copy"


def test_same_value_written_as_int_or_float_gives_identical_params(default):
    a, b = copy.deepcopy(default), copy.deepcopy(default)
    a["model"]["g_Q"], b["model"]["g_Q"] = 1, 1.0
    a["optimizers"]["adam"]["copy_beta"], b["optimizers"]["adam"]["copy_beta"] = 3, 3.0
    a["task"]["V"], b["task"]["V"] = 16, 16.0            # an integral float is the integer
    a, b = c.validate(a), c.validate(b)
    assert c.canonical_json(c.run_config(a, "linear", "adam")) == c.canonical_json(c.run_config(b, "linear", "adam"))
    assert c.canonical_json(c.theory_config(a)) == c.canonical_json(c.theory_config(b))
    assert isinstance(a["model"]["g_Q"], float) and isinstance(b["task"]["V"], int)
    assert all(isinstance(P, int) for P in a["theory"]["exact"]["P"])
    assert all(isinstance(P, float) for P in a["theory"]["landscape_P"]["linear"])


def test_config_override_mapping_is_read_as_yaml(default):
    # what Snakemake hands over for --config 'model={d_k: 8, g_Q: 0.5}' (YAML BaseLoader: strings)
    over = c.parse_overrides({"model": {"d_k": "40", "g_Q": "0.5"}, "numerics": "{device: cpu}"})
    assert over == {"model": {"d_k": 40, "g_Q": 0.5}, "numerics": {"device": "cpu"}}
    cfg = c.validate(c.merge_overrides(default, over))
    assert cfg["model"]["d_k"] == 40 and cfg["model"]["g_Q"] == 0.5 and cfg["model"]["sigma2"] == default["model"]["sigma2"]
    assert cfg["numerics"]["device"] == "cpu" and cfg["numerics"]["dtype"] == default["numerics"]["dtype"]
    with pytest.raises(c.ConfigError, match=r"--config model=\{d_k: 8.*quoted, a space after each colon"):
        c.parse_overrides({"model": "{d_k: 8"})


def test_check_config_command(tmp_path, capsys):
    from copyhead.cli import main
    assert main(["check-config", str(ROOT / "tests/configs/tiny.yaml")]) == 0
    p = tmp_path / "dup.yaml"
    p.write_text("task: {V: 4}\ntask: {V: 5}\n")
    assert main(["check-config", str(p)]) == 2
    err = capsys.readouterr().err
    assert "dup.yaml, line 2" in err and "duplicate key 'task'" in err


def test_a_sweep_entry_overrides_its_recipe_for_one_attention_only(default):
    cfg = copy.deepcopy(default)
    att, other = "softmax", "linear"
    base = cfg["optimizers"]["hmc"]["steps"]
    cfg["sweep"][att]["hmc"]["recipe"] = {"steps": base + 400}
    c.validate(cfg)
    assert c.run_config(cfg, att, "hmc")["recipe"]["steps"] == base + 400
    assert c.run_config(cfg, other, "hmc")["recipe"]["steps"] == base
    assert cfg["optimizers"]["hmc"]["steps"] == base           # the shared recipe is not touched
    # the run identity (what a run file records and the audit checks) follows the override
    ident = c.run_identity(c.run_config(cfg, att, "hmc"), 100, 0)
    assert ident["recipe"]["steps"] == base + 400


@pytest.mark.parametrize("override, needle", [
    ({"stepz": 3}, "overrides ['stepz'], keys that recipe 'optimizers.hmc' does not have"),
    ({"method": "adam"}, "'sweep.softmax.hmc.recipe'"),
    ({"steps": "many"}, "'sweep.softmax.hmc.recipe': 'steps' must be of type integer"),
    ({"steps": 100, "burn_in": 200}, "'sweep.softmax.hmc.recipe.burn_in' + 'thin'"),
])
def test_a_bad_recipe_override_names_the_sweep_key(default, override, needle):
    cfg = copy.deepcopy(default)
    cfg["sweep"]["softmax"]["hmc"]["recipe"] = override
    _fails(cfg, needle)
