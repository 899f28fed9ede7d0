"""The store on SQLite and on a real PostgreSQL server: migrations, atomic and idempotent event
batches, counts, reading back, decisions, activations and jobs."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from store.db import CATALOGUE_LOCK, UPGRADE_LOCK, Database, StoreError, unavailable
from store.events import Event, add_events, event_counts, read_events
from store.records import (
    beat_jobs,
    cancel_job_row,
    claim_job_version,
    fail_silent_jobs,
    fail_unfinished_jobs,
    latest_activation,
    load_jobs,
    read_decisions,
    record_activation,
    record_decision,
    save_job,
)

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def click(n: int, event_id: str | None = None, type: str = "click") -> Event:
    return Event(type=type, query=f"q{n % 3}", item_id=f"I{n}", timestamp=T0 + timedelta(minutes=n),
                 event_id=event_id, request_id=f"r{n}", position=n + 1, user_id="u1")


def test_upgrade_creates_the_tables_and_is_idempotent(db):
    db.upgrade()  # a second start
    tables = set(inspect(db.engine).get_table_names())
    assert {"events", "version_decisions", "activations", "jobs", "alembic_version"} <= tables


def test_a_batch_is_stored_and_read_back_oldest_first(db):
    batch = [click(n, f"e{n}", type=("impression" if n % 2 else "click")) for n in range(5)]
    assert add_events(db, batch[::-1]).accepted == 5
    assert event_counts(db) == {"click": 3, "impression": 2}
    back = read_events(db)
    assert list(back["event_id"]) == [f"e{n}" for n in range(5)]
    assert list(back["position"]) == [1, 2, 3, 4, 5]
    assert back["timestamp"].iloc[0] == T0  # UTC, as sent
    assert list(read_events(db, since=T0 + timedelta(minutes=3))["event_id"]) == ["e3", "e4"]


def test_a_retried_event_id_is_stored_once(db):
    first = add_events(db, [click(1, "a"), click(2, "b"), click(3)])
    again = add_events(db, [click(1, "a"), click(2, "b"), click(3), click(4, "c"), click(4, "c")])
    assert (first.accepted, first.duplicates) == (3, 0)
    assert (again.accepted, again.duplicates) == (5, 3)  # a, b, and c's second copy
    ids = list(read_events(db)["event_id"])
    assert sorted(i for i in ids if i) == ["a", "b", "c"] and ids.count(None) == 2


def test_a_batch_that_fails_stores_nothing(db):
    add_events(db, [click(0, "kept")])
    broken = Event(type="click", query="q", item_id=None, timestamp=T0)  # type: ignore[arg-type]
    with pytest.raises(IntegrityError, match=r"(?i)null"):
        add_events(db, [click(1, "x"), click(2, "y"), broken])
    assert list(read_events(db)["event_id"]) == ["kept"]


def test_decisions_activations_and_jobs(db):
    assert latest_activation(db) is None
    first = record_activation(db, "v1", "first")
    second = record_activation(db, "v2", "job j1: activated")
    assert second > first and latest_activation(db) == (second, "v2")
    record_decision(db, "v2", "j1", False, "kept, not served: another catalogue")
    record_decision(db, "v2", "j1", True, "activated: forced")  # decided again: the last word
    got = read_decisions(db)["v2"]
    assert (got["activated"], got["reason"], got["job_id"]) == (True, "activated: forced", "j1")
    row = {"id": "j1", "owner": "host:1", "status": "running", "created_at": "2026-12-01T10:00:00",
           "started_at": None, "finished_at": None, "step": 3, "total": 9, "loss": 0.5,
           "version": None, "activated": False, "decision": None, "metrics": {"a": 1.5}, "error": None}
    save_job(db, row)
    save_job(db, {**row, "step": 4})
    save_job(db, {**row, "id": "j2", "owner": "host:2", "created_at": "2026-12-01T11:00:00"})
    assert [(j["id"], j["step"], j["metrics"]) for j in load_jobs(db)] == [
        ("j2", 3, {"a": 1.5}), ("j1", 4, {"a": 1.5})]
    assert fail_unfinished_jobs(db, "host:1", "the server process running it stopped") == 1
    (j1,) = load_jobs(db, "j1")
    assert j1["status"] == "failed" and j1["error"] == "the server process running it stopped"
    assert load_jobs(db, "j2")[0]["status"] == "running"


def test_a_job_is_either_cancelled_or_its_version_claimed_never_both(db):
    """A DELETE on another process cancels through the row; the owner, its training done,
    claims the version first. Whichever comes second is refused: before, the owner's outcome
    overwrote a cancel that had been answered 200 (seen in a clean-clone run)."""
    row = {"id": "j1", "owner": "host:1", "status": "running", "created_at": "2026-12-01T10:00:00",
           "started_at": None, "finished_at": None, "step": 3, "total": 9, "loss": 0.5,
           "version": None, "activated": False, "decision": None, "metrics": None, "error": None}
    save_job(db, row)
    save_job(db, {**row, "id": "j2"})
    assert claim_job_version(db, "j1", "v7")
    assert not cancel_job_row(db, "j1", "cancelled", "2026-12-01T10:05:00")
    assert cancel_job_row(db, "j2", "cancelled", "2026-12-01T10:05:00")
    assert not claim_job_version(db, "j2", "v8")
    (j1,), (j2,) = load_jobs(db, "j1"), load_jobs(db, "j2")
    assert (j1["status"], j1["version"]) == ("running", "v7")
    assert (j2["status"], j2["version"], j2["finished_at"]) == ("cancelled", None, "2026-12-01T10:05:00")


def test_a_job_silent_past_its_lease_is_failed_on_any_host(db):
    """A job whose process is gone on another host (a replica replaced) was reported running for
    ever: only a start on the same host failed it. Its owner says its unfinished jobs live
    (`beat_jobs`); a row silent since before the cutoff (its heartbeat, else its start, else its
    creation) is failed by whoever reads it, and nothing finished or alive is touched."""
    row = {"id": "gone", "owner": "hostA:1", "status": "running", "created_at": "2026-12-01T10:00:00+00:00",
           "started_at": "2026-12-01T10:00:05+00:00", "finished_at": None, "step": 3, "total": 9, "loss": None,
           "version": None, "activated": False, "decision": None, "metrics": None, "error": None}
    save_job(db, row)
    save_job(db, {**row, "id": "alive", "owner": "hostB:2"})
    save_job(db, {**row, "id": "queued", "owner": "hostB:2", "status": "queued", "started_at": None})
    save_job(db, {**row, "id": "done", "status": "succeeded", "finished_at": "2026-12-01T10:01:00+00:00"})
    assert beat_jobs(db, "hostB:2", "2026-12-01T10:10:00+00:00") == 2
    error = "the server process running it stopped: no sign of it for 120 s"
    assert fail_silent_jobs(db, "2026-12-01T10:08:00+00:00", error, "2026-12-01T10:10:00+00:00") == 1
    status = {j["id"]: (j["status"], j["error"]) for j in load_jobs(db)}
    assert status == {"gone": ("failed", error), "alive": ("running", None), "queued": ("queued", None),
                      "done": ("succeeded", None)}
    assert fail_silent_jobs(db, "2026-12-01T10:08:00+00:00", error, "2026-12-01T10:10:00+00:00") == 0


def test_reading_the_jobs_does_not_wait_for_another_writer(tmp_path):
    """Every read of the jobs fails silent ones first; with none to fail it must not write: a
    write waits for SQLite's write lock, and GET /admin/jobs waited 30 s behind another writer,
    then answered 503, while every other read answered."""
    import sqlite3

    db = Database(f"sqlite:///{tmp_path / 'store.db'}")
    db.upgrade()
    writer = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process's change, under way
    try:
        assert fail_silent_jobs(db, "2026-12-01T10:08:00+00:00", "gone", "2026-12-01T10:10:00+00:00") == 0
        assert load_jobs(db) == []
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        db.dispose()


def test_a_bad_url_and_an_unreachable_server_say_which_store():
    with pytest.raises(StoreError, match=r"not a database URL.*postgresql://"):
        Database("no such thing")
    db = Database("postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(StoreError, match=r"store at postgresql\+psycopg://nobody@127.0.0.1:1/none"):
        db.upgrade()


def _upgrade_when_released(url: str, go, errors) -> None:
    go.wait(30)
    try:
        Database(url).upgrade()
    except StoreError as exc:
        errors.put(str(exc))


def test_processes_that_start_on_one_new_sqlite_store_migrate_it_once(tmp_path):
    """Replicas started together on a fresh file: one creates the tables, the others find them
    at head (without serialising, a second one's CREATE TABLE failed: "table events already
    exists")."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    for attempt in range(3):
        url = f"sqlite:///{tmp_path / f'store-{attempt}.db'}"
        go, errors = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_upgrade_when_released, args=(url, go, errors)) for _ in range(4)]
        for p in procs:
            p.start()
        go.set()
        for p in procs:
            p.join(120)
        assert all(p.exitcode == 0 for p in procs)
        failures = []
        while not errors.empty():
            failures.append(errors.get())
        assert failures == []
        assert {"events", "alembic_version"} <= set(inspect(Database(url).engine).get_table_names())


def test_the_catalogue_lock_is_held_against_every_other_user_of_the_store(store_url):
    """`Database.exclusive`: while one user of the store (another process: its own Database,
    its own connection or file handle) holds the lock, a second one waits; past its wait it
    gets an error the API answers 503 (`unavailable`), and once the lock is free it gets it."""
    first, second = Database(store_url), Database(store_url)
    first.upgrade()
    try:
        with first.exclusive(CATALOGUE_LOCK, wait_s=5):
            started = time.monotonic()
            with pytest.raises(Exception) as caught, second.exclusive(CATALOGUE_LOCK, wait_s=0.3):
                pass
            assert time.monotonic() - started >= 0.3  # it waited its wait_s
            assert unavailable(caught.value), repr(caught.value)
            with second.exclusive(UPGRADE_LOCK, wait_s=0.3):  # another lock is not this one
                pass
        with second.exclusive(CATALOGUE_LOCK, wait_s=0.3):  # released at the end of the block
            pass
    finally:
        first.dispose()
        second.dispose()


def test_a_lock_lost_with_its_connection_is_told_and_its_release_fails_nothing(store_url):
    """PostgreSQL releases an advisory lock when its connection dies (a restart of the server):
    the holder's block ran on beside another process's, and a catalogue change acknowledged by
    the other was lost. `HeldLock.check` now says so (an error the API answers 503), and the
    release at the end of a block whose work was done does not fail the block."""
    first, second = Database(store_url), Database(store_url)
    first.upgrade()
    try:
        with first.exclusive(CATALOGUE_LOCK, wait_s=5) as held:
            held.check()  # held
            if first.is_sqlite:
                return  # a lock file is held until it is closed
            pid = held.conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
            with second.engine.connect() as other:
                assert other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar_one()
            with pytest.raises(Exception) as caught:
                held.check()
            assert unavailable(caught.value), repr(caught.value)
            with second.exclusive(CATALOGUE_LOCK, wait_s=2):  # PostgreSQL released it
                pass
        # the block ended without an error though its lock's connection is gone
    finally:
        first.dispose()
        second.dispose()
