"""`recsys serve` parses HTTP with httptools and runs on uvloop, both named, not left to
uvicorn's "auto": without the packages "auto" falls back to h11 in pure Python and asyncio's
own loop, which cost every request about a third more CPU (docs/results.md, "HTTP parser"),
and nothing would say so."""

from __future__ import annotations

from api.config import Settings
from api.server import _uvicorn_config


async def _app(scope, receive, send) -> None:  # never called: the config is only loaded
    raise AssertionError("not served")


def test_the_server_speaks_http_through_httptools_on_uvloop(tmp_path):
    config = _uvicorn_config(_app, Settings(artifacts_dir=tmp_path), "127.0.0.1", 0)
    config.load()  # imports the protocol class, as `uvicorn.Server.run` does: fails without the package
    assert config.http_protocol_class.__name__ == "HttpToolsProtocol"
    loop = config.get_loop_factory()()  # the loop `uvicorn.Server.run` runs on
    try:
        assert type(loop).__module__.startswith("uvloop")
    finally:
        loop.close()
