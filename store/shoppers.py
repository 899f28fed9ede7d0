"""A shopper's events: read as their history (`api.profiles`), deleted when they ask to be
forgotten (`DELETE /admin/users/{user_id}`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, delete, func, insert, select

from .db import Database
from .events import utc_naive
from .tables import events, forgotten_shoppers

# what a profile is built from: what the shopper chose, and what they were shown (the baseline)
HISTORY_TYPES = ("impression", "click", "cart", "purchase")


@dataclass(frozen=True)
class ShopperEvent:
    item_id: str
    type: str
    timestamp: datetime  # naive UTC, as stored
    query: str
    request_id: str | None
    position: int | None


def shopper_events(db: Database, user_id: str, limit: int) -> list[ShopperEvent]:
    """The `limit` newest impressions, clicks, carts and purchases of `user_id`, newest first."""
    query = (select(events.c.item_id, events.c.type, events.c.timestamp, events.c.query, events.c.request_id,
                    events.c.position)
             .where(events.c.user_id == user_id, events.c.type.in_(HISTORY_TYPES))
             .order_by(events.c.timestamp.desc(), events.c.id.desc()).limit(limit))
    with db.engine.connect() as conn:
        return [ShopperEvent(str(i), str(t), ts, str(q), r, p) for i, t, ts, q, r, p in conn.execute(query).all()]


def forget_shopper(db: Database, user_id: str) -> int:
    """Delete every event of `user_id` and record that a shopper was forgotten, in one
    transaction; returns how many events were deleted."""
    def work(conn: Connection) -> int:
        deleted = conn.execute(delete(events).where(events.c.user_id == user_id)).rowcount
        conn.execute(insert(forgotten_shoppers).values(forgotten_at=utc_naive(datetime.now(UTC))))
        return int(deleted)
    return db.transaction(work)


def last_forgotten(db: Database) -> int:
    """The id of the newest forgetting (0 before any): what serving processes poll."""
    with db.engine.connect() as conn:
        return int(conn.execute(select(func.max(forgotten_shoppers.c.id))).scalar() or 0)
