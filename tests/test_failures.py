"""Bad situations a user meets, each as the commands they would run (issue 26): a checkpoint that is not
ours, writes that cannot happen, a studies report published over what it did not write."""
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from copyhead.run import checkpoint_path, train_run
from test_run import data_equal, run_cfg

ROOT = Path(__file__).resolve().parents[1]


class _Payload:
    """Unpickling this runs code (writes a file): what weights_only=True must never do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "code ran"))


def test_a_checkpoint_holding_code_is_not_unpickled(tmp_path):
    """torch.load(weights_only=True): a checkpoint holding anything but tensors and plain data is ignored
    as unreadable (and the run starts afresh, number for number), its code never runs."""
    out, marker = tmp_path / "r.nc", tmp_path / "pwned"
    checkpoint_path(out).write_bytes(pickle.dumps({"key": "x", "evil": _Payload(marker)}, protocol=2))
    lines = []
    res = train_run(run_cfg(), out, log=lines.append)
    assert not marker.exists()
    assert any(ln.startswith(f"ignoring unreadable checkpoint {checkpoint_path(out)}") for ln in lines), lines
    assert data_equal(res, train_run(run_cfg(), tmp_path / "ref.nc"))


# ------------------------------------------------------------------ copyhead publish-studies

def copyhead(*args, cwd):
    return subprocess.run([sys.executable, "-m", "copyhead", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def sandbox(tmp_path):
    """sb/docs with a results page and one published report; sb/report: a new report to publish; the
    sandbox's parent holds a file of its own (what `--name ..` used to remove)."""
    sb = tmp_path / "sb"
    (sb / "docs").mkdir(parents=True)
    (sb / "docs/results.md").write_text("# Results\n")
    (tmp_path / "keep.txt").write_text("the user's file\n")
    for i, rep in enumerate(("old", "report")):
        (sb / rep).mkdir()
        (sb / rep / "studies.md").write_text(f"# Studies {i}\n")
        (sb / rep / "fig.png").write_bytes(bytes([i]) * 16)
    assert copyhead("publish-studies", "old", "--docs", "docs", cwd=sb).returncode == 0
    return sb


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "/tmp/abs", ".hidden", "x\n"])
def test_publish_refuses_a_name_that_is_not_one_plain_folder(sandbox, name):
    before, parent = tree(sandbox), tree(sandbox.parent)
    r = copyhead("publish-studies", "report", "--docs", "docs", "--name", name, cwd=sandbox)
    assert r.returncode == 2, r
    assert "is not a plain folder name" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert tree(sandbox) == before and tree(sandbox.parent) == parent


def test_publish_replaces_only_its_own_earlier_publish(sandbox):
    docs = sandbox / "docs"
    r = copyhead("publish-studies", "report", "--docs", "docs", cwd=sandbox)
    assert r.returncode == 0, r.stderr
    assert (docs / "studies/studies.md").read_text() == "# Studies 1\n"
    assert (docs / "results.md").read_text() == "# Results\n"
    assert sorted(p.name for p in docs.iterdir()) == ["results.md", "studies"]       # no temporary left
    # a file added by hand, an edited file, a folder never published: refused naming it, nothing changed
    published = tree(docs / "studies")
    for name, damage, needle in [
            ("studies", lambda: (docs / "studies/notes.txt").write_text("mine"), "notes.txt was not published here"),
            ("studies", lambda: (docs / "studies/studies.md").write_text("edited"), "studies.md was changed after"),
            ("mine", lambda: (docs / "mine").mkdir() or (docs / "mine/a.md").write_text("a"),
             "was not written by publish-studies")]:
        damage()
        before = tree(docs)
        r = copyhead("publish-studies", "report", "--docs", "docs", "--name", name, cwd=sandbox)
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert tree(docs) == before
        (docs / "studies/notes.txt").unlink(missing_ok=True)
        (docs / "studies/studies.md").write_bytes(published["studies.md"])
    assert copyhead("publish-studies", "report", "--docs", "docs", cwd=sandbox).returncode == 0   # undone: ok


def test_publish_refuses_what_is_not_a_report(sandbox):
    before = tree(sandbox)
    for report in ("docs", "nowhere"):
        r = copyhead("publish-studies", report, "--docs", "docs", cwd=sandbox)
        assert r.returncode == 2 and "is not a studies report" in r.stderr, r.stderr
    assert tree(sandbox) == before


# ------------------------------------------------------------------ a second snakemake in a locked folder

def test_a_locked_folder_names_the_snakemake_that_holds_it(tmp_path):
    """A snakemake that finds the folder locked by one that is still running says which process holds it
    (Snakemake's own refusal names none), and changes nothing."""
    import json
    import shutil
    import socket

    from copyhead import recovery
    wd = tmp_path / "wd"
    wd.mkdir()
    shutil.copy(ROOT / "Snakefile", wd / "Snakefile")
    shutil.copytree(ROOT / "workflow", wd / "workflow")
    shutil.copy(ROOT / "tests/configs/tiny.yaml", wd / "config.yaml")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        smk = wd / ".snakemake"
        (smk / "locks").mkdir(parents=True)
        (smk / "locks/0.output.lock").write_text("results/docs/results.md\n")   # an output of this DAG
        (smk / "copyhead-owners").mkdir()
        (smk / f"copyhead-owners/{socket.gethostname()}.{holder.pid}").write_text(json.dumps(
            {"host": socket.gethostname(), "pid": holder.pid, "start": recovery._start_ticks(holder.pid),
             "boot_id": recovery._boot_id()}))
        r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=wd, capture_output=True,
                           text=True, timeout=300)
    finally:
        holder.kill()
    assert r.returncode != 0
    assert f"this folder is locked by pid {holder.pid} on {socket.gethostname()}" in r.stderr, r.stderr[-3000:]
    assert (smk / "locks/0.output.lock").exists() and not (wd / "results").exists()


# ------------------------------------------------------------------ outputs that cannot be written

def _unwritable_folders(tmp_path):
    """Folders a write into fails: under a regular file (on every machine), and a read-only folder where
    the permission bits hold (not for root)."""
    (tmp_path / "a_file").write_text("x")
    out = {"under a file": tmp_path / "a_file" / "runs"}
    ro = tmp_path / "read_only"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        (ro / "probe").write_text("x")
        (ro / "probe").unlink()                  # root: the bits do not hold here
    except PermissionError:
        out["read-only"] = ro
    return out


def test_train_into_an_unwritable_folder_refuses_before_training(tmp_path):
    for what, folder in _unwritable_folders(tmp_path).items():
        r = copyhead("train", "--config", ROOT / "tests/configs/tiny.yaml", "--attention", "linear", "--optimizer",
                     "adam", "--P", "4", "--seeds", "0", "1", "--out", folder / "seed0.nc", folder / "seed1.nc",
                     cwd=tmp_path)
        err = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(err) == 1, (what, r.stderr)
        assert f"{folder / 'seed0.nc'}: cannot be written" in err[0] and "nothing was computed" in err[0], err
        assert "step" not in r.stdout, (what, r.stdout)      # no training progress: refused first


def test_a_file_copyhead_did_not_write_is_never_overwritten(tmp_path):
    """A user's file at an --out path (a text file, a netCDF file of someone else's, a page without a
    provenance record) is refused before any compute, in one line naming it, and left as it was; a product
    of copyhead's own at the same path is rewritten (tests/test_failures: the figure written twice)."""
    import xarray as xr
    notes = tmp_path / "notes.nc"
    notes.write_text("my notes\n")
    theirs = tmp_path / "theirs.nc"
    xr.Dataset({"x": ("i", [1.0, 2.0])}, attrs={"title": "someone else's data"}).to_netcdf(theirs)
    page = tmp_path / "page.pdf"
    page.write_bytes(b"%PDF-1.4 a paper\n")
    before = tree(tmp_path)
    for out, why in ((notes, "not a readable netCDF file"), (theirs, "without copyhead's record")):
        r = copyhead("train", "--config", ROOT / "tests/configs/tiny.yaml", "--attention", "linear", "--optimizer",
                     "adam", "--P", "4", "--seeds", "0", "--out", out, cwd=tmp_path)
        err = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(err) == 1, r.stderr
        assert f"{out}: exists and was not written by copyhead (" in err[0] and why in err[0], err
        assert "nothing was computed" in err[0]
        assert "step" not in r.stdout                        # refused before training
    r = _figure(_fig_inputs(tmp_path / "in"), page, tmp_path)
    assert r.returncode == 2 and "no copyhead provenance record lists it" in r.stderr, r.stderr
    assert {k: v for k, v in tree(tmp_path).items() if not k.startswith("in/")} == before


def _fig_inputs(tmp_path):
    from test_figures import synthetic_aggregate

    from copyhead.provenance import write_dataset
    return {"aggregate_linear": str(write_dataset(synthetic_aggregate(), tmp_path / "agg.nc"))}


def _limited(limit_bytes):
    """preexec_fn: files larger than ``limit_bytes`` cannot be written (EFBIG, as a full disk gives ENOSPC)."""
    def set_limit():
        import resource
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return set_limit


def _figure(inputs, out, cwd, **kw):
    import json
    return subprocess.run([sys.executable, "-m", "copyhead", "figure", "fig6_linear_loss_curves", "--inputs",
                           json.dumps(inputs), "--out", str(out)], cwd=cwd, capture_output=True, text=True,
                          timeout=120, **kw)


def test_a_figure_that_cannot_be_written_is_one_line_and_keeps_the_earlier_outputs(tmp_path):
    """A write that fails half-way (a file-size limit: the pdf fits, the png does not) is one line naming
    the file, and the figure's earlier pdf, png and sidecar are left exactly as they were."""
    inputs, out = _fig_inputs(tmp_path), tmp_path / "figs/fig6_linear_loss_curves.pdf"
    out.parent.mkdir()                           # copyhead never makes an --out's folder
    assert _figure(inputs, out, tmp_path).returncode == 0
    before = tree(out.parent)
    sizes = {p: len(b) for p, b in before.items()}
    limit = sizes["fig6_linear_loss_curves.pdf"] + 4096
    assert limit < sizes["fig6_linear_loss_curves.png"]
    r = _figure(inputs, out, tmp_path, preexec_fn=_limited(limit))
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1, r.stderr
    assert f"{out.with_suffix('.png')}: could not be written" in err[0] and "File too large" in err[0], err
    assert tree(out.parent) == before                       # no mix of old and new, no temporary


def test_a_figure_on_a_full_disk_is_one_line(tmp_path):
    """A real full disk (a 16 KiB tmpfs; needs root and mount, else skipped): one line saying the disk is
    full, nothing left on it."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root); the file-size-limit test covers the path")
    try:
        r = _figure(_fig_inputs(tmp_path), mnt / "fig6_linear_loss_curves.pdf", tmp_path)
        left = sorted(p.name for p in mnt.iterdir())
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1 and "the disk is full" in err[0], r.stderr
    assert left == [], left


def test_the_quickstart_venv_is_ignored_by_git(tmp_path):
    """The README's quickstart makes .venv/ in the checkout: git status stays clean and tools that walk
    the tree skip it."""
    if subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "check-ignore", ".venv/bin/python", ".venv/lib/x.py"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == [".venv/bin/python", ".venv/lib/x.py"], r


# ------------------------------------------------------------------ a point no machine can hold

def test_an_absurd_P_is_refused_before_any_compute_with_the_memory_it_needs(tmp_path):
    """`P: [4, 1000000000]`: check-config, the Snakemake dry run and `copyhead train` refuse it in one
    line naming the point, the memory it needs and what this machine has (no numpy allocation error)."""
    import re
    import shutil
    import yaml
    cfg = yaml.safe_load((ROOT / "tests/configs/tiny.yaml").read_text())
    cfg["sweep"]["linear"]["adam"]["P"] = [4, 1_000_000_000]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    need = re.compile(r"'sweep\.linear\.adam\.P': P = 1000000000 needs about [0-9.]+ TiB of memory for one "
                      r"training job \(2 chain\(s\)\); this machine has [0-9.]+ GiB")
    r = copyhead("check-config", "config.yaml", cwd=tmp_path)
    assert r.returncode == 2 and need.search(r.stderr) and "Traceback" not in r.stderr, r.stderr
    shutil.copy(ROOT / "Snakefile", tmp_path / "Snakefile")
    shutil.copytree(ROOT / "workflow", tmp_path / "workflow")
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and need.search(r.stdout + r.stderr), r.stderr[-3000:]
    assert "MemoryError" not in r.stdout + r.stderr and "Job stats" not in r.stdout + r.stderr
    r = copyhead("train", "--config", ROOT / "tests/configs/tiny.yaml", "--attention", "linear", "--optimizer",
                 "adam", "--P", "1000000000", "--seed", "0", "--out", tmp_path / "x.nc", cwd=tmp_path)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1 and "P = 1000000000 needs about" in err[0], r.stderr
    assert not (tmp_path / "x.nc").exists()


# ------------------------------------------------------------------ every path in every rule quoted

def test_every_path_in_every_rule_is_quoted():
    """No shell command of any workflow file names {input}, {output} or {log} (or one of their items)
    without :q: an unquoted path breaks at a space and is a shell-injection point."""
    import re
    unquoted = re.compile(r"\{(input|output|log)(\.[A-Za-z_]+|\[\d+\])?\}")
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow").rglob("*.smk"))]
    bad = [f"{f.relative_to(ROOT)}:{i}: {ln.strip()}" for f in files
           for i, ln in enumerate(f.read_text().splitlines(), 1)
           if not ln.lstrip().startswith(("#", 'f"')) and unquoted.search(ln)]
    assert not bad, bad


@pytest.mark.parametrize("smk", ["workflow/phase_map.smk", "workflow/prior_check.smk", "workflow/one_loop.smk",
                                 "workflow/studies.smk"])
def test_every_side_workflow_parses(smk):
    r = subprocess.run([sys.executable, "-m", "snakemake", "-s", smk, "-n", "--cores", "1"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
