"""benchmarks/known_item.py on a planted catalogue: topics come from their item, and an item named
by a word only it has is found first by every system."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recsys.known_item import TIE_TOLERANCE

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "known_item.py"
_spec = importlib.util.spec_from_file_location("known_item", SCRIPT)
ki = importlib.util.module_from_spec(_spec)
sys.modules["known_item"] = ki
_spec.loader.exec_module(ki)

TEXTS = [f"oak table model{i} sturdy legs" if i % 2 else f"red cotton dress style{i} summer"
         for i in range(40)]


def test_noise_free_topics_are_words_of_their_item():
    sampler = ki.TopicSampler(TEXTS)
    topics = sampler.sample(np.random.default_rng(0), 30, noise=0.0)
    assert len(topics) == 30
    for query, item in topics:
        assert set(query.split()) <= set(sampler.doc_words[item])
        assert 1 <= len(query.split()) <= 5


def test_noise_draws_words_from_the_catalogue():
    sampler = ki.TopicSampler(TEXTS)
    topics = sampler.sample(np.random.default_rng(1), 40, noise=1.0)
    vocabulary = set(sampler.occurrences)
    assert all(set(q.split()) <= vocabulary for q, _ in topics)
    assert any(not set(q.split()) <= set(sampler.doc_words[i]) for q, i in topics)


def test_a_word_only_one_item_has_finds_it_in_every_system(tmp_path, monkeypatch):
    items = pd.DataFrame({"item_id": [f"i{n}" for n in range(len(TEXTS))],
                          "title": TEXTS})
    monkeypatch.setitem(ki.LOADERS, "planted", lambda data: (items, ki.Schema()))

    class Unique(ki.TopicSampler):
        def sample(self, rng, n, noise):
            return [(f"model{i}", i) for i in range(1, 40, 2)] + [(f"style{i}", i) for i in range(0, 40, 2)]

    monkeypatch.setattr(ki, "TopicSampler", Unique)
    result = ki.run_dataset("planted", tmp_path, [0], 40, 0.0)
    for system in ("start", "start_other_unit", "bm25", "bm25s_plain"):
        assert result["mean"][system]["mrr"] == 1.0
        assert result["mean"][system]["success@10"] == 1.0
    assert result["start_over_bm25_95"] == {"mrr": [1.0, 1.0], "tie_aware_mrr": [1.0, 1.0]}
    assert "planted" in ki.table([result])


def test_the_ratio_interval_holds_the_ratio_and_narrows_with_more_topics():
    rng = np.random.default_rng(1)
    b = rng.uniform(0.0, 1.0, 4000)
    a = np.clip(b * 0.9 + rng.normal(0.0, 0.05, 4000), 0.0, 1.0)  # a start about 10% below
    few, many = ki.ratio_interval(a[:200], b[:200]), ki.ratio_interval(a, b)
    true = a.mean() / b.mean()
    assert few[0] < true < few[1] and many[0] < true < many[1]
    assert many[1] < 1.0  # 4,000 topics tell a 10% gap from none
    assert many[1] - many[0] < (few[1] - few[0]) / 3  # about sqrt(20) narrower


def test_tie_aware_reciprocal_rank_averages_over_the_tied_orders():
    scores = np.array([3.0, 2.0, 2.0, 2.0 * (1 + TIE_TOLERANCE / 2), 0.0, 1.0])
    # item 1 ties with 2 and 3 (within the tolerance) below item 0: ranks 2, 3, 4 equally likely
    assert ki.tie_aware_rr(scores, 1) == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)
    assert ki.tie_aware_rr(scores, 0) == 1.0
    assert ki.tie_aware_rr(scores, 5) == 1 / 5
    assert ki.tie_aware_rr(scores, 4) == 0.0  # matched nothing
