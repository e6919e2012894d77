"""The command line as a user meets it (issue 17.6): YAML 1.2 numbers, several config files checked at
once, a SIGTERM'd training job, a closed pipe, the help text."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from copyhead import config as c
from copyhead.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests/configs/tiny.yaml"
COPYHEAD = [sys.executable, "-m", "copyhead"]


def test_yaml_1_2_exponent_is_the_number_meant(tmp_path):
    text = TINY.read_text().replace("lr: 0.01", "lr: 1e-2")
    assert "lr: 1e-2" in text
    (tmp_path / "c.yaml").write_text(text)
    cfg = c.load(tmp_path / "c.yaml")
    assert cfg["optimizers"]["adam"]["lr"] == 0.01 and isinstance(cfg["optimizers"]["adam"]["lr"], float)
    assert cfg == c.load(TINY)                                    # the same config as 0.01, the same hashes
    assert c.load_yaml(tmp_path / "c.yaml")["optimizers"]["adam"]["lr"] == 0.01
    assert yaml.load("x: 1e5x", Loader=c._StrictLoader)["x"] == "1e5x"    # not a number stays a string


def test_check_config_reports_every_file(tmp_path):
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    (tmp_path / "typo.yaml").write_text(TINY.read_text().replace("d_k: 6", "d_k: six"))
    files = [str(TINY), *(str(tmp_path / f) for f in ("empty.yaml", "list.yaml", "typo.yaml")), "missing.yaml"]
    r = subprocess.run([*COPYHEAD, "check-config", *files], capture_output=True, text=True)
    assert r.returncode == 2
    assert f"{TINY}: ok" in r.stdout
    assert "empty.yaml: the config file is empty" in r.stderr
    assert "list.yaml: the config file holds a list, not a mapping" in r.stderr
    assert "typo.yaml" in r.stderr and "'model.d_k'" in r.stderr
    assert "config file not found: missing.yaml" in r.stderr
    assert "4 of 5 config file(s) invalid" in r.stderr and "Traceback" not in r.stderr


def test_sigterm_in_train_says_the_checkpoint_is_kept_and_the_rerun_resumes(tmp_path):
    cfg = c.load(TINY)
    cfg["optimizers"]["sgld"].update(steps=400000, burn_in=1000, checkpoint_every=200)
    rc = json.dumps(c.run_config(cfg, "linear", "sgld"))
    out = tmp_path / "seed0.nc"
    cmd = [*COPYHEAD, "train", "--run-config", rc, "--P", "4", "--seeds", "0", "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ckpt = tmp_path / "seed0.nc.ckpt"
    deadline = time.time() + 120
    while not list(tmp_path.glob("*.ckpt")) and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
    assert list(tmp_path.glob("*.ckpt")), "no checkpoint appeared"
    ckpt = next(tmp_path.glob("*.ckpt"))
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert "copyhead train: stopped by SIGTERM" in err and f"checkpoint {ckpt} is kept" in err, err
    assert ckpt.exists() and not out.exists()
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".tmp")]        # no half-written file


def test_closed_pipe_is_not_a_traceback(tmp_path):
    from copyhead.aggregate import aggregate_runs
    from copyhead.run import train_run
    run = tmp_path / "r.nc"
    train_run(c.run_config(c.load(TINY), "linear", "adam", 4, 0), run, log=lambda s: None)
    aggregate_runs([run], tmp_path / "a.nc", "linear")
    p = subprocess.Popen([*COPYHEAD, "summary", *[str(tmp_path / "a.nc")] * 50], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()                                       # like `| head`: the reader is gone
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert p.returncode == 141


def test_help_is_plain_text_and_lists_every_command():
    parser = build_parser()
    text = parser.format_help()
    assert "``" not in text and text.splitlines()[2].startswith("copyhead: the command line")
    commands = next(a for a in parser._actions if a.dest == "cmd").choices
    assert len(commands) >= 10
    for name in commands:
        assert f"    {name}" in text, name
    studies = commands.get("studies-report")
    if studies is not None:
        assert "docs/studies.md" not in text and "docs/studies/studies.md" in text
