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


def test_d_k_below_L(default):
    cfg = copy.deepcopy(default)
    cfg["model"]["d_k"] = 8
    _fails(cfg, "'model.d_k' = 8", "'task.L' = 32")


def test_sweep_recipe_must_exist(default):
    cfg = copy.deepcopy(default)
    cfg["sweep"]["linear"]["adamw"] = {"P": [4], "seeds": [0]}
    _fails(cfg, "'sweep.linear.adamw'", "adam_map")


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
    cfg["optimizers"]["sgld"]["eta"] = 5e-4
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
