"""Shopper events: a batch is stored whole or not at all, a retried `event_id` once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import pandas as pd
from sqlalchemy import func, insert, select
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
    """Store `batch` in one transaction; returns after the commit (durable, see `Database`)."""
    received = utc_naive(datetime.now(UTC))
    seen: set[str] = set()
    rows = []
    for e in batch:
        if e.event_id is not None:
            if e.event_id in seen:
                continue
            seen.add(e.event_id)
        rows.append({**asdict(e), "timestamp": utc_naive(e.timestamp), "received_at": received})
    with db.engine.begin() as conn:
        known: set[str] = set()
        ids = sorted(seen)
        for start in range(0, len(ids), 500):  # bound the IN list
            chunk = ids[start:start + 500]
            known |= set(conn.scalars(select(events.c.event_id).where(events.c.event_id.in_(chunk))))
        new = [r for r in rows if r["event_id"] is None or r["event_id"] not in known]
        if new:
            # a concurrent batch may store the same event_id between the check and here
            dialect = postgresql if not db.is_sqlite else sqlite
            conn.execute(dialect.insert(events).on_conflict_do_nothing(index_elements=["event_id"])
                         if seen else insert(events), new)
    return Stored(accepted=len(batch), duplicates=len(batch) - len(new))


def event_counts(db: Database) -> dict[str, int]:
    """Stored events by type."""
    with db.engine.connect() as conn:
        rows = conn.execute(select(events.c.type, func.count()).group_by(events.c.type)).all()
    return {str(t): int(n) for t, n in rows}


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
