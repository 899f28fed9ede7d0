"""The closed loop (benchmarks/closed_loop.py), smaller: simulated shoppers query a real `recsys
serve`, post their events, and a retrain from those events beats the served start on the
generator's judgments."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recsys.synthetic import generate

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("closed_loop", ROOT / "benchmarks" / "closed_loop.py")
closed_loop = importlib.util.module_from_spec(_spec)
sys.modules["closed_loop"] = closed_loop
_spec.loader.exec_module(closed_loop)

# Judged NDCG@10 gained by the retrain at 3,000 items and 12,000 events: +0.025 to +0.065 over
# seeds 0-5 (seed 0: +0.064; README, "The closed loop"); half the smallest is the bar. At 8,000
# events one seed of six lost, so fewer events would not make a test that holds.
MARGIN = 0.0125
N_EVENTS = 12_000


@pytest.fixture(scope="module")
def shop(module_tmp) -> Path:
    out = module_tmp
    generate(out, n_items=300, n_queries=400, seed=3)
    return out


def test_the_shoppers_truth_is_the_generators(shop):
    """Every judged (query, item) gets the generator's grade from the simulated shoppers."""
    shoppers = closed_loop.Shoppers(shop)
    judgments = pd.read_csv(shop / "judgments.csv", dtype={"item_id": str})
    assert len(judgments) > 100
    grades = [shoppers.grade(q, i) for q, i in zip(judgments["query"], judgments["item_id"])]
    assert grades == judgments["grade"].tolist()
    # and an unjudged item of a judged query is graded 0
    query = judgments["query"].iloc[0]
    judged = set(judgments.loc[judgments["query"] == query, "item_id"])
    other = next(i for i in shoppers.row if i not in judged)
    assert shoppers.grade(query, other) == 0


def test_shoppers_see_every_item_and_buy_only_whole_matches(shop):
    shoppers = closed_loop.Shoppers(shop)
    query = str(shoppers.queries[0])
    share = shoppers.share(query)
    order = np.argsort(-share, kind="stable")
    shown = [list(shoppers.row)[i] for i in order[:10]]
    rng = np.random.default_rng(0)
    clicks_at: dict[int, int] = {}
    for _ in range(400):
        events = shoppers.react(rng, query, shown)
        assert [p for t, p in events if t == "impression"] == list(range(1, 11))
        for t, p in events:
            if t == "click":
                clicks_at[p] = clicks_at.get(p, 0) + 1
            if t in ("cart", "purchase"):
                assert share[shoppers.row[shown[p - 1]]] == 1.0
                assert ("click", p) in events
    # position bias: rank 1 is examined every time, rank 10 a tenth of the time
    assert clicks_at.get(1, 0) > 3 * clicks_at.get(10, 0)


def test_a_retrain_from_shopper_events_beats_the_served_start(tmp_path):
    r = closed_loop.run_loop(tmp_path, n_items=3000, n_queries=4000, n_events=N_EVENTS, seed=0)
    assert r["events"] >= N_EVENTS and r["by_type"]["impression"] == 10 * r["answers"]
    assert r["by_type"]["click"] > 0 and r["by_type"]["purchase"] > 0
    assert r["served_versions"] == [r["served"]]  # every answer came from the weak start
    assert r["activated"], r["decision"]
    assert r["ndcg_retrained_model"] >= r["ndcg_served"] + MARGIN, r
