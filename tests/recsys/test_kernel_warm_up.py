"""The compiled kernels' warm-up (`kernels._warm_up`) compiles every argument type a request
passes: numba compiles again for a type (or array layout) it has not seen, which cost the first
request after a shop's first rule 9 s (a 503 past the 5 s budget) on a fresh install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from recsys.kernels import compiled

ROOT = Path(__file__).resolve().parents[2]

# In a process of its own (a test process has compiled whatever earlier tests asked for): the
# warm-up, then a load and requests of every kind; what numba compiled after the warm-up.
SCRIPT = """
import json, sys
from datetime import datetime, timezone
from recsys import kernels as K
K.compiled()
names = [n for n in dir(K) if n.startswith("_") and hasattr(getattr(K, n), "signatures")]
before = {n: list(getattr(K, n).signatures) for n in names}
from recsys.artifact import load_version
from recsys.rules import Rule, RuleBook
rec = load_version(sys.argv[1])
ids = rec.catalog.item_ids
book = RuleBook([Rule("red", "boost", attribute="color:red", amount=0.5),
                 Rule("hero", "pin", item_id=ids[5], position=1)])
for query in ("red dress", "acme", "formal shoes blue"):
    rules = book.for_query(query, rec.catalog, datetime.now(timezone.utc))
    rec.recommend(query, k=5, rules=rules)
    rec.recommend(query, k=5, filters={"color": ["red", "blue"]}, explain=False)
    rec.recommend(query, k=5, history=[ids[3], ids[7]])
    rec.facet_counts(query)
    rec.explain(query, ids[0])
print(json.dumps({n: [str(s) for s in getattr(K, n).signatures if s not in before[n]] for n in names}))
"""


def test_no_request_compiles_a_kernel_the_warm_up_did_not(planted_artifacts):
    if compiled() is None:
        pytest.skip("numba is not installed")
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(planted_artifacts[0])], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    compiled_later = {name: sigs for name, sigs in json.loads(out.stdout.splitlines()[-1]).items() if sigs}
    assert compiled_later == {}


def test_the_kernels_compile_wherever_numba_is_installed():
    """A kernel numba cannot compile falls back to numpy with a warning (the same answers, several
    times slower), and every test of the compiled path then skips as if numba were missing: a
    name left undefined in `_top_k_kernel` passed the suite that way. Where numba imports, the
    kernels must compile."""
    pytest.importorskip("numba")
    assert compiled() is not None, "recsys.kernels did not compile: see the warning it printed"
