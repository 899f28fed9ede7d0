"""A process loading a version it must follow keeps serving the one it has (issue 27's
leftovers): no 503, no failed request while a worker of `recsys serve --workers 2` and a
`--workers 1` replica load a new version, each swapping only once the new one is loaded; 503 is
for a process with no model at all. Nothing is loaded ahead (RECSYS_STANDBY_VERSIONS=0), so
following an activation is a load in every process, not a swap (tests/system/test_workers.py and
test_load_balancer.py cover the swap); a catalogue revision is a version nobody loaded ahead
anyway. Checked: passes on main too (the property held; this keeps it)."""

from __future__ import annotations

import time

import httpx

from tests.live_server import Load, switch_of

from api_support import ADMIN_TOKEN, make_artifacts
from test_server import running, wait_ready

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
QUERIES = ["red casual cotton dress", "navy formal jacket", "premium leather boots"]


def _switched(base: str, version: str, want: int) -> bool:
    """Every one of `want` processes behind `base` answers `version` (new connections)."""
    seen: dict[str, str] = {}
    for _ in range(60):
        r = httpx.post(f"{base}/recommend", json={"query": "red dress", "k": 1}, timeout=30)
        seen[r.headers["x-worker-pid"]] = r.json()["model_version"]
        if len(seen) >= want:
            break
    return len(seen) >= want and set(seen.values()) == {version}


def _wait_all(bases: dict[str, int], version: str) -> None:
    for _ in range(300):  # bounded: at most about a minute and a half
        if all(_switched(b, version, n) for b, n in bases.items()):
            return
        time.sleep(0.3)
    raise AssertionError(f"not every process serves {version}")


def test_processes_loading_a_new_version_keep_answering_with_the_old(tmp_path, v1, v2, data_dir):
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    env = {"RECSYS_DATA_DIR": str(data_dir), "RECSYS_ADMIN_TOKEN": ADMIN_TOKEN,
           "RECSYS_ARTIFACTS_DIR": str(artifacts), "RECSYS_STANDBY_VERSIONS": "0",
           "RECSYS_SPARE_WORKERS": "0", "RECSYS_WATCH_INTERVAL_S": "0.2",
           "RECSYS_DATABASE_URL": f"sqlite:///{tmp_path / 'shared-store.db'}"}
    logs = [tmp_path / "workers.log", tmp_path / "replica.log"]
    with running(["--workers", "2"], env, logs[0]) as (workers, wproc), \
            running(["--workers", "1"], env, logs[1]) as (replica, rproc):
        wait_ready(workers, wproc, logs[0], timeout=180)
        wait_ready(replica, rproc, logs[1], timeout=180)
        body = {"k": 5, "explain": True}
        loads = [Load(workers, QUERIES, body, threads=2, max_requests=20000, max_seconds=240,
                      fresh_connections=True).start(),
                 Load(replica, QUERIES, body, threads=1, max_requests=20000, max_seconds=240).start()]
        try:
            time.sleep(0.5)
            r = httpx.post(f"{replica}/admin/versions/{v2.name}/activate", params={"force": "true"},
                           headers=AUTH, timeout=120)
            assert r.status_code == 200, r.text
            activated = time.monotonic()
            _wait_all({workers: 2, replica: 1}, v2.name)
            all_on_v2 = time.monotonic()  # and the revision is asked now
            r = httpx.put(f"{workers}/admin/items", headers=AUTH, timeout=120,
                          json={"items": [{"item_id": "NEW-1", "title": "red linen dress"}]})
            assert r.status_code == 200, r.text
            revised, revised_at = r.json()["serving"], time.monotonic()
            _wait_all({workers: 2, replica: 1}, revised)
        finally:
            answers = [a for load in loads for a in load.stop()]
    assert len(answers) > 50, len(answers)
    failed = [(a.status, a.error) for a in answers if a.status != 200]
    assert not failed, (len(failed), failed[:3])  # a 503 above all
    first = switch_of([a for a in answers if a.started < all_on_v2], v1.name, v2.name, activated)
    second = switch_of([a for a in answers if a.started >= all_on_v2], v2.name, revised, revised_at)
    for s in (first, second):
        assert not s.mixed and not s.back, (s.mixed[:3], s.back[:3])
