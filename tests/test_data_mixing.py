"""Four ways data could mix, each as the real sequence a user meets (real processes, real files): a damaged
checkpoint resumed from, a rerun beside the job a `kill -9`-ed snakemake left running, an audit against
another config than the products were made with, and an `--out` folder that does not exist."""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from copyhead import config as cfgmod
from copyhead.provenance import read_dataset
from copyhead.run import Interrupted, checkpoint_path, train_job
from test_run import data_equal, run_cfg

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests/configs/tiny.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def copyhead(*args, cwd, timeout=120):
    return subprocess.run([sys.executable, "-m", "copyhead", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def _workflow(wd: Path, cfg: dict, name: str = "config.yaml") -> Path:
    """A copy of the workflow in ``wd`` with ``cfg`` written to ``wd/name``."""
    wd.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", wd / "Snakefile")
    shutil.copytree(ROOT / "workflow", wd / "workflow")
    shutil.copytree(ROOT / "envs", wd / "envs")
    (wd / name).parent.mkdir(parents=True, exist_ok=True)
    (wd / name).write_text(yaml.safe_dump(cfg, sort_keys=False))
    return wd


def _tiny(sweep: dict, **sgld) -> dict:
    cfg = yaml.safe_load(TINY.read_text())
    cfg["sweep"] = sweep
    cfg["figures"]["stages"] = {att: {"pooling": 4, "copy": 4} for att in sweep}
    cfg["optimizers"]["sgld"].update(sgld)
    return cfg


# ------------------------------------------------------------------ 1. a damaged checkpoint

def test_a_checkpoint_with_a_flipped_bit_is_set_aside_not_resumed(tmp_path):
    """SIGTERM-like stop of an SGLD batch after a checkpoint, one bit of `theta` flipped inside the
    `.batch-*.ckpt` (torch.load reads it without complaint), then the same `copyhead train` again: the
    checksum the checkpoint carries does not match, so the run says so in one line naming the file, moves
    it aside to `<name>.corrupt` (kept, not deleted) and starts from step 0: its files equal an
    uninterrupted run's."""
    rc = run_cfg("softmax", "sgld", checkpoint_every=20)
    del rc["P"], rc["seed"]
    outs = [tmp_path / "seed0.nc", tmp_path / "seed1.nc"]
    with pytest.raises(Interrupted):
        train_job(rc, 8, [0, 1], outs, _stop_after=60)
    ckpt = checkpoint_path(outs)
    assert ckpt.name.startswith(".batch-") and ckpt.exists() and not any(o.exists() for o in outs)
    theta = torch.load(ckpt, map_location="cpu", weights_only=True)["theta"]
    raw, data = theta.numpy().tobytes(), bytearray(ckpt.read_bytes())
    at = data.find(raw)
    assert at >= 0 and data.find(raw, at + 1) < 0               # the tensor's bytes, stored once
    data[at + 8 * 5] ^= 0x01                                    # the lowest bit of one float64 of theta
    ckpt.write_bytes(bytes(data))
    damaged = ckpt.read_bytes()
    assert torch.load(ckpt, map_location="cpu", weights_only=True)["step"] == 60    # still loads

    r = copyhead("train", "--run-config", json.dumps(rc), "--P", "8", "--seeds", "0", "1", "--out", *outs,
                 cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resuming from checkpoint" not in r.stdout, r.stdout
    said = [ln for ln in r.stdout.splitlines() if str(ckpt) in ln]
    assert len(said) == 1 and "damaged" in said[0] and "sha256" in said[0] and "step 0" in said[0], r.stdout
    aside = ckpt.with_name(ckpt.name + ".corrupt")
    assert aside.read_bytes() == damaged and not ckpt.exists()   # kept for inspection; the run ended
    ref = train_job(rc, 8, [0, 1], [tmp_path / "ref0.nc", tmp_path / "ref1.nc"])
    for out, want in zip(outs, ref):
        assert data_equal(read_dataset(out), want)


def test_an_intact_checkpoint_still_resumes(tmp_path):
    """The checksum does not get in the way of a good checkpoint: resumed, bit-identical."""
    rc = run_cfg("linear", "sgld", checkpoint_every=20)
    out = tmp_path / "r.nc"
    with pytest.raises(Interrupted):
        train_job(rc, 8, [0], [out], _stop_after=60)
    lines = []
    res = train_job(rc, 8, [0], [out], log=lines.append)[0]
    assert any(ln.startswith(f"resuming from checkpoint {checkpoint_path(out)} at step 60") for ln in lines), lines
    assert data_equal(res, train_job(rc, 8, [0], [tmp_path / "ref.nc"])[0])


# ------------------------------------------------------------------ 2. the job a killed snakemake left

def _gone(pid: int) -> bool:
    """The process no longer runs (a zombie nobody reaps counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


def _job_of(group: int, command: str) -> int | None:
    """The pid of the Python process of process group ``group`` whose command line contains ``command``
    (not the shell Snakemake started it with)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            argv = (stat.parent / "cmdline").read_bytes().decode().split("\0")
        except (OSError, IndexError, UnicodeDecodeError):
            continue
        if int(fields[2]) == group and "python" in Path(argv[0]).name and command in " ".join(argv):
            return int(stat.parent.name)
    return None


def _run_group(cmd, cwd, timeout):
    """Run ``cmd`` in its own process group; on timeout kill the group (its jobs too) and fail."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise AssertionError(f"{' '.join(map(str, cmd[2:]))} still ran after {timeout} s (it started the job "
                             "again beside the one still running)") from None
    return p.returncode, out + err


ORPHAN_TARGET = "results/runs/linear/sgld/P4/seed0.nc"


@contextlib.contextmanager
def _orphaned_training(tmp_path):
    """A snakemake training a long SGLD job, `kill -9`-ed once the job writes its checkpoint: yields (the
    workflow folder, the pid of the job still running). Everything left is killed on the way out."""
    wd = _workflow(tmp_path / "wd", _tiny({"linear": {"sgld": {"P": [4], "seeds": [0]}}},
                                          steps=2_000_000, burn_in=1000, checkpoint_every=200))
    first = subprocess.Popen([*SNAKEMAKE, "--cores", "1", ORPHAN_TARGET], cwd=wd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    orphan = None
    try:
        ckpt = wd / (ORPHAN_TARGET + ".ckpt")
        deadline = time.time() + 90
        while orphan is None or not ckpt.exists():         # it trains, and writes its checkpoint
            assert first.poll() is None and time.time() < deadline, "the training job never started"
            orphan = orphan or _job_of(first.pid, "copyhead train")
            time.sleep(0.1)
        os.kill(first.pid, signal.SIGKILL)                  # snakemake only: its job goes on
        first.wait()
        assert not _gone(orphan)
        yield wd, orphan
    finally:
        for kill in (lambda: os.killpg(first.pid, signal.SIGKILL), lambda: os.kill(orphan, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, TypeError, PermissionError):
                pass
        first.wait()


def _refused_naming(out: str, orphan: int):
    assert f"pid {orphan}" in out and "copyhead train" in out and ORPHAN_TARGET in out, out[-3000:]
    assert "wait for it to end" in out, out[-3000:]


def test_a_rerun_refuses_while_a_killed_snakemakes_job_still_runs(tmp_path):
    """`kill -9` of snakemake alone leaves its `copyhead train` running. The next snakemake must not remove
    the locks and train the same files beside it: it refuses, naming the job's pid and command; once that
    job is gone (here stopped with SIGTERM, keeping its checkpoint), the next snakemake recovers as before."""
    with _orphaned_training(tmp_path) as (wd, orphan):
        rc, out = _run_group([*SNAKEMAKE, "--cores", "1", ORPHAN_TARGET], wd, timeout=60)
        assert rc != 0, out[-3000:]
        _refused_naming(out, orphan)
        assert not _gone(orphan) and list((wd / ".snakemake/locks").glob("*.lock"))

        os.kill(orphan, signal.SIGTERM)                     # what the message says: stop it (or wait)
        deadline = time.time() + 30
        while not _gone(orphan):
            assert time.time() < deadline, "the job did not stop on SIGTERM"
            time.sleep(0.1)
        (wd / "config.yaml").write_text(yaml.safe_dump(_tiny({"linear": {"sgld": {"P": [4], "seeds": [0]}}}),
                                                       sort_keys=False))
        rc, out = _run_group([*SNAKEMAKE, "--cores", "1", ORPHAN_TARGET], wd, timeout=120)
        assert rc == 0, out[-3000:]
        assert "removed the directory locks of a snakemake that was killed" in out, out[-3000:]
        assert (wd / ORPHAN_TARGET).is_file() and not any((wd / ".snakemake/copyhead-jobs").iterdir())


@pytest.mark.long       # three snakemake starts and a training job: about 20 s on 2 cores
def test_after_unlock_by_hand_the_rerun_still_refuses_while_the_job_runs(tmp_path):
    """`snakemake --unlock` removes the locks whoever holds them; the run after it still does not start
    beside the killed run's job (the Snakefile's onstart), naming it."""
    with _orphaned_training(tmp_path) as (wd, orphan):
        rc, out = _run_group([*SNAKEMAKE, "--unlock", "--cores", "1"], wd, timeout=60)
        assert rc == 0 and not list((wd / ".snakemake/locks").glob("*.lock")), out[-3000:]
        rc, out = _run_group([*SNAKEMAKE, "--cores", "1", ORPHAN_TARGET], wd, timeout=60)
        assert rc != 0, out[-3000:]
        _refused_naming(out, orphan)
        assert not _gone(orphan)


# ------------------------------------------------------------------ 3. the audit's config

FIG7 = "results/figures/fig7_softmax_loss_curves.pdf"


def _audit_in_process(wd: Path, config: Path | None = None):
    from copyhead.audit.chain import audit_figures
    return audit_figures([wd / FIG7], root=wd, config=config)[0]


def _edit_eta(cfg: dict, path: Path) -> str:
    """Set optimizers.sgld.eta 0.001 -> 0.002 in the config file ``path``; return its text before."""
    before = path.read_text()
    assert cfg["optimizers"]["sgld"]["eta"] == 0.001
    path.write_text(yaml.safe_dump(dict(cfg, optimizers=dict(cfg["optimizers"], sgld=dict(
        cfg["optimizers"]["sgld"], eta=0.002))), sort_keys=False))
    return before


def _check_eta_audit(wd: Path, cfg_name: str, before: str):
    """After the edit: the audit (the real command) names the key, the file and the run, and calls the
    figure made from it stale; Adam's run is current; an explicit --config wins."""
    r = copyhead("audit", FIG7, cwd=wd)
    assert r.returncode == 0, r.stdout + r.stderr
    now_says = [ln for ln in r.stdout.splitlines() if "now says" in ln]
    assert now_says == [f"  WARNING: stale: run results/runs/softmax/sgld/P4/seed0.nc made with "
                        f"optimizers.sgld.eta = 0.001, {cfg_name} now says 0.002"], r.stdout
    assert f"STALE {FIG7}" in r.stdout and f"stale figure {FIG7}: made from 1 stale product(s)" in r.stdout
    rep = _audit_in_process(wd)
    assert rep.figure_stale and rep.config_files == [cfg_name]
    assert "results/runs/softmax/sgld/P4/seed0.nc" in rep.stale
    assert list(rep.config_stale.values()) == [["results/runs/softmax/sgld/P4/seed0.nc"]], rep.config_stale
    (wd / "before.yaml").write_text(before)
    rep = _audit_in_process(wd, config=wd / "before.yaml")
    assert not rep.config_stale, rep.warnings


def test_the_audit_checks_the_config_file_the_commands_read(tmp_path, monkeypatch):
    """By hand: `copyhead train|aggregate --config conf/tiny.yaml` and the figure, then `eta` edited in
    that file. The audit compares with the file the products recorded (config.yaml beside them is another
    study), names the changed key, and calls the figure made from the stale run stale."""
    from copyhead.cli import main
    wd = tmp_path / "wd"
    cfg = _tiny({"softmax": {"adam": {"P": [4], "seeds": [0]}, "sgld": {"P": [4], "seeds": [0]}}})
    (wd / "conf").mkdir(parents=True)
    (wd / "conf/tiny.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    shutil.copy(ROOT / "config.yaml", wd / "config.yaml")       # the default experiment: not what ran
    monkeypatch.chdir(wd)
    runs = []
    for opt in ("adam", "sgld"):
        runs.append(f"results/runs/softmax/{opt}/P4/seed0.nc")
        Path(runs[-1]).parent.mkdir(parents=True)
        assert main(["train", "--config", "conf/tiny.yaml", "--attention", "softmax", "--optimizer", opt, "--P",
                     "4", "--seed", "0", "--out", runs[-1]]) == 0
    Path("results/aggregate").mkdir()
    assert main(["aggregate", "--attention", "softmax", "--config", "conf/tiny.yaml", "--out",
                 "results/aggregate/softmax.nc", *runs]) == 0
    Path("results/figures").mkdir()
    from copyhead.figures import FIGURES
    options = FIGURES["fig7_softmax_loss_curves"].options(cfgmod.validate(cfg))     # what the figure rule passes
    assert main(["figure", "fig7_softmax_loss_curves", "--inputs",
                 json.dumps({"aggregate_softmax": "results/aggregate/softmax.nc"}), "--options",
                 json.dumps(options), "--out", FIG7]) == 0
    rep = _audit_in_process(wd)                     # what it was made with: nothing stale by config
    assert not rep.config_stale and rep.config_files == ["conf/tiny.yaml"], rep.warnings
    _check_eta_audit(wd, "conf/tiny.yaml", _edit_eta(cfg, wd / "conf/tiny.yaml"))
    for nc in (*runs, "results/aggregate/softmax.nc"):       # the record the audit read
        assert json.loads(read_dataset(nc).attrs["config_files"]) == ["conf/tiny.yaml"]


@pytest.mark.long       # a Snakemake DAG of four jobs: about 30 s on 2 cores
def test_the_audit_checks_the_config_file_snakemake_was_given(tmp_path):
    """`snakemake --configfile conf/tiny.yaml`, then `eta` edited in that file: every product records the
    file (the Snakefile names it in its jobs' environment), and the audit compares with it."""
    cfg = _tiny({"softmax": {"adam": {"P": [4], "seeds": [0]}, "sgld": {"P": [4], "seeds": [0]}}})
    wd = _workflow(tmp_path / "wd", cfg, "conf/tiny.yaml")
    shutil.copy(ROOT / "config.yaml", wd / "config.yaml")       # the default experiment: not what ran
    r = subprocess.run([*SNAKEMAKE, FIG7, "--cores", "2", "--configfile", "conf/tiny.yaml"], cwd=wd,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    rep = _audit_in_process(wd)
    assert not rep.config_stale and rep.config_files == ["conf/tiny.yaml"], rep.warnings
    _check_eta_audit(wd, "conf/tiny.yaml", _edit_eta(cfg, wd / "conf/tiny.yaml"))
    assert json.loads((wd / FIG7.replace(".pdf", ".provenance.json")).read_text())["config_files"] == [
        "conf/tiny.yaml"]
    for nc in ("results/runs/softmax/sgld/P4/seed0.nc", "results/aggregate/softmax.nc"):
        assert json.loads(read_dataset(wd / nc).attrs["config_files"]) == ["conf/tiny.yaml"]


# ------------------------------------------------------------------ 4. an --out folder that does not exist

def test_an_out_in_a_missing_folder_is_refused_and_nothing_is_made(tmp_path):
    missing = tmp_path / "nonexistent" / "dir"
    r = copyhead("train", "--config", TINY, "--attention", "linear", "--optimizer", "adam", "--P", "4",
                 "--seed", "0", "--out", missing / "x.nc", cwd=tmp_path)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1, r.stderr
    assert f"{missing}: no such folder" in err[0] and "nothing was computed" in err[0], err
    assert "step" not in r.stdout                               # refused before training
    assert not missing.parent.exists()
    assert cfgmod.load(TINY)                                    # (the config itself was fine)
