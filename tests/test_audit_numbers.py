"""Published products checked by their numbers, not their stamps (copyhead.audit.numbers): made by other
code, a figure is made again into a scratch copy and compared by the data it shows; equal numbers pass and
`--accept` re-stamps them, different numbers fail naming the figure and `--accept` refuses."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from copyhead.audit.numbers import compare_json, compare_text
from copyhead.provenance import code_fingerprint, sha256_file, sidecar_path

ROOT = Path(__file__).resolve().parents[1]
FIG = ("docs/figs/fig6.pdf", "docs/figs/fig6.png")


# ------------------------------------------------------------------------------------------ comparisons
def test_pages_compare_by_words_and_numbers_within_tolerance():
    old = "| P | ĉG |\n| 16 | 0.382 ± 0.004 |\nRMS z = 1.89 (3 of 12 within 2σ)\n"
    assert compare_text(old, old) == []
    assert compare_text(old, old.replace("0.382", "0.383")) == []            # one unit of the last digit
    assert compare_text(old, old.replace("0.382", "0.385")) == ["line 2: 0.382 -> 0.385"]
    assert compare_text(old, old.replace("1.89", "1.890001")) == []         # FIT relative
    assert compare_text(old, old.replace("within", "beyond"))[0].startswith("line 3 reads differently")
    assert compare_text(old, old + "one more line\n") == ["3 lines, now 4"]
    assert compare_text("a −0.154 b", "a −0.155 b") == []
    assert compare_text("x = 1.5e-4", "x = 1.6e-4") == []                   # 1e-5: the last printed digit
    assert compare_text("x = 1.5e-4", "x = 1.8e-4") == ["line 1: 1.5e-4 -> 1.8e-4"]


def test_json_compares_numbers_and_skips_stamps():
    old = {"created": "2026-12-01", "code_version": "abc", "rows": [{"P": 16, "cG": 0.3821234}], "name": "linear"}
    new = dict(old, created="2026-12-06", code_version="def", rows=[{"P": 16, "cG": 0.3821235}])
    assert compare_json(old, new) == []
    assert compare_json(old, dict(new, rows=[{"P": 16, "cG": 0.39}])) == ["/rows/cG: 0.3821234 -> 0.39"]
    assert compare_json(old, dict(new, name="softmax")) == ["/name: line 1 reads differently: 'linear' -> 'softmax'"]
    assert compare_json(old, {k: v for k, v in new.items() if k != "name"}) == ["/name: gone"]
    assert compare_json({"x": float("nan")}, {"x": float("nan")}) == []


# -------------------------------------------------------------------------- a real figure, made again
def _git(root: Path, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _cli(root, *args):
    return subprocess.run([sys.executable, "-m", "copyhead", *args], cwd=root, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A checkout whose docs/ holds a committed aggregate and fig6 made from it by `copyhead figure`."""
    root = tmp_path_factory.mktemp("repo")
    (root / "docs/data").mkdir(parents=True)
    _git(root, "init", "-q")
    shutil.copy(ROOT / "docs/data/converged/aggregate_linear.nc", root / "docs/data/aggregate_linear.nc")
    (root / "docs/figs").mkdir()
    r = _cli(root, "figure", "fig6_linear_loss_curves", "--inputs",
             json.dumps({"aggregate_linear": "docs/data/aggregate_linear.nc"}), "--options",
             json.dumps({"recipes": {"adam": {"method": "adam", "init": "prior"}}}), "--out", "docs/figs/fig6.pdf")
    assert r.returncode == 0, r.stderr
    return root


@pytest.fixture
def checkout(published, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(published, root)
    return root


def _forge(root, **change):
    side = sidecar_path(root / "docs/figs/fig6.pdf")
    rec = json.loads(side.read_text())
    side.write_text(json.dumps(dict(rec, **change)))
    return rec


def test_a_figure_recorded_with_its_data_and_no_stamp_in_its_images(checkout):
    rec = json.loads(sidecar_path(checkout / "docs/figs/fig6.pdf").read_text())
    ax = rec["figure_data"]["axes"][0]
    assert ax["xlabel"] and ax["scale"][0] == "log" and any("line" in a for a in ax["artists"])
    assert rec["argv"][1:3] == ["figure", "fig6_linear_loss_curves"]
    assert rec["code_version"].encode() not in (checkout / "docs/figs/fig6.png").read_bytes()
    assert b"CreationDate" not in (checkout / "docs/figs/fig6.pdf").read_bytes()
    r = _cli(checkout, "audit", *FIG)
    assert r.returncode == 0 and "made by other" not in r.stdout, r.stdout


def test_other_code_with_the_same_numbers_passes_and_accept_restamps_it(checkout):
    before = {checkout / f: sha256_file(checkout / f) for f in FIG}
    _forge(checkout, code_fingerprint="0123456789abcdef")
    r = _cli(checkout, "audit", *FIG)
    assert r.returncode == 0, r.stdout
    assert "made again with the current code, every number is the same" in r.stdout
    r = _cli(checkout, "audit", *FIG, "--accept")
    assert r.returncode == 0 and "--accept: re-stamped docs/figs/fig6.pdf (0123456789abcdef -> " in r.stdout, r.stdout
    rec = json.loads(sidecar_path(checkout / "docs/figs/fig6.pdf").read_text())
    assert rec["code_fingerprint"] == code_fingerprint("figures")
    assert rec["accepted"]["from_fingerprint"] == "0123456789abcdef"
    assert {p: sha256_file(p) for p in before} == before                    # the images: not a byte changed
    r = _cli(checkout, "audit", *FIG)
    assert r.returncode == 0 and "made by other" not in r.stdout, r.stdout


def test_other_code_that_moves_a_number_fails_naming_the_figure_and_accept_refuses(checkout):
    """The committed figure showed other numbers than the current code draws (as after a change of what the
    figure computes): the audit fails, naming the figure and the number; --accept refuses, changing nothing."""
    rec = json.loads(sidecar_path(checkout / "docs/figs/fig6.pdf").read_text())
    data = rec["figure_data"]
    line = next(a for a in data["axes"][0]["artists"] if "line" in a and isinstance(a["xy"], list) and a["xy"])
    line["xy"][1] = line["xy"][1] * 1.5 + 1.0
    _forge(checkout, code_fingerprint="0123456789abcdef", figure_data=data)
    r = _cli(checkout, "audit", *FIG)
    assert r.returncode == 1
    assert "FAIL docs/figs/fig6.pdf" in r.stdout and "its numbers differ: figure/axes/artists/xy" in r.stdout
    side = sidecar_path(checkout / "docs/figs/fig6.pdf")
    kept = side.read_bytes()
    r = _cli(checkout, "audit", *FIG, "--accept")
    assert r.returncode == 1 and "--accept: REFUSED docs/figs/fig6.pdf" in r.stdout
    assert side.read_bytes() == kept


# ------------------------------------------------------------ a netCDF product re-stamped, then made again
def test_a_netcdf_made_again_after_its_restamp_is_judged_by_its_own_attributes(tmp_path):
    """`--accept` re-stamps a netCDF product with a sidecar that speaks for its attributes. When the rule
    makes the file again, the sidecar describes the file it replaced: the audit reads the new file's own
    attributes (as for a file never re-stamped), not 'changed since it was made'. A file edited by hand
    (no provenance attributes) under the same sidecar still fails."""
    root = tmp_path / "repo"
    (root / "docs/data").mkdir(parents=True)
    _git(root, "init", "-q")
    nc = root / "docs/data/theory_linear.nc"
    shutil.copy(ROOT / "docs/data/theory/theory_linear.nc", nc)
    stale = {"kind": "theory", "concern": "theory", "code_fingerprint": "0123456789abcdef", "inputs": {},
             "outputs": {nc.name: {"path": "docs/data/theory_linear.nc", "sha256": "0" * 64}}}
    sidecar_path(nc).write_text(json.dumps(stale))
    r = _cli(root, "audit", "docs/data/theory_linear.nc")
    assert r.returncode == 0 and "[netCDF attributes;" in r.stdout, r.stdout
    import xarray as xr
    with xr.open_dataset(nc) as ds:
        plain = ds.load()
    plain.attrs = {}
    nc.unlink()
    plain.to_netcdf(nc)                                       # a hand-made file: no provenance attributes
    r = _cli(root, "audit", "docs/data/theory_linear.nc")
    assert r.returncode == 1 and "changed since it was made" in r.stdout, r.stdout
