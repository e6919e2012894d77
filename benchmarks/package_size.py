"""The size of the two packages (issue 50's measure), per package and per subpackage: raw lines (``wc -l``)
and, by an AST scan, how many of them are docstrings, blank lines and comments, and the rest, code.

    python benchmarks/package_size.py            # src/copyhead and src/research
    python benchmarks/package_size.py --top 10   # and the 10 largest modules of copyhead by code lines
"""
from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def count(path: Path) -> dict:
    """Raw, docstring, blank, comment and code lines of one module."""
    src = path.read_text()
    lines = src.splitlines()
    doc = set()
    for n in ast.walk(ast.parse(src)):
        body = getattr(n, "body", None)
        if (isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            doc.update(range(body[0].lineno, body[0].end_lineno + 1))
    blank = sum(1 for line in lines if not line.strip())
    comments = sum(1 for i, line in enumerate(lines, 1) if line.strip().startswith("#") and i not in doc)
    return {"raw": len(lines), "docstrings": len(doc), "blank": blank, "comments": comments,
            "code": len(lines) - len(doc) - blank - comments}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=0, help="also list the N largest copyhead modules by code lines")
    args = ap.parse_args(argv)
    keys = ("raw", "docstrings", "blank", "comments", "code")
    print("| folder | modules | " + " | ".join(keys) + " |")
    print("| --- " * (len(keys) + 2) + "|")
    modules = {}
    for pkg in ("copyhead", "research"):
        parts = defaultdict(lambda: dict.fromkeys(keys, 0) | {"modules": 0})
        for p in sorted((ROOT / "src" / pkg).rglob("*.py")):
            c = modules[p.relative_to(ROOT)] = count(p)
            rel = p.relative_to(ROOT / "src")
            for name in {pkg, "/".join(rel.parts[:2]) if len(rel.parts) > 2 else pkg + "/ (top level)"}:
                parts[name]["modules"] += 1
                for k in keys:
                    parts[name][k] += c[k]
        for name in sorted(parts, key=lambda n: (n != pkg, n)):
            row = parts[name]
            label = f"**{name}**" if name == pkg else name
            print(f"| {label} | {row['modules']} | " + " | ".join(str(row[k]) for k in keys) + " |")
    if args.top:
        print()
        for p, c in sorted(((p, c) for p, c in modules.items() if p.parts[1] == "copyhead"),
                           key=lambda pc: -pc[1]["code"])[:args.top]:
            print(f"{c['code']:5d} code / {c['raw']:5d} raw  {p}")


if __name__ == "__main__":
    main()
