"""A test that compares with numbers stored on one machine must say so: it carries the marker
``stored_numbers`` (so benchmarks/cross_kernel.sh reruns it under other BLAS kernels) and takes its
tolerance from tests/stored.py (where each tolerance is written with its reason). This module finds
every test function that reads tests/data/ or uses a stored.py tolerance and fails if one is unmarked."""
import ast
from pathlib import Path


TESTS = Path(__file__).resolve().parent
STORED_NAMES = {"EXACT", "CLOSED_FORM", "ITERATED", "FIT", "assert_same_across_machines", "approx"}


def _marked(decorators) -> bool:
    for d in decorators:
        node = d.func if isinstance(d, ast.Call) else d
        if isinstance(node, ast.Attribute) and node.attr == "stored_numbers":
            return True
    return False


def _module_marked(tree) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            if "stored_numbers" in ast.unparse(node.value):
                return True
    return False


def _uses_stored(fn, module_names: set[str], helpers: set[str]) -> bool:
    """The function reads tests/data/, names a stored.py tolerance, or calls a module helper that does."""
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.right, ast.Constant) and node.right.value == "data":
            return True                              # Path(__file__).parent / "data" / ...
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "tests/data" in node.value:
            return True
        if isinstance(node, ast.Name) and (node.id in module_names or node.id in helpers):
            return True
    return False


def unmarked_stored_tests(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "stored"
                for a in n.names} & STORED_NAMES
    # module-level names holding stored data (e.g. GOLDEN = np.load("tests/data/...")) count as stored
    for n in tree.body:
        if isinstance(n, ast.Assign) and "tests/data" in ast.unparse(n.value):
            imported |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    helpers = {f.name for f in funcs if not f.name.startswith("test_") and _uses_stored(f, imported, set())}
    if _module_marked(tree):
        return []
    return [f"{path.name}::{f.name}" for f in funcs
            if f.name.startswith("test_") and not _marked(f.decorator_list) and _uses_stored(f, imported, helpers)]


def test_every_test_that_compares_with_stored_numbers_is_marked():
    bad = [t for p in sorted(TESTS.glob("test_*.py")) if p.name != Path(__file__).name
           for t in unmarked_stored_tests(p)]
    assert not bad, f"compare with stored numbers but lack @pytest.mark.stored_numbers: {bad}"


def test_the_guard_finds_an_unmarked_stored_number_test(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import numpy as np\nfrom stored import FIT\n\n"
        "def test_a():\n    assert 1.0 == pytest.approx(1.0, rel=FIT)\n\n"
        "def test_b():\n    d = np.load('tests/data/x.npz')\n\n"
        "@pytest.mark.stored_numbers\ndef test_c():\n    assert FIT\n\n"
        "def test_d():\n    assert 1 + 1 == 2\n")
    assert unmarked_stored_tests(tmp_path / "test_x.py") == ["test_x.py::test_a", "test_x.py::test_b"]


def test_the_marked_tests_are_the_ones_the_cross_kernel_script_runs():
    script = (TESTS.parent / "benchmarks/cross_kernel.sh").read_text()
    assert "-m stored_numbers" in script and "OPENBLAS_CORETYPE" in script
    assert "avx512f" in script                       # SkylakeX only where the CPU has AVX-512
