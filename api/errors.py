"""How errors become responses: every one is JSON with a `detail`, by the kind of the error.

- bad input, which the client can fix: 422 from request validation and the limits (`detail` a list
  of errors, `message` one line naming the fields), 422 for the library's `InputError` (an unknown
  filter key, a query the answer cannot hold, ...), 404 for an unknown item, both with the
  library's message;
- a broken model version: 409, named without server paths;
- anything else is a bug, whatever its class (a ValueError from numpy is no bad request): a 500
  with the request id, its traceback in the log under the same id. The request-context
  middleware answers those (`api.middleware`), being the one that knows the id for sure.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from recsys.errors import ArtifactError, InputError, UnknownItemError

from .logs import request_id_var

log = logging.getLogger("recsys.api")


def install(app: FastAPI) -> None:
    # starlette types a handler as taking any Exception, though it calls each with its class only
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(UnknownItemError, _unknown_item)  # type: ignore[arg-type]
    app.add_exception_handler(InputError, _input_error)  # type: ignore[arg-type]
    app.add_exception_handler(ArtifactError, _artifact_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    # the offending input is left out: it may be a megabyte of text
    errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
              for e in exc.errors()]
    message = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in errors) or "invalid request"
    return JSONResponse(status_code=422, content=jsonable_encoder({"detail": errors, "message": message}))


def _where(loc: list) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts) or "body"


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    return JSONResponse(status_code=exc.status_code, content={"detail": exc.detail},
                        headers=getattr(exc, "headers", None))


async def _unknown_item(request: Request, exc: UnknownItemError) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": str(exc)})


async def _input_error(request: Request, exc: InputError) -> JSONResponse:
    return JSONResponse(status_code=422, content={"detail": str(exc), "message": str(exc)})


async def _artifact_error(request: Request, exc: ArtifactError) -> JSONResponse:
    return JSONResponse(status_code=409, content={"detail": exc.public})  # no server paths


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """The last resort: an error that got past the request-context middleware (one of its own,
    or one raised after the response had started, which it has logged already)."""
    log.exception("unhandled error", exc_info=exc)
    return JSONResponse(status_code=500, content={"detail": "internal error",
                                                  "request_id": request_id_var.get()})
