"""ruff, mypy and import-linter, as configured in pyproject.toml ([tool.ruff], [tool.mypy]: strict on
recsys/; [tool.importlinter]: which package may import which) pass over the project. Run with this
venv's own tools, from the repository's root; mypy keeps its cache in .mypy_cache (ignored by
git), so a second run takes a few seconds. And no module imports itself through others, lazy
imports included."""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing():
    out = _run("ruff", "check", "--no-fix", ".")
    assert out.returncode == 0, f"ruff check:\n{out.stdout}\n{out.stderr}"


def test_mypy_finds_nothing():
    out = _run("mypy")  # the files and options: [tool.mypy] in pyproject.toml
    assert out.returncode == 0, f"mypy:\n{out.stdout}\n{out.stderr}"


PACKAGES = ("recsys", "training", "api", "store", "cli")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's contracts ([tool.importlinter] in pyproject.toml) over the packages at root."""
    return subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=root,
                          capture_output=True, text=True, timeout=600, env={"PYTHONPATH": str(root)})


def test_import_contracts_hold():
    out = _lint_imports(ROOT)
    assert out.returncode == 0, f"lint-imports:\n{out.stdout}\n{out.stderr}"


def test_a_forbidden_import_breaks_the_contracts(tmp_path):
    """A copy of the packages where api/ imports training/: the contract that forbids it fails."""
    import shutil

    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "api" / "forbidden.py").write_text("from training.config import TrainConfig\n")
    out = _lint_imports(tmp_path)
    assert out.returncode != 0
    assert "api imports neither training nor cli BROKEN" in out.stdout
    assert "api.forbidden -> training.config" in out.stdout


# ---- no import cycles, lazy imports included -----------------------------------------------------


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement can load (a `from` import's names may be modules)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[:len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the imports under `if TYPE_CHECKING:` (never run, so never a cycle)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            found |= {id(n) for b in node.body for n in ast.walk(b)}
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the project's modules it imports anywhere (functions too), at `root`."""
    paths = {_module_name(root, p): p for name in PACKAGES if (root / name).is_dir()
             for p in (root / name).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_only(tree)
        deps: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
                for name in _imported(module, path.name == "__init__.py", node):
                    while name and name not in paths:  # a function or class: its module
                        name = name.rpartition(".")[0]
                    if name and name != module:
                        deps.add(name)
        graph[module] = deps
    return graph


def test_no_module_imports_itself_through_others():
    """A cycle, even through an import inside a function, means two modules that cannot be read,
    tested or moved apart: one of them holds what both need, or belongs in a module of its own."""
    try:
        tuple(graphlib.TopologicalSorter(import_graph(ROOT)).static_order())
    except graphlib.CycleError as error:
        raise AssertionError(f"an import cycle: {' -> '.join(error.args[1])}") from None


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """`graph` with each subpackage (`recsys.index`, `api.routes`, ...) one node: what a reader
    takes in as one piece."""
    def unit(module: str) -> str:
        return ".".join(module.split(".")[:2])
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        out.setdefault(unit(module), set()).update(unit(d) for d in deps if unit(d) != unit(module))
    return out


def test_no_subpackage_imports_itself_through_others():
    """The same of packages: `recsys.index` read through the featurizer the evidence, and the
    evidence the index's compiled kernels, so neither could be read or moved without the other."""
    try:
        tuple(graphlib.TopologicalSorter(package_graph(import_graph(ROOT))).static_order())
    except graphlib.CycleError as error:
        raise AssertionError(f"an import cycle between packages: {' -> '.join(error.args[1])}") from None


def test_a_cycle_between_a_subpackage_and_a_module_is_found():
    graph = {"recsys.index.query": {"recsys.encoding"}, "recsys.encoding": {"recsys.evidence"},
             "recsys.evidence": {"recsys.index.kernels"}, "recsys.index.kernels": set()}
    assert package_graph(graph)["recsys.evidence"] == {"recsys.index"}
    with pytest.raises(graphlib.CycleError):
        tuple(graphlib.TopologicalSorter(package_graph(graph)).static_order())


def test_a_lazy_import_cycle_is_found(tmp_path):
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "__init__.py").write_text("")
    (tmp_path / "training" / "a.py").write_text("from .b import g\n\ndef f():\n    return g()\n")
    (tmp_path / "training" / "b.py").write_text("def g():\n    from training.a import f\n    return f\n")
    (tmp_path / "training" / "c.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                                "    from .a import f\n")
    graph = import_graph(tmp_path)
    assert graph == {"training": set(), "training.a": {"training.b"}, "training.b": {"training.a"},
                     "training.c": set()}
    with pytest.raises(graphlib.CycleError):
        tuple(graphlib.TopologicalSorter(graph).static_order())
