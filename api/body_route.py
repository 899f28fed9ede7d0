"""A route whose JSON body pydantic-core validates straight from the request's bytes: the route
every shopper's search takes (POST /recommend).

FastAPI's own handler parses a body with `json.loads`, reads its content type through
`email.message`, validates the dict, then solves the endpoint's parameters and records each
step for its telemetry: in one process, about a fifth of an answer without explanations. This
route's handler does the common case alone: a body sent as `application/json` that validates
is handed, as the model, to an endpoint `(body, request)` returning a Response. Any other request
(another content type, a body that does not parse or validate) goes to FastAPI's handler, which
answers it as it always has, from the same bytes: a 422 naming the field, a 400 for a body
nested too deep. pydantic's JSON mode refuses some bodies that `json.loads` reads (a lone
surrogate escape, a byte-order mark, UTF-16) and none of those is answered here.
tests/api/test_body_route.py holds both readings equal wherever this one accepts.

The OpenAPI document is FastAPI's, made from the endpoint's signature as for any route.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

JSON = b"application/json"


class JsonBodyRoute(APIRoute):
    """An APIRouter's `route_class` (or `add_api_route`'s `route_class_override`) for routes
    `async def endpoint(body: Model, request: Request) -> Response`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        general = super().get_route_handler()
        model, body_name, request_name = _parameters(self)
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            if not _is_json(request.scope["headers"]):
                return await general(request)
            try:
                body = model.model_validate_json(await request.body())
            except ValidationError:
                return await general(request)  # FastAPI's own 422, from the body read above
            response: Response = await endpoint(**{body_name: body, request_name: request})
            return response

        return handler


def _is_json(headers: list[tuple[bytes, bytes]]) -> bool:
    """The content type is application/json (any case, any parameters): the one FastAPI reads
    as JSON that this route reads itself; `+json` types and the rest go to FastAPI."""
    for name, value in headers:
        if name == b"content-type":
            return value.split(b";", 1)[0].strip().lower() == JSON
    return False


def _parameters(route: APIRoute) -> tuple[type[BaseModel], str, str]:
    """(the body's model, the endpoint's name for it, its name for the Request), or a TypeError
    saying what the endpoint has that this route does not pass."""
    d = route.dependant
    others = [p.name for p in (*d.path_params, *d.query_params, *d.header_params, *d.cookie_params)]
    extra = [*others, *(n for n in (d.response_param_name, d.background_tasks_param_name,
                                    d.security_scopes_param_name) if n)]
    body = route.body_field
    model = None if body is None else body.field_info.annotation
    if (extra or d.dependencies or len(d.body_params) != 1 or d.request_param_name is None
            or not isinstance(model, type) or not issubclass(model, BaseModel)
            or not inspect.iscoroutinefunction(route.endpoint)):
        raise TypeError(f"{route.path}: a JsonBodyRoute's endpoint is an `async def` taking a "
                        f"pydantic model (the body) and the Request, nothing else; this one has "
                        f"{len(d.body_params)} body parameters, {len(d.dependencies)} dependencies, "
                        f"others {extra}: declare it as a plain APIRoute")
    return model, d.body_params[0].name, d.request_param_name
