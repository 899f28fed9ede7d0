"""Forgetting a shopper reaches every worker (issue 32, point 3): `recsys serve --workers 2` on
SQLite and PostgreSQL, serving the planted clothes, profiles kept an hour (so only forgetting can
drop one). Both workers answer a navy linen shopper with their history; after DELETE
/admin/users/{user_id} through one, both answer unpersonalised within the watch interval's
polls, and a shopper who was not forgotten is still personalised."""

from __future__ import annotations

import time

import httpx
import pytest

from recsys.artifact import save_version
from recsys.catalog import Catalog
from tests.live_server import answers_by_worker
from tests.recsys.test_profile import BOUGHT, clothing, navy_linen
from tests.recsys.test_similar import NO_EVENTS
from training.fit import TrainConfig
from training.start import untrained_recommender

from api_support import ADMIN_TOKEN
from test_server import running, wait_ready

EVENTS_TOKEN = "workers-events-token"
FOLLOW_S = 5.0  # polls every 0.5 s; a busy worker's turn at the GIL on top
ROWS = clothing().set_index("item_id")


def ask_each_worker(base: str, user_id: str, want: int = 2) -> dict[str, dict]:
    """worker pid -> its answer's `history` to an empty query of `user_id` (new connections
    until `want` workers answered), checking that a personalised answer ranks navy linen first."""
    def send() -> httpx.Response:
        r = httpx.post(f"{base}/recommend", json={"query": "", "k": 3, "user_id": user_id}, timeout=30)
        assert r.status_code == 200, r.text
        body = r.json()
        if body["history"]["personalized"]:
            assert all(navy_linen(ROWS.loc[i["item_id"]]) for i in body["items"]), body["items"]
        return r

    return {pid: r.json()["history"] for pid, r in answers_by_worker(send, want).items()}


@pytest.fixture
def clothes_workers(tmp_path, store_url):
    rec = untrained_recommender(Catalog.build(clothing()), NO_EVENTS, TrainConfig(seed=0))
    save_version(rec, tmp_path / "artifacts", {})
    env = {"RECSYS_ADMIN_TOKEN": ADMIN_TOKEN, "RECSYS_EVENTS_TOKEN": EVENTS_TOKEN,
           "RECSYS_DATABASE_URL": store_url, "RECSYS_PROFILE_TTL_S": "3600", "RECSYS_SPARE_WORKERS": "0"}
    log = tmp_path / "server.log"
    with running(["--workers", "2", "--model", str(tmp_path / "artifacts")], env, log) as (base, proc):
        wait_ready(base, proc, log, timeout=180)
        yield base


def test_forgetting_a_shopper_reaches_every_worker(clothes_workers):
    base = clothes_workers
    events = [{"type": "purchase", "query": "summer", "item_id": i, "user_id": u}
              for u in ("ann", "cy") for i in BOUGHT]
    posted = httpx.post(f"{base}/events", json={"events": events}, timeout=30,
                        headers={"Authorization": f"Bearer {EVENTS_TOKEN}"})
    assert posted.status_code == 202, posted.text
    for history in ask_each_worker(base, "ann").values():  # each worker caches ann's profile
        assert history["words"] == ["navy", "linen"]
    forgot = httpx.delete(f"{base}/admin/users/ann", timeout=30,
                          headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert forgot.status_code == 200 and forgot.json()["deleted_events"] == 2
    deadline = time.monotonic() + FOLLOW_S
    while True:
        histories = ask_each_worker(base, "ann")
        if not any(h["personalized"] for h in histories.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not any(h["personalized"] for h in histories.values()), histories
    assert all(h["words"] == ["navy", "linen"] for h in ask_each_worker(base, "cy").values())
