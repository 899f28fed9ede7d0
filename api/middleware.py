"""Request id, access log and metrics for every request, as plain ASGI (no per-request task)."""

from __future__ import annotations

import logging
import os
import re
import time

from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .logs import request_id_var
from .telemetry import Telemetry

access_log = logging.getLogger("recsys.access")
error_log = logging.getLogger("recsys.api")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
REQUEST_ID_HEADER = "x-request-id"
MODEL_VERSION_HEADER = "x-model-version"
# which process answered: with `recsys serve --workers N` (or replicas) a client can tell that
# every worker serves the new version after an activation
WORKER_HEADER = "x-worker-pid"


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, telemetry: Telemetry) -> None:
        self.app, self.telemetry = app, telemetry
        self.pid = str(os.getpid())  # made in the process that serves (a worker is spawned)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = Headers(scope=scope).get(REQUEST_ID_HEADER, "")
        # 128 random bits as 32 hex digits, a uuid4's shape at a sixth of its cost (0.7 against 4.2 us)
        rid = incoming if _SAFE_ID.match(incoming) else os.urandom(16).hex()
        token = request_id_var.set(rid)
        start = time.perf_counter()
        status, version, started = 500, None, False

        async def send_with_id(message: Message) -> None:
            nonlocal status, version, started
            if message["type"] == "http.response.start":
                started, status = True, message["status"]
                headers = MutableHeaders(scope=message)
                headers[REQUEST_ID_HEADER] = rid
                headers[WORKER_HEADER] = self.pid
                version = headers.get(MODEL_VERSION_HEADER)
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            # a bug, never something a request or a file can cause: the client gets the request
            # id, and the log has the traceback under the same id
            error_log.exception("unhandled error", extra={"path": scope["path"], "request_id": rid})
            if started:
                raise
            await JSONResponse({"detail": "internal error", "request_id": rid},
                               status_code=500)(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - start
            route = getattr(scope.get("route"), "path", "unmatched")
            self.telemetry.observe(scope["method"], route, status, seconds)
            if access_log.isEnabledFor(logging.INFO):  # its fields made only for a log that keeps them
                access_log.info("request", extra={
                    "method": scope["method"], "path": scope["path"], "route": route, "status": status,
                    "duration_ms": round(seconds * 1000, 3), "model_version": version,
                })
            request_id_var.reset(token)


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, detail=f"request body too large: the limit is {limit} bytes")


class BodyLimitMiddleware:
    """413 for a body over the limit: at once from Content-Length, or while a chunked body is read.

    `upload_paths` get the (larger) upload limit.
    """

    def __init__(self, app: ASGIApp, limit: int, upload_limit: int, upload_paths: tuple[str, ...]):
        self.app, self.limit = app, limit
        self.upload_limit, self.upload_paths = upload_limit, upload_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.upload_limit if scope["path"] in self.upload_paths else self.limit
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            if declared.isdigit():
                status, detail = 413, BodyTooLarge(limit).detail
            else:
                status, detail = 400, "bad Content-Length"
            await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)
            return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, counting_receive, send)
