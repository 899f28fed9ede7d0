"""Errors by kind: bad input is a 4xx with the library's message; anything else, a ValueError
from deep inside the scoring included, is a 500 that carries a request id, and the log has its
traceback under that id."""

from __future__ import annotations

import logging
import traceback

import pytest


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


def _raises_value_error(*args, **kwargs):
    # what a shape mismatch inside numpy raises: a bug of ours, never the client's input
    raise ValueError("operands could not be broadcast together with shapes (3,) (4,)")


@pytest.mark.parametrize(("path", "target"), [
    ("/recommend", "top_k"),  # the top-k selection of the index
    ("/explain", "explain"),  # one item's explanation
])
def test_a_value_error_inside_the_scoring_is_a_500_not_a_bad_request(
        lenient_client, rec, monkeypatch, caplog, path, target):
    owner = rec.index if target == "top_k" else rec
    monkeypatch.setattr(owner, target, _raises_value_error)
    body = {"query": "dress"} if path == "/recommend" else {"query": "dress", "item_id": rec.catalog.item_ids[0]}
    with caplog.at_level(logging.ERROR, logger="recsys.api"):
        r = lenient_client.post(path, json=body, headers={"X-Request-ID": f"numpy-{target}"})
    assert r.status_code == 500, r.text
    assert r.json() == {"detail": "internal error", "request_id": f"numpy-{target}"}
    assert "broadcast" not in r.text  # the client learns nothing of the inside
    logged = [x for x in caplog.records if getattr(x, "request_id", None) == f"numpy-{target}"]
    assert len(logged) == 1 and logged[0].exc_info is not None
    error = logged[0].exc_info[1]
    assert isinstance(error, ValueError) and "broadcast" in str(error)
    shown = "".join(traceback.format_exception(*logged[0].exc_info))
    assert "_raises_value_error" in shown  # the traceback leads to where it was raised


def test_an_unknown_filter_key_is_a_422_with_the_library_message(client, rec):
    keys = ", ".join(sorted(rec.catalog.filter_keys()))
    r = client.post("/recommend", json={"query": "dress", "filters": {"flavour": ["sweet"]}})
    assert r.status_code == 422
    message = f"filters: unknown key 'flavour'; filter on one of: {keys}"
    assert r.json() == {"detail": message, "message": message}


def test_an_unknown_item_is_a_404_with_the_library_message(client):
    r = client.post("/explain", json={"query": "dress", "item_id": "no-such-item"})
    assert r.status_code == 404
    assert r.json() == {"detail": "unknown item_id 'no-such-item': it is not in the catalogue of this model"}
    r = client.post("/recommend", json={"query": "dress", "candidates": ["no-such-item"]})
    assert r.status_code == 404 and "'no-such-item'" in r.json()["detail"]


def test_an_input_error_raised_anywhere_in_the_library_is_a_422(lenient_client, rec, monkeypatch):
    from recsys.errors import InputError

    def refuse(*args, **kwargs):
        raise InputError("head_weights: planted refusal")

    monkeypatch.setattr(rec, "head_weight_vector", refuse)
    r = lenient_client.post("/recommend", json={"query": "dress"})
    assert r.status_code == 422
    assert r.json() == {"detail": "head_weights: planted refusal", "message": "head_weights: planted refusal"}
