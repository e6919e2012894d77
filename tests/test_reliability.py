"""Reliability (issue 12): file modes, stale temporaries, code fingerprints, dirty-tree identity,
aggregate without silent loss, wrong-kind inputs, config normalisation, audit of stale/broken products."""
import os
import stat
import time
from pathlib import Path

import pytest

from copyhead import provenance as prov

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------ file modes
@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_atomic_write_mode_follows_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        out = prov.write_json({"a": 1}, tmp_path / "x.json")
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == mode == stat.S_IMODE(plain.stat().st_mode)


# ------------------------------------------------------------------------------ stale temporaries
def test_killed_write_temp_is_removed_by_next_write_of_same_target(tmp_path):
    target = tmp_path / "seed0.nc"
    left = tmp_path / ".seed0.nc.ab12cd34.tmp"          # what a kill -9 during a write leaves
    other = tmp_path / ".seed1.nc.ab12cd34.tmp"         # another target's temp: not ours to remove
    longer = tmp_path / ".seed0.nc.x.ab12cd34.tmp"      # temp of target 'seed0.nc.x'
    for p in (left, other, longer):
        p.write_text("partial")
        os.utime(p, (time.time() - 60, time.time() - 60))
    os.utime(left, (prov._PROCESS_START - 5, prov._PROCESS_START - 5))
    os.utime(other, (prov._PROCESS_START - 5, prov._PROCESS_START - 5))
    os.utime(longer, (prov._PROCESS_START - 5, prov._PROCESS_START - 5))
    prov.atomic_write(target, lambda t: Path(t).write_text("new"))
    assert target.read_text() == "new"
    assert not left.exists() and other.exists() and longer.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".seed1.nc.ab12cd34.tmp", ".seed0.nc.x.ab12cd34.tmp", "seed0.nc"])


def test_stale_temps_found_by_age_only(tmp_path):
    (tmp_path / "runs").mkdir()
    old = tmp_path / "runs/.seed0.ckpt.k3j4h5g6.tmp"
    new = tmp_path / "runs/.seed1.ckpt.k3j4h5g6.tmp"
    keep = tmp_path / "runs/notes.tmp"
    for p in (old, new, keep):
        p.write_text("x")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    os.utime(keep, (time.time() - 7200, time.time() - 7200))
    assert prov.stale_temps(tmp_path, older_than_s=3600) == [old]
