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
