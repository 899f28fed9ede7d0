"""The catalogues the project generates, by name, for the benchmarks that compare the model
with BM25 on them (`learning_curve.py`, `known_item.py`): ``synthetic`` (`recsys generate`),
``furniture`` (`furniture_data.py`) and ``electronics`` (`electronics_data.py`, spec lists)."""

from __future__ import annotations

import atexit
import importlib
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# name -> (the generator's module, under benchmarks/ or the project, its items here)
GENERATED = {"synthetic": ("recsys.synthetic", 3000), "furniture": ("furniture_data", 3000),
             "electronics": ("electronics_data", 8000)}


def generated(name: str, seed: int = 0, n_items: int | None = None, n_queries: int | None = None) -> Path:
    """A temporary folder holding the generated catalogue `name` of this seed (its items.csv,
    interactions.csv and judgments), removed when the process exits."""
    for path in (str(ROOT), str(ROOT / "benchmarks")):
        if path not in sys.path:
            sys.path.insert(0, path)
    module, default_items = GENERATED[name]
    folder = Path(tempfile.mkdtemp(prefix=f"generated-{name}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    sizes = {"n_items": n_items or default_items, **({"n_queries": n_queries} if n_queries else {})}
    importlib.import_module(module).generate(folder, seed=seed, **sizes)
    return folder
