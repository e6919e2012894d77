"""Code fingerprints (copyhead.fingerprint): a product's fingerprint digests the code its entry points can
reach, independent of where that code lives; docstrings, comments and unused helpers change nothing, a
change inside reachable code changes exactly the products that reach it; and every function a product's
command really runs is inside its fingerprint (traced)."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from copyhead import fingerprint as fpm
from copyhead import provenance as prov

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src/copyhead"


@pytest.fixture
def pkg_copy(tmp_path):
    """A copy of copyhead, with the research package beside it (a concern may name research's code)."""
    dest = tmp_path / "copyhead"
    shutil.copytree(PKG, dest, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "src/research", tmp_path / "research", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _fp(pkg):
    return {c: prov.code_fingerprint(c, pkg) for c in prov.CODE_ROOTS}


def _edit(pkg, module, old, new):
    f = pkg / module
    text = f.read_text()
    assert old in text, (module, old)
    f.write_text(text.replace(old, new, 1))


def test_same_code_same_print_and_docstrings_comments_unused_helpers_change_nothing(pkg_copy):
    before = _fp(pkg_copy)
    assert before == {c: prov.code_fingerprint(c) for c in prov.CODE_ROOTS}       # same code, same print
    agg = pkg_copy / "aggregate.py"
    src = agg.read_text()
    agg.write_text('"""A rewritten module docstring."""\n# a new comment\n\n'
                   + src.replace('    """', '    """Also a changed function docstring. ', 1)
                   + "\n\n# trailing comment\n\n\ndef _never_called(x):\n    return x + 1\n\nUNUSED = 3\n")
    (pkg_copy / "theory/scaling.py").write_text((pkg_copy / "theory/scaling.py").read_text()
                                                + "\n\ndef unused_helper(a, b):\n    return a * b\n")
    assert _fp(pkg_copy) == before


def test_a_move_of_a_module_changes_no_fingerprint(pkg_copy):
    """theory/scan.py renamed to theory/grid_scan.py, its importers' import lines rewritten: the code is
    the same, only its place changed."""
    before = _fp(pkg_copy)
    (pkg_copy / "theory/scan.py").rename(pkg_copy / "theory/grid_scan.py")
    changed = 0
    for f in pkg_copy.rglob("*.py"):
        text = f.read_text()
        new = (text.replace("from .scan import", "from .grid_scan import")
               .replace("from ..scan import", "from ..grid_scan import")
               .replace("from ..theory.scan import", "from ..theory.grid_scan import")
               .replace("from copyhead.theory.scan import", "from copyhead.theory.grid_scan import"))
        if new != text:
            f.write_text(new)
            changed += 1
    assert changed, "nothing imports theory.scan any more: pick another module for this test"
    assert _fp(pkg_copy) == before


def test_a_research_entry_point_is_read_from_its_source_and_followed_into_copyhead(pkg_copy):
    """The metastability page's concern names research.umbrella:mbar: read from src/research's source (copyhead
    does not import research), its code counts, and so does the copyhead code it imports; a copy of copyhead
    without research beside it cannot make that fingerprint and says so."""
    assert "research.umbrella:mbar" in prov.CODE_ROOTS["metastability"]
    digests = prov.module_digests("metastability", pkg_copy)
    assert {"research.umbrella", "copyhead.hmc", "copyhead.collapsed"} <= set(digests)
    before = _fp(pkg_copy)
    _edit(pkg_copy.parent / "research", "umbrella.py", "def mbar(", "def _unused():\n    return 1\n\n\ndef mbar(")
    assert _fp(pkg_copy) == before                                    # an unused function: nothing
    _edit(pkg_copy.parent / "research", "umbrella.py", "max(", "min(")
    after = _fp(pkg_copy)
    assert {c for c in before if before[c] != after[c]} == {"metastability"}
    (pkg_copy / "hmc.py").write_text((pkg_copy / "hmc.py").read_text() + "\n\ndef _also_unused():\n    return 0\n")
    assert _fp(pkg_copy) == after
    shutil.rmtree(pkg_copy.parent / "research")
    with pytest.raises(ValueError, match="research.umbrella:mbar"):
        prov.code_fingerprint("metastability", pkg_copy)
    assert prov.code_fingerprint("train", pkg_copy) == before["train"]


def test_a_change_inside_reachable_code_changes_exactly_the_products_that_reach_it(pkg_copy):
    before = _fp(pkg_copy)
    _edit(pkg_copy, "aggregate.py", '"test_loss_final")', '"test_loss_final", "energy")')
    after = _fp(pkg_copy)
    assert after["aggregate"] != before["aggregate"]
    assert {c: after[c] for c in ("train", "theory", "figures", "phase_map")} == \
        {c: before[c] for c in ("train", "theory", "figures", "phase_map")}
    # the prior's rate function is what the theory computes with; the run config is what training reads
    _edit(pkg_copy, "theory/prior.py", "def ", "def _first_helper_moved_below():\n    return 0\n\n\ndef ")
    assert _fp(pkg_copy) == after                                     # a new unused function: nothing
    text = (pkg_copy / "theory/prior.py").read_text()
    body = text.index("return", text.index("def phi("))
    (pkg_copy / "theory/prior.py").write_text(text[:body] + "_unused_local = 1\n    " + text[body:])
    last = _fp(pkg_copy)
    assert last["theory"] != after["theory"] and last["phase_map"] != after["phase_map"]
    assert last["aggregate"] == after["aggregate"] and last["train"] == after["train"]


def test_module_digests_name_the_changed_module(pkg_copy):
    before = fpm.module_digests("theory", pkg_copy)
    assert "copyhead.theory.output" in before and "copyhead.provenance" not in before
    _edit(pkg_copy, "theory/output.py", "    ds = compute_theory(", "    _x = 0\n    ds = compute_theory(")
    now = fpm.module_digests("theory", pkg_copy)
    assert fpm.changed_modules(before, now) == ["copyhead.theory.output (changed)"]


def test_every_product_kind_records_its_fingerprint_and_modules():
    for kind, concern in prov.KIND_CONCERN.items():
        a = prov.provenance_attrs(kind, {"x": 1}, title="t")
        assert a["code_fingerprint"] == prov.code_fingerprint(concern)
        assert json.loads(a["code_modules_json"]) == prov.module_digests(concern)
        assert json.loads(a["argv_json"]) == list(sys.argv)


def test_unknown_entry_point_and_concern_are_named(pkg_copy):
    with pytest.raises(ValueError, match="unknown code concern 'nope'"):
        prov.code_fingerprint("nope")
    (pkg_copy / "run.py").unlink()
    with pytest.raises(ValueError, match="run:train_job"):
        prov.code_fingerprint("train", pkg_copy)


# ---------------------------------------------------------------- traced: what a command really runs
_MODULES: dict[str, str | None] = {}


def _module_of(filename: str) -> str | None:
    if filename not in _MODULES:
        if not filename.startswith(str(PKG) + os.sep):
            _MODULES[filename] = None
        else:
            rel = Path(filename).relative_to(PKG).with_suffix("")
            _MODULES[filename] = ".".join(("copyhead",) + (rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    return _MODULES[filename]


def _number_free(module: str) -> bool:
    return any(module == x or module.startswith(x + ".") for x in fpm.NUMBER_FREE)


def _traced(fn):
    """Run ``fn`` and return every (module, top-level name) of copyhead code that ran, except code run on
    behalf of a number-free module (provenance records, file writing: fingerprint.NUMBER_FREE)."""
    ran: set[tuple[str, str]] = set()
    free: set[int] = set()                   # frames run on behalf of a number-free module

    def prof(frame, event, arg):
        if event == "return":
            free.discard(id(frame))
            return
        if event != "call":
            return
        module = _module_of(frame.f_code.co_filename)
        if (frame.f_back is not None and id(frame.f_back) in free) or (module and _number_free(module)):
            free.add(id(frame))
            return
        top = frame.f_code.co_qualname.split(".")[0]
        if module is not None and not top.startswith("<"):
            ran.add((module, top))
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return ran


def _missing(concern, ran):
    kept = {(it.module, d) for it in fpm._index(None).kept(fpm.CODE_ROOTS[concern]) for d in it.defines}
    return sorted(f"{m}:{n}" for m, n in ran if not _number_free(m) and (m, n) not in kept)


def test_every_function_a_product_runs_is_in_its_fingerprint(tmp_path):
    """Training (Adam, SGLD, HMC), the aggregate, the theory, a figure and the results page made for real,
    each traced: every copyhead function that ran is kept by its concern's fingerprint."""
    from copyhead import config as c
    from copyhead.aggregate import aggregate_runs
    from copyhead.figures import make_figure
    from copyhead.results import write_pages
    from copyhead.run import train_job
    from copyhead.theory.output import write_theory

    cfg = c.load(ROOT / "tests/configs/tiny.yaml")
    runs = []

    recipes = {rec: c.run_config(cfg, "linear", rec) for rec in ("adam", "sgld", "hmc")}
    theory_cfg = c.theory_config(cfg)

    def train():
        for rec, run_cfg in recipes.items():
            outs = [tmp_path / f"{rec}{s}.nc" for s in (0, 1)]
            train_job(run_cfg, 4, [0, 1], outs)
            runs.extend(outs)

    assert not _missing("train", _traced(train))
    assert not _missing("aggregate", _traced(lambda: aggregate_runs(runs, tmp_path / "agg.nc", "linear")))
    assert not _missing("theory", _traced(lambda: write_theory(theory_cfg, "softmax", tmp_path / "th.nc")))
    docs = ROOT / "docs"
    fig = json.loads((docs / "results_figures/fig4_softmax_order_params.provenance.json").read_text())
    inputs = {role: str(ROOT / v["path"]) for role, v in fig["inputs"].items()}
    assert not _missing("figures", _traced(lambda: make_figure(
        "fig4_softmax_order_params", inputs, tmp_path / "fig4.pdf", fig["options"], results=docs / "results.json")))
    shutil.copy(docs / "results.json", tmp_path / "results.json")
    assert not _missing("results", _traced(lambda: write_pages(tmp_path / "results.json", tmp_path / "results.md",
                                                               figure_dir="results_figures")))


def test_the_parse_cache_on_disk_gives_the_parse_and_follows_every_edit(pkg_copy, tmp_path, monkeypatch):
    """Each workflow process reads the package's parse from disk (copyhead.parse_cache.ParseCache) instead
    of parsing ~100 modules again: the cached parse gives the fingerprints of a fresh one, an edited module
    is parsed again (the others are reused), and a damaged cache file is parsed around, not trusted."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("COPYHEAD_CACHE_DIR", str(cache))

    def fresh():
        fpm._index_cache.clear()            # as a new process would: nothing in memory
        return _fp(pkg_copy)

    first = fresh()
    files = list((cache / "fingerprint").glob("*.json"))
    assert len(files) == 1
    assert fresh() == first                                          # read back from disk
    _edit(pkg_copy, "aggregate.py", '"test_loss_final")', '"test_loss_final", "energy")')
    edited = fresh()
    assert edited["aggregate"] != first["aggregate"] and edited["train"] == first["train"]
    assert len(list((cache / "fingerprint").glob("*.json"))) == 2     # a second package state
    monkeypatch.setenv("COPYHEAD_CACHE_DIR", str(tmp_path / "none"))
    assert fresh() == edited                                         # no cache: the same prints
    monkeypatch.setenv("COPYHEAD_CACHE_DIR", str(cache))
    for f in (cache / "fingerprint").glob("*.json"):
        f.write_text('{"keys": {"copyhead.aggregate": "x"}, "modules": {"copyhead.aggregate": 1}}')
    assert fresh() == edited
