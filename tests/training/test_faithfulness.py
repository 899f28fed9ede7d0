"""Faithfulness of the explanations (training/faithfulness.py) on planted data with known answers.

The planted catalogue is every colour x style x category x brand; shoppers name a colour and a
category (often with a synonym the catalogue never uses) and click only items with both. So the
colour and `other` (category) heads must carry the ranking, style and quality must not matter,
and each probe word's head must point at its value.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch

from recsys.explain import HeadAttention, head_attention
from recsys.facets import FACETS
from recsys.index.query import QueryState
from recsys.recommender import top_k
from training.evaluate import probe_kind
from training.faithfulness import (
    erasure_drops,
    faithfulness_report,
    format_report,
    gradient_x_input,
    integrated_gradients,
    top_attended,
    uniform_head_outputs,
)
from training.fit import TrainConfig, train_recommender
from training.train import TrainInputs, load_training_data

COLORS = {"red": ["scarlet", "crimson"], "blue": ["azure", "cobalt"],
          "green": ["emerald", "olive"], "black": ["ebony", "onyx"]}
CATEGORIES = {"dress": ["gown", "frock"], "shirt": ["blouse", "tee"], "shoes": ["sneakers", "kicks"]}
STYLES = ["casual", "formal"]
BRANDS = ["Acme", "Borea"]


def planted(folder):
    items = pd.DataFrame([
        {"item_id": f"P{n:03d}", "title": f"{brand} {category}", "color": color, "style": style,
         "quality": "premium" if n % 3 == 0 else "standard", "category": category}
        for n, (color, style, category, brand) in enumerate(
            itertools.product(COLORS, STYLES, CATEGORIES, BRANDS))
    ])
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(400):
        color, category = rng.choice(list(COLORS)), rng.choice(list(CATEGORIES))
        words = [rng.choice(COLORS[color] + [color]), rng.choice(CATEGORIES[category] + [category])]
        query = " ".join(words if rng.random() < 0.5 else words[::-1])
        good = items[(items.color == color) & (items.category == category)].item_id.to_numpy()
        rows += [(query, item, 1) for item in rng.choice(good, 2, replace=False)]
        rows += [(query, item, int(item in good)) for item in rng.choice(items.item_id, 6, replace=False)]
    judgments, probes = [], []
    for color, category in itertools.product(COLORS, CATEGORIES):
        cw, gw = COLORS[color][0], CATEGORIES[category][1]
        query = f"{cw} {gw}"
        good = items[(items.color == color) & (items.category == category)].item_id
        judgments += [(query, item, 2) for item in good]
        probes += [(query, cw, "color", color), (query, gw, "other", category)]
    folder.mkdir(parents=True, exist_ok=True)
    items.to_csv(folder / "items.csv", index=False)
    pd.DataFrame(rows, columns=["query", "item_id", "label"]).to_csv(folder / "interactions.csv", index=False)
    return (folder, pd.DataFrame(judgments, columns=["query", "item_id", "grade"]),
            pd.DataFrame(probes, columns=["query", "word", "facet", "value"]))


@pytest.fixture(scope="module")
def trained(module_tmp):
    folder, judgments, probes = planted(module_tmp)
    catalog, rows, _ = load_training_data(TrainInputs(folder / "items.csv", folder / "interactions.csv"))
    # the fitted weights served whole: with about 40 held-aside queries the share rule keeps the
    # lexical start for most seeds (3 of 4 measured), and the start's attention on a synonym's
    # association stays below the no-match slot, so these checks would measure the start
    rec, report = train_recommender(catalog, rows, TrainConfig(seed=0, alphas=(1.0,)))
    assert report.alpha == 1.0
    return rec, judgments, probes


@pytest.fixture(scope="module")
def report(trained):
    rec, judgments, probes = trained
    return faithfulness_report(rec, None, probes=probes, judgments=judgments, k=10, seed=0)


# ---- closed forms against autograd, on hand-made heads ---------------------------------------

def _head(logits, no_match, values) -> HeadAttention:
    exps = np.exp(np.asarray(logits, dtype=np.float64))
    nm = np.exp(np.asarray(no_match, dtype=np.float64))
    den = exps.sum(1) + nm
    weights = np.concatenate([exps, nm[:, None]], 1) / den[:, None]
    return HeadAttention(np.arange(exps.shape[1]), [f"a{m}" for m in range(exps.shape[1])],
                         weights, exps, den, np.asarray(values, dtype=np.float64))


def _torch_output(att: HeadAttention, p: torch.Tensor) -> torch.Tensor:
    e = torch.from_numpy(att.exps)
    nm = torch.from_numpy(att.den - att.exps.sum(1))
    v = torch.from_numpy(att.values)
    return ((e * p * v).sum(1) / (nm + (e * p).sum(1))).sum()


def test_gradients_match_autograd_and_ig_is_complete():
    rng = np.random.default_rng(3)
    steps = 20000
    alphas = torch.from_numpy((np.arange(steps) + 0.5) / steps)
    for _ in range(5):
        att = _head(rng.normal(0, 2, (3, 4)), rng.normal(0, 1, 3), rng.uniform(0.1, 2, 4))
        p = torch.ones(4, dtype=torch.float64, requires_grad=True)
        _torch_output(att, p).backward()
        assert np.allclose(gradient_x_input(att), p.grad.numpy(), atol=1e-10)
        ig = integrated_gradients(att)
        assert abs(ig.sum() - att.output) < 1e-9  # completeness
        # integrated gradients by autograd: midpoint rule along p = alpha * 1, fine steps
        q = alphas[:, None].repeat(1, 4).requires_grad_(True)  # (S, 4)
        e = torch.from_numpy(att.exps)[None]  # (1, T, M)
        nm = torch.from_numpy(att.den - att.exps.sum(1))[None]  # (1, T)
        v = torch.from_numpy(att.values)
        qq = q[:, None, :]  # (S, 1, M)
        ((e * qq * v).sum(2) / (nm + (e * qq).sum(2))).sum().backward()
        numeric = q.grad.numpy().mean(0)
        assert np.allclose(ig, numeric, rtol=1e-3, atol=1e-3)


def test_known_answers_on_a_hand_made_head():
    # one token attends to a1 (logit 4) with a high value; a0 and a2 barely attended
    att = _head([[-4.0, 4.0, -4.0]], [0.0], [1.0, 2.0, 1.0])
    assert top_attended(att) == 1
    drops = erasure_drops(att)
    assert drops[1] > drops[0] and drops[1] > drops[2]
    assert np.argmax(gradient_x_input(att)) == 1 and np.argmax(integrated_gradients(att)) == 1
    # the most attended attribute is worth almost nothing: removing it *raises* the output
    # (attention moves to no-match and the others), and the gradients disagree with attention
    att = _head([[-1.0, 4.0, -1.0]], [0.0], [3.0, 0.01, 3.0])
    assert top_attended(att) == 1
    assert erasure_drops(att)[1] < 0 < erasure_drops(att)[0]
    assert np.argmax(gradient_x_input(att)) != 1


def test_uniform_outputs_equal_the_index_with_flat_logits(trained):
    rec = trained[0]
    state = rec.index.query_state("scarlet gown")
    flat = QueryState(state.tokens, {f: np.zeros_like(v) for f, v in state.logits.items()},
                       {f: np.zeros_like(v) for f, v in state.no_match.items()}, state.evidence)
    expected = rec.index.head_outputs(flat)
    assert np.allclose(uniform_head_outputs(rec, len(state.tokens)), expected, atol=1e-5)


# ---- the report on the trained planted model ---------------------------------------------------

def test_report_shape_and_json(report):
    import json

    json.dumps(report)
    assert report["queries"] == 12 and report["k"] == 10
    for part in ("erasure_agreement",):
        assert set(report[part]["heads"]) == set(FACETS)
    assert set(report["uniform_attention"]["heads"]) == set(FACETS)
    text = format_report(report)
    assert "erasure agreement" in text and "uniform attention" in text


def test_probe_words_point_at_their_values(report):
    acc = report["explanation_accuracy"]
    assert acc["cases"] >= 12 * 2 * 3  # each probe x the top items that have the value
    assert acc["accuracy"] >= 0.9
    for part in ("kinds", "heads"):  # each case counted once in each breakdown
        assert sum(p["cases"] for p in acc[part].values()) == acc["cases"]
        hits = sum(p["accuracy"] * p["cases"] for p in acc[part].values())
        assert hits == pytest.approx(acc["accuracy"] * acc["cases"])


@pytest.mark.parametrize(("word", "value", "kind"), [
    ("blue", "blue", "the value"), ("blue", "navy blue", "a word of it"), ("navy", "blue", "synonym"),
    ("bluer", "blue", "synonym")])
def test_probe_kinds(word, value, kind):
    assert probe_kind(word, value) == kind


def test_erasing_the_most_attended_attribute_hurts_most(report):
    er = report["erasure_agreement"]
    assert er["cases"] > 100
    assert er["agreement"] >= 0.9
    assert er["mean_drop_top"] > er["mean_drop_random"]


def test_uniform_attention_costs_ndcg_where_the_answer_is(report):
    uni = report["uniform_attention"]
    assert uni["ndcg@10"] >= 0.9  # the planted task is easy
    heads = uni["heads"]
    # colour and category decide relevance: flattening their attention must cost a lot
    assert heads["color"]["ndcg_drop"] > 0.3
    assert heads["other"]["ndcg_drop"] > 0.15
    # style and quality never matter to these shoppers
    assert abs(heads["style"]["ndcg_drop"]) < 0.1
    assert abs(heads["quality"]["ndcg_drop"]) < 0.1
    assert uni["all_heads"]["ndcg_drop"] > 0.5


def test_gradient_attributions_agree_with_attention(report):
    ga = report["gradient_agreement"]
    assert ga["gradient_x_input"]["agreement"] >= 0.8
    assert ga["integrated_gradients"]["agreement"] >= 0.8
    assert ga["integrated_gradients"]["max_completeness_gap"] < 1e-2


def test_colour_head_of_a_red_dress_points_at_red(trained):
    rec = trained[0]
    state = rec.index.query_state("scarlet gown")
    everything = np.ones(rec.catalog.n_items, dtype=bool)
    best = int(top_k(rec.scores("scarlet gown"), everything, 1)[0])
    att = head_attention(rec.index, state, best, "color")
    assert att.labels[top_attended(att)].endswith("red")


def test_no_inputs_gives_none_parts(trained):
    rec = trained[0]
    out = faithfulness_report(rec, ["scarlet gown", "   "], k=3)
    assert out["explanation_accuracy"] is None and out["uniform_attention"] is None
    assert out["queries"] == 1
    sampled = faithfulness_report(rec, ["scarlet gown", "azure tee", "onyx kicks"], k=3, max_queries=2)
    assert sampled["queries"] == 2
