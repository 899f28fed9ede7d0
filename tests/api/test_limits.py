"""Input limits and bad bodies: a 4xx with a message naming the field, never a 500."""

from __future__ import annotations

import json
import random

import pytest

VALID = {"query": "red casual cotton dress", "k": 5}
OK = {200, 400, 404, 413, 422}  # 400: a body nested too deep to parse


def post(client, body, path="/recommend"):
    return client.post(path, json=body)


def assert_422_naming(r, field: str) -> None:
    assert r.status_code == 422, r.text
    assert field in r.json()["message"], r.json()


@pytest.mark.parametrize("body, field", [
    ({"k": 0}, "k"),
    ({"k": 101}, "k"),
    ({"k": -3}, "k"),
    ({"k": "ten"}, "k"),
    ({"offset": -1}, "offset"),
    ({"offset": 10_001}, "offset"),
    ({"query": "x" * 513}, "query"),
    ({"query": 42}, "query"),
    ({"query": None}, "query"),
    ({"filters": {f"key{i}": ["v"] for i in range(33)}}, "filters"),
    ({"filters": {"color": ["red"] * 1001}}, "filters.color"),
    ({"filters": {"color": [1, 2]}}, "filters.color"),
    ({"filters": ["color", "red"]}, "filters"),
    ({"filters": {"color": ["x" * 300]}}, "filters.color"),
    ({"exclude": ["a"] * 1001}, "exclude"),
    ({"exclude": "SKU-1"}, "exclude"),
    ({"candidates": ["a"] * 1001}, "candidates"),
    ({"head_weights": {"flavour": 1.0}}, "head_weights.flavour"),
    ({"head_weights": {"color": -1.0}}, "head_weights.color"),
    ({"head_weights": {"color": 1e308}}, "head_weights.color"),
    ({"head_weights": {"color": "loud"}}, "head_weights.color"),
    ({"explain": "maybe"}, "explain"),
    ({"qeury": "typo"}, "qeury"),
])
def test_recommend_limits(client, body, field):
    assert_422_naming(post(client, {**VALID, **body}), field)


def test_missing_query(client):
    assert_422_naming(post(client, {"k": 5}), "query")


@pytest.mark.parametrize("raw", ['{"query": "x", "head_weights": {"color": NaN}}',
                                 '{"query": "x", "head_weights": {"style": Infinity}}'])
def test_non_finite_numbers(client, raw):
    r = client.post("/recommend", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and "head_weights" in r.json()["message"]


@pytest.mark.parametrize("path, body, field", [
    ("/explain", {"query": "x" * 600, "item_id": "a"}, "query"),
    ("/explain", {"query": "dress"}, "item_id"),
    ("/explain", {"query": "dress", "item_id": "a" * 300}, "item_id"),
    ("/compare", {"query": "dress", "item_a": "a"}, "item_b"),
    ("/compare", {"query": "dress", "item_a": "a", "item_b": "b", "head_weights": {"x": 1}}, "head_weights"),
])
def test_explain_and_compare_limits(client, path, body, field):
    assert_422_naming(post(client, body, path), field)


def test_body_too_large(lenient_client):
    big = {"query": "dress", "exclude": ["x" * 200] * 1000}  # about 200 KB, the limit here is 100 KB
    r = lenient_client.post("/recommend", json=big)
    assert r.status_code == 413 and "100000" in r.json()["detail"]


def test_chunked_body_too_large(lenient_client):
    def chunks():
        yield b'{"query": "dress", "exclude": ['
        for _ in range(2000):
            yield b'"' + b"x" * 100 + b'",'
        yield b'"y"]}'

    r = lenient_client.post("/recommend", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


@pytest.mark.parametrize("raw, ctype", [
    (b"", "application/json"),
    (b"{", "application/json"),
    (b"[]", "application/json"),
    (b"null", "application/json"),
    (b'"query"', "application/json"),
    (b"\xff\xfe\x00garbage", "application/json"),
    (b'{"query": "dress"}', "text/plain"),
    (b"query=dress", "application/x-www-form-urlencoded"),
    (b'{"query": "dress", "k": 1e400}', "application/json"),
    (b'{"query": "dress", "k": 99999999999999999999999999}', "application/json"),
    (b'{"query": "\\ud800"}', "application/json"),  # a lone surrogate: refused by the limits
    (b"[" * 5000 + b"]" * 5000, "application/json"),
])
def test_garbage_bodies(lenient_client, raw, ctype):
    r = lenient_client.post("/recommend", content=raw, headers={"content-type": ctype})
    # nested too deep to parse is a 400; every other body is read and refused field by field
    assert r.status_code == (400 if raw.startswith(b"[[") else 422), (r.status_code, r.text)


def _mutations(rng: random.Random):
    junk = [None, True, -1, 0, 1, 10**12, 3.5, float("-0"), "", "x" * 600, "\x00", "🦄", [], {}, [1],
            ["a", None], {"color": None}, {"color": [None]}, {"": []}, {"other": [""]}]
    fields = ["query", "k", "offset", "filters", "exclude", "candidates", "head_weights", "explain",
              "item_id", "item_a", "item_b"]
    for _ in range(150):
        body = {"query": "red dress", "k": 5, "item_id": "SKU-000001", "item_a": "SKU-000001",
                "item_b": "SKU-000002"}
        for f in rng.sample(fields, rng.randint(1, 3)):
            body[f] = rng.choice(junk)
        yield body


def test_fuzzed_bodies_never_500(lenient_client):
    rng = random.Random(0)
    statuses = set()
    for body in _mutations(rng):
        for path in ("/recommend", "/explain", "/compare"):
            fields = {"/recommend": ("query", "k", "offset", "filters", "exclude", "candidates",
                                     "head_weights", "explain"),
                      "/explain": ("query", "item_id", "head_weights"),
                      "/compare": ("query", "item_a", "item_b", "head_weights")}[path]
            r = lenient_client.post(path, json={k: v for k, v in body.items() if k in fields})
            assert r.status_code in OK, (path, body, r.status_code, r.text)
            statuses.add(r.status_code)
            json.loads(r.text)  # always JSON
    assert 422 in statuses and 200 in statuses


@pytest.mark.parametrize("query", ["\x00\x01\x02", "a" * 64, " ".join(["dress"] * 32),
                                   "<script>alert(1)</script>", "' OR 1=1 --", "\u202e\u200b", "%00%ff"])
def test_odd_queries_are_fine(lenient_client, query):
    r = lenient_client.post("/recommend", json={"query": query, "k": 3})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("path", ["/recommend", "/explain", "/compare"])
@pytest.mark.parametrize("query, limit", [("a" * 512, "at most 64 characters, got one of 512"),
                                          ("dress " + "b" * 65, "at most 64 characters, got one of 65"),
                                          (" ".join(["dress"] * 33), "at most 32 words, got 33"),
                                          ("a " * 256, "at most 32 words, got 256")])
def test_word_length_and_count_limits(lenient_client, path, query, limit):
    """Scoring work grows with the words' number and length: past either limit, a 422 says which."""
    body = {"query": query, "item_id": "SKU-000001", "item_a": "SKU-000001", "item_b": "SKU-000002"}
    fields = {"/recommend": ("query",), "/explain": ("query", "item_id"),
              "/compare": ("query", "item_a", "item_b")}[path]
    r = post(lenient_client, {k: body[k] for k in fields}, path)
    assert_422_naming(r, "query")
    assert limit in r.json()["message"]


@pytest.mark.parametrize("body, field", [({"explain": 0}, "explain"), ({"explain": 1}, "explain"),
                                         ({"explain": "true"}, "explain"), ({"k": True}, "k"),
                                         ({"k": 5.0}, "k"), ({"offset": "3"}, "offset"),
                                         ({"head_weights": {"color": True}}, "head_weights.color")])
def test_strict_types(client, body, field):
    """A number is not a boolean, nor a boolean or a string a number."""
    assert_422_naming(post(client, {**VALID, **body}), field)


def test_odd_filter_values_are_fine(lenient_client):
    for filters in ({"color": []}, {"COLOR ": ["RED"]}, {"price": ["<38"]}, {"other": ["category:dress"]}):
        r = lenient_client.post("/recommend", json={"query": "dress", "filters": filters})
        assert r.status_code == 200, (filters, r.text)


def test_wrong_methods_and_paths(lenient_client):
    assert lenient_client.get("/recommend").status_code == 405
    assert lenient_client.get("/nothing-here").status_code == 404
    assert lenient_client.delete("/model").status_code == 405


@pytest.mark.parametrize("path", ["/recommend", "/explain", "/compare"])
def test_lone_surrogate_query_is_422(lenient_client, rec, path):
    """JSON may escape a lone surrogate; the answer, which echoes the query, cannot hold it."""
    item = rec.catalog.item_ids[0]
    body = {"/recommend": {}, "/explain": {"item_id": item}, "/compare": {"item_a": item, "item_b": item}}
    raw = json.dumps({"query": "dress \ud800", **body[path]}).encode()
    assert b"\\ud800" in raw
    r = lenient_client.post(path, content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["message"] == ("query: the answer cannot be written as JSON: the query holds a "
                                   "lone surrogate ('\\ud800')")


def test_like_this_item_s_limits_name_its_url_parameters(lenient_client, rec):
    item = rec.catalog.item_ids[0]
    r = lenient_client.get(f"/items/{item}/similar", params={"k": 100_000})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "k"], r.text
    r = lenient_client.get(f"/items/{item}/similar", params={"offset": 100_000_000})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "offset"], r.text
