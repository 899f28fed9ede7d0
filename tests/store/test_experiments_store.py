"""Experiments in the store, on SQLite and on a real PostgreSQL server: one running at a time,
unique names, ending, and the events counted per user within a window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import inspect

from store.events import Event, add_events
from store.experiments import (
    Arm,
    ExperimentConflict,
    counts_by_user,
    end_experiment,
    get_experiment,
    list_experiments,
    running_experiment,
    start_experiment,
)

ARMS = [Arm("A", "v1", 0.7), Arm("B", "v2", 0.3)]
T0 = datetime(2026, 11, 30, 12, 0)


def test_the_migration_makes_the_table(db):
    assert "experiments" in inspect(db.engine).get_table_names()


def test_start_read_and_end(db):
    assert running_experiment(db) is None
    exp = start_experiment(db, "e1", ARMS)
    assert exp.running and exp.arms == tuple(ARMS) and exp.winner is None
    assert running_experiment(db) == exp == get_experiment(db, "e1")
    ended = end_experiment(db, "e1", "B")
    assert ended is not None and not ended.running and ended.winner == "B"
    assert ended.ended_at is not None and ended.ended_at >= ended.started_at
    assert running_experiment(db) is None
    assert end_experiment(db, "e1", "A") is None  # ended already: nothing changes
    assert get_experiment(db, "e1").winner == "B"


def test_one_runs_at_a_time_and_names_are_unique(db):
    start_experiment(db, "e1", ARMS)
    with pytest.raises(ExperimentConflict, match=r"'e1' is running.*end it first"):
        start_experiment(db, "e2", ARMS)
    with pytest.raises(ExperimentConflict, match="named 'e1' exists already"):
        start_experiment(db, "e1", ARMS)
    end_experiment(db, "e1", "A")
    start_experiment(db, "e2", ARMS)  # free again
    with pytest.raises(ExperimentConflict, match="named 'e1' exists already \\(ended\\)"):
        start_experiment(db, "e1", ARMS)
    assert [e.name for e in list_experiments(db)] == ["e2", "e1"]


def test_the_store_itself_refuses_a_second_running_experiment(db):
    """The unique running slot holds even when a check is skipped (two processes racing)."""
    from sqlalchemy import insert
    from sqlalchemy.exc import IntegrityError

    from store.tables import experiments

    start_experiment(db, "e1", ARMS)
    with pytest.raises(IntegrityError), db.engine.begin() as conn:
        conn.execute(insert(experiments).values(name="e2", arms=[], status="running",
                                                running_slot=1, started_at=T0))


def _event(user: str | None, type: str, minutes: int, request: str) -> Event:
    return Event(type=type, query="q", item_id="I1", timestamp=(T0 + timedelta(minutes=minutes))
                 .replace(tzinfo=UTC), request_id=request, user_id=user)


def test_events_are_counted_per_user_and_type_within_the_window(db):
    add_events(db, [
        _event("u1", "impression", 0, "r1"), _event("u1", "impression", 1, "r1"),
        _event("u1", "click", 1, "r1"), _event("u1", "impression", 2, "r2"),
        _event("u2", "impression", 3, "r3"),
        _event(None, "impression", 3, "r4"),  # no user: in no arm
        _event("u2", "click", -5, "r0"),  # before the window
        _event("u2", "click", 20, "r9"),  # after it
    ])
    got = {(c.user_id, c.type): (c.events, c.answers)
           for c in counts_by_user(db, T0, T0 + timedelta(minutes=10))}
    assert got == {("u1", "impression"): (3, 2), ("u1", "click"): (1, 1),
                   ("u2", "impression"): (1, 1)}
    open_ended = {(c.user_id, c.type) for c in counts_by_user(db, T0, None)}
    assert ("u2", "click") in open_ended
