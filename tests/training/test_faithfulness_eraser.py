"""ERASER comprehensiveness/sufficiency, attention vs leave-one-out (Kendall's tau) and what
unnamed heads add (training/faithfulness.py (e)-(g)), on hand-made heads and the planted model.

The planted shoppers name a colour and a category (tests/planted.py), so the probes name the
`color` and `other` heads; `style` and `quality` are named by no query word.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from recsys.explain import head_attention
from recsys.facets import FACETS
from training.faithfulness import (
    ERASER_SETS,
    attention_loo_tau,
    eraser_case,
    erasure_drops,
    faithfulness_report,
    format_report,
    kendall_tau_b,
    outputs_with,
    slot_curve,
    unnamed_head_share,
)
from training.fit import TrainConfig
from training.start import untrained_recommender
from training.train import TrainInputs, load_training_data

from ..planted import CATEGORIES, COLORS, planted_items, planted_judgments
from ..reference import forward_erased
from .test_faithfulness import _head  # one head of one item by hand, slot fixed at 1

QUERIES = ["scarlet gown", "azure blouse casual", "premium ebony kicks", "red dress acme"]


def _probes() -> pd.DataFrame:
    rows = []
    for color, color_words in COLORS.items():
        for category, cat_words in CATEGORIES.items():
            query = f"{color_words[0]} {cat_words[1]}"  # the queries of planted_judgments
            rows += [(query, color_words[0], "color", color), (query, cat_words[1], "other", category)]
    return pd.DataFrame(rows, columns=["query", "word", "facet", "value"])


@pytest.fixture(scope="module")
def report(planted_model):
    return faithfulness_report(planted_model, None, probes=_probes(),
                               judgments=planted_judgments(planted_items()), k=10, seed=0)


# ---- erasing a set of attributes is the reference forward on the shortened list ----------------

def _reference_contribution(rec, query, item, facet, erased_attrs) -> float:
    """FacetScorer.forward for one item with `erased_attrs` taken out of its `facet` list."""
    return float(forward_erased(rec, query, item, facet, erased_attrs)["contributions"][0, 0, FACETS.index(facet)])


def test_erasing_sets_equals_the_reference_forward(planted_model):
    rec = planted_model
    rng = np.random.default_rng(0)
    checked = 0
    for query in QUERIES:
        state = rec.index.query_state(query)
        for item in rng.choice(rec.catalog.n_items, 4, replace=False).tolist():
            for f in FACETS:
                att = head_attention(rec.index, state, item, f)
                n = len(att.labels)
                if n < 2:
                    continue
                slots = slot_curve(rec.index, f, item)
                everything = np.ones((1, n), dtype=bool)
                assert outputs_with(att, slots, everything)[0] == pytest.approx(att.output, rel=1e-12)
                singles = outputs_with(att, slots, ~np.eye(n, dtype=bool))
                # atol: a head none of whose attributes the query names outputs 1e-17 to 1e-12 (the start's
                # unmatched offset), where a relative bound only measures float noise
                np.testing.assert_allclose(singles, [att.without(m) for m in range(n)], rtol=1e-10, atol=1e-9)
                for size in range(1, n + 1):
                    erased = rng.choice(n, size, replace=False)
                    keep = np.ones(n, dtype=bool)
                    keep[erased] = False
                    ours = outputs_with(att, slots, keep[None])[0]
                    ref = _reference_contribution(rec, query, item, f, att.attr_idx[erased])
                    assert ours == pytest.approx(ref, abs=2e-4, rel=1e-4)
                    checked += 1
    assert checked > 20


def test_eraser_case_on_a_hand_made_head():
    # one token; a0 is the match (logit 4), a1 and a2 barely attended; values 1, 1, 1
    att = _head([[4.0, -4.0, -4.0]], [0.0], [1.0, 1.0, 1.0])
    def slots(length):  # a slot that stays, whatever is erased
        return np.ones_like(length)

    e = np.exp([4.0, -4.0, -4.0])
    out = e.sum() / (e.sum() + 1)
    case = eraser_case(att, slots, 2, np.random.default_rng(0))
    assert case.shape == (len(ERASER_SETS), 2)
    (comp1, suff1), (comp2, suff2) = case[0], case[1]
    assert comp1 == pytest.approx(out - 2 * e[1] / (2 * e[1] + 1))  # only a1, a2 left
    assert suff1 == pytest.approx(out - e[0] / (e[0] + 1))  # only a0 kept
    assert comp2 == pytest.approx(out - e[2] / (e[2] + 1))  # top 2 = a0 and a1 erased
    assert suff2 == pytest.approx(out - (e[0] + e[1]) / (e[0] + e[1] + 1))
    assert comp1 > 0.85 and abs(suff1) < 0.01  # a0 carries the head, and suffices
    # the random sets: as many attributes, drawn among all three
    drawn = [eraser_case(att, slots, 2, np.random.default_rng(s))[2:] for s in range(50)]
    assert np.mean([d[0, 0] for d in drawn]) < comp1
    assert np.mean([d[0, 1] for d in drawn]) > suff1


# ---- Kendall's tau ---------------------------------------------------------------------------

def test_kendall_tau_b_equals_scipy_ties_included():
    rng = np.random.default_rng(1)
    for _ in range(500):
        n = int(rng.integers(2, 9))
        x, y = rng.integers(0, 4, n).astype(float), rng.integers(0, 4, n).astype(float)
        ours, theirs = kendall_tau_b(x, y), kendalltau(x, y).statistic
        assert (np.isnan(ours) and np.isnan(theirs)) or ours == pytest.approx(theirs, abs=1e-12)
    assert np.isnan(kendall_tau_b(np.ones(3), np.arange(3.0)))


def test_tau_is_one_where_attention_orders_the_drops():
    # equal values: removing a more attended attribute always costs more
    att = _head([[3.0, 1.0, 0.0, -2.0], [2.0, 0.5, -1.0, -3.0]], [0.0, 0.5], [1.0] * 4)
    assert attention_loo_tau(att, erasure_drops(att)) == pytest.approx(1.0)
    # the most attended attribute is worth almost nothing: removing it raises the output
    att = _head([[-1.0, 4.0, -1.0]], [0.0], [3.0, 0.01, 3.0])
    assert attention_loo_tau(att, erasure_drops(att)) == pytest.approx(-1.0)
    # constant attention: NaN (the report skips and counts it)
    att = _head([[0.0, 0.0]], [0.0], [1.0, 2.0])
    assert np.isnan(attention_loo_tau(att, erasure_drops(att)))


# ---- the report on the planted model ---------------------------------------------------------

def test_report_has_the_new_parts_as_plain_json(report):
    json.dumps(report, allow_nan=False)
    assert set(report["eraser"]["heads"]) == set(FACETS)
    assert set(report["attention_vs_leave_one_out"]["heads"]) == set(FACETS)
    assert set(report["unnamed_heads"]["heads"]) == set(FACETS)
    # (e) and (f) look at the same cases as erasure agreement
    assert report["eraser"]["cases"] == report["erasure_agreement"]["cases"] > 100
    tau = report["attention_vs_leave_one_out"]
    assert tau["cases"] + tau["skipped_nan"] == report["erasure_agreement"]["cases"]
    # top-1 comprehensiveness is the erasure agreement's mean drop of the top attribute
    assert report["eraser"]["top_1"]["comprehensiveness"] == pytest.approx(
        report["erasure_agreement"]["mean_drop_top"], rel=1e-9)
    text = format_report(report)
    assert "ERASER comprehensiveness" in text and "Kendall's tau" in text and "unnamed heads" in text


def test_the_top_attended_attributes_carry_the_score(report):
    er = report["eraser"]
    t1, tm, r1, rm = (er[name] for name in ERASER_SETS)
    assert t1["comprehensiveness"] > 2 * r1["comprehensiveness"]
    assert tm["comprehensiveness"] > rm["comprehensiveness"]
    assert tm["comprehensiveness"] >= t1["comprehensiveness"]
    assert t1["sufficiency"] < r1["sufficiency"] and tm["sufficiency"] < rm["sufficiency"]
    # keeping only the top m loses little of the head's contribution
    assert tm["sufficiency"] < 0.25 * er["mean_contribution"]
    assert 1 <= er["mean_m"] <= 3


def test_attention_ranks_attributes_like_leave_one_out(report):
    assert report["attention_vs_leave_one_out"]["kendall_tau"] > 0.5


def _plain_probes() -> pd.DataFrame:
    """Queries in the catalogue's own words ("red dress"): the lexical start matches them."""
    rows = [(f"{color} {category}", word, facet, word)
            for color in COLORS for category in CATEGORIES
            for word, facet in ((color, "color"), (category, "other"))]
    return pd.DataFrame(rows, columns=["query", "word", "facet", "value"])


@pytest.fixture(scope="module")
def lexical_start(planted_paths):
    """The model before any training and without logged searches: BM25 in the heads, no click
    association, so a head that no query word matches only leaks (e^-8 per attribute)."""
    inputs = TrainInputs(planted_paths["items"], planted_paths["interactions"])
    catalog, rows, _ = load_training_data(inputs)
    return untrained_recommender(catalog, rows.iloc[:0], TrainConfig(seed=0))


def test_a_head_no_query_word_matches_adds_nearly_nothing(lexical_start):
    un = unnamed_head_share(lexical_start, _plain_probes(), k=10)
    assert un["queries"] == 12 and un["items"] == 120
    heads = un["heads"]
    for f in ("color", "other"):
        assert heads[f]["unnamed_cases"] == 0 and heads[f]["named_cases"] == 120
        assert heads[f]["mean_named"] > 0.1
    for f in ("style", "quality"):
        assert heads[f]["named_cases"] == 0 and heads[f]["unnamed_cases"] == 120
        assert heads[f]["mean_unnamed"] < 0.01 * un["mean_named"]
    assert un["ratio"] < 0.01
    assert un["mean_unnamed"] == pytest.approx(
        (heads["style"]["mean_unnamed"] + heads["quality"]["mean_unnamed"]) / 2)
    # probes that leave the category head unnamed: it matches "dress" all the same, and its
    # share shows it
    colour_only = _plain_probes().query("facet == 'color'")
    other = unnamed_head_share(lexical_start, colour_only, k=10)["heads"]["other"]
    assert other["named_cases"] == 0
    assert other["mean_unnamed"] == pytest.approx(heads["other"]["mean_named"])


def test_unnamed_heads_on_the_trained_model(report):
    un = report["unnamed_heads"]
    assert un["queries"] == 12 and un["items"] == 120
    assert un["heads"]["style"]["unnamed_cases"] == un["heads"]["quality"]["unnamed_cases"] == 120
    assert un["mean_unnamed"] < 0.5 * un["mean_named"]


def test_a_probe_that_names_a_head_moves_it_to_named(planted_model):
    probes = _probes()
    extra = pd.DataFrame([("scarlet frock", "scarlet", "style", "casual")], columns=probes.columns)
    share = unnamed_head_share(planted_model, pd.concat([probes, extra]), k=10)
    assert share["heads"]["style"]["named_cases"] == 10
    assert share["heads"]["style"]["unnamed_cases"] == 110
    # a facet the model has no head for names nothing
    odd = pd.DataFrame([("scarlet frock", "scarlet", "material", "silk")], columns=probes.columns)
    assert unnamed_head_share(planted_model, odd, k=5)["heads"]["other"]["unnamed_cases"] == 5


def test_reports_without_the_new_parts_still_format(report):
    old = {key: value for key, value in report.items()
           if key not in ("eraser", "attention_vs_leave_one_out", "unnamed_heads")}
    assert "erasure agreement" in format_report(old)
    assert faithfulness_report.__module__ == "training.faithfulness"


def test_training_stores_the_new_parts_in_the_manifest(planted_artifacts):
    faith = planted_artifacts[1].metrics["faithfulness"]
    assert faith["eraser"]["cases"] > 0 and faith["attention_vs_leave_one_out"]["cases"] > 0
    assert faith["unnamed_heads"] is None  # trained without probes
