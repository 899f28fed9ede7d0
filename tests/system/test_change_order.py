"""Activations, retrains and catalogue changes through two processes sharing one store and one
artifacts folder are applied one at a time (issue 27: "a concurrent PUT /admin/items cannot undo
an activation, or the reverse"): two clients change the catalogue back to back, one through each
of two apps (as two workers or replicas are), while a forced retrain finishes (and is kept when
the catalogue changed while it trained) and two activations are made. Afterwards the store's
activations, in the order they were recorded, are one history: every catalogue revision revises
the version activated just before it, the last one is what `current` names, and every
acknowledged change has its revision in it.

Before activations and retrains took the catalogue lock, an activation landing while the other
process revised the catalogue was undone by that revision (made of the version before), and
the history had a revision of a version that was no longer the active one.

Two apps in one test process, not two `recsys serve` processes: the lock is the store's (a lock
file beside a SQLite store, which a second open file in this process contends for as another
process would; PostgreSQL's advisory lock, held by a connection), and the race is the same
(requests run in threads); a start of two real workers costs a minute of a loaded machine.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select

from cli.app import create_app
from recsys.artifact import current_version
from store.db import Database
from store.tables import activations

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
REVISION = re.compile(r"^catalogue revision of (\S+): ")
MAX_CHANGES = 12  # per client; each saves a revision (about 1-3 s here)


@contextmanager
def two_apps(artifacts: Path, data_dir: Path, store_url: str, rec) -> Iterator[list[TestClient]]:
    with ExitStack() as stack:
        clients = []
        for _ in range(2):
            settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, train_epochs=1,
                                     database_url=store_url)
            clients.append(stack.enter_context(TestClient(create_app(settings, recommender=rec))))
        yield clients


def _history(store_url: str) -> list[tuple[str, str]]:
    """(version, reason) of every activation, oldest first."""
    db = Database(store_url)
    try:
        with db.engine.connect() as conn:
            rows = conn.execute(select(activations.c.version, activations.c.reason)
                                .order_by(activations.c.id)).all()
    finally:
        db.dispose()
    return [(str(v), str(r)) for v, r in rows]


def test_activations_retrains_and_changes_are_one_history(tmp_path, v1, v2, data_dir, rec,
                                                         store_url):
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    acknowledged: list[str] = []  # the versions PUT /admin/items answered with
    refused: list[str] = []
    done = threading.Event()
    with two_apps(artifacts, data_dir, store_url, rec) as apps:
        def changes(c: int) -> None:
            for step in range(MAX_CHANGES):
                if done.is_set():
                    return
                item = {"item_id": f"ORDER-{c}-{step}", "title": f"Qorvex{c}x{step} Dress",
                        "color": "red", "category": "dress"}
                r = apps[c].put("/admin/items", json={"items": [item]}, headers=AUTH)
                (acknowledged if r.status_code == 200 else refused).append(
                    r.json()["serving"] if r.status_code == 200 else f"{r.status_code} {r.text}")

        threads = [threading.Thread(target=changes, args=(c,)) for c in range(2)]
        for t in threads:
            t.start()
        try:
            time.sleep(1.0)  # the clients' first changes are under way
            r = apps[1].post("/admin/train", json={"items": "shop/items.csv", "force": True,
                                                   "interactions": "shop/interactions.csv"},
                             headers=AUTH)
            assert r.status_code == 202, r.text
            job_id = r.json()["id"]
            for version in (v2.name, v1.name):
                time.sleep(1.5)
                r = apps[0].post(f"/admin/versions/{version}/activate", params={"force": "true"},
                                 headers=AUTH)
                assert r.status_code == 200, r.text
            deadline = time.monotonic() + 120
            while (job := apps[0].get(f"/admin/jobs/{job_id}", headers=AUTH).json())["status"] \
                    in ("queued", "running"):
                assert time.monotonic() < deadline, job
                time.sleep(0.2)
            assert job["status"] == "succeeded", job
            # forced, but served only if the catalogue it started on is still the served one: the
            # changes acknowledged while it trained stand (nearly always, here, they are made then)
            assert job["activated"] or job["decision"].startswith(
                "kept, not served: the served catalogue changed while it trained"), job
        finally:
            done.set()
            for t in threads:
                t.join(timeout=120)
    assert not refused, refused[:3]
    history = _history(store_url)
    kinds = [r.split(":")[0] for _, r in history]
    assert sum(k.startswith("job") for k in kinds) == int(job["activated"]) and \
        sum(k.startswith("POST") for k in kinds) == 2, kinds
    out_of_order = []
    before = v1.name  # what `current` named at the start
    for version, reason in history:
        m = REVISION.match(reason)
        if m and m.group(1) != before:
            out_of_order.append(f"{version} revises {m.group(1)}, but {before} was active: {reason}")
        before = version
    assert not out_of_order, "\n".join(out_of_order)
    assert current_version(artifacts) == history[-1][0]
    assert set(acknowledged) <= {v for v, _ in history}
