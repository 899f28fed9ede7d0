"""Shopper events: a batch is stored whole or not at all, a retried `event_id` once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import pandas as pd
from sqlalchemy import String, cast, func, select
from sqlalchemy.dialects import postgresql, sqlite

from .db import Database
from .tables import events

EVENT_COLUMNS = ("event_id", "type", "request_id", "query", "item_id", "position", "user_id",
                 "timestamp")


@dataclass(frozen=True)
class Event:
    type: str
    query: str
    item_id: str
    timestamp: datetime  # aware, any zone (stored as UTC)
    event_id: str | None = None
    request_id: str | None = None
    position: int | None = None  # 1-based
    user_id: str | None = None


@dataclass(frozen=True)
class Stored:
    accepted: int  # every event of the batch is in the store now
    duplicates: int  # of which were there already (a retried event_id)


def utc_naive(t: datetime) -> datetime:
    """The stored form of a time: UTC without a zone (a naive time is taken as UTC)."""
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


def add_events(db: Database, batch: Sequence[Event]) -> Stored:
    """Store `batch` in one transaction; returns after the commit (durable, see `Database`).

    `duplicates` is what the insert skipped, as the database counted it: an event_id stored
    before, by this batch's earlier copy, or by a concurrent batch that committed first."""
    received = utc_naive(datetime.now(UTC))
    rows = [{**asdict(e), "timestamp": utc_naive(e.timestamp), "received_at": received}
            for e in batch]
    # one order for every batch: two batches sharing event_ids take their unique-index locks in
    # the same order, so PostgreSQL makes one wait for the other instead of deadlocking them
    rows.sort(key=lambda r: (r["event_id"] is None, r["event_id"] or ""))
    rows = _first_copies(rows)
    if not rows:
        return Stored(accepted=len(batch), duplicates=len(batch))
    dialect = sqlite if db.is_sqlite else postgresql
    # a skipped row returns nothing: the ids returned are the rows this transaction inserted
    statement = (dialect.insert(events).on_conflict_do_nothing(index_elements=["event_id"])
                 .returning(events.c.id))
    inserted = db.transaction(lambda conn: len(conn.execute(statement, rows).all()))
    return Stored(accepted=len(batch), duplicates=len(batch) - inserted)


def _first_copies(rows: list[dict]) -> list[dict]:
    """`rows` (sorted by event_id) without the later copies of an event_id: the first copy wins,
    and the sort is stable."""
    return [r for i, r in enumerate(rows)
            if r["event_id"] is None or i == 0 or rows[i - 1]["event_id"] != r["event_id"]]


def event_counts(db: Database) -> dict[str, int]:
    """Stored events by type."""
    with db.engine.connect() as conn:
        rows = conn.execute(select(events.c.type, func.count()).group_by(events.c.type)).all()
    return {str(t): int(n) for t, n in rows}


def search_counts(db: Database, min_shoppers: int, limit: int = 50_000) -> dict[str, int]:
    """Logged searches (lower case) -> how many distinct shoppers made them, those made by at
    least `min_shoppers`, the `limit` most made. A shopper is the event's user_id, else its
    request (one answer's events are one search), else the event alone."""
    shopper = func.coalesce(events.c.user_id, events.c.request_id, events.c.event_id,
                            cast(events.c.id, String))
    text = func.lower(events.c.query)
    shoppers = func.count(func.distinct(shopper))
    query = (select(text, shoppers).group_by(text).having(shoppers >= min_shoppers)
             .order_by(shoppers.desc()).limit(limit))
    with db.engine.connect() as conn:
        return {str(q): int(n) for q, n in conn.execute(query).all()}


def read_events(db: Database, since: datetime | None = None) -> pd.DataFrame:
    """Events (oldest first) with `timestamp` at or after `since`, as `EVENT_COLUMNS`; times UTC."""
    query = select(*(events.c[c] for c in EVENT_COLUMNS)).order_by(events.c.timestamp, events.c.id)
    if since is not None:
        query = query.where(events.c.timestamp >= utc_naive(since))
    with db.engine.connect() as conn:
        frame = pd.DataFrame(conn.execute(query).all(), columns=list(EVENT_COLUMNS))
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    for c in ("event_id", "request_id", "user_id"):  # missing is None, not NaN
        frame[c] = frame[c].astype(object).where(frame[c].notna(), None)
    return frame
