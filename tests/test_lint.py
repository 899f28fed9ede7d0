"""ruff, mypy and import-linter, as configured in pyproject.toml ([tool.ruff], [tool.mypy]: strict on
recsys/; [tool.importlinter]: which package may import which) pass over the project. Run with this
venv's own tools, from the repository's root; mypy keeps its cache in .mypy_cache (ignored by
git), so a second run takes a few seconds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
