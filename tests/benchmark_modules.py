"""The benchmark scripts (`benchmarks/*.py`) as modules the tests import: they are scripts, not a
package, and import their neighbours by name, so each is loaded from its file and registered
under its own name."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def script(name: str) -> Path:
    """The file of the benchmark script `name` (without .py)."""
    return BENCHMARKS / f"{name}.py"


def load(name: str) -> ModuleType:
    """The benchmark script `name` as a module (loaded once, then the same one)."""
    if name in sys.modules:
        return sys.modules[name]
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, script(name))
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
