"""`recsys serve` parses HTTP with httptools and runs on uvloop, both named, not left to
uvicorn's "auto": without the packages "auto" falls back to h11 in pure Python and asyncio's
own loop, which cost every request about a third more CPU (docs/results.md, "HTTP parser"),
and nothing would say so. httptools keeps a header that has not ended for as long as it comes,
so a request's head is bounded (api/http_protocol.py): tested on a real server socket."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn

from api.config import Settings
from api.http_protocol import MAX_HEAD_BYTES, BoundedHttpToolsProtocol
from api.server import _uvicorn_config
from tests.live_server import free_port


async def _app(scope, receive, send) -> None:
    """200 with the body's length: enough to tell a request answered from one refused."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    answer = str(len(body)).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer})


def test_the_server_speaks_http_through_httptools_on_uvloop(tmp_path):
    config = _uvicorn_config(_app, Settings(artifacts_dir=tmp_path), "127.0.0.1", 0)
    config.load()  # imports the protocol class, as `uvicorn.Server.run` does: fails without the package
    assert issubclass(config.http_protocol_class, BoundedHttpToolsProtocol)
    assert config.http_protocol_class.__mro__[1].__name__ == "HttpToolsProtocol"
    loop = config.get_loop_factory()()  # the loop `uvicorn.Server.run` runs on
    try:
        assert type(loop).__module__.startswith("uvloop")
    finally:
        loop.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    config = _uvicorn_config(_app, Settings(artifacts_dir=tmp_path_factory.mktemp("a")), "127.0.0.1", port)
    config.lifespan = "off"
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    yield port
    srv.should_exit = True
    thread.join(10)


def _exchange(port: int, chunks: list[bytes]) -> bytes:
    """Send each chunk as its own write, then read until the server closes or 2 s pass."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        try:
            for chunk in chunks:
                s.sendall(chunk)
                time.sleep(0.01)  # its own read on the server
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the rest was sent: the answer is already there
        s.settimeout(2)
        got = b""
        try:
            while chunk := s.recv(65536):
                got += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return got


def test_a_head_that_keeps_growing_is_refused_431(server):
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: "
    piece = b"a" * 16384
    got = _exchange(server, [head] + [piece] * (MAX_HEAD_BYTES // len(piece) + 2))
    assert got.startswith(b"HTTP/1.1 431 "), got[:80]


def test_many_headers_past_the_bound_are_refused_431(server):
    lines = [b"X-H%d: %s\r\n" % (i, b"v" * 60) for i in range(MAX_HEAD_BYTES // 64 + 200)]
    got = _exchange(server, [b"GET / HTTP/1.1\r\nHost: x\r\n"] + [b"".join(lines[i:i + 100])
                                                                  for i in range(0, len(lines), 100)] + [b"\r\n"])
    assert got.startswith(b"HTTP/1.1 431 "), got[:80]


def test_a_large_head_within_the_bound_and_a_large_body_are_answered(server):
    header = b"X-Big: " + b"a" * (MAX_HEAD_BYTES - 1024) + b"\r\n"
    body = b"b" * (4 * MAX_HEAD_BYTES)  # a body is never counted as head, in any number of reads
    request = b"POST / HTTP/1.1\r\nHost: x\r\n" + header + b"Content-Length: %d\r\n\r\n" % len(body)
    got = _exchange(server, [request[:20000], request[20000:], body[:100000], body[100000:]])
    assert got.startswith(b"HTTP/1.1 200 ") and got.endswith(str(len(body)).encode()), got[:80]


def test_keep_alive_requests_each_start_their_own_count(server):
    one = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_HEAD_BYTES // 2) + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server), timeout=5) as s:
        for _ in range(4):  # four heads of half the bound on one connection: 2x the bound in all
            s.sendall(one)
            got = s.recv(4096)
            assert got.startswith(b"HTTP/1.1 200 "), got[:80]
