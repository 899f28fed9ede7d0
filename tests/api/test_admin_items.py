"""Catalogue changes without retraining (PUT /admin/items, DELETE /admin/items/{item_id}): an
upserted item is found by its own word at once, a removed one is never returned again, both
after a restart too, with the weights unchanged; bad rows are 422s naming the row and field."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.artifact import current_version, load_version, read_manifest
from recsys.io.text import MAX_CELL_CHARS

from api_support import ADMIN_TOKEN, make_artifacts, make_settings, wait_ready

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
EVENTS_TOKEN = "items-events-token"
NEW = {"item_id": "NEW-ZORB-1", "title": "Nordwell Zorbleflux Velvet Dress", "color": "red",
       "style": ["casual", "boho"], "quality": "premium", "category": "dress", "material": "velvet",
       "brand": "Nordwell", "price": 99.0, "rating": "4.5"}


@pytest.fixture
def shop(tmp_path, data_dir, v1, rec):
    """(settings, a client of an app serving a copy of v1 with admin and events on)."""
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, events_token=EVENTS_TOKEN)
    with TestClient(create_app(settings, recommender=rec)) as client:
        yield settings, client


def _ids(client: TestClient, query: str, k: int = 100) -> list[str]:
    r = client.post("/recommend", json={"query": query, "k": k, "explain": False})
    assert r.status_code == 200, r.text
    return [it["item_id"] for it in r.json()["items"]]


def _weights(version_dir) -> dict[str, torch.Tensor]:
    """The weights that do not depend on the catalogue (attribute rows are per attribute)."""
    state = load_version(version_dir).model.state_dict()
    return {k: v for k, v in state.items() if not k.startswith(("attr_", "prior."))}


def test_an_upserted_item_is_found_by_its_own_word_at_once(shop, v1, rec):
    settings, client = shop
    assert "zorbleflux" not in " ".join(rec.catalog.titles).lower()
    old_id = rec.catalog.item_ids[5]
    replaced = {"item_id": old_id, "title": "Quintessa Wool Scarf", "color": "green",
                "category": "scarf", "material": "wool"}
    r = client.put("/admin/items", json={"items": [NEW, replaced]}, headers=AUTH)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["added"] == ["NEW-ZORB-1"] and out["replaced"] == [old_id] and out["removed"] == []
    assert out["previous"] == v1.name and out["items"] == rec.catalog.n_items + 1
    revision = out["serving"]
    r = client.post("/recommend", json={"query": "zorbleflux", "k": 3})
    body = r.json()
    assert body["model_version"] == revision
    assert body["items"][0]["item_id"] == "NEW-ZORB-1" and body["items"][0]["explanation"]["matched"]
    assert "zorbleflux" not in body["unmatched_tokens"]
    assert _ids(client, "quintessa", k=3)[0] == old_id
    item = client.get(f"/items/{old_id}").json()
    assert item["title"] == "Quintessa Wool Scarf" and "green" in item["attributes"]["color"]
    new_item = client.get("/items/NEW-ZORB-1").json()
    assert set(new_item["attributes"]["style"]) == {"casual", "boho"}  # a list is several values
    # the same weights, over the changed catalogue: a new version revising the served one
    folder = settings.artifacts_dir / revision
    manifest = read_manifest(folder)
    assert manifest["catalogue"]["revision_of"] == v1.name and manifest["catalogue"]["revision"] == 1
    assert manifest["catalogue"]["added"] == ["NEW-ZORB-1"]
    old, new = _weights(v1), _weights(folder)
    assert old.keys() == new.keys() and all(torch.equal(old[k], new[k]) for k in old)
    assert current_version(settings.artifacts_dir) == revision


def test_a_deleted_item_never_comes_back_even_after_a_restart(shop, v1):
    settings, client = shop
    client.put("/admin/items", json={"items": [NEW]}, headers=AUTH).raise_for_status()
    gone = next(i for i in _ids(client, "red casual dress") if i != NEW["item_id"])
    r = client.delete(f"/admin/items/{gone}", headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["removed"] == [gone] and r.json()["previous"] != v1.name  # revises the revision

    def never_returned(c: TestClient) -> None:
        for query in ("red casual dress", "red dress", "dress"):
            assert gone not in _ids(c, query)
        assert c.post("/explain", json={"query": "red dress", "item_id": gone}).status_code == 404
        assert c.get(f"/items/{gone}").status_code == 404
        other = _ids(c, "red dress")[0]
        r = c.post("/compare", json={"query": "red dress", "item_a": gone, "item_b": other})
        assert r.status_code == 404 and gone in r.text
        r = c.post("/recommend", json={"query": "red dress", "candidates": [gone, other]})
        assert [it["item_id"] for it in r.json().get("items", [])] in ([other], [])
        event = {"type": "click", "query": "red dress", "item_id": gone}
        r = c.post("/events", json={"events": [event]},
                   headers={"Authorization": f"Bearer {EVENTS_TOKEN}"})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "events", 0, "item_id"]
        assert _ids(c, "zorbleflux", k=1) == ["NEW-ZORB-1"]  # the upsert before it stays

    never_returned(client)
    assert client.delete(f"/admin/items/{gone}", headers=AUTH).status_code == 404
    # a restart: a new process on the same artifacts and store loads the newest revision
    with TestClient(create_app(settings)) as restarted:
        wait_ready(restarted, timeout=60)
        never_returned(restarted)


@pytest.mark.parametrize(("rows", "loc", "words"), [
    ([NEW, {"item_id": "B-1", "title": ""}], ["body", "items", 1, "title"], "non-empty title"),
    ([NEW, {"title": "No id"}], ["body", "items", 1, "item_id"], "non-empty item_id"),
    ([NEW, {**NEW, "title": "Again"}], ["body", "items", 1, "item_id"], "already appears on row 0"),
    ([NEW, {"item_id": "B-2", "title": "Deep", "color": {"a": 1}}], ["body", "items", 1, "color"], ""),
    ([NEW, {"item_id": "B-3", "title": "x" * (MAX_CELL_CHARS + 1)}], ["body", "items", 1, "title"], "characters"),
    ([NEW, {"item_id": "B-4", "title": "Two", "color": "red", " color ": "blue"}], ["body", "items", 1, "color"],
     "are one column"),
    # text no revision's CSV file can write: a 500 before
    ([NEW, {"item_id": "B-5", "title": "Dress \ud800"}], ["body", "items", 1, "title"], "lone surrogate"),
    ([NEW, {"item_id": "B-6", "title": "Dress", "style": ["boho", "a\u0000b"]}], ["body", "items", 1, "style"],
     "NUL"),
    # a column name the revision's CSV header cannot hold: every later change failed (409)
    ([NEW, {"item_id": "B-7", "title": "Dress", "col\u0000": "x"}], ["body", "items", 1], "column name"),
    ([NEW, {"item_id": "B-8", "title": "Dress", "co\rl": "x"}], ["body", "items", 1], "column name"),
    ([NEW, {"item_id": "B-9", "title": "Dress", "\udc00": "x"}], ["body", "items", 1], "column name"),
])
def test_bad_rows_are_422_naming_the_row_and_field_and_change_nothing(shop, v1, rows, loc, words):
    settings, client = shop
    body = json.dumps({"items": rows})  # ASCII: a lone surrogate escaped as JSON allows
    r = client.put("/admin/items", content=body, headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"][0]
    assert detail["loc"][:len(loc)] == loc and words in detail["msg"], detail
    assert current_version(settings.artifacts_dir) == v1.name
    assert "NEW-ZORB-1" not in _ids(client, "zorbleflux")
    assert sorted(p.name for p in settings.artifacts_dir.iterdir() if p.name.startswith("v")) == [v1.name]


def test_a_column_named_with_spaces_around_it_is_the_catalogue_s_own(shop, v1):
    """A file's header is read stripped, so " color " in an item is the catalogue's `color`,
    not a second column of that name, which would make every later revision's items file
    unreadable (a header naming a column twice)."""
    _, client = shop
    spaced = {" item_id": "SP-1", "title ": "Plumbago Velvet Dress", " color ": "red"}
    r = client.put("/admin/items", json={"items": [spaced]}, headers=AUTH)
    assert r.status_code == 200, r.text
    assert "red" in client.get("/items/SP-1").json()["attributes"]["color"]
    assert client.delete("/admin/items/SP-1", headers=AUTH).status_code == 200  # the next change reads it


def test_an_id_with_spaces_around_it_is_removed_as_every_route_reads_it(shop, v1):
    _, client = shop
    r = client.put("/admin/items", json={"items": [{"item_id": " PAD-1 ", "title": "Padded Velvet Dress"}]},
                   headers=AUTH)
    assert r.status_code == 200 and r.json()["added"] == ["PAD-1"], r.text
    assert client.get("/items/%20PAD-1%20").status_code == 200  # read stripped, as the file's cells
    r = client.delete("/admin/items/%20PAD-1%20", headers=AUTH)
    assert r.status_code == 200 and r.json()["removed"] == ["PAD-1"], r.text
    assert client.get("/items/PAD-1").status_code == 404


def test_catalogue_changes_are_admin_only_and_bounded(shop, tmp_path, data_dir, v1, rec):
    _, client = shop
    assert client.put("/admin/items", json={"items": [NEW]}).status_code == 401
    assert client.delete("/admin/items/x", headers={"Authorization": "Bearer nope"}).status_code == 403
    assert client.delete("/admin/items/NO-SUCH-ITEM", headers=AUTH).status_code == 404
    r = client.put("/admin/items", json={"items": []}, headers=AUTH)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "items"]
    small = make_settings(make_artifacts(tmp_path / "small", v1), data_dir, admin_token=ADMIN_TOKEN,
                          max_item_batch=1)
    with TestClient(create_app(small, recommender=rec)) as c:
        r = c.put("/admin/items", json={"items": [NEW, {**NEW, "item_id": "N2"}]}, headers=AUTH)
        assert r.status_code == 422 and "RECSYS_MAX_ITEM_BATCH" in r.json()["detail"][0]["msg"]


def test_a_whole_number_beyond_a_float_is_a_cell_like_any(shop, v1):
    """JSON's integers have no size: 10^26 raised a TypeError (a 500) in the finite check."""
    _, client = shop
    r = client.put("/admin/items", json={"items": [{**NEW, "price": 10**26}]}, headers=AUTH)
    assert r.status_code == 200, r.text
    assert _ids(client, "zorbleflux", k=1) == ["NEW-ZORB-1"]
    # the revisions' items files are beside the versions, and are none of them
    listed = client.get("/admin/versions", headers=AUTH).json()["versions"]
    assert [(v["version"], v["ok"]) for v in listed] == [(v1.name, True), (r.json()["serving"], True)]


def test_a_change_made_on_a_version_no_longer_current_applies_nothing(shop, v1, monkeypatch):
    """Another process moved `current` while this change was made (it could, once PostgreSQL's
    restart had taken the store's lock with its connection): activated, the revision would undo
    that change, which was acknowledged. A 503 (sent again, it is made on the newest version),
    and `current` stays."""
    import api.routes.admin_items as admin_items
    from recsys.artifact import set_current

    settings, client = shop
    first = client.put("/admin/items", json={"items": [NEW]}, headers=AUTH).json()["serving"]
    saved = admin_items.save_revision

    def meanwhile(*args, **kwargs):
        revised = saved(*args, **kwargs)
        set_current(settings.artifacts_dir, v1.name)  # another process's rollback, say
        return revised

    monkeypatch.setattr(admin_items, "save_revision", meanwhile)
    r = client.put("/admin/items", json={"items": [{**NEW, "item_id": "NEW-2"}]}, headers=AUTH)
    assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
    assert f"it was made on {first}, {v1.name} is served now" in r.json()["detail"]
    assert current_version(settings.artifacts_dir) == v1.name



def test_a_change_whose_store_lock_died_applies_nothing_and_the_next_one_does(tmp_path, data_dir, v1, rec,
                                                                              store_url, monkeypatch):
    """PostgreSQL releases the catalogue lock when its connection dies (a restart): the change
    in progress then ran beside another process's, and one acknowledged change was lost. Now
    the change sees it before anything moves: a 503, `current` stays, and sent again it applies."""
    if store_url.startswith("sqlite"):
        pytest.skip("a SQLite store's lock is a file: held until it is closed")
    import psycopg

    import api.routes.admin_items as admin_items
    from store.db import CATALOGUE_LOCK

    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, database_url=store_url)
    saved = admin_items.save_revision

    def lock_lost(*args, **kwargs):
        revised = saved(*args, **kwargs)
        with psycopg.connect(store_url, autocommit=True) as conn:  # as a restart would
            killed = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                                  "AND objid = %s AND granted", (CATALOGUE_LOCK.key,)).fetchall()
        assert killed == [(True,)]
        return revised

    with TestClient(create_app(settings, recommender=rec)) as client:
        monkeypatch.setattr(admin_items, "save_revision", lock_lost)
        r = client.put("/admin/items", json={"items": [NEW]}, headers=AUTH)
        assert r.status_code == 503, r.text
        assert current_version(artifacts) == v1.name and "NEW-ZORB-1" not in _ids(client, "zorbleflux")
        monkeypatch.setattr(admin_items, "save_revision", saved)
        r = client.put("/admin/items", json={"items": [NEW]}, headers=AUTH)
        assert r.status_code == 200, r.text
        assert current_version(artifacts) == r.json()["serving"] and _ids(client, "zorbleflux", k=1) == ["NEW-ZORB-1"]


@contextlib.contextmanager
def _forced_retrain(tmp_path, data_dir, v1, rec, monkeypatch, meanwhile) -> Iterator[tuple[dict, TestClient, Path]]:
    """A forced retrain through the API whose `meanwhile(client, job)` runs as the job's trained
    version is about to be compared and served: (the finished job, the client, the artifacts)."""
    from api.jobs import JobManager

    from test_admin import wait_job

    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, train_epochs=1)
    publish = JobManager._publish
    with TestClient(create_app(settings, recommender=rec)) as client:
        def publish_after(self, job, *args, **kwargs):
            meanwhile(client, job)
            return publish(self, job, *args, **kwargs)

        monkeypatch.setattr(JobManager, "_publish", publish_after)
        r = client.post("/admin/train", json={"items": "shop/items.csv", "interactions": "shop/interactions.csv",
                                              "force": True}, headers=AUTH)
        assert r.status_code == 202, r.text
        yield wait_job(client, r.json()["id"]), client, artifacts


def test_a_forced_retrain_keeps_catalogue_changes_made_while_it_trained(tmp_path, data_dir, v1, rec, monkeypatch):
    """`force` serves a retrain whatever it scores, but never over catalogue changes acknowledged
    while it trained: the job's version is kept, the changes stand, and the decision says why."""
    gone = rec.catalog.item_ids[3]

    def changed_meanwhile(client, job):  # the shop's edits land before the decision
        assert client.put("/admin/items", json={"items": [NEW]}, headers=AUTH).status_code == 200
        assert client.delete(f"/admin/items/{gone}", headers=AUTH).status_code == 200

    with _forced_retrain(tmp_path, data_dir, v1, rec, monkeypatch, changed_meanwhile) as (job, client, artifacts):
        assert job["status"] == "succeeded" and not job["activated"], job
        assert job["decision"].startswith("kept, not served: the served catalogue changed while it trained")
        assert client.get(f"/items/{NEW['item_id']}").status_code == 200
        assert client.get(f"/items/{gone}").status_code == 404
        assert current_version(artifacts) != job["version"]


def test_a_job_whose_version_is_being_served_cannot_be_cancelled(tmp_path, data_dir, v1, rec, monkeypatch):
    """A DELETE of a job in its own process while its trained version was compared and served
    answered 200 "cancelled", and the version was served all the same (the job then read
    "cancelled" and "activated"). Once its row holds the version it is a 409, as on another
    process."""
    answers = []

    def cancelled_meanwhile(client, job):  # the DELETE lands as it publishes
        answers.append(client.delete(f"/admin/jobs/{job.id}", headers=AUTH))

    with _forced_retrain(tmp_path, data_dir, v1, rec, monkeypatch, cancelled_meanwhile) as (job, _, artifacts):
        assert answers[0].status_code == 409 and "already finished training" in answers[0].text, answers[0].text
        assert job["status"] == "succeeded" and job["activated"], job
        assert current_version(artifacts) == job["version"]


def test_a_decision_the_store_lost_is_recorded_once_it_is_back(tmp_path, data_dir, v1, rec, monkeypatch):
    """The store lost as a job recorded its decision, after its version was served: the job read
    "failed: internal error" with "activated": true and /admin/versions had no decision. It is
    tried again while the store is unavailable; the job succeeded."""
    import api.jobs
    from store.db import StoreError

    record, lost = api.jobs.record_decision, []

    def lost_once(*args, **kwargs):
        if not lost:
            lost.append(args)
            raise StoreError("the store is unavailable (a failover)")
        return record(*args, **kwargs)

    monkeypatch.setattr(api.jobs, "record_decision", lost_once)
    nothing_meanwhile = lambda client, job: None  # noqa: E731
    with _forced_retrain(tmp_path, data_dir, v1, rec, monkeypatch, nothing_meanwhile) as (job, client, artifacts):
        assert lost and job["status"] == "succeeded" and job["activated"], job
        versions = {v["version"]: v for v in client.get("/admin/versions", headers=AUTH).json()["versions"]}
        assert versions[job["version"]]["decision"]["reason"] == "activated: forced", versions[job["version"]]
        assert current_version(artifacts) == job["version"]


def test_an_items_description_is_kept_by_its_version_and_its_revisions(tmp_path, data_dir):
    """GET /items/{id} answers the description the catalogue gave (its `description` column),
    null for an item without one; a saved version keeps it, and so does a catalogue revision."""
    import pandas as pd

    from training.config import TrainConfig
    from training.train import TrainInputs, train

    said = "Hand-dyed linen.\nMachine washable at 30 degrees."
    pd.DataFrame({"item_id": ["A", "B", "C"], "title": ["Linen dress", "Wool scarf", "Silk tie"],
                  "color": ["red", "green", "blue"], "description": [said, "", "A narrow tie."]}
                 ).to_csv(tmp_path / "items.csv", index=False)
    version = train(TrainInputs(tmp_path / "items.csv", None), tmp_path / "made", TrainConfig(epochs=1)).version_dir
    assert load_version(version).catalog.descriptions == [said, "", "A narrow tie."]
    artifacts = make_artifacts(tmp_path / "artifacts", version)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN)
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        assert client.get("/items/A").json()["description"] == said
        assert client.get("/items/B").json()["description"] is None
        r = client.put("/admin/items", json={"items": [{"item_id": "D", "title": "Cotton shirt",
                                                        "description": "Pressed and folded."}]}, headers=AUTH)
        assert r.status_code == 200, r.text
        assert client.get("/items/D").json()["description"] == "Pressed and folded."
        wait_ready(client)
        assert client.get("/items/A").json()["description"] == said
