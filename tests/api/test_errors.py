"""A 500 that does happen (a bug) carries a request id, and the log has its traceback under it."""

from __future__ import annotations

import logging


def test_an_unexpected_error_is_a_500_with_the_request_id_of_its_logged_traceback(
        lenient_client, monkeypatch, caplog):
    from api.routes import recommend as route

    def broken(*args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(route, "_recommend", broken)
    with caplog.at_level(logging.ERROR, logger="recsys.api"):
        r = lenient_client.post("/recommend", json={"query": "dress"}, headers={"X-Request-ID": "bug-1"})
    assert r.status_code == 500
    assert r.json() == {"detail": "internal error", "request_id": "bug-1"}
    assert r.headers["x-request-id"] == "bug-1"
    logged = [rec for rec in caplog.records if getattr(rec, "request_id", None) == "bug-1"]
    assert logged and logged[0].exc_info and "a bug" in str(logged[0].exc_info[1])
    # the service goes on
    assert lenient_client.get("/health").status_code == 200
