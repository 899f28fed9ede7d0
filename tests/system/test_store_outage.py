"""PostgreSQL stopped under a running `recsys serve --workers 2` (issue 27's leftovers): what the
processes log, and what a process started during the outage does.

- Each process's version watcher says once that the store is unavailable (a warning naming the
  error and that it keeps trying), nothing while it lasts, and once that the store answers again
  (an info line); before, every poll (every RECSYS_WATCH_INTERVAL_S) logged a full traceback at
  error level, twice.
- A worker started during the outage (the replacement of a killed one) serves: /recommend
  needs no store, the store's routes answer 503 with Retry-After. Before, its startup failed on
  the schema migration (exit code 3), the supervisor started another, which failed the same
  way, and after RECSYS_MAX_WORKER_RESTARTS within a minute the whole service stopped.
- So does a `--workers 1` replica started during the outage (an orchestrator restarting it):
  before, it exited at startup. Once the database is back, each migrates and follows the store.
  Meanwhile it serves the rules the other processes last read (`api.store_snapshot`): before,
  none, and a hide rule's item was shown there.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import httpx
from sqlalchemy import select

from store.db import Database
from store.tables import events
from tests.live_server import answers_by_worker, worker_pids

from api_support import ADMIN_TOKEN, make_artifacts
from test_server import running, wait_ready
from test_store_failures import _pg_ctl, own_postgres  # noqa: F401 - a fixture, asked by name

EVENTS_TOKEN = "outage-events-token"
PUSH = {"Authorization": f"Bearer {EVENTS_TOKEN}"}
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
WATCH_S = 0.2  # the watchers' poll: an outage of a few seconds is dozens of polls
PAUSED = "following the store is paused"
RESUMED = "the store answers again"


def _event(item: str, event_id: str) -> dict:
    return {"events": [{"type": "click", "query": "red dress", "item_id": item,
                        "event_id": event_id}]}


def _lines(log: Path) -> list[dict]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a progress bar, a library's print
    return out


def _until(check, tries: int, pause: float = 0.2):
    """`check()` until it returns something true, at most `tries` times: its last value."""
    value = None
    for _ in range(tries):
        value = check()
        if value:
            return value
        time.sleep(pause)
    return value


def _answer_of_each(base: str, method: str, path: str, want: int, **kw) -> dict[str, int]:
    """worker pid -> the status of `method path`, asked on new connections until `want`
    workers answered (`answers_by_worker`, bounded in time)."""
    def send() -> httpx.Response:
        r = httpx.request(method, f"{base}{path}", timeout=30, **kw)
        if r.status_code == 503:
            assert int(r.headers["retry-after"]) > 0, r.headers
        return r

    return {pid: r.status_code for pid, r in answers_by_worker(send, want).items()}


def _top(base: str) -> list[str]:
    r = httpx.post(f"{base}/recommend", json={"query": "red dress", "k": 3}, timeout=30)
    assert r.status_code == 200, r.text
    return [it["item_id"] for it in r.json()["items"]]


def test_an_outage_is_logged_once_and_processes_started_during_it_serve(
        request, tmp_path, v1, data_dir, rec):
    url, folder, port = request.getfixturevalue("own_postgres")
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    env = {"RECSYS_DATA_DIR": str(data_dir), "RECSYS_ADMIN_TOKEN": ADMIN_TOKEN,
           "RECSYS_EVENTS_TOKEN": EVENTS_TOKEN, "RECSYS_ARTIFACTS_DIR": str(artifacts),
           "RECSYS_DATABASE_URL": url, "RECSYS_WATCH_INTERVAL_S": str(WATCH_S),
           "RECSYS_SPARE_WORKERS": "0", "RECSYS_STANDBY_VERSIONS": "0"}
    item = rec.catalog.item_ids[0]
    log, replica_log = tmp_path / "service.log", tmp_path / "replica.log"
    with running(["--workers", "2"], env, log) as (base, proc):
        wait_ready(base, proc, log, timeout=180)
        assert httpx.post(f"{base}/events", json=_event(item, "before"), headers=PUSH,
                          timeout=30).status_code == 202
        recalled = _top(base)[0]
        r = httpx.post(f"{base}/admin/rules", headers=AUTH, timeout=30, json={"rules": [
            {"name": "recall", "kind": "hide", "item_id": recalled}]})
        assert r.status_code == 201, r.text
        _pg_ctl(folder, "-m", "fast", "-w", "stop")

        # every worker's store routes say 503 + Retry-After; /recommend answers
        assert set(_answer_of_each(base, "POST", "/events", 2, json=_event(item, "during"),
                                   headers=PUSH).values()) == {503}
        assert set(_answer_of_each(base, "POST", "/recommend", 2,
                                   json={"query": "red dress", "k": 3}).values()) == {200}

        # a worker killed during the outage: its replacement starts, and serves, without the store
        before = worker_pids(base, 2)
        victim = sorted(before)[0]
        os.kill(int(victim), signal.SIGKILL)
        def replacement() -> set[str]:
            assert proc.poll() is None, f"the service stopped:\n{log.read_text()[-3000:]}"
            return worker_pids(base, 2, tries=20) - before

        replaced = _until(replacement, tries=150, pause=0.5)  # at most about 2 minutes
        assert replaced, f"no new worker answered with the store down:\n{log.read_text()[-3000:]}"
        new_pid = next(iter(replaced))
        seen = _answer_of_each(base, "POST", "/recommend", 2, json={"query": "red dress", "k": 3})
        assert seen.get(new_pid) == 200 and victim not in seen, seen

        # a replica (re)started during the outage serves too
        with running(["--workers", "1"], env, replica_log) as (replica, rproc):
            wait_ready(replica, rproc, replica_log, timeout=180)
            # with the rules another process last read: the recalled item stays hidden
            assert recalled not in _top(replica)
            r = httpx.post(f"{replica}/events", json=_event(item, "replica"), headers=PUSH, timeout=30)
            assert r.status_code == 503 and int(r.headers["retry-after"]) > 0, r.text
            time.sleep(20 * WATCH_S)  # polls of the store while it is down

            _pg_ctl(folder, "-l", f"{folder}/server.log", "-w", "-t", "60", "-o",
                    f"-c listen_addresses=127.0.0.1 -p {port} -k {folder}", "start")
            # every process migrates (the replica's schema check) and follows the store again
            assert _until(lambda: httpx.post(f"{replica}/events", json=_event(item, "r-after"),
                                             headers=PUSH, timeout=30).status_code == 202, 150)
            assert _until(lambda: set(_answer_of_each(
                base, "POST", "/events", 2, json=_event(item, "after"), headers=PUSH).values()) == {202}, 150)
            processes = {str(rproc.pid), *worker_pids(base, 2)}

            def resumed() -> bool:
                pids = {str(x.get("pid")) for x in _lines(log) + _lines(replica_log)
                        if RESUMED in x.get("msg", "")}
                return processes <= pids

            assert _until(resumed, 100), (processes, log.read_text()[-3000:])
        lines = _lines(log) + _lines(replica_log)

    # each process: one warning when the outage started, one info line when it ended, no
    # traceback and nothing at error level (the killed worker excepted) in between
    paused = Counter(str(x.get("pid")) for x in lines if PAUSED in x.get("msg", ""))
    back = Counter(str(x.get("pid")) for x in lines if RESUMED in x.get("msg", ""))
    for pid in processes:
        assert paused[pid] == 1 and back[pid] == 1, (pid, paused, back)
    assert all(x["level"] == "warning" for x in lines if PAUSED in x.get("msg", ""))
    assert all(x["level"] == "info" for x in lines if RESUMED in x.get("msg", ""))
    assert not [x for x in lines if "exc" in x or "Traceback" in x.get("msg", "")], \
        [x for x in lines if "exc" in x or "Traceback" in x.get("msg", "")][:2]
    errors = [x for x in lines if x["level"] == "error" and x.get("msg") != "a worker died; restarting it"]
    assert not errors, errors[:3]
    # stored: the event before, and the ones acknowledged after; none of those answered 503
    db = Database(url)
    try:
        with db.engine.connect() as conn:
            stored = {row[0] for row in conn.execute(select(events.c.event_id))}
    finally:
        db.dispose()
    assert stored == {"before", "r-after", "after"}, stored
