"""Input limits that come from the settings: a request over one gets a 422 naming the field."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TypeVar

import anyio
import anyio.to_thread
from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError

from recsys.io.ids import MAX_ID_CHARS
from recsys.tokenize import words

from .config import Settings
from .schemas import CompareRequest, ExplainRequest, RecommendRequest


def field_error(loc: tuple, message: str, place: str = "body") -> RequestValidationError:
    """A 422 as FastAPI's own validation gives it; `place`: where the field is (the body, or
    "query" for a URL's query parameter)."""
    return RequestValidationError([{"loc": (place, *loc), "msg": message, "type": "value_error"}])


def check_recommend(req: RecommendRequest, s: Settings, place: str = "body") -> None:
    """The limits of a ranking's request; `place`: where its fields came from ("query" for
    `GET /items/{id}/similar`'s URL parameters)."""
    check_query(req.query, s)
    if req.k > s.max_k:
        raise field_error(("k",), f"k must be at most {s.max_k}", place)
    if req.offset > s.max_offset:
        raise field_error(("offset",), f"offset must be at most {s.max_offset}", place)
    if len(req.filters) > s.max_filter_keys:
        raise field_error(("filter" if place == "query" else "filters",), f"at most {s.max_filter_keys} filter keys",
                          place)
    for key, values in req.filters.items():
        _check_lengths((key,), ("filters", key))
        if isinstance(values, list):
            _check_list(values, ("filters", key), s)
            _check_lengths(values, ("filters", key))
    # the item ids of exclude and candidates are valid (api.schemas.ItemId): only their number
    _check_list(req.exclude, ("exclude",), s)
    if req.candidates is not None:
        _check_list(req.candidates, ("candidates",), s)


def check_explain(req: ExplainRequest, s: Settings) -> None:
    check_query(req.query, s)  # item_id: api.schemas.ItemId


def check_compare(req: CompareRequest, s: Settings) -> None:
    check_query(req.query, s)  # item_a, item_b: api.schemas.ItemId


def check_query(query: str, s: Settings, loc: tuple = ("query",), place: str = "body") -> None:
    if len(query) > s.max_query_chars:
        raise field_error(loc, f"query must be at most {s.max_query_chars} characters, "
                               f"got {len(query)}", place)
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:  # JSON may escape a lone surrogate; no answer can echo it
        raise field_error(loc, f"the answer cannot be written as JSON: the query holds a "
                               f"lone surrogate ({query[exc.start]!r})", place) from None
    found = words(query)
    if len(found) > s.max_query_words:
        raise field_error(loc, f"query must have at most {s.max_query_words} words, "
                               f"got {len(found)}", place)
    longest = max(map(len, found), default=0)
    if longest > s.max_word_chars:
        raise field_error(loc, f"a query word must be at most {s.max_word_chars} characters, "
                               f"got one of {longest}", place)


T = TypeVar("T")


async def within_budget(fn: Callable[..., T], *args, s: Settings,
                        limiter: anyio.CapacityLimiter | None = None) -> T:
    """`fn(*args)` in a worker thread (one of `limiter`'s), so the event loop keeps answering
    (GET /health among others) while it runs; past `request_timeout_s`, waiting for a thread
    included, the client gets a 503 and the thread's result is dropped (the inputs' limits keep
    one request to milliseconds: this is the backstop)."""
    try:
        return await asyncio.wait_for(
            anyio.to_thread.run_sync(lambda: fn(*args), abandon_on_cancel=True, limiter=limiter),
            s.request_timeout_s)
    except TimeoutError:
        raise HTTPException(503, detail=f"the request took longer than its time budget of "
                                        f"{s.request_timeout_s:g} s", headers={"Retry-After": "1"}) from None


def _check_list(values: list[str], loc: tuple, s: Settings) -> None:
    if len(values) > s.max_list_items:
        raise field_error(loc, f"at most {s.max_list_items} entries, got {len(values)}")


def _check_lengths(values: Iterable[str], loc: tuple) -> None:
    """A filter key or value: no longer than an item id may be (`recsys.io.ids`)."""
    for v in values:
        if len(v) > MAX_ID_CHARS:
            raise field_error(loc, f"a filter key or value must be at most {MAX_ID_CHARS} "
                                   f"characters, got {len(v)}: shorten it")


def in_utc(t: datetime | None, loc: tuple) -> datetime | None:
    """`t` in UTC (no zone: UTC already), as the store keeps it; a 422 for a time whose UTC
    falls outside the years 1-9999 (0001-01-01T00:00:00+14:00 is in year 0 in UTC)."""
    if t is None:
        return None
    try:
        return t.astimezone(UTC) if t.tzinfo is not None else t.replace(tzinfo=UTC)
    except OverflowError:
        raise field_error(loc, f"{t.isoformat()} is outside the years 1-9999 once in UTC: give a "
                               f"time between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z") from None
