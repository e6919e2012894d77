"""Code fingerprints: which code a product was made by, from the code its command actually runs.

Each kind of product is made by one or more *entry points* (``CODE_ROOTS``: the ``module:function`` that its
``copyhead`` command calls, as in :mod:`copyhead.cli`). Its fingerprint digests exactly the code those
entry points can reach (a root may also name a module of the research package beside copyhead,
``"research.umbrella:mbar"``: read from its source like copyhead's, never imported):

1. **modules**: the copyhead modules the entry modules import, transitively (every ``import`` in the module,
   also inside functions, plus their parent packages and lazy ``"module:function"`` strings); the
   modules in ``NUMBER_FREE`` (file writing, provenance records, the scheduler's memory estimate) are left
   out: they cannot change a number;
2. **definitions**: in those modules, the entry functions, every module-level statement that is not an
   import (constants, registries, ``if __name__`` blocks), every decorated top-level definition and every
   module-level dunder (``__getattr__``: called by Python itself) are kept; then every top-level function, class or assignment whose name is referenced (a name, an
   attribute, an imported name or an identifier-like string) by something kept is kept too, until nothing
   is added. A name counts wherever it is defined in the closure (an over-approximation: it may keep an
   unused twin, never drop a used one);
3. **digest**: each kept definition is digested by its syntax tree without docstrings (so comments,
   formatting and docstrings do not count), and the fingerprint is the sha256 of the *sorted* digests:
   it does not depend on which file holds a definition, so moving a module changes no fingerprint unless a
   kept line names the module; import statements are not digested (the names they bring in are).

So a docstring, a comment, a blank line or a new function nobody calls changes no fingerprint; a change
inside any function a product can reach does. :func:`module_digests` gives the same digest per module, so
a record can say *which* modules changed (``code_modules`` in every product's record).
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .parse_cache import ParseCache

_PKG = Path(__file__).resolve().parent
# the research package (src/research, beside copyhead) is read from its source files, never imported:
# copyhead does not import research, yet a research page's concern can name its entry points
# ("research.umbrella:mbar"; a root without a package name is copyhead's)
RESEARCH = "research"
# the parse of each module is kept on disk (copyhead.parse_cache), keyed by this file's own source: a change
# to how modules are parsed or digested invalidates every entry
_PARSER_KEY = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]

# The entry points of each kind of product: what its command calls (copyhead.cli). A product's record names
# its concern; the workflow puts ``code_fingerprint(concern)`` in its rules' params, so a code change reruns
# exactly the products whose entry points reach it.
CODE_ROOTS: dict[str, tuple[str, ...]] = {
    "train": ("run:train_job", "run:train_points"),
    "theory": ("theory.output:write_theory", "theory.same_dataset:sweep_pairs",
               "theory.output:write_same_dataset_theory"),
    "phase_map": ("theory.phase_map_output:write_map", "theory.phase_map_output:write_exact"),
    "aggregate": ("aggregate:aggregate_runs",),
    "figures": ("figures:make_figure", "figures.phase_map:write_figures"),
    "results": ("results:write_results", "results:write_pages", "results.phase_map_page:write_page"),
    "study_config": ("studies.spec:write_study_config",),
    "studies_tables": ("studies.tables:write_tables",),
    "studies": ("studies.report:write_page",),
}
# the research package's products (src/research, read from its source, never imported): the one loop
# (research.one_loop: its predictions, its figures, its page docs/one_loop.md) and the prior check
# (research.prior_check: docs/prior_check/prior_check.nc, its figure and its page docs/prior_check.md)
CODE_ROOTS.update({
    "one_loop": ("research.one_loop.points:read_points", "research.one_loop.predict_output:write_predictions"),
    "one_loop_figures": ("research.one_loop.figures:write", "research.one_loop.figures:write_dataset",
                         "research.one_loop.figures:write_remainder"),
    "one_loop_page": ("research.one_loop.page:write_page",),
    "prior_check": ("research.prior_check.output:write_check",),
    "prior_check_page": ("research.prior_check.figure:write", "research.prior_check.page:write_page"),
})
# research/benchmarks/metastability.py's page: reference chains, umbrella windows (research.umbrella, read
# from its source, not imported) and the studies' statistics
CODE_ROOTS["metastability"] = CODE_ROOTS["train"] + CODE_ROOTS["studies_tables"] + ("research.umbrella:mbar",)

# product kind (the ``copyhead_kind`` attribute of a netCDF product) -> the concern that makes it
KIND_CONCERN = {"run": "train", "theory": "theory", "theory_datasets": "theory", "aggregate": "aggregate",
                "figure": "figures", "phase_map": "phase_map", "phase_map_exact": "phase_map",
                "prior_check": "prior_check", "one_loop": "one_loop"}

# modules that cannot change a product's numbers: provenance records and file writing, the scheduler's
# memory estimate (refuses a point no machine can hold before any compute), the command line and the audit
NUMBER_FREE = ("copyhead.provenance", "copyhead.datafiles", "copyhead.resources", "copyhead.fingerprint",
               "copyhead.parse_cache",
               "copyhead.cli", "copyhead.audit", "copyhead.recovery")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """Remove every bare string statement (docstrings) from module, class and function bodies."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = [s for s in node.body
                    if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                            and isinstance(s.value.value, str))]
            node.body = body or [ast.Pass()]
    return tree


def _digest(node: ast.AST) -> str:
    return hashlib.sha256(ast.dump(node).encode()).hexdigest()


def _names(node: ast.AST) -> set[str]:
    """Every name a piece of code refers to: names, attributes, imported names, identifier-like strings
    (``"module:function"`` strings split at ``:`` and ``.``)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
            out.add(n.name.split(".")[-1])
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 200:
            out.update(_IDENT.findall(n.value) if re.fullmatch(r"[\w.:]+", n.value) else ())
    return out


@dataclass
class _Item:
    """One top-level piece of a module: a definition (with the names it defines) or a statement."""
    module: str
    defines: tuple[str, ...]
    digest: str
    refs: set[str]
    root: bool


@dataclass
class _Module:
    name: str
    items: list[_Item] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)
    aliases: dict[str, set[str]] = field(default_factory=dict)    # `from x import f as g`: g -> {f}

    def to_json(self) -> dict:
        return {"name": self.name, "imports": sorted(self.imports),
                "aliases": {k: sorted(v) for k, v in self.aliases.items()},
                "items": [dict(asdict(it), defines=list(it.defines), refs=sorted(it.refs)) for it in self.items]}

    @classmethod
    def from_json(cls, d: dict) -> "_Module":
        return cls(d["name"], [_Item(it["module"], tuple(it["defines"]), it["digest"], set(it["refs"]), it["root"])
                               for it in d["items"]],
                   set(d["imports"]), {k: set(v) for k, v in d["aliases"].items()})


def _defined_names(stmt: ast.stmt) -> tuple[str, ...]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (stmt.name,)
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return tuple(t.id for t in targets if isinstance(t, ast.Name))


def _root_module(root: str) -> str:
    """The module of an entry point: ``"run:train_job"`` -> ``copyhead.run``, ``"research.umbrella:mbar"``
    -> ``research.umbrella``."""
    module = root.split(":")[0]
    return module if module.split(".")[0] == RESEARCH else f"copyhead.{module}"


def _sources(package_dir: Path) -> list[tuple[str, Path]]:
    """(top-level package name, file) of every module of copyhead under ``package_dir`` and of the research
    package beside it (where there is one)."""
    out = []
    for top, pkg in (("copyhead", package_dir), (RESEARCH, package_dir.parent / RESEARCH)):
        if top == "copyhead" or (pkg / "__init__.py").is_file():
            out += [(top, f) for f in sorted(pkg.rglob("*.py")) if "__pycache__" not in f.relative_to(pkg).parts]
    return out


class CodeIndex:
    """The copyhead package under ``package_dir`` (and the research package beside it) parsed once: per
    module its top-level items and imports."""

    def __init__(self, package_dir: str | Path | None = None):
        self.pkg = Path(package_dir) if package_dir is not None else _PKG
        self.top = self.pkg.name
        self.modules: dict[str, _Module] = {}
        self._kept: dict[tuple[str, ...], list[_Item]] = {}    # code_fingerprint and module_digests share it
        files = []
        for top, f in _sources(self.pkg):
            base = self.pkg if top == "copyhead" else self.pkg.parent / top
            rel = f.relative_to(base).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            files.append((".".join((top,) + tuple(parts)), f, f.read_bytes(), rel.name == "__init__"))
        cache = ParseCache(_PARSER_KEY, [(name, data, is_pkg) for name, _, data, is_pkg in files])
        cached, complete = cache.load()
        for name, f, data, is_pkg in files:
            try:
                self.modules[name] = _Module.from_json(cached[name])
            except (KeyError, TypeError, ValueError, AttributeError):   # not cached, or a damaged entry
                self.modules[name] = self._parse(name, f, data, is_pkg)
                complete = False
        if not complete:
            cache.store({name: m.to_json() for name, m in self.modules.items()})

    # -- parsing ----------------------------------------------------------------------------------------
    def _resolve(self, module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
        return ".".join(base + ([node.module] if node.module else []))

    def _parse(self, name: str, path: Path, data: bytes, is_pkg: bool) -> _Module:
        mod = _Module(name)
        try:
            tree = _strip_docstrings(ast.parse(data, filename=str(path)))
        except (SyntaxError, ValueError):       # a file that does not parse counts by its bytes, whole
            mod.items.append(_Item(name, (), hashlib.sha256(data).hexdigest(), set(), True))
            return mod
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                mod.imports.update(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom):
                base = self._resolve(name, is_pkg, n)
                mod.imports.add(base)
                mod.imports.update(f"{base}.{a.name}" for a in n.names)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                m = re.fullmatch(r"(copyhead\.)?([\w.]+):\w+", n.value) or re.fullmatch(r"(copyhead\.)([\w.]+)",
                                                                                      n.value)
                if m:                                   # call("theory.output:write_theory"), "copyhead.figures.x"
                    mod.imports.add("copyhead." + m.group(2))
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for a in stmt.names:
                    if a.asname:
                        mod.aliases.setdefault(a.asname, set()).add(a.name.split(".")[-1])
                continue
            defines = _defined_names(stmt)
            if defines == ("__all__",):
                continue
            is_def = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            decorated = is_def and bool(stmt.decorator_list)
            implicit = bool(defines) and defines[0].startswith("__") and defines[0].endswith("__")  # __getattr__
            # a plain definition counts when something refers to it; any other statement runs on import
            root = decorated or implicit or not (is_def or (defines and isinstance(stmt, (ast.Assign, ast.AnnAssign))))
            mod.items.append(_Item(name, defines, _digest(stmt), _names(stmt), root))
        return mod

    # -- closure ----------------------------------------------------------------------------------------
    def _known(self, name: str) -> str | None:
        """The module ``name`` names (or its nearest parent that is a module), or None outside copyhead and
        research."""
        parts = name.split(".")
        while parts and parts[0] in ("copyhead", RESEARCH):
            if ".".join(parts) in self.modules:
                return ".".join(parts)
            parts = parts[:-1]
        return None

    def closure(self, roots: tuple[str, ...]) -> list[str]:
        """The copyhead (and research) modules the entry modules import, transitively (parents included;
        NUMBER_FREE out)."""
        todo = [_root_module(r) for r in roots]
        seen: set[str] = set()
        while todo:
            m = self._known(todo.pop())
            if m is None or m in seen or any(m == x or m.startswith(x + ".") for x in NUMBER_FREE):
                continue
            seen.add(m)
            parts = m.split(".")
            todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
            todo.extend(self.modules[m].imports)
        return sorted(seen)

    def kept(self, roots: tuple[str, ...]) -> list[_Item]:
        """The items the entry points can reach (see the module docstring), worked out once per set of roots."""
        if roots not in self._kept:
            self._kept[roots] = self._reach(roots)
        return self._kept[roots]

    def _reach(self, roots: tuple[str, ...]) -> list[_Item]:
        modules = self.closure(roots)
        missing = [r for r in roots if _root_module(r) not in modules]
        if missing:
            raise ValueError(f"entry point(s) {missing} name no module of {self.pkg}")
        items = [it for m in modules for it in self.modules[m].items]
        entry = {r.split(":")[1] for r in roots}
        kept = [it for it in items if it.root or entry & set(it.defines)]
        by_name: dict[str, list[_Item]] = {}
        for it in items:
            for d in it.defines:
                by_name.setdefault(d, []).append(it)
        done = {id(it) for it in kept}
        todo = list(kept)
        while todo:
            item = todo.pop()
            aliases = self.modules[item.module].aliases
            for ref in item.refs | {n for r in item.refs & aliases.keys() for n in aliases[r]}:
                for it in by_name.get(ref, ()):
                    if id(it) not in done:
                        done.add(id(it))
                        kept.append(it)
                        todo.append(it)
        return kept


_index_cache: dict[tuple, CodeIndex] = {}


def _index(package_dir: str | Path | None) -> CodeIndex:
    pkg = Path(package_dir) if package_dir is not None else _PKG
    files = [p for _, p in _sources(pkg)]
    key = (str(pkg), tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files))
    if key not in _index_cache:
        _index_cache.clear()
        _index_cache[key] = CodeIndex(pkg)
    return _index_cache[key]


def _roots(concern: str) -> tuple[str, ...]:
    if concern not in CODE_ROOTS:
        raise ValueError(f"unknown code concern {concern!r}; allowed values: {sorted(CODE_ROOTS)}")
    return CODE_ROOTS[concern]


def code_fingerprint(concern: str, package_dir: str | Path | None = None) -> str:
    """16 hex digits identifying the code that makes one kind of product (``concern``, a key of
    CODE_ROOTS). The workflow puts it in the rules' ``params:`` (so a code change reruns exactly the
    products whose entry points reach it) and every product records it (``code_fingerprint``)."""
    kept = _index(package_dir).kept(_roots(concern))
    h = hashlib.sha256(concern.encode())
    for d in sorted(it.digest for it in kept):
        h.update(d.encode())
    return h.hexdigest()[:16]


def module_digests(concern: str, package_dir: str | Path | None = None) -> dict[str, str]:
    """Per copyhead module, 12 hex digits of what ``concern``'s fingerprint keeps of it: the record's
    ``code_modules``, so that a changed fingerprint names the modules that changed."""
    per: dict[str, list[str]] = {}
    for it in _index(package_dir).kept(_roots(concern)):
        per.setdefault(it.module, []).append(it.digest)
    return {m: hashlib.sha256("".join(sorted(ds)).encode()).hexdigest()[:12] for m, ds in sorted(per.items())}


def changed_modules(recorded: dict, current: dict) -> list[str]:
    """The modules whose digest differs between a record's ``code_modules`` and the current code's
    (added, removed or changed), e.g. ``['copyhead.theory.scan (changed)']``."""
    out = []
    for m in sorted(set(recorded) | set(current)):
        if m not in current:
            out.append(f"{m} (no longer used)")
        elif m not in recorded:
            out.append(f"{m} (new)")
        elif recorded[m] != current[m]:
            out.append(f"{m} (changed)")
    return out
