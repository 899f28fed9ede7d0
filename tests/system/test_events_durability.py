"""Nothing acknowledged is lost: a real `recsys serve` is SIGKILLed while clients post event
batches; after a restart every event answered 202 is in the store, and every batch is there
whole or not at all (SQLite and PostgreSQL)."""

from __future__ import annotations

import signal
import threading
import time

import httpx

from store.db import Database
from store.events import read_events

from api_support import make_artifacts
from test_server import running, wait_ready

TOKEN = "durability-events-token"
ADMIN = "durability-admin-token"
BATCH = 50
CLIENTS = 2
KILL_AFTER_BATCHES = 30  # acknowledged ones, over all clients
MAX_SECONDS = 30


def post_until_refused(base: str, client_no: int, items: list[str], acked: list[str],
                       counts: dict, stop: threading.Event) -> None:
    """Post batches until the server is gone; record the event ids of each 202."""
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10) as c:
        n = 0
        while not stop.is_set():
            ids = [f"c{client_no}-b{n}-e{i}" for i in range(BATCH)]
            events = [{"event_id": eid, "type": "click" if i % 5 == 0 else "impression",
                       "request_id": f"c{client_no}-b{n}", "query": "red dress",
                       "item_id": items[i % len(items)], "position": i % 10 + 1}
                      for i, eid in enumerate(ids)]
            try:
                r = c.post("/events", json={"events": events})
            except httpx.TransportError:
                counts["cut"] += 1  # in flight when the server died, or refused after
                return
            assert r.status_code == 202, r.text
            assert r.json()["accepted"] == BATCH
            acked.extend(ids)
            counts["acked"] += 1
            n += 1


def test_every_event_answered_202_survives_a_sigkill(tmp_path, v1, data_dir, rec, store_url):
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    env = {"RECSYS_EVENTS_TOKEN": TOKEN, "RECSYS_ADMIN_TOKEN": ADMIN, "RECSYS_DATABASE_URL": store_url,
           "RECSYS_DATA_DIR": str(data_dir), "RECSYS_WATCH_INTERVAL_S": "0"}
    items = rec.catalog.item_ids[:40]
    acked: list[str] = []
    counts = {"acked": 0, "cut": 0}
    stop = threading.Event()
    log = tmp_path / "server.log"
    with running(["--model", str(artifacts)], env, log) as (base, proc):
        wait_ready(base, proc, log, timeout=120)
        clients = [threading.Thread(target=post_until_refused,
                                    args=(base, n, items, acked, counts, stop), daemon=True)
                   for n in range(CLIENTS)]
        start = time.monotonic()
        for t in clients:
            t.start()
        while counts["acked"] < KILL_AFTER_BATCHES and time.monotonic() - start < MAX_SECONDS:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)  # mid-ingestion: the clients are still posting
        proc.wait(10)
        elapsed = time.monotonic() - start
        stop.set()
        for t in clients:
            t.join(15)
    assert counts["acked"] >= KILL_AFTER_BATCHES, (counts, log.read_text()[-2000:])
    rate = len(acked) / elapsed
    print(f"\n{store_url.split(':')[0]}: {len(acked)} events acknowledged in {elapsed:.2f} s "
          f"({rate:.0f}/s, batches of {BATCH}, {CLIENTS} clients); {counts['cut']} requests cut")

    log2 = tmp_path / "server2.log"
    with running(["--model", str(artifacts)], env, log2) as (base, proc):
        wait_ready(base, proc, log2, timeout=120)
        stats = httpx.get(f"{base}/admin/events/stats", headers={"Authorization": f"Bearer {ADMIN}"},
                          timeout=10).json()
    db = Database(store_url)
    stored = read_events(db)
    db.dispose()
    ids = set(stored["event_id"])
    missing = set(acked) - ids
    assert not missing, f"{len(missing)} acknowledged events lost, e.g. {sorted(missing)[:3]}"
    assert stats["total"] == len(stored) >= len(acked)
    per_batch = stored.groupby("request_id").size()
    assert set(per_batch) == {BATCH}, per_batch[per_batch != BATCH]  # whole batches only
