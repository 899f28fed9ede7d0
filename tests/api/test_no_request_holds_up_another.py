"""Issue 12's first finding: one 512-letter word took 6 s on the event loop and GET /health
waited meanwhile. Against a real server process on 127.0.0.1, several clients (in a process of
their own) post long words, 32-word queries, explanations and comparisons as fast as they can,
while /health is asked every 10 ms: every answer is the right one and /health answers every
time. How fast it answers meanwhile is a benchmark's (benchmarks/health_under_load.py: the
median and maximum against the same server idle), not a test's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from api_support import make_artifacts
from test_server import running, stop, wait_ready

LOAD_SECONDS = 4.0


# one server for both tests (a start costs a process's imports and a model load): the first
# test's two requests leave nothing the second one's load would notice
@pytest.fixture(scope="module")
def server(module_tmp, v1, data_dir):
    tmp_path = module_tmp
    artifacts, log = make_artifacts(tmp_path / "artifacts", v1), tmp_path / "server.log"
    with running(["--model", str(artifacts)], {"RECSYS_DATA_DIR": str(data_dir)}, log) as (base, proc):
        wait_ready(base, proc, log, timeout=120)
        yield base, proc, log
        stop(proc, log)


def test_a_512_letter_word_is_refused_by_the_limit(server):
    base, _, _ = server
    with httpx.Client(base_url=base, timeout=30) as http:
        http.post("/recommend", json={"query": "warm up"})
        r = http.post("/recommend", json={"query": "a" * 512})
    # refused before any scoring: the limit's answer, not the scorer's
    assert r.status_code == 422 and "at most 64 characters" in r.json()["message"]


def test_health_answers_while_clients_overload_the_scorer(server):
    base, proc, _ = server
    load = subprocess.Popen([sys.executable, str(Path(__file__).with_name("load_client.py")), base,
                             str(LOAD_SECONDS), "6"], stdout=subprocess.PIPE, text=True)
    answered = 0
    with httpx.Client(base_url=base, timeout=30) as http:
        time.sleep(0.5)  # the load is under way
        while load.poll() is None:
            assert http.get("/health").status_code == 200
            answered += 1
            time.sleep(0.01)
    out, _ = load.communicate(timeout=120)
    assert load.returncode == 0 and proc.poll() is None
    stats = json.loads(out)
    summary = {"health_answered": answered, **stats}
    print(json.dumps(summary))
    assert answered >= 1, summary
    assert sum(stats[k]["requests"] for k in stats) > 100, summary  # a real overload
    assert stats["long512"]["statuses"] == {"422": stats["long512"]["requests"]}, summary
    assert stats["many_words"]["statuses"] == {"200": stats["many_words"]["requests"]}, summary
    for kind in ("word64", "explain64", "compare64", "plain"):
        assert set(stats[kind]["statuses"]) == {"200"}, summary
