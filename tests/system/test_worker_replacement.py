"""A SIGKILLed worker of `recsys serve --workers 2` is replaced at once, and its clients are not
left hanging (issue 27, point 5).

A spare worker (RECSYS_SPARE_WORKERS, default 1), loaded and following the store but not
accepting, takes the dead worker's place: a new worker answers within about a second (the
issue's target is 3 s; benchmarks/worker_replacement.py measures it, the bound here is generous
for a loaded shared machine). The requests in flight on the dead worker's connections fail at
once with a connection error (the kernel resets them), its idle kept-alive connections are
closed (the client's next request gets an error or reconnects by itself), and the same request
again is answered. Before, the replacement was a new process that imported torch and loaded
the model before it accepted: 12-16 s in the issue."""

from __future__ import annotations

import os
import time

from tests.live_server import kill_a_worker

from api_support import make_artifacts
from test_server import running, stop, wait_ready

REPLACED_WITHIN_S = 6.0  # generous: a new process took 12-16 s (the issue), a spare takes < 1 s
FAILED_WITHIN_S = 5.0  # a request in flight on the dead worker's connection: an error, no hang
CLEAN = ("RemoteProtocolError", "ReadError", "ConnectError")  # what httpx says of a closed one


def _wait_for(log, words: str, timeout: float, times: int = 1) -> None:
    deadline = time.monotonic() + timeout
    while log.read_text().count(words) < times:
        assert time.monotonic() < deadline, f"no {words!r} in the log:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)


def test_a_killed_worker_is_replaced_at_once_and_its_connections_fail_cleanly(tmp_path, v1,
                                                                               data_dir):
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    log = tmp_path / "server.log"
    env = {"RECSYS_DATA_DIR": str(data_dir)}
    with running(["--workers", "2", "--model", str(artifacts)], env, log) as (base, proc):
        wait_ready(base, proc, log, timeout=180)
        _wait_for(log, '"msg": "spare worker loaded"', timeout=180)
        out = kill_a_worker(base, workers=2)
        print(f"worker replacement: {out}; load average {os.getloadavg()}")
        assert out["replaced_s"] is not None and out["replaced_s"] < REPLACED_WITHIN_S, out
        assert len(out["workers_after"]) == 2 and out["victim"] not in out["workers_after"], out
        assert all(o in CLEAN for o in out["in_flight"]), out  # sent, unread: reset, not answered
        assert all(s < FAILED_WITHIN_S for s in out["in_flight_s"]), out
        for o, took in zip(out["idle"], out["idle_s"], strict=True):
            assert (o in CLEAN or o.startswith("answered 200")) and took < FAILED_WITHIN_S, out
        assert out["retried"] == ["answered 200"] * 6, out
        assert '"msg": "a worker died; a spare replaces it"' in log.read_text()
        _wait_for(log, '"msg": "spare worker loaded"', timeout=180, times=2)  # a new spare
        stop(proc, log)
