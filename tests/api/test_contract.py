"""The HTTP contract of PRODUCT.md section 5: every endpoint, its shape and its promises."""

from __future__ import annotations

from collections import Counter

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.facets import FACETS
from recsys.match_evidence import CELL_KINDS

from api_support import make_artifacts, make_settings, wait_ready

QUERY = "red casual cotton dress"


def recommend(client, **body) -> dict:
    r = client.post("/recommend", json={"query": QUERY, **body})
    assert r.status_code == 200, r.text
    return r.json()


def assert_additive(item: dict) -> None:
    exp = item["explanation"]
    assert [h["head"] for h in exp["heads"]] == list(FACETS)
    total = exp["prior"] + sum(h["contribution"] for h in exp["heads"])
    assert item["score"] == pytest.approx(total, abs=1e-4)


# ---- health, readiness, page, docs, metrics -----------------------------------------------------


def test_health_and_ready(client, rec):
    assert client.get("/health").json() == {"status": "ok"}
    r = client.get("/ready")
    assert r.status_code == 200
    assert r.json()["model_version"] == rec.version


def test_not_ready_without_a_model(tmp_path, data_dir):
    app = create_app(make_settings(tmp_path / "empty", data_dir))
    with TestClient(app) as c:
        assert c.get("/health").status_code == 200
        for _ in range(100):
            r = c.get("/ready")
            if r.json()["status"] != "loading":
                break
        assert r.status_code == 503
        assert r.json()["status"] == "failed" and "no model" in r.json()["detail"]
        r = c.post("/recommend", json={"query": "dress"})
        assert r.status_code == 503 and "ready" in r.json()["detail"]
        assert c.get("/model").status_code == 503


def test_background_load_becomes_ready(tmp_path, data_dir, v1):
    app = create_app(make_settings(make_artifacts(tmp_path / "a", v1), data_dir))
    with TestClient(app) as c:
        assert wait_ready(c)["model_version"] == v1.name
        assert recommend(c, k=1)["model_version"] == v1.name


def test_page_and_openapi(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/recommend", "/explain", "/compare", "/items/{item_id}", "/model", "/health", "/ready",
              "/admin/train", "/admin/jobs/{job_id}", "/admin/versions",
              "/admin/versions/{version}/activate"):
        assert p in paths, p


def test_metrics(client, rec):
    recommend(client, k=3)
    client.post("/recommend", json={"query": QUERY, "k": 0})
    text = client.get("/metrics").text
    assert 'recsys_http_request_duration_seconds_bucket{le="0.001",method="POST",route="/recommend"}' in text
    assert 'recsys_http_requests_total{method="POST",route="/recommend",status="200"}' in text
    assert 'recsys_http_requests_total{method="POST",route="/recommend",status="422"}' in text
    assert f'recsys_model_info{{version="{rec.version}"}} 1.0' in text


def test_request_id_is_echoed_or_made(client):
    r = client.get("/health", headers={"X-Request-ID": "abc-123"})
    assert r.headers["x-request-id"] == "abc-123"
    made = client.get("/health").headers["x-request-id"]
    assert len(made) == 32
    bad = client.get("/health", headers={"X-Request-ID": "no spaces\tor tabs"}).headers["x-request-id"]
    assert bad != "no spaces\tor tabs" and len(bad) == 32


# ---- /recommend ---------------------------------------------------------------------------------


def test_recommend_shape_and_additivity(client, rec):
    r = client.post("/recommend", json={"query": QUERY, "k": 10})
    body = r.json()
    assert set(body) >= {"query", "tokens", "model_version", "items", "took_ms", "total", "offset",
                         "unmatched_tokens"}
    assert body["unmatched_tokens"] == []  # every word of QUERY names something the catalogue has
    assert body["query"] == QUERY and body["tokens"] == ["red", "casual", "cotton", "dress"]
    assert body["model_version"] == rec.version == r.headers["x-model-version"]
    assert body["total"] == rec.catalog.n_items and body["took_ms"] >= 0
    items = body["items"]
    assert [i["rank"] for i in items] == list(range(1, 11))
    assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)
    for item in items:
        assert set(item) == {"item_id", "title", "rank", "score", "attributes", "numbers", "value_names", "explanation"}
        assert set(item["attributes"]) == set(FACETS)
        assert set(item["explanation"]) == {"prior", "summary", "matched", "heads", "history", "rules",
                                              "synonyms"}
        assert item["explanation"]["rules"] == item["explanation"]["synonyms"] == []  # none in this store
        assert item["explanation"]["matched"] == any(m["counts"] for h in item["explanation"]["heads"]
                                                     for m in h["matches"])
        for h in item["explanation"]["heads"]:
            assert set(h) == {"head", "contribution", "matches"}
            for m in h["matches"]:
                assert set(m) == {"query_token", "attribute", "weight", "evidence", "counts"} and 0 <= m["weight"] <= 1
                assert m["evidence"] in CELL_KINDS
        assert_additive(item)


def test_recommend_matches_the_library(client, rec):
    expected = rec.recommend(QUERY, k=10)
    got = recommend(client, k=10)
    assert [i["item_id"] for i in got["items"]] == [i.item_id for i in expected.items]
    assert [i["score"] for i in got["items"]] == pytest.approx([i.score for i in expected.items])


def _key_order(x):
    """The JSON's keys in order, all the way down (dict equality ignores order)."""
    if isinstance(x, dict):
        return [(k, _key_order(v)) for k, v in x.items()]
    if isinstance(x, list):
        return [_key_order(v) for v in x]
    return None


@pytest.mark.parametrize("body", [
    {"k": 10},
    {"k": 3, "offset": 2, "explain": False},
    {"k": 5, "head_weights": {"color": 0.0, "style": 2.0}, "filters": {"color": ["red", "blue"]}},
    {"query": "", "k": 2},
    {"query": "zzqx nothing matches", "k": 4},
    {"k": 5, "candidates": []},
    {"k": 2, "facet_counts": True, "filters": {"color": ["red"]}},
])
def test_recommend_json_is_the_documented_model(client, rec, body):
    """/recommend builds its JSON without pydantic; it must be what `RecommendOut` would write."""
    from api.schemas import RecommendOut

    answer = client.post("/recommend", json={"query": QUERY, **body})
    assert answer.status_code == 200, answer.text
    got = answer.json()
    assert got["request_id"] == answer.headers["x-request-id"] and len(got["request_id"]) == 32
    req = {"query": QUERY, **body}
    result = rec.recommend(req["query"], k=req["k"], offset=req.get("offset", 0),
                           filters=req.get("filters"), candidates=req.get("candidates"),
                           head_weights=req.get("head_weights"), explain=req.get("explain", True))
    expected = RecommendOut.model_validate({
        "request_id": got["request_id"], "query": result.query, "tokens": result.tokens,
        "model_version": result.model_version,
        "offset": req.get("offset", 0), "total": result.total,
        "unmatched_tokens": result.unmatched_tokens, "items": result.items,
        "facet_counts": rec.facet_counts(req["query"], filters=req.get("filters"))
        if req.get("facet_counts") else None,
        "took_ms": got["took_ms"]}).model_dump(mode="json")
    assert got == expected
    assert _key_order(got) == _key_order(expected)


def test_recommend_is_documented_in_openapi(client):
    op = client.get("/openapi.json").json()["paths"]["/recommend"]["post"]
    schema = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/RecommendOut"}


def _where_it_runs(client, monkeypatch, path: str, body: dict) -> tuple[list[str], dict]:
    """Where the route's work ran for one request of `body` ("thread" or "event loop"), and the
    answer."""
    import asyncio

    from api.routes import compare, explain
    from api.routes import recommend as rec_route

    module, name = {"/recommend": (rec_route, "_recommend"), "/explain": (explain, "_explain"),
                    "/compare": (compare, "_compare")}[path]
    work, where = getattr(module, name), []

    def spy(*args):
        try:
            asyncio.get_running_loop()
            where.append("event loop")
        except RuntimeError:
            where.append("thread")
        return work(*args)

    monkeypatch.setattr(module, name, spy)
    r = client.post(path, json=body)
    monkeypatch.undo()
    assert r.status_code == 200, r.text
    return where, r.json()


@pytest.mark.parametrize("path, body", [
    ("/recommend", {"query": QUERY, "k": 10}),
    ("/recommend", {"query": QUERY, "k": 10, "filters": {"color": ["red"]}}),
    ("/recommend", {"query": QUERY, "k": 10, "exclude": ["SKU-000001"]}),
    ("/recommend", {"query": QUERY, "k": 10, "head_weights": {"color": 2.0}}),
    ("/recommend", {"query": QUERY, "k": 50}),
    ("/explain", {"query": QUERY, "item_id": "SKU-000001"}),
    ("/compare", {"query": QUERY, "item_a": "SKU-000001", "item_b": "SKU-000002"}),
])
def test_scoring_runs_off_the_event_loop(client, rec, monkeypatch, path, body):
    """Scoring and explaining run in a worker thread: the event loop stays free for others. The
    first /recommend of words never seen (the caches emptied) is one of them."""
    rec.index.clear_caches()
    assert _where_it_runs(client, monkeypatch, path, body)[0] == ["thread"]
    if path == "/recommend":  # the words are seen now; what else the request asks keeps it there
        assert _where_it_runs(client, monkeypatch, path, body)[0] == (
            ["event loop"] if body.keys() == {"query", "k"} and body["k"] <= 20 else ["thread"])


@pytest.mark.parametrize("explain", [False, True])
def test_a_short_recommend_answers_on_the_event_loop_as_a_thread_would(client, rec, monkeypatch,
                                                                      explain):
    """A plain top 10 of words already seen is answered at once on the loop (the hop to a thread
    cost more than the work), with the answer the thread gave."""
    body = {"query": QUERY, "k": 10, "explain": explain}
    rec.index.clear_caches()
    answers = []
    for expected in (["thread"], ["event loop"]):
        where, answer = _where_it_runs(client, monkeypatch, "/recommend", body)
        assert where == expected
        answers.append({k: v for k, v in answer.items() if k not in ("request_id", "took_ms")})
    assert answers[0] == answers[1] and len(answers[0]["items"]) == 10


def test_a_request_over_its_time_budget_is_503(rec, v1, data_dir, tmp_path, monkeypatch):
    import threading
    import time as _time

    from fastapi.testclient import TestClient

    from api.routes import recommend as rec_route
    from cli.app import create_app

    from api_support import make_artifacts, make_settings

    work, finished = rec_route._recommend, threading.Event()

    def slow(*a):
        _time.sleep(0.5)
        answer = work(*a)
        finished.set()
        return answer

    monkeypatch.setattr(rec_route, "_recommend", slow)
    rec.index.clear_caches()  # words never seen: the request goes to a worker thread
    settings = make_settings(make_artifacts(tmp_path / "a", v1), data_dir, request_timeout_s=0.05)
    with TestClient(create_app(settings, recommender=rec)) as c:
        r = c.post("/recommend", json={"query": QUERY})
        assert r.status_code == 503 and "time budget of 0.05 s" in r.json()["detail"]
        assert not finished.is_set()  # answered without waiting for the work
        assert r.headers["retry-after"] == "1"


def test_offset_pages(client):
    ten = recommend(client, k=10)["items"]
    page2 = recommend(client, k=5, offset=5)["items"]
    assert [i["item_id"] for i in page2] == [i["item_id"] for i in ten[5:]]
    assert [i["rank"] for i in page2] == [6, 7, 8, 9, 10]
    assert [i["score"] for i in page2] == pytest.approx([i["score"] for i in ten[5:]])


def test_offset_past_the_end_is_empty(client, rec):
    body = recommend(client, k=5, offset=rec.catalog.n_items)
    assert body["items"] == [] and body["total"] == rec.catalog.n_items


def _common(rec, facet: str, prefix: str = "") -> list[str]:
    counts = Counter(a for i in range(rec.catalog.n_items) for a in rec.catalog.attribute_labels(i)[facet]
                     if a.startswith(prefix))
    return [a for a, _ in counts.most_common(3)]


def test_filters_or_within_a_key(client, rec):
    colors = _common(rec, "color")[:2]
    items = recommend(client, k=50, filters={"color": colors})["items"]
    assert items
    assert all(set(i["attributes"]["color"]) & set(colors) for i in items)
    assert {c for i in items for c in i["attributes"]["color"]} & set(colors) == set(colors)


def test_filters_and_across_keys(client, rec):
    color = _common(rec, "color")[0]
    category = _common(rec, "other", "category:")[0].split(":", 1)[1]
    body = recommend(client, k=50, filters={"color": [color], "category": category})  # a bare string is one value
    assert body["items"]
    for i in body["items"]:
        assert color in i["attributes"]["color"] and f"category:{category}" in i["attributes"]["other"]
    only_color = recommend(client, k=1, filters={"color": [color]})["total"]
    assert body["total"] < only_color


def test_unknown_filter_key_is_422(client):
    r = client.post("/recommend", json={"query": QUERY, "filters": {"flavour": ["sweet"]}})
    assert r.status_code == 422 and "flavour" in r.json()["detail"]


def test_a_filter_value_that_selects_nothing_is_422_naming_the_values(client, rec):
    values = rec.catalog.filter_values("color")
    r = client.post("/recommend", json={"query": QUERY, "filters": {"color": ["zqzq"]}})
    assert r.status_code == 422
    assert r.json()["detail"] == f"filters: 'color' has no value 'zqzq'. Its values: {', '.join(values)}"
    ok = client.post("/recommend", json={"query": QUERY, "filters": {"color": [values[0].upper() + "s"]}})
    assert ok.status_code == 200 and ok.json()["total"] > 0  # case and plural read as query words


def test_exclude(client):
    first = recommend(client, k=3)
    top = first["items"][0]["item_id"]
    body = recommend(client, k=3, exclude=[top, "not-an-item"])
    assert top not in [i["item_id"] for i in body["items"]]
    assert body["items"][0]["item_id"] == first["items"][1]["item_id"]
    assert body["total"] == first["total"] - 1


def test_candidates_rerank(client, rec):
    full = {i["item_id"]: i["score"] for i in recommend(client, k=100, explain=False)["items"]}
    picked = list(full)[::-7][:6]  # from the bottom of the top 100, in an order unrelated to score
    body = recommend(client, k=10, candidates=picked)
    assert body["total"] == len(picked)
    got = [i["item_id"] for i in body["items"]]
    assert sorted(got) == sorted(picked)
    assert got == sorted(picked, key=lambda x: -full[x])
    for i in body["items"]:
        assert i["score"] == pytest.approx(full[i["item_id"]], abs=1e-5)


def test_unknown_candidate_is_404(client):
    r = client.post("/recommend", json={"query": QUERY, "candidates": ["no-such-item"]})
    assert r.status_code == 404 and "no-such-item" in r.json()["detail"]


@pytest.mark.parametrize("head", FACETS)
def test_head_weight_zero_mutes_the_head(client, head):
    body = recommend(client, k=10, head_weights={head: 0.0})
    for item in body["items"]:
        contributions = {h["head"]: h["contribution"] for h in item["explanation"]["heads"]}
        assert contributions[head] == 0.0
        assert_additive(item)


def test_head_weights_scale_contributions(client):
    one = recommend(client, k=1)["items"][0]
    two = recommend(client, k=1, head_weights={"style": 2.0}, candidates=[one["item_id"]])["items"][0]
    c1 = {h["head"]: h["contribution"] for h in one["explanation"]["heads"]}
    c2 = {h["head"]: h["contribution"] for h in two["explanation"]["heads"]}
    assert c2["style"] == pytest.approx(2 * c1["style"], rel=1e-5)
    assert c2["color"] == pytest.approx(c1["color"], rel=1e-5)


def test_explain_false(client):
    with_exp = recommend(client, k=5)
    body = recommend(client, k=5, explain=False)
    assert all(i["explanation"] is None for i in body["items"])
    assert [i["item_id"] for i in body["items"]] == [i["item_id"] for i in with_exp["items"]]


def test_empty_and_unmatched_queries_still_rank(client):
    for q in ("", "zzqx unmatched gibberish", "!!! ???", "ñandú 🦄 連衣裙"):
        body = recommend(client, query=q, k=3)
        assert len(body["items"]) == 3
        for item in body["items"]:
            assert_additive(item)


# ---- /explain, /compare, /items, /model ---------------------------------------------------------


def test_explain(client, rec):
    top = recommend(client, k=1)["items"][0]
    r = client.post("/explain", json={"query": QUERY, "item_id": top["item_id"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) >= {"query", "item_id", "tokens", "score", "prior", "heads", "model_version"}
    assert body["title"] == top["title"]
    assert body["score"] == pytest.approx(top["score"], abs=1e-4)
    assert body["score"] == pytest.approx(body["prior"] + sum(h["contribution"] for h in body["heads"]), abs=1e-4)
    assert [h["head"] for h in body["heads"]] == list(FACETS)
    for h in body["heads"]:
        assert set(h) >= {"head", "contribution", "attributes", "attention", "erasure"}
        assert h["attributes"][:-1] == top["attributes"][h["head"]]  # then the no-match slot
        assert len(h["attention"]) == len(body["tokens"])
        for row in h["attention"]:
            assert len(row) == len(h["attributes"]) and sum(row) == pytest.approx(1.0, abs=1e-4)
        assert [e["attribute"] for e in h["erasure"]] == h["attributes"][:-1]
        # each cell's kind of evidence (recsys/match_evidence.py), the no-match slot left out
        assert [len(row) for row in h["evidence"]] == [len(h["attributes"]) - 1] * len(body["tokens"])
        kinds = {"", "exact", "description", "near spelling", "words run together", "learned from clicks"}
        assert all(c in kinds or c.startswith("learned from ") for row in h["evidence"] for c in row)
    other = next(h for h in body["heads"] if h["head"] == "other")
    assert other["evidence"][body["tokens"].index("dress")][other["attributes"].index("category:dress")] == "exact"


def test_explain_unknown_item_is_404(client):
    r = client.post("/explain", json={"query": QUERY, "item_id": "nope"})
    assert r.status_code == 404 and "nope" in r.json()["detail"]


def test_compare(client):
    a, b = (i["item_id"] for i in recommend(client, k=2, explain=False)["items"])
    r = client.post("/compare", json={"query": QUERY, "item_a": a, "item_b": b})
    assert r.status_code == 200, r.text
    body = r.json()
    ea = client.post("/explain", json={"query": QUERY, "item_id": a}).json()
    assert body["score_a"] == pytest.approx(ea["score"], abs=1e-5) and body["score_a"] >= body["score_b"]
    assert [h["head"] for h in body["heads"]] == list(FACETS)
    for h in body["heads"]:
        assert h["difference"] == pytest.approx(h["contribution_a"] - h["contribution_b"], abs=1e-6)
    total = body["prior_difference"] + sum(h["difference"] for h in body["heads"])
    assert total == pytest.approx(body["score_a"] - body["score_b"], abs=1e-4)
    r = client.post("/compare", json={"query": QUERY, "item_a": a, "item_b": "missing"})
    assert r.status_code == 404


def test_items(client, rec):
    item_id = rec.catalog.item_ids[7]
    body = client.get(f"/items/{item_id}").json()
    assert body["item_id"] == item_id and body["title"] == rec.catalog.titles[7]
    assert body["attributes"] == rec.catalog.attribute_labels(7)
    assert client.get("/items/does-not-exist").status_code == 404
    assert client.get("/items/a/b/../c").status_code == 404


def test_model(client, rec):
    body = client.get("/model").json()
    assert body["version"] == rec.version and body["facets"] == list(FACETS)
    assert body["n_items"] == rec.catalog.n_items
    assert body["attributes"] == {f: len(rec.catalog.vocab[f]) for f in FACETS}  # the page hides 0s
    assert body["data"]["items"]["fingerprint"].startswith("sha256:")
    assert body["metrics"]["held_out"]["model"]["ndcg@10"] >= 0
    assert body["trained_at"] and body["loaded_at"]
    assert body["data"]["items"]["file"] == "items.csv"  # no server path
    assert "/" not in str(body["data"])


def test_unknown_words_come_back_as_unmatched_and_no_item_matches(client):
    body = client.post("/recommend", json={"query": "zxqv blorf", "k": 5}).json()
    assert body["unmatched_tokens"] == ["zxqv", "blorf"]
    assert body["items"] and all(not i["explanation"]["matched"] for i in body["items"])
    assert all(not h["matches"] for i in body["items"] for h in i["explanation"]["heads"])


def test_compare_answers_with_a_reason_line(client, rec):
    items = client.post("/recommend", json={"query": QUERY, "k": 10}).json()["items"]
    body = client.post("/compare", json={"query": QUERY, "item_a": items[0]["item_id"],
                                         "item_b": items[-1]["item_id"]}).json()
    assert body["summary"].startswith(f"A scores {body['score_a'] - body['score_b']:+.2f} against B")
