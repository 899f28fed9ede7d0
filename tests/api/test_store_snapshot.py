"""A process started while the store is unavailable serves the rules and synonyms another process
last read (`api.store_snapshot`), and follows the store once it answers. Before, it served
none of them until then: a hide rule for a recalled item was not applied on a replica restarted
during a PostgreSQL outage (a reliability probe, 7 December 2026).

The store is made unavailable as an operator's mistake would make it: the SQLite file moved
away and a folder in its place ("unable to open database file", `store.db.unavailable`)."""

from __future__ import annotations

import logging
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient

from api.store_snapshot import StoreSnapshot
from cli.app import create_app
from store.db import Database
from store.rules import delete_rule

from api_support import ADMIN_TOKEN, ids, make_artifacts, make_settings

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}", "X-Actor": "merch@shop"}
N_ITEMS = 48  # tests/planted.py


def _client(artifacts: Path, data: Path, url: str, model, **kw) -> TestClient:
    settings = make_settings(artifacts, data, admin_token=ADMIN_TOKEN, database_url=url, **kw)
    return TestClient(create_app(settings, recommender=model))


def _ask(c: TestClient, query: str) -> dict:
    r = c.post("/recommend", json={"query": query, "k": N_ITEMS})
    assert r.status_code == 200, r.text
    return r.json()


def _move(files: list[Path], to: Path) -> None:
    for f in files:
        if f.exists():
            shutil.move(str(f), str(to / f.name))


def test_a_process_started_with_the_store_down_serves_the_rules_and_synonyms_last_read(
        tmp_path, planted_artifacts, planted_model, planted_paths, caplog):
    artifacts = make_artifacts(tmp_path / "artifacts", planted_artifacts[1].version_dir)
    data = planted_paths["items"].parent
    store = tmp_path / "store.db"
    url = f"sqlite:///{store}"
    now = datetime.now(UTC).replace(tzinfo=None)
    try:
        with _client(artifacts, data, url, planted_model) as c:
            recalled = ids(_ask(c, "scarlet gown"))[0]
            r = c.post("/admin/rules", headers=AUTH, json={"rules": [
                {"name": "recall", "kind": "hide", "item_id": recalled,
                 "start": (now - timedelta(days=1)).isoformat(), "end": (now + timedelta(days=1)).isoformat()}]})
            assert r.status_code == 201, r.text
            r = c.post("/admin/synonyms", headers=AUTH, json={"synonyms": [{"words": ["navy"], "to": ["blue"]}]})
            assert r.status_code == 201, r.text
            assert recalled not in ids(_ask(c, "scarlet gown"))

        # the store unavailable: its files moved away, a folder where the database was
        aside = tmp_path / "aside"
        aside.mkdir()
        files = [store, Path(f"{store}-wal"), Path(f"{store}-shm")]
        _move(files, aside)
        store.mkdir()
        planted_model.use_synonyms(None)  # the module's model, as a new process would load it
        caplog.set_level(logging.WARNING, logger="recsys.api")
        with _client(artifacts, data, url, planted_model, watch_interval_s=0.1) as c:
            assert c.get("/admin/rules", headers=AUTH).status_code == 503  # the store is down
            assert recalled not in ids(_ask(c, "scarlet gown"))
            navy = _ask(c, "navy shoes")
            assert navy["unmatched_tokens"] == []
            assert all(it["attributes"]["color"] == ["blue"] for it in navy["items"][:4])
            said = [r.getMessage() for r in caplog.records if "kept when the store was last read" in r.getMessage()]
            assert said and "(1 rules, 1 synonyms)" in said[0], said

            # meanwhile the recall ends (another process, on the store's file); the store returns
            # and this process follows it
            moved = Database(f"sqlite:///{aside / store.name}")
            delete_rule(moved, "recall", "merch@shop")
            moved.dispose()
            store.rmdir()
            _move([aside / f.name for f in files], tmp_path)
            deadline = time.monotonic() + 20
            while recalled not in ids(_ask(c, "scarlet gown")) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert recalled in ids(_ask(c, "scarlet gown"))
            assert c.get("/admin/rules", headers=AUTH).json()["rules"] == []
    finally:
        planted_model.use_synonyms(None)  # the model is shared by the module's tests


def test_a_store_with_nothing_kept_serves_none_and_says_so(
        tmp_path, planted_artifacts, planted_model, planted_paths, caplog):
    artifacts = make_artifacts(tmp_path / "artifacts", planted_artifacts[1].version_dir)
    # rules kept for another store are not this one's
    StoreSnapshot(artifacts, "sqlite:///elsewhere.db").save(
        "rules", 3, [{"name": "x", "kind": "hide", "attribute": "color:red", "item_id": None, "amount": None,
                      "position": None, "match": "any", "query": "", "starts_at": None, "ends_at": None}])
    (tmp_path / "store.db").mkdir()  # unavailable
    caplog.set_level(logging.WARNING, logger="recsys.api")
    with _client(artifacts, planted_paths["items"].parent, f"sqlite:///{tmp_path / 'store.db'}",
                 planted_model) as c:
        assert len(_ask(c, "scarlet gown")["items"]) == N_ITEMS  # no red item hidden
    assert any("serving none until the store answers" in r.getMessage() for r in caplog.records)


def test_only_a_newer_revision_of_the_same_store_replaces_what_is_kept(tmp_path):
    one, other = StoreSnapshot(tmp_path, "sqlite:///a.db"), StoreSnapshot(tmp_path, "postgresql://h/b")
    one.save("rules", 5, [{"n": 5}])
    one.save("rules", 4, [{"n": 4}])  # a process that read the store before another did
    assert one.load("rules") == (5, [{"n": 5}])
    one.save("rules", 6, [])  # the last rule deleted
    assert one.load("rules") == (6, [])
    assert other.load("rules") is None
    other.save("rules", 2, [{"n": 2}])  # the folder now serves another store
    assert other.load("rules") == (2, [{"n": 2}]) and one.load("rules") is None
    assert one.load("synonyms") is None


def test_a_file_that_does_not_read_is_not_used_and_is_replaced(tmp_path, caplog):
    kept = StoreSnapshot(tmp_path, "sqlite:///a.db")
    kept.path("rules").write_text("{not json")
    assert kept.load("rules") is None
    assert "do not read" in caplog.text
    kept.save("rules", 1, [{"n": 1}])
    assert kept.load("rules") == (1, [{"n": 1}])
    # a row a program of another version wrote: none of the rows is used
    assert kept.restore("rules", lambda row: row["missing"]) is None


def test_a_folder_that_cannot_be_written_costs_a_warning_once(tmp_path, caplog):
    (tmp_path / "file").write_text("")
    kept = StoreSnapshot(tmp_path / "file" / "artifacts", "sqlite:///a.db")
    kept.save("rules", 1, [{"n": 1}])
    kept.save("rules", 2, [{"n": 2}])
    assert caplog.text.count("could not be kept") == 1
    assert kept.load("rules") is None


def test_nothing_is_written_with_nothing_to_keep_or_by_a_read_only_process(tmp_path):
    StoreSnapshot(tmp_path, "sqlite:///a.db").save("rules", 0, [])  # a store without rules
    StoreSnapshot(tmp_path, "sqlite:///a.db", writes=False).save("rules", 3, [{"n": 3}])  # pinned
    assert list(tmp_path.iterdir()) == []
    kept = StoreSnapshot(tmp_path, "sqlite:///a.db")
    kept.save("rules", 3, [{"n": 3}])
    kept.save("rules", 4, [])  # the last rule deleted: kept as none
    assert kept.load("rules") == (4, [])


def test_rules_the_store_cannot_give_after_its_migration_are_the_kept_ones(
        tmp_path, planted_artifacts, planted_model, planted_paths, monkeypatch, caplog):
    """The store answers the migration at start, then not the read of the rules: they are the
    kept ones all the same (the synonyms, read, are the store's)."""
    import api.rules
    from store.db import Database as Db
    from store.db import StoreError

    artifacts = make_artifacts(tmp_path / "artifacts", planted_artifacts[1].version_dir)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    recalled = ids(_ask_model(planted_model, "scarlet gown"))[0]
    StoreSnapshot(artifacts, Db(url).public_url).save("rules", 7, [
        {"name": "recall", "kind": "hide", "attribute": None, "item_id": recalled, "amount": None,
         "position": None, "match": "any", "query": "", "starts_at": None, "ends_at": None}])

    def down(_db):
        raise StoreError("the store's rules lock is still held")

    monkeypatch.setattr(api.rules, "rules_revision", down)
    monkeypatch.setattr(api.rules, "list_rules", down)
    caplog.set_level(logging.WARNING, logger="recsys.api")
    with _client(artifacts, planted_paths["items"].parent, url, planted_model) as c:
        assert recalled not in ids(_ask(c, "scarlet gown"))
    said = [r.getMessage() for r in caplog.records if "kept when the store was last read" in r.getMessage()]
    assert said and "serving the rules kept when the store was last read (1 rules)" in said[0], said


def _ask_model(model, query: str) -> dict:
    return {"items": [{"item_id": it.item_id} for it in model.recommend(query, k=N_ITEMS, explain=False).items]}
