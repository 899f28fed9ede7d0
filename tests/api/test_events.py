"""POST /events and /admin/events/stats, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.artifact import ITEMS_FILE

from api_support import ADMIN_TOKEN, EVENTS_APP_TOKEN, make_artifacts, make_settings

EVENTS_TOKEN = EVENTS_APP_TOKEN
PUSH = {"Authorization": f"Bearer {EVENTS_TOKEN}"}
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def stats(c: TestClient) -> dict:
    r = c.get("/admin/events/stats", headers=ADMIN)
    assert r.status_code == 200, r.text
    return r.json()


def batch_for(c: TestClient, rec, query: str = "red dress", n: int = 4) -> tuple[str, list[dict]]:
    """The answer's impressions (positions 1..n) and a click on its second item."""
    answer = c.post("/recommend", json={"query": query, "k": n, "explain": False}).json()
    rid = answer["request_id"]
    shown = [{"type": "impression", "request_id": rid, "query": query, "item_id": it["item_id"],
              "position": it["rank"], "user_id": "u1", "event_id": f"{rid}-i{it['rank']}"}
             for it in answer["items"]]
    clicked = {**shown[1], "type": "click", "event_id": f"{rid}-c2"}
    return rid, shown + [clicked]


def test_a_batch_is_stored_and_counted(app_client, rec):
    c = app_client
    assert stats(c) == {"total": 0, "by_type": {"impression": 0, "click": 0, "cart": 0, "purchase": 0}}
    _, events = batch_for(c, rec)
    r = c.post("/events", json={"events": events}, headers=PUSH)
    assert r.status_code == 202, r.text
    assert r.json() == {"accepted": 5, "duplicates": 0}
    assert stats(c) == {"total": 5, "by_type": {"impression": 4, "click": 1, "cart": 0, "purchase": 0}}
    r = c.post("/events", json={"events": events}, headers=PUSH)  # a retry: stored once
    assert r.status_code == 202 and r.json() == {"accepted": 5, "duplicates": 5}
    assert stats(c)["total"] == 5


@pytest.mark.parametrize("change, field, words", [
    ({"item_id": "no-such-item"}, "item_id", "unknown item 'no-such-item'"),
    ({"type": "like"}, "type", "unknown event type 'like'"),
    ({"timestamp": "2999-01-01T00:00:00Z"}, "timestamp", "in the future"),
    # year 0 once in UTC: an OverflowError in the store, a 500, before (issue 27)
    ({"timestamp": "0001-01-01T00:00:00+14:00"}, "timestamp", "outside the years 1-9999 once in UTC"),
    ({"timestamp": "9999-12-31T23:59:59-14:00"}, "timestamp", "outside the years 1-9999 once in UTC"),
    ({"position": 0}, "position", "greater than or equal to 1"),
    ({"query": ""}, "query", "at least 1 character"),
    ({"colour": "red"}, "colour", "Extra inputs"),
])
def test_one_bad_event_refuses_the_whole_batch_naming_its_index_and_field(app_client, rec, change,
                                                                           field, words):
    c = app_client
    _, events = batch_for(c, rec)
    events[3] = {**events[3], **change}
    r = c.post("/events", json={"events": events}, headers=PUSH)
    assert r.status_code == 422, r.text
    assert f"events.3.{field}" in r.json()["message"] and words in r.json()["message"], r.json()
    assert "Value error" not in r.json()["message"]  # pydantic's prefix, which says nothing
    assert stats(c)["total"] == 0


def test_a_batch_too_large_or_empty(app_client, rec):
    c = app_client
    _, events = batch_for(c, rec)
    r = c.post("/events", json={"events": events * 5}, headers=PUSH)  # 25 > 20
    assert r.status_code == 422
    assert "at most 20 events in one batch (RECSYS_MAX_EVENT_BATCH), got 25" in r.json()["message"]
    assert c.post("/events", json={"events": []}, headers=PUSH).status_code == 422
    assert stats(c)["total"] == 0


def test_timestamps_default_to_now_and_a_naive_one_is_utc(app_client, rec):
    from store.events import read_events

    c = app_client
    _, events = batch_for(c, rec)
    before = datetime.now(UTC)
    events[0]["timestamp"] = "2026-11-30T08:00:00"
    events[1]["timestamp"] = "2026-11-30T09:00:00+01:00"
    assert c.post("/events", json={"events": events}, headers=PUSH).status_code == 202
    stored = read_events(c.app.state.db).set_index("event_id")["timestamp"]
    assert stored[events[0]["event_id"]] == datetime(2026, 11, 30, 8, tzinfo=UTC)
    assert stored[events[1]["event_id"]] == datetime(2026, 11, 30, 8, tzinfo=UTC)
    assert stored[events[2]["event_id"]] >= before - timedelta(seconds=1)


def test_ingestion_has_its_own_token(tmp_path, v1, data_dir, rec, app_client):
    _, events = batch_for(app_client, rec)
    body = {"events": events}
    assert app_client.post("/events", json=body).status_code == 401
    assert app_client.post("/events", json=body, headers=ADMIN).status_code == 403  # not the admin one
    assert app_client.get("/admin/events/stats", headers=PUSH).status_code == 403
    artifacts = make_artifacts(tmp_path / "off", v1)
    with TestClient(create_app(make_settings(artifacts, data_dir), recommender=rec)) as off:
        r = off.post("/events", json=body, headers=PUSH)
        assert r.status_code == 404 and "RECSYS_EVENTS_TOKEN" in r.json()["detail"]


def test_admin_retrain_from_the_events_posted(tmp_path, v1, data_dir, rec):
    """`{"source": "events"}`: the events posted become the interactions, on the served catalogue,
    and the served version is replayed on the retrain's held-out queries."""
    import pandas as pd

    from test_admin import wait_job

    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, events_token=EVENTS_TOKEN,
                             train_epochs=1)
    shop = pd.read_csv(data_dir / "shop" / "interactions.csv", dtype=str).head(600)
    kinds = {"0": "impression", "1": "click", "2": "cart", "3": "purchase"}
    events = [{"type": kinds[str(int(float(r.label)))], "query": r.query, "item_id": r.item_id,
               "request_id": f"r{n // 8}", "position": n % 8 + 1, "event_id": f"e{n}"}
              for n, r in enumerate(shop.itertuples())]
    with TestClient(create_app(settings, recommender=rec)) as c:
        for start in range(0, len(events), 200):
            r = c.post("/events", json={"events": events[start:start + 200]}, headers=PUSH)
            assert r.status_code == 202, r.text
        bad = c.post("/admin/train", json={"source": "events", "interactions": "shop/interactions.csv"},
                     headers=ADMIN)
        assert bad.status_code == 422 and "reads no interactions file" in bad.json()["message"]
        for since in ("0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"):  # a failed job before
            bad = c.post("/admin/train", json={"source": "events", "since": since}, headers=ADMIN)
            assert bad.status_code == 422 and "outside the years 1-9999 once in UTC" in bad.json()["message"], bad.text
        r = c.post("/admin/train", json={"source": "events"}, headers=ADMIN)
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["id"])
        assert job["status"] == "succeeded", job
        manifest = c.app.state.versions.manifest_of(job["version"])
    assert manifest["data"]["source"]["n_events"] == len(events)
    # the served catalogue, read from the copy of its items file the served version keeps
    items, served_items = dict(manifest["data"]["items"]), rec.manifest["data"]["items"]
    assert Path(items.pop("file")).name == ITEMS_FILE
    assert items == {k: v for k, v in served_items.items() if k != "file"}
    assert job["metrics"]["replayed"]["version"] == v1.name
    word = "activated" if job["activated"] else "kept, not served"
    assert job["decision"].startswith(f"{word}: ndcg@10 ") and "held-out queries" in job["decision"]


@pytest.mark.parametrize("user_id, stored", [("", None), ("   ", None), (None, None), ("u1", "u1"), (" u1", " u1")])
def test_a_blank_user_id_is_no_user(user_id, stored):
    """"" was stored as a shopper that "forget this shopper" (DELETE /admin/users/{user_id})
    could not reach and that an experiment's report counted as a user of an arm."""
    from api.schemas import EventIn, RecommendRequest

    event = EventIn.model_validate({"type": "click", "query": "red dress", "item_id": "SKU-1", "user_id": user_id})
    assert event.user_id == stored
    # and the same shopper, or none, for /recommend: " " was put in an arm whose events counted nowhere
    assert RecommendRequest.model_validate({"query": "red dress", "user_id": user_id}).user_id == stored


def test_a_retrain_asked_of_one_process_trains_on_another_ones_change_just_made(tmp_path, v1, data_dir, rec):
    """Two processes of one shop (two apps on one folder and store, neither following the other
    on its own here): an item acknowledged by one, then at once a forced retrain asked of the
    other. It trained on the catalogue before the change and was kept ("the served catalogue
    changed while it trained"), 2 of 3 times in a probe of two workers; it trains on the newest."""
    import pandas as pd

    from api_support import wait_ready
    from test_admin import wait_job

    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, events_token=EVENTS_TOKEN,
                             train_epochs=1)
    shop = pd.read_csv(data_dir / "shop" / "interactions.csv", dtype=str).head(300)
    events = [{"type": "click", "query": r.query, "item_id": r.item_id, "event_id": f"e{n}"}
              for n, r in enumerate(shop.itertuples())]
    new = {"item_id": "NEW-ZORB-1", "title": "Nordwell Zorbleflux Velvet Dress", "color": "red",
           "category": "dress", "brand": "Nordwell", "price": 99.0}
    with TestClient(create_app(settings)) as a, TestClient(create_app(settings)) as b:
        wait_ready(a), wait_ready(b)
        assert a.post("/events", json={"events": events}, headers=PUSH).status_code == 202
        changed = a.put("/admin/items", json={"items": [new]}, headers=ADMIN)
        assert changed.status_code == 200, changed.text
        r = b.post("/admin/train", json={"source": "events", "force": True}, headers=ADMIN)
        assert r.status_code == 202, r.text
        job = wait_job(b, r.json()["id"])
        assert job["status"] == "succeeded" and job["activated"], job
        trained = b.app.state.versions.manifest_of(job["version"])
    assert trained["data"]["items"]["rows"] == rec.catalog.n_items + 1
