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


# code fingerprints: tests/test_fingerprint.py


def _git(repo, *args):
    import subprocess
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def test_dirty_tree_identified_by_content(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src/m.py").write_text("a = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "src/m.py")
    _git(repo, "commit", "-q", "-m", "c")
    clean = prov._git_code_version(repo)
    assert clean["git_dirty"] == 0 and prov.code_version_string(clean) == clean["git_commit"][:12]
    (repo / "src/m.py").write_text("a = 2\n")
    one = prov.code_version_string(prov._git_code_version(repo))
    (repo / "src/m.py").write_text("a = 3\n")
    two = prov.code_version_string(prov._git_code_version(repo))
    assert one.startswith(clean["git_commit"][:12] + "-dirty-") and two.startswith(clean["git_commit"][:12])
    assert one != two                                   # two uncommitted states, two labels
    (repo / "src/m.py").write_text("a = 2\n")
    assert prov.code_version_string(prov._git_code_version(repo)) == one   # same content, same label
    (repo / "src/new.py").write_text("b = 1\n")         # an untracked module is part of the code
    assert prov.code_version_string(prov._git_code_version(repo)) not in (one, two)


# ------------------------------------------------------------- audit: stale products, --fix
def _rewrite(src, dest, **attrs):
    ds = prov.read_dataset(src)
    ds.attrs = dict(ds.attrs, **attrs)
    return prov.write_dataset(ds, dest)


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    """results/ with two linear Adam runs (seed 1 stamped as made by other training code), their
    aggregate and fig6, built by the package functions (no Snakemake)."""
    from copyhead import config as c
    from copyhead.aggregate import aggregate_runs
    from copyhead.figures import make_figure
    from copyhead.run import train_run
    wd = tmp_path_factory.mktemp("mini")
    cfg = c.load(ROOT / "tests/configs/tiny.yaml")
    cwd = os.getcwd()
    os.chdir(wd)
    try:
        runs = []
        for seed in (0, 1):
            p = Path(f"results/runs/linear/adam/P4/seed{seed}.nc")
            train_run(c.run_config(cfg, "linear", "adam", 4, seed), p)
            runs.append(p)
        _rewrite(runs[1], runs[1], code_fingerprint="0123456789abcdef")
        with pytest.warns(UserWarning, match="different training code"):
            aggregate_runs(runs, Path("results/aggregate/linear.nc"), "linear")
        make_figure("fig6_linear_loss_curves", {"aggregate_linear": "results/aggregate/linear.nc"},
                    Path("results/figures/fig6_linear_loss_curves.pdf"), {})
    finally:
        os.chdir(cwd)
    return wd


def _audit(wd, *args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "copyhead", "audit", *args], cwd=wd, capture_output=True,
                          text=True, timeout=300)


def _copy(mini, tmp_path):
    import shutil
    shutil.copytree(mini / "results", tmp_path / "results")
    return tmp_path


def test_audit_flags_stale_run_and_fails_under_strict(mini):
    r = _audit(mini, "--all")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 of 2 stale run(s)" in r.stdout and "0123456789abcdef" in r.stdout
    assert "seed1.nc" in r.stdout and "STALE" in r.stdout
    r = _audit(mini, "--all", "--strict")
    assert r.returncode == 1
    import json
    rep = json.loads(_audit(mini, "--json", "--all").stdout)[0]
    assert rep["stale"] == ["results/runs/linear/adam/P4/seed1.nc"]
    assert rep["products"][0]["code_fingerprint"] == prov.code_fingerprint("aggregate")
    assert not [p for p in rep["products"] if p.get("stale")]      # aggregate and figure are current


def test_audit_flags_figure_made_by_other_code(mini, tmp_path):
    import json
    wd = _copy(mini, tmp_path)
    side = wd / "results/figures/fig6_linear_loss_curves.provenance.json"
    rec = json.loads(side.read_text())
    assert rec["code_fingerprint"] == prov.code_fingerprint("figures")
    rec["code_fingerprint"] = "fedcba9876543210"
    side.write_text(json.dumps(rec))
    r = _audit(wd, "--all")
    assert "stale figure" in r.stdout and "fedcba9876543210" in r.stdout
    assert _audit(wd, "--all", "--strict").returncode == 1


def test_audit_fix_removes_broken_files_so_snakemake_remakes_them(mini, tmp_path):
    wd = _copy(mini, tmp_path)
    run0 = wd / "results/runs/linear/adam/P4/seed0.nc"
    run0.write_bytes(run0.read_bytes()[:300])                        # truncated by a crash
    png = wd / "results/figures/fig6_linear_loss_curves.png"
    png.write_bytes(png.read_bytes() + b"x")                           # figure output changed
    lone = wd / "results/theory/softmax.nc"                            # broken, reached by no figure
    lone.parent.mkdir(parents=True)
    lone.write_bytes(b"CDF\x01garbage")
    temp = wd / "results/runs/linear/adam/P4/.seed1.nc.ab12cd34.tmp"  # left by a killed write
    temp.write_text("partial")
    os.utime(temp, (time.time() - 7200, time.time() - 7200))
    r = _audit(wd, "--all", "--fix")
    assert r.returncode == 1, r.stdout          # problems were found (and removed)
    assert "removed results/runs/linear/adam/P4/seed0.nc (unreadable netCDF file)" in r.stdout
    for p in (run0, png, lone, temp, wd / "results/figures/fig6_linear_loss_curves.pdf"):
        assert not p.exists(), p
    # the aggregate made from the broken run goes too (else Snakemake, seeing it up to date, would not
    # remake the run: tests/test_workflow.py runs that sequence); the good run stays
    assert "removed results/aggregate/linear.nc (made from results/runs/linear/adam/P4/seed0.nc" in r.stdout
    assert (wd / "results/runs/linear/adam/P4/seed1.nc").exists()
    assert not (wd / "results/aggregate/linear.nc").exists()


def test_audit_fix_changed_run_removes_the_aggregate_made_from_it(mini, tmp_path):
    wd = _copy(mini, tmp_path)
    run1 = wd / "results/runs/linear/adam/P4/seed1.nc"
    _rewrite(run1, run1, note="rewritten")          # readable, but not the file the aggregate read
    r = _audit(wd, "--all", "--fix")
    assert "changed since it was used" in r.stdout
    assert run1.exists() and not (wd / "results/aggregate/linear.nc").exists()


# ------------------------------------------------------------------- wrong kind of netCDF: one line
@pytest.mark.parametrize("argv,needle", [
    (["summary", "{run}"], "a copyhead run file, expected an aggregate file"),
    (["aggregate", "--attention", "linear", "--out", "{tmp}/a.nc", "{agg}"],
     "a copyhead aggregate file, not a run file"),
    (["aggregate", "--attention", "softmax", "--out", "{tmp}/a.nc", "{run}"], "expected 'softmax'"),
    (["figure", "fig6_linear_loss_curves", "--inputs", '{{"aggregate_linear": "{run}"}}', "--out",
      "{tmp}/f.pdf"], "a copyhead run file, expected an aggregate file"),
    (["summary", "{tmp}/plain.nc"], "not a copyhead file"),
])
def test_wrong_kind_of_netcdf_is_one_line(mini, tmp_path, capsys, argv, needle):
    import xarray as xr
    from copyhead.cli import main
    xr.Dataset({"x": ("i", [1.0, 2.0])}).to_netcdf(tmp_path / "plain.nc")
    subs = {"run": mini / "results/runs/linear/adam/P4/seed0.nc", "agg": mini / "results/aggregate/linear.nc",
            "tmp": tmp_path}
    rc = main([a.format(**subs) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "a.nc").exists() and not (tmp_path / "f.pdf").exists()


# ------------------------------------------------------------------ stale Snakemake locks
def _locked(smk, recs):
    import json
    (smk / "locks").mkdir(parents=True)
    (smk / "locks/0.output.lock").write_text("results/x.nc\n")
    (smk / "copyhead-owners").mkdir()
    for i, r in enumerate(recs):
        (smk / f"copyhead-owners/rec{i}").write_text(json.dumps(r))


def _dead_pid():
    import subprocess
    import sys
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_locks_of_a_killed_local_snakemake_are_removed(tmp_path):
    import socket
    from copyhead import recovery
    smk = tmp_path / ".snakemake"
    _locked(smk, [{"host": socket.gethostname(), "pid": _dead_pid(), "start": "1", "boot_id": recovery._boot_id()}])
    assert "killed" in recovery.clear_stale_locks(smk)
    assert not (smk / "locks").exists() and not list((smk / "copyhead-owners").iterdir())


@pytest.mark.parametrize("who", ["alive", "other_host", "one_alive_one_dead", "no_record"])
def test_locks_that_may_be_held_are_kept(tmp_path, who):
    import socket
    from copyhead import recovery
    me = {"host": socket.gethostname(), "pid": os.getpid(), "start": recovery._start_ticks(os.getpid()),
          "boot_id": recovery._boot_id()}
    dead = dict(me, pid=_dead_pid(), start="1")
    recs = {"alive": [me], "other_host": [dict(dead, host="elsewhere")], "one_alive_one_dead": [me, dead],
            "no_record": []}[who]
    smk = tmp_path / ".snakemake"
    _locked(smk, recs)
    assert recovery.clear_stale_locks(smk) == ""
    assert (smk / "locks/0.output.lock").exists()


def test_owner_record_round_trip(tmp_path):
    from copyhead import recovery
    rec = recovery.record_owner(tmp_path)
    import json
    assert recovery._alive(json.loads(rec.read_text()))
    recovery.release_owner(tmp_path)
    assert not rec.exists()


def test_figure_role_datasets_expects_a_same_dataset_theory_file(mini, tmp_path, capsys):
    """Role 'datasets_<attention>' names a results/theory/<attention>_datasets.nc (kind theory_datasets)."""
    import json
    import xarray as xr
    from copyhead.cli import main
    ds = xr.Dataset({"x": ("i", [1.0])})
    ds.attrs = prov.provenance_attrs("theory_datasets", {"x": 1}, title="t", extra={"attention": "linear"})
    assert ds.attrs["code_fingerprint"] == prov.code_fingerprint("theory")
    ds.to_netcdf(tmp_path / "linear_datasets.nc")
    # roles are checked in order: aggregate_ and datasets_ pass, theory_ (given a run file) fails
    inputs = {"aggregate_linear": str(mini / "results/aggregate/linear.nc"),
              "datasets_linear": str(tmp_path / "linear_datasets.nc"),
              "theory_linear": str(mini / "results/runs/linear/adam/P4/seed0.nc")}
    rc = main(["figure", "fig3_linear_order_params", "--inputs", json.dumps(inputs), "--out",
               str(tmp_path / "f.pdf")])
    err = capsys.readouterr().err
    assert rc == 2 and "seed0.nc: a copyhead run file, expected a theory file" in err, err


# ------------------------------------------------------------------ a full disk: named, nothing left
@pytest.mark.parametrize("error,free,needle", [
    (OSError(28, "No space left on device"), 10 * 2**30, "the disk is full"),          # errno 28
    (RuntimeError("NetCDF: HDF error"), 2**20, "the disk is full"),                    # HDF5 says no more
    (RuntimeError("NetCDF: HDF error"), 10 * 2**30, "no partial file was left"),       # space left: not called full
])
def test_failed_write_names_file_and_free_space_and_leaves_nothing(tmp_path, monkeypatch, error, free, needle):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(2 * free, free, free))
    target = tmp_path / "results/runs/r.nc"

    def write(tmp):
        Path(tmp).write_bytes(b"partial")
        raise error
    with pytest.raises(prov.WriteError) as e:
        prov.atomic_write(target, write)
    msg = str(e.value)
    assert str(target) in msg and f"{free / 2**20:.1f} MiB free" in msg and needle in msg
    assert ("disk is full" in msg) == (needle == "the disk is full")
    assert list(target.parent.iterdir()) == []                  # no partial file, no temporary


def test_failed_write_through_the_cli_is_one_line(tmp_path, monkeypatch, capsys):
    """`copyhead aggregate` whose output cannot be written: one error line naming the file, exit 2."""
    from copyhead import cli
    from copyhead import config as c
    from copyhead.run import train_run
    run = tmp_path / "seed0.nc"
    train_run(c.run_config(c.load(ROOT / "tests/configs/tiny.yaml"), "linear", "adam", 4, 0), run, log=lambda s: None)
    from copyhead import datafiles
    real = datafiles.atomic_write

    def full(path, write):
        return real(path, lambda tmp: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    monkeypatch.setattr(datafiles, "atomic_write", full)
    out = tmp_path / "agg.nc"
    assert cli.main(["aggregate", "--attention", "linear", "--out", str(out), str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and "the disk is full" in err[0] and "MiB free" in err[0], err
    assert not out.exists()
