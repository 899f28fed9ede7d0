"""ruff and mypy, as configured in pyproject.toml ([tool.ruff], [tool.mypy]: strict on recsys/),
pass over the project. Run with this venv's own tools, from the repository's root; mypy keeps
its cache in .mypy_cache (ignored by git), so a second run takes a few seconds."""

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
