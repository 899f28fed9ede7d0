"""Facet counts through POST /recommend on a real `recsys serve` (issue 31's acceptance): equal to a
brute-force count, a plain Python loop over the catalogue, on seeded random queries and filters;
an unknown key is a 422 naming the field.

The brute force reads each item as it is: matched when its explanation, computed head by head
(`explain.explain_item`), says so (every item when none is); in a filter when it holds an
attribute the filter's value selects; counted for a key when it passes every filter but that
key's own.
"""

from __future__ import annotations

import random

import httpx
import numpy as np
import pytest

from recsys.explain import explain_item
from tests.live_server import wait_ready

from api_support import make_artifacts
from test_server import running

N_CASES = 12


@pytest.fixture(scope="module")
def base(module_tmp, v1, data_dir):
    tmp = module_tmp
    artifacts = make_artifacts(tmp / "artifacts", v1)
    log = tmp / "server.log"
    with running(["--model", str(artifacts)], {"RECSYS_DATA_DIR": str(data_dir)}, log) as (url, proc):
        wait_ready(url, proc, log, timeout=120)
        yield url


def _held(catalog, i: int) -> set[tuple[str, int]]:
    return {(f, int(a)) for f in catalog.facets for a in catalog.attributes_of(i, f)}


def _brute_force(rec, query: str, filters: dict[str, list[str]], keys: list[str]) -> dict:
    catalog = rec.catalog
    state = rec.index.query_state(query)
    weights = np.ones(len(rec.facets), dtype=np.float32)
    matched = [explain_item(rec.index, state, i, weights).matched for i in range(catalog.n_items)]
    if not any(matched):
        matched = [True] * catalog.n_items
    held = [_held(catalog, i) for i in range(catalog.n_items)]

    def has(i: int, key: str, value: str) -> bool:
        return any(pair in held[i] for pair in catalog.filter_columns(key, value))

    def passes(i: int, left_out: str | None) -> bool:
        return all(any(has(i, k, v) for v in values) for k, values in filters.items()
                   if catalog.filter_key(k) != left_out)

    facets = {}
    for key in keys:
        own = catalog.filter_key(key)
        counted = [i for i in range(catalog.n_items) if matched[i] and passes(i, own)]
        counts = {v: sum(has(i, key, v) for i in counted) for v in catalog.listed_values(key)}
        facets[own] = {v: c for v, c in counts.items() if c}
    return {"matching": sum(matched[i] and passes(i, None) for i in range(catalog.n_items)), "facets": facets}


def _random_case(rng: random.Random, rec, keys: list[str]) -> tuple[str, dict[str, list[str]]]:
    catalog = rec.catalog
    words = sorted({w for key in keys for value in catalog.filter_values(key) for w in value.split()})
    query = " ".join(rng.sample(words, rng.randint(1, 3)) + rng.sample(["crimson", "zqxv", "classy", ""], 1))
    filters = {}
    for key in rng.sample(keys, rng.randint(0, 2)):
        values = catalog.filter_values(key)
        filters[key.upper() if rng.random() < 0.3 else key] = rng.sample(values, min(len(values), rng.randint(1, 2)))
    return query.strip(), filters


def test_counts_equal_a_brute_force_count(base, rec):
    rng = random.Random(31)
    with httpx.Client(base_url=base, timeout=30) as http:
        for case in range(N_CASES):
            # every key, or a few: style and `other` give an item several values
            asked = True if case % 2 == 0 else rng.sample(["color", "category", "style", "other", "rating"], 2)
            keys = rec.facet_counter.default_keys() if asked is True else asked
            query, filters = _random_case(rng, rec, rec.facet_counter.default_keys())
            r = http.post("/recommend", json={"query": query, "k": 3, "filters": filters, "facet_counts": asked})
            assert r.status_code == 200, r.text
            got = r.json()["facet_counts"]
            expected = _brute_force(rec, query, filters, keys)
            assert got["matching"] == expected["matching"], (query, filters)
            assert [f["key"] for f in got["facets"]] == list(expected["facets"])
            for f in got["facets"]:
                listed = {v["value"]: v["count"] for v in f["values"]}
                assert listed == expected["facets"][f["key"]], (query, filters, f["key"])
                counts = [v["count"] for v in f["values"]]
                assert counts == sorted(counts, reverse=True) and f["more"] == 0


def test_default_keys_are_the_columns(base):
    with httpx.Client(base_url=base, timeout=30) as http:
        r = http.post("/recommend", json={"query": "dress", "k": 1, "facet_counts": True})
    keys = [f["key"] for f in r.json()["facet_counts"]["facets"]]
    # items.csv's columns but item_id and title: the text's words and `other` are not listed
    assert keys == sorted(["color", "style", "quality", "category", "material", "brand", "price", "rating"])


def test_without_asking_there_are_none(base):
    with httpx.Client(base_url=base, timeout=30) as http:
        r = http.post("/recommend", json={"query": "dress", "k": 1})
    assert r.json()["facet_counts"] is None


@pytest.mark.parametrize("asked, named", [(["colr"], "'colr'"), (["color", ""], "facet_counts"),
                                          ("color", "facet_counts"), (["x"] * 33, "facet_counts")])
def test_a_bad_key_is_a_422_naming_the_field(base, asked, named):
    with httpx.Client(base_url=base, timeout=30) as http:
        r = http.post("/recommend", json={"query": "dress", "facet_counts": asked})
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert "facet_counts" in message and named in message


def test_zero_results_offer_queries_that_match(base):
    """A query whose words match nothing is answered by prior and offers "did you mean"; each
    offered query, asked, matches."""
    with httpx.Client(base_url=base, timeout=30) as http:
        body = http.post("/recommend", json={"query": "drs", "k": 3}).json()
        assert body["unmatched_tokens"] == ["drs"] and not any(i["explanation"]["matched"] for i in body["items"])
        assert body["did_you_mean"] and body["did_you_mean"][0] == "dress"
        for text in body["did_you_mean"]:
            again = http.post("/recommend", json={"query": text, "k": 3}).json()
            assert again["unmatched_tokens"] == [] and again["did_you_mean"] == []
