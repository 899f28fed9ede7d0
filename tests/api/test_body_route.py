"""POST /recommend reads its body with pydantic-core's JSON parser (api/body_route.py) and hands
FastAPI every body that parser refuses: the answers are FastAPI's wherever the two differ."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, ValidationError

from api.body_route import JsonBodyRoute
from api.schemas import RecommendRequest

QUERY = {"query": "red casual cotton dress", "k": 3}

# ---- one reading of a body: pydantic's JSON mode, held to FastAPI's json.loads then validate ----

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 200), st.floats(allow_nan=True),
                     st.text(max_size=6), st.sampled_from(["red", "dress", "color", "SKU-000001", ""]))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["color", "price", "min", "max", "style", "x"]), inner, max_size=3)),
    max_leaves=8)
_fields = st.sampled_from([*RecommendRequest.model_fields, "qeury"])
_bodies = st.one_of(
    st.dictionaries(_fields, _values, max_size=6),
    st.fixed_dictionaries({"query": st.text(max_size=8)}, optional={
        "k": st.integers(-1, 120), "offset": st.integers(-1, 3), "explain": st.booleans(),
        "filters": st.dictionaries(st.sampled_from(["color", "price"]), st.one_of(
            st.text(max_size=4), st.lists(st.text(max_size=4), max_size=2),
            st.fixed_dictionaries({}, optional={"min": st.floats(), "max": st.integers()}))),
        "head_weights": st.dictionaries(st.sampled_from(["color", "style", "bad name"]),
                                        st.one_of(st.floats(), st.integers(), st.booleans())),
        "facet_counts": st.one_of(st.booleans(), st.lists(st.text(max_size=4), max_size=2)),
        "exclude": st.lists(st.text(max_size=6), max_size=2), "user_id": st.text(max_size=4),
        "personalize": st.one_of(st.none(), st.booleans())}))


def _fastapi_reading(raw: bytes) -> RecommendRequest | None:
    """What FastAPI's own handler makes of the body: json.loads, then the model's validation."""
    try:
        return RecommendRequest.model_validate(json.loads(raw))
    except (ValueError, ValidationError):
        return None


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(body=_bodies, spaced=st.booleans())
def test_a_body_the_json_parser_accepts_reads_as_fastapi_reads_it(body, spaced):
    raw = json.dumps(body, separators=(", ", ": ") if spaced else (",", ":")).encode()
    try:
        fast = RecommendRequest.model_validate_json(raw)
    except ValidationError:
        return  # answered by FastAPI's handler
    assert fast == _fastapi_reading(raw), raw


@pytest.mark.parametrize("raw", [b'{"query": "dress \\ud800"}', b'\xef\xbb\xbf{"query": "dress"}',
                                 '{"query": "dress"}'.encode("utf-16"), b'{"query": "dress"} x'])
def test_bodies_json_loads_reads_and_the_json_parser_refuses(raw):
    """Each of these goes to FastAPI's handler, which reads it as it always has."""
    with pytest.raises(ValidationError):
        RecommendRequest.model_validate_json(raw)


# ---- the route through the app -----------------------------------------------------------------


def _items(r) -> list[str]:
    assert r.status_code == 200, r.text
    return [item["item_id"] for item in r.json()["items"]]


@pytest.mark.parametrize("raw, ctype", [
    (json.dumps(QUERY).encode(), "application/json; charset=utf-8"),
    (json.dumps(QUERY).encode(), "Application/JSON"),
    (json.dumps(QUERY).encode(), "application/vnd.api+json"),  # FastAPI's: a +json type
    (b"\xef\xbb\xbf" + json.dumps(QUERY).encode(), "application/json"),  # FastAPI's: a BOM
    (json.dumps(QUERY).encode("utf-16"), "application/json"),  # FastAPI's: UTF-16
])
def test_every_json_body_fastapi_reads_is_answered_the_same(client, raw, ctype):
    plain = client.post("/recommend", json=QUERY)
    r = client.post("/recommend", content=raw, headers={"content-type": ctype})
    assert _items(r) == _items(plain)
    assert r.headers["x-model-version"] == plain.headers["x-model-version"]


def test_a_refused_body_gets_fastapis_422_naming_the_field(client):
    r = client.post("/recommend", json={**QUERY, "k": "ten", "qeury": "typo"})
    assert r.status_code == 422
    assert {tuple(e["loc"]) for e in r.json()["detail"]} == {("body", "k"), ("body", "qeury")}
    assert r.json()["message"] == ("k: Input should be a valid integer; qeury: Extra inputs are "
                                   "not permitted")


def test_a_json_body_without_a_content_type_is_refused_as_fastapi_refuses_it(client):
    r = client.post("/recommend", content=json.dumps(QUERY).encode(), headers={"content-type": ""})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body"]


# ---- the route on its own ----------------------------------------------------------------------


class When(BaseModel):
    # strict: pydantic's JSON mode reads an ISO string as a datetime, its Python mode does not
    model_config = ConfigDict(strict=True)
    at: datetime


def _app(route_class: type = JsonBodyRoute) -> FastAPI:
    router = APIRouter(route_class=route_class)

    @router.post("/when")
    async def when(body: When, request: Request) -> Response:
        return Response(body.at.isoformat(), media_type="text/plain")

    app = FastAPI()
    app.include_router(router)
    return app


def test_a_json_body_is_read_by_the_json_parser_and_anything_else_by_fastapi():
    """The one body this model reads differently in JSON and in Python mode shows which reader
    answered: the JSON parser for application/json, FastAPI's for a +json type."""
    body = json.dumps({"at": "2026-12-04T10:00:00"}).encode()
    with TestClient(_app()) as c:
        r = c.post("/when", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 200 and r.text == "2026-12-04T10:00:00"
        r = c.post("/when", content=body, headers={"content-type": "application/merge+json"})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "at"]
    with TestClient(_app(route_class=APIRouter().route_class)) as c:  # FastAPI's alone: a 422
        r = c.post("/when", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422


def test_an_endpoint_with_more_than_the_body_and_the_request_is_refused():
    router = APIRouter(route_class=JsonBodyRoute)

    async def version() -> str:
        return "v1"

    with pytest.raises(TypeError, match="/with-dependency: a JsonBodyRoute's endpoint"):
        @router.post("/with-dependency")
        async def with_dependency(body: When, request: Request, v: str = Depends(version)) -> Response:
            return Response()
    with pytest.raises(TypeError, match="/sync"):
        @router.post("/sync")
        def sync(body: When, request: Request) -> Response:
            return Response()
