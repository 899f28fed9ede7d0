"""Ids are one contract (issue 27, points 4 and 5): an item id `PUT /admin/items` takes is one
that /events, /explain and its URL take too, with the same length limit (recsys.io.ids); an id
that would break the catalogue (a NUL), or that no URL reaches ('.', '..'), is a 422 naming the
field, and the text the store keeps is refused alike on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.artifact import current_version
from recsys.io.ids import MAX_ID_CHARS

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
EVENTS_TOKEN = "ids-events-token"
PUSH = {"Authorization": f"Bearer {EVENTS_TOKEN}"}


def _item(item_id: str) -> dict:
    return {"item_id": item_id, "title": "Quorblin Linen Dress", "color": "red", "category": "dress"}


@pytest.fixture
def shop(tmp_path, data_dir, v1, rec, store_url):
    """(settings, a client of an app on a copy of v1, admin and events on, on `store_url`)."""
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN,
                             events_token=EVENTS_TOKEN, database_url=store_url)
    with TestClient(create_app(settings, recommender=rec)) as client:
        yield settings, client


@pytest.fixture
def sqlite_shop(tmp_path, data_dir, v1, rec):
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN,
                             events_token=EVENTS_TOKEN)
    with TestClient(create_app(settings, recommender=rec)) as client:
        yield settings, client


def _refused(r, loc: list, words: str) -> None:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"][0]
    assert detail["loc"] == loc and words in detail["msg"], detail


def test_one_bad_id_does_not_block_every_later_change(sqlite_shop, rec):
    """A NUL in an id was accepted and written to the revision's items file, which no later
    change could read back: every PUT and DELETE after it was a 409."""
    settings, client = sqlite_shop
    before = current_version(settings.artifacts_dir)
    r = client.put("/admin/items", json={"items": [_item("SKU-1"), _item("BAD\x00ID")]}, headers=ADMIN)
    _refused(r, ["body", "items", 1, "item_id"], "control characters")
    assert "'\\x00' at position 3: remove it" in r.json()["detail"][0]["msg"]
    assert current_version(settings.artifacts_dir) == before  # nothing changed
    r = client.put("/admin/items", json={"items": [_item("SKU-1")]}, headers=ADMIN)
    assert r.status_code == 200, r.text
    r = client.delete(f"/admin/items/{rec.catalog.item_ids[0]}", headers=ADMIN)
    assert r.status_code == 200, r.text
    assert client.get("/items/SKU-1").status_code == 200


@pytest.mark.parametrize("item_id", [".", "..", "a/../b", "/lead"])
def test_an_id_no_url_reaches_is_refused(sqlite_shop, item_id):
    """'.' and '..' could be added, but clients and proxies resolve them out of
    /items/{item_id} and /admin/items/{item_id}: never fetched, never deleted."""
    _, client = sqlite_shop
    r = client.put("/admin/items", json={"items": [_item(item_id)]}, headers=ADMIN)
    _refused(r, ["body", "items", 0, "item_id"], "URLs (/items/{item_id}) cannot reach it")
    assert r.json()["message"].startswith("items.0.item_id: an item_id must not be '.' or '..'")


def test_an_id_that_ends_as_the_like_this_route_is_refused(sqlite_shop):
    """"BAG/similar" could be added and ranked, but /items/BAG/similar is BAG's like-this list:
    the item itself was never reachable (404 "unknown item_id 'BAG'")."""
    _, client = sqlite_shop
    r = client.put("/admin/items", json={"items": [_item("BAG/similar")]}, headers=ADMIN)
    _refused(r, ["body", "items", 0, "item_id"], "must not end in '/similar'")
    assert client.put("/admin/items", json={"items": [_item("BAG/similarity")]}, headers=ADMIN).status_code == 200
    assert client.get("/items/BAG/similarity").status_code == 200


def test_the_same_id_limit_everywhere(sqlite_shop):
    """An id of 300 characters was accepted by PUT but refused by /events and /explain: the
    limit is one number, recsys.io.ids.MAX_ID_CHARS, and an id at it works everywhere."""
    _, client = sqlite_shop
    longest, over = "L" * MAX_ID_CHARS, "L" * (MAX_ID_CHARS + 1)
    limit = f"at most {MAX_ID_CHARS} characters, got {MAX_ID_CHARS + 1}"
    r = client.put("/admin/items", json={"items": [_item(over)]}, headers=ADMIN)
    _refused(r, ["body", "items", 0, "item_id"], limit)

    assert client.put("/admin/items", json={"items": [_item(longest)]}, headers=ADMIN).status_code == 200
    assert client.get(f"/items/{longest}").status_code == 200
    r = client.post("/explain", json={"query": "quorblin dress", "item_id": longest})
    assert r.status_code == 200, r.text
    r = client.post("/recommend", json={"query": "quorblin", "exclude": [longest],
                                        "candidates": [longest]})
    assert r.status_code == 200 and r.json()["items"] == [], r.text
    event = {"type": "click", "query": "quorblin", "item_id": longest}
    assert client.post("/events", json={"events": [event]}, headers=PUSH).status_code == 202

    _refused(client.get(f"/items/{over}"), ["path", "item_id"], limit)
    _refused(client.delete(f"/admin/items/{over}", headers=ADMIN), ["path", "item_id"], limit)
    _refused(client.post("/explain", json={"query": "dress", "item_id": over}),
             ["body", "item_id"], limit)
    _refused(client.post("/compare", json={"query": "dress", "item_a": longest, "item_b": over}),
             ["body", "item_b"], limit)
    _refused(client.post("/recommend", json={"query": "dress", "exclude": ["A", over]}),
             ["body", "exclude", 1], limit)
    _refused(client.post("/recommend", json={"query": "dress", "candidates": [over]}),
             ["body", "candidates", 0], limit)
    _refused(client.post("/events", json={"events": [{**event, "item_id": over}]}, headers=PUSH),
             ["body", "events", 0, "item_id"], limit)
    r = client.post("/recommend", json={"query": "dress", "filters": {"color": [over]}})
    _refused(r, ["body", "filters", "color"], f"at most {MAX_ID_CHARS} characters")


@pytest.mark.parametrize("field", ["query", "user_id", "event_id", "request_id"])
def test_a_nul_in_stored_text_is_422_on_both_stores(shop, rec, field):
    """PostgreSQL cannot store a NUL (it was a 500 there, and stored by SQLite): one check,
    before the store, the same answer on both."""
    _, client = shop
    event = {"type": "click", "query": "red dress", "item_id": rec.catalog.item_ids[0],
             "user_id": "u1", "event_id": "e1", "request_id": "r1"}
    event[field] = f"{event[field]}\x00x"
    r = client.post("/events", json={"events": [event]}, headers=PUSH)
    _refused(r, ["body", "events", 0, field], "NUL character")
    assert "remove it" in r.json()["detail"][0]["msg"]
    stats = client.get("/admin/events/stats", headers=ADMIN).json()
    assert stats["total"] == 0
