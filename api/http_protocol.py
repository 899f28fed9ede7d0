"""uvicorn's httptools protocol with a bound on a request's head (its request line and headers).

httptools keeps a header that has not ended in memory for as long as it keeps coming: a client
could send megabytes of one header line, on many connections. h11 refused a head that grew past
16 KiB before it was complete; nginx refuses one past its 4 x 8 KiB buffers. Here a head still
incomplete after MAX_HEAD_BYTES is answered 431 and its connection closed.

The bytes of a head are counted as they arrive: a read that completes the head, or ends the
request before, starts the count again, so a body is never counted, and a head that starts
within a read is counted from the next one (at most one read, 256 KiB, more than the bound).
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

MAX_HEAD_BYTES = 64 * 1024

_TOO_LARGE = b"request header fields too large"


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:  # uvicorn's own signature
        super().__init__(*args, **kwargs)
        self._in_head = True  # a connection starts with a request's head
        self._head_bytes = 0

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
            self.logger.warning("Request head over %d bytes refused.", MAX_HEAD_BYTES)
            self.transport.write(b"".join([
                STATUS_LINE[431],
                b"content-type: text/plain; charset=utf-8\r\n",
                b"content-length: " + str(len(_TOO_LARGE)).encode("ascii") + b"\r\n",
                b"connection: close\r\n\r\n", _TOO_LARGE]))
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes = False, 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_head, self._head_bytes = True, 0  # the next request's head, from the next read
        super().on_message_complete()
