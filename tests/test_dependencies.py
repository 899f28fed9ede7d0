"""pyproject.toml's runtime dependencies are what recsys/, training/, api/, store/ and cli/ import, no more and
no less; the tools of the tests and the benchmarks are extras."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ("recsys", "training", "api", "store", "cli")
# declared, never imported by our code, needed all the same
NOT_IMPORTED = {"python-multipart": "FastAPI parses the training uploads (forms) with it",
                "fastapi-offline": "api/routes/docs.py serves its files, by package name",
                "psycopg": "SQLAlchemy's postgresql+psycopg dialect loads it (store/db.py)",
                "pystemmer": "snowballstemmer hands out its C stemmers when installed (recsys/tokenize.py)",
                "httptools": "uvicorn parses HTTP with it, named in api/server.py's config",
                "uvloop": "uvicorn runs its event loop on it, named in api/server.py's config"}
OPTIONAL = {"tantivy"}  # `recsys bench` only: imported lazily, its absence is a one-line error


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _imports() -> dict[str, set[str]]:
    """Top-level module -> the files of the runtime packages that import it (anywhere in a file,
    functions included)."""
    found: dict[str, set[str]] = {}
    for package in RUNTIME:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return {m: f for m, f in found.items() if m not in sys.stdlib_module_names and m not in RUNTIME}


def _distributions(modules) -> dict[str, str]:
    """Top-level module -> the distribution that installs it."""
    owners = md.packages_distributions()
    return {m: owners[m][0].lower().replace("_", "-") for m in modules}


def _installed_with(names: set[str]) -> set[str]:
    """`names` and everything they require, transitively (extras aside)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:  # not for this Python (a marker), so not what we import
            continue
        seen.add(name)
        todo += [_name(req) for req in requires if "extra ==" not in req]
    return seen


def test_every_runtime_import_is_installed_by_the_runtime_dependencies():
    declared = {_name(r) for r in _project()["dependencies"]}
    installed = _installed_with(declared)
    imported = _distributions(_imports())
    missing = {m: d for m, d in imported.items() if d not in installed and d not in OPTIONAL}
    assert missing == {}, f"imported at run time, not in [project] dependencies: {missing}"


def test_every_runtime_dependency_is_imported_by_the_runtime():
    declared = {_name(r) for r in _project()["dependencies"]}
    imported = set(_distributions(_imports()).values())
    unused = declared - imported - set(NOT_IMPORTED)
    assert unused == set(), f"runtime dependencies nothing in {RUNTIME} imports: {sorted(unused)}"


def test_test_and_bench_tools_are_extras_only():
    project = _project()
    declared = {_name(r) for r in project["dependencies"]}
    extras = {k: {_name(r) for r in v} for k, v in project["optional-dependencies"].items()}
    assert {"scikit-learn", "pytest", "playwright"} <= extras["test"]
    assert {"tantivy", "matplotlib"} <= extras["bench"]
    assert {"mkdocs", "mkdocs-material"} <= extras["docs"]
    assert not declared & (extras["test"] | extras["bench"] | extras["docs"])
    # `make test` has all three (tests/test_docs_site.py builds the docs)
    assert "'.[test,bench,docs]'" in (ROOT / "Makefile").read_text()
