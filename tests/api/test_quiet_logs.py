"""The service's log carries what it says, not a library's debug chatter (issue 28, point 7):
bm25s sets its logger to DEBUG and printed "Building index from tokens" on every start."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
from api.logs import configure_logging
configure_logging("info")
import logging
from recsys.baselines import BM25Ranker
BM25Ranker().fit(["red dress", "blue shirt"], None).top_k("red", 1)
logging.getLogger("recsys.api").info("ready")
"""


def test_a_library_debug_line_never_reaches_the_service_log():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stderr.splitlines() if line.startswith("{")]
    assert [r["msg"] for r in records] == ["ready"], out.stderr
