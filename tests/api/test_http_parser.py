"""`recsys serve` parses HTTP with httptools, named, not left to uvicorn's "auto": without the
package "auto" falls back to h11 in pure Python, which costs every request about half as much
CPU again (docs/results.md, "HTTP parser"), and nothing would say so."""

from __future__ import annotations

from api.config import Settings
from api.server import _uvicorn_config


async def _app(scope, receive, send) -> None:  # never called: the config is only loaded
    raise AssertionError("not served")


def test_the_server_speaks_http_through_httptools(tmp_path):
    config = _uvicorn_config(_app, Settings(artifacts_dir=tmp_path), "127.0.0.1", 0)
    config.load()  # imports the protocol class, as `uvicorn.Server.run` does: fails without the package
    assert config.http_protocol_class.__name__ == "HttpToolsProtocol"
