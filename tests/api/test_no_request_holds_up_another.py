"""Issue 12's first finding: one 512-letter word took 6 s on the event loop and GET /health
waited meanwhile. Against a real server process on 127.0.0.1, several clients (in a process of
their own) post long words, 32-word queries, explanations and comparisons as fast as they can,
while /health is timed every 20 ms: every answer comes within the limits and /health answers
in a median under 50 ms, never near a second."""

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
HEALTH_BOUND_S = 0.050


# one server for both tests (a start costs a process's imports and a model load): the first
# test's two requests leave nothing the second one's load would notice
@pytest.fixture(scope="module")
def server(tmp_path_factory, v1, data_dir):
    tmp_path = tmp_path_factory.mktemp("holds-up")
    artifacts, log = make_artifacts(tmp_path / "artifacts", v1), tmp_path / "server.log"
    with running(["--model", str(artifacts)], {"RECSYS_DATA_DIR": str(data_dir)}, log) as (base, proc):
        wait_ready(base, proc, log, timeout=120)
        yield base, proc, log
        stop(proc, log)


def test_a_512_letter_word_answers_at_once(server):
    base, _, _ = server
    with httpx.Client(base_url=base, timeout=30) as http:
        http.post("/recommend", json={"query": "warm up"})
        start = time.perf_counter()
        r = http.post("/recommend", json={"query": "a" * 512})
        took = time.perf_counter() - start
    assert r.status_code == 422 and "at most 64 characters" in r.json()["message"]
    assert took < 0.5, took


def test_health_answers_in_under_50_ms_while_clients_overload_the_scorer(server):
    base, proc, _ = server
    load = subprocess.Popen([sys.executable, str(Path(__file__).with_name("load_client.py")), base,
                             str(LOAD_SECONDS), "6"], stdout=subprocess.PIPE, text=True)
    latencies = []
    with httpx.Client(base_url=base, timeout=30) as http:
        time.sleep(0.5)  # the load is under way
        end = time.monotonic() + LOAD_SECONDS - 1.0
        while time.monotonic() < end:
            start = time.perf_counter()
            assert http.get("/health").status_code == 200
            latencies.append(time.perf_counter() - start)
            # a sample every ~10 ms besides its own time: at 20 ms a loaded 3-process test run
            # took exactly 50 in the window, failing the count below
            time.sleep(0.01)
    out, _ = load.communicate(timeout=120)
    assert load.returncode == 0 and proc.poll() is None
    stats = json.loads(out)
    latencies.sort()
    summary = {"health_p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
               "health_max_ms": round(1000 * latencies[-1], 2), "samples": len(latencies), **stats}
    print(json.dumps(summary))
    assert len(latencies) >= 30, summary  # enough for a median (a loaded run took 50 in the window)
    assert sum(stats[k]["requests"] for k in stats) > 100, summary  # a real overload
    assert stats["long512"]["statuses"] == {"422": stats["long512"]["requests"]}, summary
    assert stats["many_words"]["statuses"] == {"200": stats["many_words"]["requests"]}, summary
    for kind in ("word64", "explain64", "compare64", "plain"):
        assert set(stats[kind]["statuses"]) == {"200"}, summary
    for entry in stats.values():
        assert entry["slowest_s"] < 2.0, summary  # within the time budget, queueing included
    # typically under 50 ms, and none anywhere near the seconds of one long word before: the
    # median, because on a machine shared with other jobs a tenth of the samples can wait for a
    # core (the p90 bound this had was flaky there, with no stall)
    assert latencies[len(latencies) // 2] < HEALTH_BOUND_S, summary
    assert latencies[-1] < 1.0, summary
