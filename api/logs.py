"""Structured logs: one JSON object per line, carrying the request id of the request being served."""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName", "color_message"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = request_id_var.get()
        if rid is not None:
            out["request_id"] = rid
        out.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


# libraries whose loggers say more than a service's log should carry: warnings and up only
# (bm25s sets its own logger to DEBUG when imported, so a level set here would not hold)
QUIET_LIBRARIES = ("bm25s",)


def _below_warning_from_quiet_libraries(record: logging.LogRecord) -> bool:
    quiet = any(record.name == n or record.name.startswith(n + ".") for n in QUIET_LIBRARIES)
    return not quiet or record.levelno >= logging.WARNING


def configure_logging(level: str = "info") -> None:
    """JSON lines on stderr for our loggers and uvicorn's."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(_below_warning_from_quiet_libraries)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
