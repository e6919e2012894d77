"""The run store (copyhead.run_store.RunStore, COPYHEAD_RUN_STORE): a packed training job rerun after one P was
added trains only that P's chains and takes the others from the store, with files equal to a from-scratch
run's number for number; a damaged or mismatching entry is never used; a changed run config misses it.
Real runs on the tiny config (tests/configs/tiny.yaml), no stand-ins."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from copyhead import config as cfgmod
from copyhead.provenance import read_dataset
from copyhead.run import points, train_points
from copyhead.run_store import RUN_STORE_ENV

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests/configs/tiny.yaml"
# what differs between two runs of the same chain: the job's times and command, the P trained with it, and
# the commit's name (an uncommitted tree's diff hash; the train code itself is compared: code_fingerprint)
JOB_ATTRS = {"history", "start_time", "end_time", "wall_time_s", "packed_P", "command", "argv_json",
             "code_version"}


def _workflow(dest: Path, edit=None) -> Path:
    dest.mkdir(parents=True)
    shutil.copy(ROOT / "Snakefile", dest / "Snakefile")
    shutil.copytree(ROOT / "workflow", dest / "workflow", symlinks=False)
    shutil.copytree(ROOT / "envs", dest / "envs")
    _config(dest, edit)
    return dest


def _config(wd: Path, edit=None):
    cfg = yaml.safe_load(TINY.read_text())
    if edit:
        edit(cfg)
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def _smk(wd: Path, targets, **env):
    r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *targets], cwd=wd, capture_output=True,
                       text=True, timeout=600, env={**os.environ, "COPYHEAD_TRAIN_PACK": "recipe", **env})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    return r


def _runs(Ps, seeds=(0, 1)):
    return [f"results/runs/softmax/hmc/P{P}/seed{s}.nc" for P in Ps for s in seeds]


def _same_run(a, b, what):
    """Every variable equal (NaN where NaN) and every attribute but the job's times and command."""
    assert set(a.data_vars) == set(b.data_vars), what
    for v in b.data_vars:
        x, y = a[v].values, b[v].values
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), (what, v)
    keys = (set(a.attrs) | set(b.attrs)) - JOB_ATTRS
    assert {k: str(a.attrs.get(k)) for k in keys} == {k: str(b.attrs.get(k)) for k in keys}, what


def test_packed_rerun_after_adding_a_P_trains_only_its_chains(tmp_path, monkeypatch):
    """Packed workflow (softmax hmc, seeds 0 1): P 4 8, then P 12 added. Snakemake reruns the recipe's job
    (removing its four old files first); the job takes P 4 and 8 from results/.runs (hard links to the very
    files of the first run) and trains the two chains of P 12 only. Every file equals, number for number,
    the file of one packed job run from scratch on P 4 8 12 without a store (in this process)."""
    wd = _workflow(tmp_path / "wd")
    _smk(wd, _runs([4, 8]))
    log = (wd / "results/logs/train/softmax/hmc/packed.log").read_text()
    assert "run store results/.runs: 0 of 4 chains reused, 4 to train" in log, log
    first = {f: (wd / f).stat().st_ino for f in _runs([4, 8])}
    store = sorted((wd / "results/.runs").glob("*.nc"))
    assert len(store) == 4 and {p.stat().st_ino for p in store} == set(first.values())

    _config(wd, lambda cfg: cfg["sweep"]["softmax"]["hmc"]["P"].append(12))
    _smk(wd, _runs([4, 8, 12]))
    log = (wd / "results/logs/train/softmax/hmc/packed.log").read_text()
    assert "run store results/.runs: 4 of 6 chains reused, 2 to train" in log, log
    assert len(re.findall(r"reused results/\.runs/\w+\.nc from the run store", log)) == 4
    assert re.findall(r"P=(\d+) seed (\d): ok; wrote", log) == [("12", "0"), ("12", "1")]    # trained
    assert "P in [4, 8" not in log and "P=4," not in log and "P=8," not in log
    assert {f: (wd / f).stat().st_ino for f in _runs([4, 8])} == first     # the same files, not copies
    assert len(list((wd / "results/.runs").glob("*.nc"))) == 6

    # from scratch: one packed job on P 4 8 12, no store, as the workflow's job would record it
    monkeypatch.delenv(RUN_STORE_ENV, raising=False)
    monkeypatch.setenv("COPYHEAD_CONFIG_FILES", json.dumps(["config.yaml"]))
    cfg = cfgmod.validate(yaml.safe_load((wd / "config.yaml").read_text()))
    fresh = tmp_path / "fresh"
    _, log = _train(cfgmod.run_config(cfg, "softmax", "hmc"), [4, 8, 12], [0, 1], fresh)
    assert "run store" not in log
    for P in (4, 8, 12):
        for s in (0, 1):
            f = f"results/runs/softmax/hmc/P{P}/seed{s}.nc"
            _same_run(read_dataset(wd / f), read_dataset(fresh / f"P{P}_s{s}.nc"), f)
    assert read_dataset(wd / _runs([4])[0]).attrs["packed_P"] == "4 8"            # the run that made it
    assert read_dataset(wd / _runs([12])[0]).attrs["packed_P"] == "12"            # this job trained P 12 only
    assert read_dataset(fresh / "P4_s0.nc").attrs["packed_P"] == "4 8 12"


@pytest.fixture
def tiny():
    return cfgmod.validate(yaml.safe_load(TINY.read_text()))


def _train(rc, Ps, seeds, folder: Path):
    lines = []
    outs = [folder / f"P{P}_s{s}.nc" for P in Ps for s in seeds]
    folder.mkdir(parents=True, exist_ok=True)
    dss = train_points(rc, points(Ps, seeds, outs), log=lines.append)
    return dss, "\n".join(lines)


def _summary(log):
    m = re.search(r"run store .*: (\d+) of (\d+) chains reused, (\d+) to train", log)
    assert m, log
    return tuple(int(g) for g in m.groups())


def test_damaged_or_mismatching_store_entry_is_not_used(tmp_path, tiny, monkeypatch):
    """An entry whose bytes changed (a flipped byte; the output is a hard link to it, so an output edited
    in place too) fails its recorded sha256; an intact file of another run put under this run's key, with a
    record that agrees with it, fails the attribute check. Each is named in the log and the chain trained
    again, to the same numbers; the retrained file replaces the entry, which is then reused."""
    store = tmp_path / "store"
    monkeypatch.setenv(RUN_STORE_ENV, str(store))
    rc = cfgmod.run_config(tiny, "linear", "sgld")
    (ref,), log = _train(rc, [4], [0], tmp_path / "a")
    assert _summary(log) == (0, 1, 1)
    (entry,) = store.glob("*.nc")
    record = entry.with_suffix(".json")

    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    with open(entry, "r+b") as f:          # in place, as an edit of the output through its hard link would
        f.write(data)
    (ds,), log = _train(rc, [4], [0], tmp_path / "b")
    assert _summary(log) == (0, 1, 1)
    assert f"not reusing {entry} from the run store: its content does not match the sha256" in log, log
    assert "; training it" in log
    _same_run(ds, ref, "retrained after a damaged entry")
    (_,), log = _train(rc, [4], [0], tmp_path / "c")
    assert _summary(log) == (1, 1, 0)                       # the retrained file is the entry now

    (other,), _ = _train(rc, [8], [0], tmp_path / "d")      # another run, intact, with its own entry
    shutil.copyfile(tmp_path / "d/P8_s0.nc", tmp_path / "other.nc")
    os.replace(tmp_path / "other.nc", entry)               # under P 4's key, its record made to agree
    rec = json.loads(record.read_text())
    from copyhead.datafiles import sha256_file
    record.write_text(json.dumps(dict(rec, sha256=sha256_file(entry))))
    (ds,), log = _train(rc, [4], [0], tmp_path / "e")
    assert _summary(log) == (0, 1, 1)
    assert f"not reusing {entry} from the run store: its attribute config_json is" in log, log
    _same_run(ds, ref, "retrained after a mismatching entry")
    assert int(ds.attrs["P"]) == 4

    record.write_text("{not json")
    (_,), log = _train(rc, [4], [0], tmp_path / "f")
    assert _summary(log) == (0, 1, 1) and "its record" in log and "is unreadable" in log


def test_changed_run_config_misses_the_store(tmp_path, tiny, monkeypatch):
    """eta 0.001 -> 0.002: no entry matches (a plain miss, nothing named as damaged), the run trains with
    the new eta and gets an entry of its own; back to 0.001, the first run is reused. Another seed list of
    the point (the file records it, batch_seeds) and another config file recorded are misses too."""
    store = tmp_path / "store"
    monkeypatch.setenv(RUN_STORE_ENV, str(store))
    rc = cfgmod.run_config(tiny, "linear", "sgld")
    (first,), log = _train(rc, [4], [0], tmp_path / "a")
    assert _summary(log) == (0, 1, 1)

    rc2 = json.loads(json.dumps(rc))
    rc2["recipe"]["eta"] = 0.002
    (ds,), log = _train(rc2, [4], [0], tmp_path / "b")
    assert _summary(log) == (0, 1, 1) and "not reusing" not in log
    assert json.loads(ds.attrs["config_json"])["recipe"]["eta"] == 0.002
    assert not np.array_equal(ds["energy"].values, first["energy"].values)
    assert len(list(store.glob("*.nc"))) == 2

    (ds,), log = _train(rc, [4], [0], tmp_path / "c")        # the edit reverted: nothing to train
    assert _summary(log) == (1, 1, 0) and "copyhead train:" not in log
    _same_run(ds, first, "reverted eta")

    _, log = _train(rc, [4], [0, 1], tmp_path / "d")         # the point's seeds are part of the file
    assert _summary(log) == (0, 2, 2)
    monkeypatch.setenv("COPYHEAD_CONFIG_FILES", json.dumps(["other.yaml"]))
    _, log = _train(rc, [4], [0], tmp_path / "e")
    assert _summary(log) == (0, 1, 1) and "not reusing" not in log


def test_store_off_writes_and_reads_nothing(tmp_path, tiny, monkeypatch):
    """Without COPYHEAD_RUN_STORE (by hand) or with it 'off', no store is made or read."""
    for value in (None, "off", ""):
        if value is None:
            monkeypatch.delenv(RUN_STORE_ENV, raising=False)
        else:
            monkeypatch.setenv(RUN_STORE_ENV, value)
        monkeypatch.chdir(tmp_path)
        _, log = _train(cfgmod.run_config(tiny, "linear", "adam"), [4], [0], tmp_path / "x")
        assert "run store" not in log
        assert [p.name for p in tmp_path.iterdir()] == ["x"]
