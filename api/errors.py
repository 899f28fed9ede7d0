"""How errors become responses: every one is JSON with a `detail`, by the kind of the error.

- bad input, which the client can fix: 422 from request validation and the limits (`detail` a list
  of errors, `message` one line naming the fields), 422 for the library's `InputError` (an unknown
  filter key, a query the answer cannot hold, ...), 404 for an unknown item, both with the
  library's message;
- a broken model version: 409, named without server paths; so is a change asked of a process
  pinned to one version (`PinnedError`);
- a passing state of this process (`current` names a version it is still loading:
  `NotServedYet`): 503 with `Retry-After`, a retry in a moment succeeds; a 409 is for what a
  retry does not change;
- the store unavailable (its server down or unreachable, the connection lost, the SQLite file
  locked, a deadlock past its retries): 503 with `Retry-After`, for every route that uses it
  (`store.db.unavailable` says which errors those are; any other is a bug);
- no answer names a server path or the database's URL (`redact`);
- anything else is a bug, whatever its class (a ValueError from numpy is no bad request): a 500
  with the request id, its traceback in the log under the same id. The request-context
  middleware answers those (`api.middleware`), being the one that knows the id for sure.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from recsys.errors import ArtifactError, InputError, UnknownItemError
from store.db import StoreError, unavailable

from .config import Settings
from .logs import request_id_var
from .schemas import PATTERN_WORDS
from .served_versions import NotServedYet, PinnedError

log = logging.getLogger("recsys.api")
# seconds a client is told to wait when the store is unavailable: a restart or a failover of
# the database takes seconds, and a shorter wait only adds load to a store that is recovering
STORE_RETRY_AFTER_S = 5
# a database URL in a message (the driver's form too: postgresql+psycopg://), up to the
# punctuation that follows it ("sqlite:////srv/recsys.db: no events")
_DATABASE_URL = re.compile(r"\b(?:sqlite|postgres(?:ql)?)(?:\+\w+)?://[^\s'\",;()]*[^\s'\",;():.]")
# an absolute path; `_redact_path` keeps the ones that are no server path (a route, /admin/jobs)
_ABSOLUTE_PATH = re.compile(r"(?<![\w/.:~-])/[\w.~+@%-]+(?:/[\w.~+@%-]+)*/?")
STORE_WORD, PATH_WORD = "the store", "a server file"


def install(app: FastAPI) -> None:
    # starlette types a handler as taking any Exception, though it calls each with its class only
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(UnknownItemError, _unknown_item)  # type: ignore[arg-type]
    app.add_exception_handler(InputError, _input_error)  # type: ignore[arg-type]
    app.add_exception_handler(ArtifactError, _artifact_error)  # type: ignore[arg-type]
    app.add_exception_handler(PinnedError, _artifact_error)  # type: ignore[arg-type]
    app.add_exception_handler(NotServedYet, _not_served_yet)  # type: ignore[arg-type]
    app.add_exception_handler(SQLAlchemyError, _store_error)
    app.add_exception_handler(StoreError, _store_error)
    app.add_exception_handler(Exception, _unexpected)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    # the offending input is left out: it may be a megabyte of text
    errors = [{"loc": [_utf8(p) for p in e.get("loc", ())], "msg": _utf8(_said(e)), "type": e.get("type", "")}
              for e in exc.errors()]
    message = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in errors) or "invalid request"
    return JSONResponse(status_code=422, content=jsonable_encoder({"detail": errors, "message": message}))


def _said(error: dict) -> str:
    """An error's message; a name that does not match its pattern is told what a name may be,
    not the pattern ("String should match pattern '^[^\\W_]...'")."""
    words = PATTERN_WORDS.get((error.get("ctx") or {}).get("pattern", ""))
    if error.get("type") == "string_pattern_mismatch" and words:
        return f"should be {words}"
    return str(error.get("msg", ""))


def _utf8(part: object) -> object:
    """A text part of an error as UTF-8 can write it: a JSON key may escape a lone surrogate
    ("\\udc00"), which the answer could not encode (a 500 in place of the 422); it is shown escaped."""
    if isinstance(part, str):
        return part.encode("utf-8", "backslashreplace").decode("utf-8")
    return part


def _where(loc: list) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts) or "body"


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    detail = _public(request, exc.detail) if isinstance(exc.detail, str) else exc.detail
    return JSONResponse(status_code=exc.status_code, content={"detail": detail},
                        headers=getattr(exc, "headers", None))


async def _unknown_item(request: Request, exc: UnknownItemError) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": _public(request, str(exc))})


# the command line's words in the library's messages, as a request says them
_CLI_WORDS = (("(--schema FILE.toml)", "(the request's `schema` field, a TOML file)"),
              ("--on-bad-lines skip", "`on_bad_lines: skip`"))


def in_request_words(message: str) -> str:
    """A library message with the command line's flags said as a request's fields."""
    for cli, http in _CLI_WORDS:
        message = message.replace(cli, http)
    return message


async def _input_error(request: Request, exc: InputError) -> JSONResponse:
    message = in_request_words(_public(request, str(exc)))
    return JSONResponse(status_code=422, content={"detail": message, "message": message})


async def _store_error(request: Request, exc: Exception) -> JSONResponse:
    """503 for a store that cannot answer now; the message names no host, port or file (the
    log has the driver's error)."""
    if not unavailable(exc):
        raise exc  # a bug: the request-context middleware logs it and answers 500
    cause = type(getattr(exc, "orig", None) or exc).__name__
    log.warning("the store is unavailable", extra={"path": request.url.path, "error": cause,
                                                   "detail": str(exc)})
    return JSONResponse(status_code=503, headers={"Retry-After": str(STORE_RETRY_AFTER_S)},
                        content={"detail": f"the store is unavailable ({cause}): nothing was "
                                           f"read or stored; try again in {STORE_RETRY_AFTER_S} s",
                                 "request_id": request_id_var.get()})


def redact(message: str, known: Iterable[str] = ()) -> str:
    """`message` without server paths or database URLs, each replaced by a word that says what
    it was ("sqlite:////srv/data/recsys.db: no events" -> "the store: no events"). `known`:
    this server's folders and URLs, replaced first."""
    for text in sorted((k for k in known if k), key=len, reverse=True):
        message = message.replace(text, STORE_WORD if "://" in text else PATH_WORD)
    message = _DATABASE_URL.sub(STORE_WORD, message)
    return _ABSOLUTE_PATH.sub(_redact_path, message)


def _redact_path(match: re.Match[str]) -> str:
    # a path whose first folder exists at this machine's root is a server path; one that does
    # not is a route or the client's own words ("see GET /admin/versions")
    top = match.group(0).strip("/").split("/", 1)[0]
    return PATH_WORD if Path("/", top).exists() else match.group(0)


def server_names(settings: Settings, database_url: str) -> list[str]:
    """What `redact` replaces first for this server: its folders, resolved (a folder given
    relative, "data", is no string to replace in a message: "metadata" has it), and the
    database URL as given and as SQLAlchemy writes it."""
    folders = (settings.data_dir, settings.artifacts_dir, settings.default_data_dir)
    return [str(Path(f).resolve()) for f in folders] + [settings.store_url, database_url]


def _public(request: Request, message: str) -> str:
    state = request.app.state
    return redact(message, server_names(state.settings, state.db.public_url))


async def _artifact_error(request: Request, exc: ArtifactError | PinnedError) -> JSONResponse:
    return JSONResponse(status_code=409, content={"detail": exc.public})  # no server paths


async def _not_served_yet(request: Request, exc: NotServedYet) -> JSONResponse:
    return JSONResponse(status_code=503, headers={"Retry-After": str(exc.retry_after_s)},
                        content={"detail": exc.public, "status": "loading",
                                 "model_version": exc.version, "request_id": request_id_var.get()})


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """The last resort: an error that got past the request-context middleware (one of its own,
    or one raised after the response had started, which it has logged already)."""
    log.exception("unhandled error", exc_info=exc)
    return JSONResponse(status_code=500, content={"detail": "internal error",
                                                  "request_id": request_id_var.get()})
