"""Shopper events in (`POST /events`, its own bearer token) and what the store holds (admin)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from recsys.io.contract import EVENT_LABELS
from recsys.recommender import Recommender
from store.events import Event, add_events, event_counts

from ..config import Settings
from ..deps import AdminDep, DatabaseDep, EventsDep, ExperimentsDep, ModelDep, SettingsDep
from ..limits import check_query, field_error, in_utc
from ..schemas import EventsOut, EventsRequest, EventStatsOut, error_responses

router = APIRouter()  # tags per route: an operation under two tags is listed twice in /docs


@router.post("/events", status_code=202, response_model=EventsOut, dependencies=[EventsDep],
             tags=["events"], responses=error_responses(401, 403, 404, 413, 422, 500, 503))
async def post_events(req: EventsRequest, rec: ModelDep, settings: SettingsDep,
                      db: DatabaseDep, experiments: ExperimentsDep) -> JSONResponse:
    """Store a batch of events, all or none: 202 only once it is committed. A bad event is a
    422 naming its index and field, and nothing of the batch is stored."""
    batch = checked_events(req, rec, settings)
    stored = await run_in_threadpool(add_events, db, batch)
    experiments.count_events(batch)
    return JSONResponse(status_code=202, content={"accepted": stored.accepted,
                                                  "duplicates": stored.duplicates})


def checked_events(req: EventsRequest, rec: Recommender, s: Settings) -> list[Event]:
    if len(req.events) > s.max_event_batch:
        raise field_error(("events",), f"at most {s.max_event_batch} events in one batch "
                                       f"(RECSYS_MAX_EVENT_BATCH), got {len(req.events)}: split it")
    now = datetime.now(UTC)
    latest = now + timedelta(seconds=s.event_clock_skew_s)
    out = []
    for i, e in enumerate(req.events):
        check_query(e.query, s, loc=("events", i, "query"))
        item_id = rec.catalog.canonical(e.item_id)  # a variant's SKU is stored as its product
        if not rec.catalog.has(item_id):  # a valid id (api.schemas.ItemId), but whose?
            raise field_error(("events", i, "item_id"),
                              f"unknown item {e.item_id[:80]!r}: not in the catalogue of the served "
                              f"model {rec.version}")
        at = in_utc(e.timestamp, ("events", i, "timestamp")) or now
        if at > latest:
            raise field_error(("events", i, "timestamp"),
                              f"{at.isoformat()} is in the future (now {now.isoformat(timespec='seconds')}, "
                              f"{s.event_clock_skew_s:g} s of clock skew allowed)")
        out.append(Event(type=e.type, query=e.query, item_id=item_id, timestamp=at,
                         event_id=e.event_id, request_id=e.request_id, position=e.position,
                         user_id=e.user_id))
    return out


@router.get("/admin/events/stats", response_model=EventStatsOut, dependencies=[AdminDep],
            tags=["admin"], responses=error_responses(401, 403, 404, 500, 503))
def event_stats(db: DatabaseDep) -> dict:
    """How many events the store holds, by type."""
    counts = event_counts(db)
    by_type = {t: counts.get(t, 0) for t in EVENT_LABELS} | counts
    return {"total": sum(by_type.values()), "by_type": by_type}
