"""How errors become responses: every one is JSON with a `detail`, none of them is a bare 500."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from recsys.errors import ArtifactError, UnknownItemError

from .logs import request_id_var

log = logging.getLogger("recsys.api")


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(UnknownItemError, _unknown_item)
    app.add_exception_handler(ValueError, _bad_value)
    app.add_exception_handler(ArtifactError, _artifact_error)
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


async def _bad_value(request: Request, exc: ValueError) -> JSONResponse:
    """The library raises ValueError for inputs it cannot use (unknown filter key, head, ...)."""
    return JSONResponse(status_code=422, content={"detail": str(exc), "message": str(exc)})


async def _artifact_error(request: Request, exc: ArtifactError) -> JSONResponse:
    return JSONResponse(status_code=409, content={"detail": exc.public})  # no server paths


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", exc_info=exc)
    return JSONResponse(status_code=500, content={"detail": "internal error",
                                                  "request_id": request_id_var.get()})
