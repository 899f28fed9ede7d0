"""The OpenAPI document with the limits of this service's settings and every status code.

Limits that come from the settings (query length, k, offset, list sizes) are checked in
`api.limits`; here they are written into the request schemas (`maxLength`, `maximum`,
`maxItems`, ...), and every operation lists the errors any request may get: 400 (the body is no
JSON), 413 (over the body limit), 422 (an input over a limit) and 500 (a bug, with a request id).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from recsys.io.ids import MAX_ID_CHARS

from .config import Settings
from .schemas import ErrorOut, error_responses


def install(app: FastAPI, settings: Settings) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _document(app, settings)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _document(app: FastAPI, s: Settings) -> dict[str, Any]:
    doc = get_openapi(title=app.title, version=app.version, description=_description(s),
                      routes=app.routes)
    schemas = doc.get("components", {}).get("schemas", {})
    ids = {"maxLength": MAX_ID_CHARS}
    lists = {"maxItems": s.max_list_items}
    words = (f"at most {s.max_query_chars} characters, {s.max_query_words} words and "
             f"{s.max_word_chars} characters a word")
    query = {"maxLength": s.max_query_chars}
    for name in ("RecommendRequest", "ExplainRequest", "CompareRequest"):
        props = schemas.get(name, {}).get("properties", {})
        _limit(props.get("query"), query, f"what the shopper typed: {words}")
        for key in ("item_id", "item_a", "item_b"):
            _limit(props.get(key), ids)
    props = schemas.get("RecommendRequest", {}).get("properties", {})
    _limit(props.get("k"), {"maximum": s.max_k})
    _limit(props.get("offset"), {"maximum": s.max_offset})
    for key in ("exclude", "candidates"):
        _limit(props.get(key), lists, items=ids)
    filters = props.get("filters")
    if filters is not None:
        filters["maxProperties"] = s.max_filter_keys
        filters["propertyNames"] = ids
        values = filters.get("additionalProperties") or {}
        for member in values.get("anyOf", [values]):  # a list of values, or a range
            if member.get("type") == "array":
                _limit(member, lists, items=ids)
    _limit(schemas.get("TrainRequest", {}).get("properties", {}).get("epochs"),
           {"maximum": s.max_train_epochs})
    schemas.setdefault("ErrorOut", ErrorOut.model_json_schema())
    _every_status(doc)
    return doc


def _limit(prop: dict | None, bounds: dict, description: str | None = None,
           items: dict | None = None) -> None:
    """Add `bounds` to a property's schema, or to the non-null member of an `anyOf`."""
    if prop is None:
        return
    targets = [p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
    for target in targets:
        target.update(bounds)
        if items is not None and isinstance(target.get("items"), dict):
            target["items"].update(items)
    if description:
        prop["description"] = description


def _every_status(doc: dict) -> None:
    """Each operation lists 500; those with a body 400, 413 and 422 too."""
    ref = {"$ref": "#/components/schemas/ErrorOut"}
    for item in doc.get("paths", {}).values():
        for method, op in item.items():
            codes = [500]
            if "requestBody" in op or method in ("post", "put", "patch"):
                codes += [400, 413, 422]
            for code, spec in error_responses(*codes).items():
                op.setdefault("responses", {}).setdefault(str(code), {
                    "description": spec["description"],
                    "content": {"application/json": {"schema": ref}}})


def _description(s: Settings) -> str:
    return (
        "Explainable facet-attention recommender.\n\n"
        "**Limits** (settings in parentheses): a query of at most "
        f"{s.max_query_chars} characters (RECSYS_MAX_QUERY_CHARS), {s.max_query_words} words "
        f"(RECSYS_MAX_QUERY_WORDS) and {s.max_word_chars} characters a word "
        f"(RECSYS_MAX_WORD_CHARS); k at most {s.max_k}, offset at most {s.max_offset}; lists "
        f"(candidates, exclude, filter values) of at most {s.max_list_items} ids of at most "
        f"{MAX_ID_CHARS} characters (item ids: no control characters, not '.' or '..'); at most "
        f"{s.max_filter_keys} filter keys; a body of at most "
        f"{s.max_body_bytes} bytes ({s.max_upload_bytes} for training uploads). Past one, a 422 "
        "whose `message` names the field (413 for the body). A scoring request has a time "
        f"budget of {s.request_timeout_s:g} s (RECSYS_REQUEST_TIMEOUT_S): past it, a 503. "
        f"Training files: at most {s.max_train_rows} rows each (RECSYS_MAX_TRAIN_ROWS), a "
        f"training job at most {s.train_memory_mb} MB of memory (RECSYS_TRAIN_MEMORY_MB)."
    )
