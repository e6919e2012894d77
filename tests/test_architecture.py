"""The package's import graph, read from the source with ``ast`` (nothing is imported): no cycle, and the
layers point one way (issue 50, "Cycles broken, layers downward").

An arrow A -> B is any import of a copyhead module B in module A, at module level or inside a function,
relative imports resolved (``from .x import y`` names module ``x.y`` where that is a module, else ``x``),
and any ``call("module:function")`` / ``attribute("module:name")`` strings (the lazy form the command line
used before its commands imported their modules in the function body; still read, should one come back).
Importing a package means its ``__init__``. The graph is checked at two levels:

- modules: no cycle among copyhead's modules (e.g. theory.same_dataset <-> theory.output);
- units: each top-level module or subpackage of copyhead (``config``, ``resources``, ``theory``, ...) as one
  node, no cycle among them (e.g. config <-> resources).

A failure prints the cycle with the file and line of each of its imports.

Beside copyhead, the research package (src/research: the questions beyond the paper) imports copyhead and
copyhead never imports research, not even inside a function or through ``importlib`` (issue 50).
"""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "copyhead"

# (importer, imported) prefixes of module names that must never be joined by an arrow, with the reason
LAYERS = [
    ("copyhead.figures", "copyhead.results", "the results pages show the figures, not the reverse; the number "
                                             "formatting both use is copyhead.format"),
    ("copyhead.config", "copyhead.resources", "config validation does not ask Slurm (copyhead.resources plans "
                                              "the jobs and checks they fit)"),
    *[("copyhead.theory", f"copyhead.{above}", "the theory is below every reporting layer")
      for above in ("figures", "results", "studies", "audit")],
]

# module basenames that two modules share on purpose, each pair with why a newcomer is not misled (issue 50:
# "no two modules share a name while doing different jobs"); any other shared basename fails
SHARED_NAMES = {
    "phase_map.py": ("figures/phase_map.py", "theory/phase_map.py",
                     "figures/<name>.py draws what <name> computes (as figures/studies.py)"),
    "studies.py": ("cli/studies.py", "figures/studies.py",
                   "cli/ modules are named for their command group, figures/ modules for what they draw"),
}
ALWAYS_SHARED = ("__init__.py", "__main__.py")

_LAZY = re.compile(r"^[a-z_][a-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$")


def module_files(src: Path = SRC) -> dict[str, Path]:
    """Module name -> file of every module of the package (a package is its ``__init__``)."""
    out = {}
    for f in sorted((src / PKG).rglob("*.py")):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _resolve(name: str, modules) -> str | None:
    """The module ``name`` is, or the nearest enclosing module (``copyhead.x.f`` -> ``copyhead.x``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(node, module: str, is_package: bool, modules) -> list[str]:
    """The copyhead modules one import (or lazy ``call`` string) names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            full = ".".join(base + ([node.module] if node.module else []))
        else:
            full = node.module or ""
        return [f"{full}.{alias.name}" if f"{full}.{alias.name}" in modules else full for alias in node.names]
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name in ("call", "attribute") and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str) and _LAZY.match(node.args[0].value):
        return [f"{PKG}.{node.args[0].value.split(':')[0]}"]
    return []


def import_graph(src: Path = SRC) -> dict[str, dict[str, list[str]]]:
    """module -> {imported module: ["file:line", ...]} over every copyhead module (edges to itself left out)."""
    modules = module_files(src)
    graph: dict[str, dict[str, list[str]]] = {m: defaultdict(list) for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)):
                continue
            for target in _targets(node, module, path.name == "__init__.py", modules):
                target = _resolve(target, modules) if target.split(".")[0] == PKG else None
                where = f"{path.relative_to(src.parent)}:{node.lineno}"
                if target and target != module and where not in graph[module][target]:
                    graph[module][target].append(where)
    return graph


def unit(module: str) -> str:
    """The top-level module or subpackage of copyhead a module belongs to (``copyhead.theory.scan`` ->
    ``copyhead.theory``); the package's own ``__init__`` is ``copyhead``."""
    return ".".join(module.split(".")[:2])


def unit_graph(graph) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for a, targets in graph.items():
        out[unit(a)]
        for b, where in targets.items():
            if unit(a) != unit(b):
                out[unit(a)][unit(b)] += where
    return out


def _reach(graph, start: str) -> set[str]:
    """Every node reachable from ``start`` by one arrow or more."""
    seen, todo = set(), [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def _shortest_cycle(graph, start: str, within: set[str]) -> list[str]:
    """A shortest cycle through ``start`` inside ``within`` (breadth first), the first node repeated at the end."""
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w in within and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{start} is on no cycle")


def knots(graph) -> list[set[str]]:
    """The nodes tied into cycles, one set per knot (strongly connected component of more than one node)."""
    reach = {v: _reach(graph, v) for v in graph}
    out, done = [], set()
    for v in sorted(graph):
        if v not in done and v in reach[v]:
            knot = {w for w in reach[v] if v in reach[w]}
            done |= knot
            out.append(knot)
    return out


def cycles(graph) -> list[list[str]]:
    """The shortest cycle of each knot (a list of nodes, the first repeated at the end)."""
    return [min((_shortest_cycle(graph, s, k) for s in sorted(k)), key=len) for k in knots(graph)]


def describe(graph, cycle: list[str]) -> str:
    """A cycle with the imports behind each of its arrows, and the rest of its knot where that is larger."""
    knot = next(k for k in knots(graph) if cycle[0] in k)
    lines = [" -> ".join(cycle)]
    if len(knot) > len(cycle) - 1:
        lines.append(f"    (one cycle of a knot of {len(knot)}: {', '.join(sorted(knot))})")
    for a, b in zip(cycle, cycle[1:]):
        where = graph[a][b]
        more = f" and {len(where) - 3} more" if len(where) > 3 else ""
        lines.append(f"    {a} -> {b}: {', '.join(where[:3])}{more}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- the rules

@lru_cache(maxsize=1)
def _package_graph():
    return import_graph()


def test_no_import_cycle_between_modules():
    g = _package_graph()
    found = cycles(g)
    assert not found, "import cycles between copyhead's modules:\n" + "\n".join(describe(g, c) for c in found)


def test_no_import_cycle_between_top_level_units():
    g = unit_graph(_package_graph())
    found = cycles(g)
    assert not found, ("import cycles between copyhead's top-level modules and subpackages:\n"
                       + "\n".join(describe(g, c) for c in found))


@pytest.mark.parametrize("importer,imported,why", LAYERS, ids=[f"{a[9:]}-not-{b[9:]}" for a, b, _ in LAYERS])
def test_layers_point_down(importer, imported, why):
    def under(m, prefix):
        return m == prefix or m.startswith(prefix + ".")
    bad = [f"{a} -> {b}: {', '.join(where)}" for a, targets in _package_graph().items() if under(a, importer)
           for b, where in targets.items() if under(b, imported)]
    assert not bad, f"{importer} must not import {imported} ({why}):\n  " + "\n  ".join(bad)


def test_no_two_modules_share_a_name():
    by_name = defaultdict(list)
    for f in sorted((SRC / PKG).rglob("*.py")):
        if f.name not in ALWAYS_SHARED:
            by_name[f.name].append(f.relative_to(SRC / PKG).as_posix())
    shared = {name: tuple(paths) for name, paths in by_name.items() if len(paths) > 1}
    bad = [f"{name}: {', '.join(paths)}" for name, paths in sorted(shared.items())
           if name not in SHARED_NAMES or set(paths) != set(SHARED_NAMES[name][:2])]
    assert not bad, ("modules that share a name (rename one so the name says its job, or list the pair in "
                     "SHARED_NAMES with why):\n  " + "\n  ".join(bad))
    stale = sorted(set(SHARED_NAMES) - set(shared))
    assert not stale, f"SHARED_NAMES lists names no two modules share any more: {stale}"


RESEARCH = "research"


def absolute_imports(path: Path) -> list[tuple[str, int]]:
    """(module name, line) of every absolute import in a file, at module level or inside a function, and of
    every ``importlib.import_module("...")`` / ``__import__("...")`` with a constant name."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.append((node.module, node.lineno))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ("import_module", "__import__"):
                out.append((node.args[0].value, node.lineno))
    return out


def imports_of_package(package: Path, top: str) -> list[str]:
    """``file:line imports name`` for every import of the top-level package ``top`` (or a module under it)
    anywhere in ``package``'s files."""
    return [f"{f.relative_to(package.parent)}:{line} imports {name}" for f in sorted(package.rglob("*.py"))
            for name, line in absolute_imports(f) if name == top or name.startswith(top + ".")]


def test_copyhead_never_imports_research():
    bad = imports_of_package(SRC / PKG, RESEARCH)
    assert not bad, ("copyhead must not import the research package (research imports copyhead, not the "
                     "reverse; a fingerprint names research's code by its module path):\n  " + "\n  ".join(bad))


def test_research_imports_copyhead():
    research = SRC / RESEARCH
    assert (research / "__init__.py").is_file(), "the research package is src/research"
    assert imports_of_package(research, PKG), "research is built on copyhead: some module of it imports copyhead"


def test_the_import_scan_sees_function_level_and_importlib_imports(tmp_path):
    pkg = tmp_path / PKG
    pkg.mkdir()
    (pkg / "a.py").write_text("import os\nfrom . import b\n\ndef f():\n    from research.x import y\n")
    (pkg / "b.py").write_text("import importlib\n\ndef g():\n    return importlib.import_module('research')\n")
    (pkg / "c.py").write_text("import researchers\nfrom copyhead import research\n")     # neither is research
    assert imports_of_package(pkg, RESEARCH) == ["copyhead/a.py:5 imports research.x",
                                                 "copyhead/b.py:4 imports research"]


# ------------------------------------------------------------------------------- the reader itself

def test_the_graph_reader_resolves_relative_lazy_and_function_level_imports(tmp_path):
    pkg = tmp_path / PKG
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import f\n")
    (pkg / "sub" / "a.py").write_text("from .. import top\n\ndef f():\n    from .b import g\n    return g\n")
    (pkg / "sub" / "b.py").write_text("import copyhead.top as t\nimport numpy\ng = 1\n")
    (pkg / "top.py").write_text("from copyhead.sub.a import f\n\ndef h():\n    call('sub.b:g')\n")
    g = import_graph(tmp_path)
    assert {a: sorted(b) for a, b in g.items()} == {
        "copyhead": [], "copyhead.sub": ["copyhead.sub.a"], "copyhead.sub.a": ["copyhead.sub.b", "copyhead.top"],
        "copyhead.sub.b": ["copyhead.top"], "copyhead.top": ["copyhead.sub.a", "copyhead.sub.b"]}
    assert [w.split(tmp_path.name + "/")[-1] for w in g["copyhead.sub.a"]["copyhead.sub.b"]] == ["copyhead/sub/a.py:4"]
    found = cycles(g)
    assert found == [["copyhead.sub.a", "copyhead.top", "copyhead.sub.a"]]   # the shortest of a -> (b ->) top -> a
    assert "copyhead/top.py:1" in describe(g, found[0])
    assert cycles(unit_graph(g)) == [["copyhead.sub", "copyhead.top", "copyhead.sub"]]


def test_every_test_of_the_research_package_is_marked_research():
    """tests/research/ is the research package's suite, run with -m research (.ci/run does): a file there
    without the marker would run in the default suite, where the paper pipeline's tests belong."""
    folder = Path(__file__).resolve().parent / "research"
    unmarked = [p.name for p in sorted(folder.glob("test_*.py"))
                if "pytestmark = pytest.mark.research" not in p.read_text()]
    assert not unmarked, unmarked
