"""A passing state is no conflict (issue 27's leftovers): a catalogue change that reaches a
process while it loads a version, and `current` names a newer one by then, is made on the newer
one (or, when it is still not served after a few tries, answered 503 with Retry-After), never
409 "current names V, which is not served yet": a 409 says that retrying will not help.

Reproduced for real: a `recsys serve --workers 1` replica starting up (its first load takes
seconds in a fresh process, while /health answers and /ready says 503), `current` moved to
another version meanwhile (as `recsys train` moves it, or another replica's change), and a
PUT /admin/items sent to the replica at that moment. It waits for the load in progress, which
is of the version before; before this fix it then answered 409."""

from __future__ import annotations

import json
import time

import httpx

from recsys.artifact import set_current

from api_support import ADMIN_TOKEN, make_artifacts
from test_server import running, wait_ready

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TRIES = 3  # replicas started, at most, until one had read `current` before it was moved


def _served(log) -> list[str]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            x = json.loads(line)
        except ValueError:
            continue
        if x.get("msg") == "serving model":
            out.append(x["model_version"])
    return out


def test_a_change_during_a_load_is_made_on_the_newest_version_not_a_409(tmp_path, v1, v2, data_dir):
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    env = {"RECSYS_DATA_DIR": str(data_dir), "RECSYS_ADMIN_TOKEN": ADMIN_TOKEN,
           "RECSYS_ARTIFACTS_DIR": str(artifacts), "RECSYS_STANDBY_VERSIONS": "0",
           "RECSYS_WATCH_INTERVAL_S": "30"}  # the change, not the watcher, follows the pointer
    for attempt in range(TRIES):
        set_current(artifacts, v1.name)
        log = tmp_path / f"replica-{attempt}.log"
        with running(["--workers", "1"], env, log) as (base, proc):
            for _ in range(600):  # up, still loading its first version
                try:
                    if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
            loading = httpx.get(f"{base}/ready", timeout=5).status_code == 503
            set_current(artifacts, v2.name)
            r = httpx.put(f"{base}/admin/items", headers=AUTH, timeout=120,
                          json={"items": [{"item_id": "NEW-1", "title": "red linen dress",
                                           "color": "red"}]})
            wait_ready(base, proc, log, timeout=60)
            served = _served(log)
            if not loading or served[:1] != [v1.name]:
                continue  # it had loaded, or had read v2, before `current` moved: not the case
            assert r.status_code in (200, 503), r.text
            if r.status_code == 503:  # still loading: a passing state, said so
                assert int(r.headers["retry-after"]) > 0, r.headers
                assert "still loading" in r.json()["detail"], r.json()
                return
            assert r.json()["previous"] == v2.name, r.json()  # the newest, not the one loaded
            assert httpx.get(f"{base}/items/NEW-1", timeout=5).status_code == 200
            return
    raise AssertionError(f"no replica was still loading v1 when current moved, in {TRIES} tries")
