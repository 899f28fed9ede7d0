"""The production scoring index against the reference computation (`FacetScorer.forward`).

The model's weights are random rather than trained: exactness must hold for any weights, and
random ones make every logit, value and prior differ, so a wrong sum cannot hide. The catalogue
is planted to exercise what the index exploits or must not be fooled by: items sharing attribute
sets, identical items (exact ties), empty facets, multi-valued facets, multi-word attributes
(whose exact-match coverage couples query words), and a facet with no attribute at all.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch

import recsys.index.attribute_sets as sets_module
from recsys.catalog import Catalog
from recsys.facets import FACETS
from recsys.formula import ASSOC, EXACT, bm25_idf, partial_share
from recsys.index.attribute_sets import _distinct_rows, _prefix_tree
from recsys.index.query import QueryState
from recsys.index.scoring import ScoringIndex
from recsys.index.topk import fast_top_k
from recsys.io.readers import read_items
from recsys.item_bits import count_items, pack_items
from recsys.kernels import compiled
from recsys.lru import WordCache
from recsys.model_config import ModelOptions
from recsys.query_match import QueryMatches
from recsys.synonyms import SynonymBook, parse_synonyms
from recsys.tokenize import match_key
from training.fit import TrainConfig
from training.start import build_featurizer, new_model, start_model

from ..reference import sorted_top_k, ties_at_the_cut

COLORS = ["red", "blue", "green", "navy blue", ""]
STYLES = ["casual", "formal", "casual|formal", ""]
CATEGORIES = ["dress", "shirt", "dining chair", "dining table"]
BRANDS = ["Acme", "Borea", "Cirro"]
QUERIES = [
    "red",  # one token
    "scarlet dress",  # a synonym the catalogue never uses
    "navy blue dining chair",  # two pairs of words that share multi-word attributes
    "navy",
    "blue",
    "dining",
    "zzqx unknownword",  # words the model has no id for
    "",  # no token at all
    "red red dress",  # a repeated word
    "cheap casual formal acme shirt blue green",
    "colour fast dress",  # two words a description has as one ("colourfast"): a third token
    "borea shirtdress",  # a word the catalogue has as two ("shirt", "dress"): near evidence
]


def _items(copies: int) -> pd.DataFrame:
    rows = []
    for n, (color, style, category, brand) in enumerate(
        itertools.product(COLORS, STYLES, CATEGORIES, BRANDS)
    ):
        for c in range(copies):
            quality = ["premium", "standard", ""][(n + c) % 3]
            # description words start below title words (`description_weight`): every path has that offset
            description = ["soft to the touch", "", "machine washable, colourfast", ""][n % 4]  # copies stay ties
            rows.append({"item_id": f"I{n:04d}-{c}", "title": f"{brand} {category}", "description": description,
                         "color": color,
                         "style": style, "quality": quality, "category": category, "brand": brand,
                         "price": f"{10 + (n * 7 + c * 3) % 90}.00"})
    return pd.DataFrame(rows)


def _index(tmp_path, items: pd.DataFrame, seed: int = 0, length_unit: str = "attributes") -> ScoringIndex:
    path = tmp_path / "items.csv"
    items.to_csv(path, index=False)
    df, _ = read_items(path)
    catalog = Catalog.build(df)
    rng = np.random.default_rng(seed)
    queries = ["scarlet dress", "red shirt", "navy blue chair", "casual dining table", "acme dress"]
    rows = pd.DataFrame({
        "query": [queries[i % len(queries)] for i in range(200)],
        "item_idx": rng.integers(0, catalog.n_items, 200),
        "label": rng.integers(0, 3, 200).astype(np.float32),
        "weight": np.ones(200, dtype=np.float32),
    })
    featurizer = build_featurizer(catalog, rows, TrainConfig(epochs=1, seed=seed,
                                                             model=ModelOptions(length_unit=length_unit)))
    model = new_model(featurizer, seed)
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.7)
    for table in featurizer.evidence.assoc.values():
        table.data[:] = rng.random(len(table.data)).astype(np.float32) * 3
    return ScoringIndex(model, featurizer)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return _index(tmp_path_factory.mktemp("index"), _items(copies=2))


@pytest.fixture(scope="module")
def big_index(tmp_path_factory):
    """Enough items (and duplicates) that the pruned top-k prunes."""
    return _index(tmp_path_factory.mktemp("big"), _items(copies=12), seed=1)


def reference(index: ScoringIndex, query: str, head_weights=None):
    """(scores, contributions) from FacetScorer.forward over every item: no shortcut."""
    fz = index.featurizer
    enc = fz.encode_queries([query])
    attrs, evidence = fz.item_batch(np.arange(fz.catalog.n_items)[None, :], enc)
    w = None if head_weights is None else torch.as_tensor(head_weights, dtype=torch.float32)
    with torch.no_grad():
        out = index.model(enc.bucket, enc.grams, enc.mask, enc.specificity, attrs, evidence, w)
    return out["scores"][0].numpy(), out["contributions"][0].numpy()


WEIGHTS = [None, np.array([1.0, 0.0, 2.5, -0.5], dtype=np.float32)]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("weights", WEIGHTS, ids=["plain", "weighted"])
def test_scores_and_head_outputs_equal_the_reference(index, query, weights):
    ref_scores, ref_contrib = reference(index, query, weights)
    state = index.query_state(query)
    scale = max(1.0, float(np.abs(ref_scores).max()))
    np.testing.assert_allclose(index.score(state, weights), ref_scores, atol=2e-6 * scale, rtol=0)
    heads = index.head_outputs(state) * (1.0 if weights is None else weights)
    np.testing.assert_allclose(heads, ref_contrib, atol=2e-6 * scale, rtol=0)
    np.testing.assert_allclose(index.prior + heads.sum(1), ref_scores, atol=2e-6 * scale, rtol=0)


def test_query_state_equals_the_models_own_computation(index):
    """Logits and evidence as the model's heads compute them from `Evidence.dense_rows`."""
    fz, model = index.featurizer, index.model
    for query in QUERIES:
        state = index.query_state(query)
        enc = fz.encode_queries([query])
        n_tok = int(enc.mask[0].sum())
        assert [t.key for t in state.tokens] == [t.key for t in enc.tokens[0]]
        with torch.no_grad():
            tok = model.embed_tokens(enc.bucket[0, :n_tok], enc.grams[0, :n_tok])
            for f in FACETS:
                head = model.heads[f]
                q, nm = head.queries(tok, enc.specificity[0, :n_tok])
                ev = np.stack(fz.evidence.dense_rows(f, enc.word_id[0, :n_tok], enc.near_id[0, :n_tok],
                                                     enc.near_sim[0, :n_tok]), -1)
                ev[..., ASSOC] *= fz.assoc_scales(enc)[0, :n_tok, None]
                idf = getattr(model, f"attr_idf_{f}")
                bias = model.head_tables(f).bias
                logits = head.match_logits(q @ index.tables[f].keys.T, torch.from_numpy(ev), idf, bias).numpy()
                np.testing.assert_allclose(state.logits[f], logits, atol=1e-5)
                np.testing.assert_allclose(state.no_match[f], nm.numpy(), atol=1e-5)
                np.testing.assert_allclose(state.evidence[f], ev, atol=1e-6)


def test_word_caches_do_not_change_any_float(tmp_path, index):
    """Per-word caches (including words whose coverage depends on the other query words, cached
    with them in order) give the same floats as a fresh index that has seen no query."""
    order = ["navy blue dining chair", "navy", "blue", "dining chair", "dining", "navy blue", "blue navy",
             "navy dress blue", "chair navy dining blue"] * 2
    warm = [index.score(index.query_state(q)) for q in order]
    warm_sets = [index.set_outputs(index.query_state(q)) for q in order]
    fresh = _index(tmp_path, _items(copies=2))
    for q, scores, per_set in zip(order, warm, warm_sets):
        fresh.clear_caches()
        assert np.array_equal(fresh.score(fresh.query_state(q)), scores)
        fresh.clear_caches()
        assert np.array_equal(fresh.set_outputs(fresh.query_state(q)), per_set)
    coupled = index.query_state("navy blue")
    assert not coupled.context_free.any()  # "navy blue" couples them
    assert coupled.context_keys is not None and all(k in index.word_parts for k in coupled.context_keys)
    assert len({*coupled.context_keys, *index.query_state("blue navy").context_keys}) == 4  # order counts
    free = index.query_state("navy dress")
    assert free.context_free.all() and free.context_keys == [t.cache_key for t in free.tokens]


def test_a_state_built_by_hand_is_scored_without_its_cached_parts(index):
    state = index.query_state("scarlet dress casual")
    bare = QueryState(state.tokens, state.logits, state.no_match, state.evidence)
    np.testing.assert_array_equal(index.score(bare), index.score(state))


def _masks(n: int, rng: np.random.Generator) -> list[np.ndarray | None]:
    one = np.zeros(n, dtype=bool)
    one[n // 2] = True
    return [None, np.ones(n, dtype=bool), rng.random(n) < 0.5, rng.random(n) < 0.97,
            rng.random(n) < 0.05, one, np.zeros(n, dtype=bool)]


def test_the_sorting_reference_by_hand():
    scores = np.array([1.0, 3.0, 2.0, 3.0, 2.0], dtype=np.float32)
    assert sorted_top_k(scores, None, 3).tolist() == [1, 3, 2]  # the tie 1, 3 by catalogue order
    assert sorted_top_k(scores, None, 9).tolist() == [1, 3, 2, 4, 0]
    assert sorted_top_k(scores, np.array([1, 0, 1, 0, 1], dtype=bool), 2).tolist() == [2, 4]
    assert sorted_top_k(scores, None, 0).tolist() == [] and sorted_top_k(scores, None, -1).tolist() == []
    assert ties_at_the_cut(scores, None, 1) and not ties_at_the_cut(scores, None, 2)
    assert not ties_at_the_cut(scores, None, 5)


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
def test_top_k_equals_sorting_every_score(big_index, use_kernel):
    """Same items, same order (ties by catalogue order: the catalogue has identical items),
    same floats as a stable sort of every eligible item's `score`, with filters and head
    weights; the cases include ties across the k-th place, where only the tie-break decides."""
    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    index, rng = big_index, np.random.default_rng(0)
    n = index.n_items
    index.use_kernel = use_kernel
    cut_ties = 0
    try:
        for query, weights in itertools.product(QUERIES, WEIGHTS):
            state = index.query_state(query)
            scores = index.score(state, weights)
            for mask in _masks(n, rng):
                for k in (1, 10, 37, n + 3):
                    items, item_scores = index.top_k(state, weights, mask, k)
                    expected = sorted_top_k(scores, mask, k)
                    np.testing.assert_array_equal(items, expected)
                    np.testing.assert_array_equal(item_scores, scores[expected])
                    cut_ties += ties_at_the_cut(scores, mask, k)
    finally:
        index.use_kernel = True
    assert cut_ties > 50  # the tie-break was tested, not only the order of distinct scores


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
def test_scoring_a_few_items_gives_their_floats_of_the_whole_catalogue(big_index, use_kernel):
    """`score_items` (what re-ranks a query's best few with a shopper's history) is `score` at
    those items, float for float, with and without head weights, on groups of one facet and
    merged ones, for words whose coverage couples them ("navy blue") and for none."""
    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    index, rng = big_index, np.random.default_rng(0)
    assert any(g.members is not None for g in index.groups) and any(g.members is None for g in index.groups)
    index.use_kernel = use_kernel
    try:
        for query, weights in itertools.product(QUERIES, WEIGHTS):
            state = index.query_state(query)
            scores = index.score(state, weights)
            for items in (rng.choice(index.n_items, 20, replace=False), np.array([3, 3, 0]),
                          np.zeros(0, dtype=np.int64), np.arange(index.n_items)):
                np.testing.assert_array_equal(index.score_items(state, weights, items), scores[items])
    finally:
        index.use_kernel = True


def test_compiled_and_numpy_paths_agree(index):
    """The numba kernels compute what the numpy code does, in the same order of operations:
    logits, per-set outputs and scores agree to float rounding (exp and tanh may differ by an
    ulp between libraries), and the coverage flags exactly."""
    if compiled() is None:
        pytest.skip("numba is not installed")
    for query, weights in itertools.product(QUERIES, WEIGHTS):
        index.clear_caches()
        fast = index.query_state(query)
        fast_out, fast_scores = index.set_outputs(fast), index.score(fast, weights)
        index.use_kernel = False
        try:
            index.clear_caches()
            slow = index.query_state(query)
            slow_out, slow_scores = index.set_outputs(slow), index.score(slow, weights)
        finally:
            index.use_kernel = True
        np.testing.assert_array_equal(fast.context_free, slow.context_free)
        np.testing.assert_allclose(fast.flat_logits, slow.flat_logits, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(fast.flat_no_match, slow.flat_no_match, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(fast_out, slow_out, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(fast_scores, slow_scores, rtol=1e-5, atol=1e-6)
    index.clear_caches()



@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
def test_training_batch_evidence_is_the_query_states(index, use_kernel):
    """A training batch's evidence (`Evidence.pair_evidence`, every query against items drawn at
    random, padding included) is each query's own evidence rows (`Evidence.dense_rows`, what the
    index reads) at the items' attributes, on both paths; the two paths give the same arrays."""
    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    fz = index.featurizer
    enc = fz.encode_queries(QUERIES)
    items = np.random.default_rng(3).integers(0, fz.catalog.n_items, (len(QUERIES), 9))
    for f in FACETS:
        attrs = fz.padded_attributes(f)[items]  # (B, I, M)
        got = fz.evidence.pair_evidence(f, enc.word_id, enc.near_id, enc.near_sim, attrs, use_kernel)
        other = fz.evidence.pair_evidence(f, enc.word_id, enc.near_id, enc.near_sim, attrs, not use_kernel)
        if compiled() is not None:
            for mine, theirs in zip(got, other):
                np.testing.assert_array_equal(mine, theirs)
        exact, assoc_pos, near = got
        values = np.append(fz.evidence.assoc[f].data, np.float32(0))  # position -1: no value
        for b, toks in enumerate(enc.tokens):
            n = len(toks)
            rows = fz.evidence.dense_rows(f, enc.word_id[b, :n], enc.near_id[b, :n], enc.near_sim[b, :n])
            for i in range(items.shape[1]):
                a = attrs[b, i]
                seen = a >= 0
                for want, have in zip(rows, (exact[b, i, :n], values[assoc_pos[b, i, :n]], near[b, i, :n])):
                    np.testing.assert_array_equal(have[:, seen], want[:, a[seen]])
                    assert not have[:, ~seen].any()  # padding attributes carry nothing
            assert not exact[b, :, n:].any() and not near[b, :, n:].any()  # nor padding tokens
            assert (assoc_pos[b, :, n:] == -1).all()
    # planted: "navy blue" is one colour of two words. The query with both matches it fully;
    # "navy", which only that colour says, is a full match too; "blue", which other items say,
    # is worth its own IDF's share of the phrase's (`formula.partial_share`)
    cat = fz.catalog
    navy = next(i for i, a in enumerate(cat.vocab["color"]) if a.value == "navy blue")
    says = {w: {i for f in cat.facets for i in range(cat.n_items)
                for a in cat.item_attrs[f][i].indices if w in cat.vocab[f][a].match_keys}
            for w in cat.vocab["color"][navy].match_keys}  # stems: "navi", "blue"
    assert says["navi"] < says["blue"]  # the items that say "navy" say "navy blue"
    assert fz.cfg.partial_value
    blue = bm25_idf(len(says["blue"]), cat.n_items) / bm25_idf(len(says["navi"]), cat.n_items)
    assert 0 < blue < 1 and partial_share(np.array([blue]), np.array([1.0]))[0] == np.float32(blue)
    for query, worth in (("navy blue dining chair", 1.0), ("navy", 1.0), ("blue", blue)):
        q = fz.encode_queries([query])
        exact, _, _ = fz.evidence.pair_evidence("color", q.word_id, q.near_id, q.near_sim,
                                                np.array([[[navy]]]), use_kernel)
        assert exact[0, 0, :, 0].max() == np.float32(worth)


def test_a_query_of_cached_words_is_ranked_without_its_logits(index, monkeypatch):
    query = "navy dress casual"
    first = index.query_state(query)
    np.testing.assert_array_equal(first.flat_logits,
                                  np.concatenate([first.logits[f] for f in FACETS], axis=1))
    expected = index.top_k(first, None, None, 5)
    computed = []
    original = index.queries._state_arrays
    monkeypatch.setattr(index.queries, "_state_arrays", lambda *args: computed.append(1) or original(*args))
    again = index.queries.query_state(query)  # a state of its own, not the index's last one
    items, scores = index.top_k(again, None, None, 5)
    assert computed == []  # every word's ratios were cached: no logits needed
    np.testing.assert_array_equal(items, expected[0])
    np.testing.assert_array_equal(scores, expected[1])
    assert again.logits["color"].shape == first.logits["color"].shape and computed == [1]


def test_the_last_query_state_is_read_again_under_the_same_synonyms_and_path(index):
    """A request reads its query's state up to three times: the index hands the last one out
    again, and a new one for another query, other synonyms, the other path or cleared caches."""
    first = index.query_state("navy dress")
    assert index.query_state("navy dress") is first
    assert index.query_state("red sofa") is not first and index.query_state("navy dress") is not first
    last = index.query_state("navy dress")
    try:
        index.use_kernel = not index.use_kernel
        assert index.query_state("navy dress") is not last
    finally:
        index.use_kernel = not index.use_kernel
    last = index.query_state("navy dress")
    try:
        index.synonyms = SynonymBook(parse_synonyms("navy => blue\n"))
        with_synonyms = index.query_state("navy dress")
        assert with_synonyms is not last and with_synonyms.tokens[0].synonyms
    finally:
        index.synonyms = None
    last = index.query_state("navy dress")
    index.clear_caches()
    assert index.query_state("navy dress") is not last


def test_all_ones_head_weights_score_as_no_weights(index):
    state = index.query_state("navy blue dining chair")
    ones = np.ones(len(FACETS), dtype=np.float32)
    np.testing.assert_array_equal(index.score(state, ones), index.score(state))
    items, scores = index.top_k(state, ones, None, 5)
    expected = index.top_k(state, None, None, 5)
    np.testing.assert_array_equal(items, expected[0])
    np.testing.assert_array_equal(scores, expected[1])


def test_top_k_prunes_on_this_catalogue(big_index, monkeypatch):
    """The pruned path is the one exercised above: most queries never score every item."""
    full = []
    monkeypatch.setattr(big_index, "use_kernel", False)
    original = big_index.grouped._full_top_k
    monkeypatch.setattr(big_index.grouped, "_full_top_k", lambda *a: full.append(1) or original(*a))
    queries = [q for q in QUERIES if q.strip()]
    for q in queries:
        big_index.top_k(big_index.query_state(q), None, None, 10)
    assert len(full) < len(queries) / 2


def _rule_offsets(index: ScoringIndex, rng: np.random.Generator) -> np.ndarray:
    """(n_items,) float64 offsets as merchandising rules make them: a boost of one colour's
    items, a bury of one category's, a boost of one brand's on top, and a few single items."""
    cat, per_item = index.featurizer.catalog, np.zeros(index.n_items)
    for key, values, sign in (("color", ["red", "blue", "green"], 1), ("category", ["dress", "shirt"], -1),
                              ("brand", ["Acme", "Borea"], 1)):
        per_item[cat.filter_mask({key: [str(rng.choice(values))]})] += sign * rng.uniform(0.1, 3.0)
    per_item[rng.integers(0, index.n_items, 5)] += rng.uniform(-2.0, 2.0, 5)
    return per_item


def _offsets(index: ScoringIndex, per_item: np.ndarray):
    moved = np.flatnonzero(per_item)
    return index.offsets(moved, per_item[moved])


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
def test_top_k_with_offsets_equals_sorting_every_score(big_index, use_kernel):
    """A per-item offset (a rule's boosts and buries) ranks as if added to every item's score:
    same items, same order, ties by catalogue order, float64 scores float64(score) + offset,
    under filters and head weights; extra items outside the mask rank with their own offsets."""
    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    index, rng = big_index, np.random.default_rng(5)
    index.use_kernel = use_kernel
    try:
        for query, weights in itertools.product(QUERIES, WEIGHTS):
            per_item = _rule_offsets(index, rng)
            _ranks_as_sorted(index, query, weights, _offsets(index, per_item), per_item, rng,
                             (1, 10, 37, index.n_items + 3))
    finally:
        index.use_kernel = True


def _ranks_as_sorted(index, query, weights, offsets, per_item, rng, ks) -> None:
    """`top_k` with `offsets` (every item's `per_item`) is every score plus its offset sorted,
    under `_masks`, and so with extra items (a query's own rules' items) outside the mask, each
    with an offset of its own."""
    state = index.query_state(query)
    scores = index.score(state, weights).astype(np.float64) + per_item
    extra = np.sort(rng.choice(index.n_items, 30, replace=False))
    extra_offset = rng.uniform(-2.0, 3.0, extra.size)
    with_extra = scores.copy()
    with_extra[extra] = index.score(state, weights).astype(np.float64)[extra] + extra_offset
    for mask in _masks(index.n_items, rng):
        for k in ks:
            items, item_scores = index.top_k(state, weights, mask, k, offsets)
            expected = sorted_top_k(scores, mask, k)
            np.testing.assert_array_equal(items, expected)
            np.testing.assert_array_equal(item_scores, scores[expected])
            outside = (np.ones(index.n_items, dtype=bool) if mask is None else mask.copy())
            outside[extra] = False
            items, item_scores = index.top_k(state, weights, outside, k, offsets, (extra, extra_offset))
            outside[extra] = True
            expected = sorted_top_k(with_extra, outside, k)
            np.testing.assert_array_equal(items, expected)
            np.testing.assert_array_equal(item_scores, with_extra[expected])


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
def test_top_k_with_boosted_items_apart_equals_sorting_every_score(big_index, use_kernel):
    """A query's offsets where its boosts act only on the items it matches
    (`ItemOffsets.for_matches`): the boosted items are scored apart with their own offsets,
    every other item takes its buries alone, unbounded per entry; the answer is every score
    sorted, under masks, with extra items, whether the boosted items are few, many or none."""
    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    index, rng = big_index, np.random.default_rng(11)
    index.use_kernel = use_kernel
    try:
        for query, weights in itertools.product(QUERIES, WEIGHTS):
            per_item = _rule_offsets(index, rng)
            lowered = np.minimum(per_item, 0.0) - rng.uniform(0.0, 0.2) * (rng.random(index.n_items) < 0.05)
            for share in (0.0, 0.02, 0.5):
                chosen = (rng.random(index.n_items) < share) & (per_item > lowered)
                offsets = _offsets(index, per_item).for_matches(lowered, pack_items(chosen))
                _ranks_as_sorted(index, query, weights, offsets, np.where(chosen, per_item, lowered), rng, (1, 10, 37))
    finally:
        index.use_kernel = True


def test_top_k_with_offsets_still_prunes(big_index, monkeypatch):
    """The offsets are bounded per table entry, so boosting a colour and burying a category
    leaves most queries pruned rather than scoring every item."""
    full = []
    monkeypatch.setattr(big_index, "use_kernel", False)
    original = big_index.grouped._full_top_k
    monkeypatch.setattr(big_index.grouped, "_full_top_k", lambda *a: full.append(1) or original(*a))
    offsets = _offsets(big_index, _rule_offsets(big_index, np.random.default_rng(0)))
    queries = [q for q in QUERIES if q.strip()]
    for q in queries:
        big_index.top_k(big_index.query_state(q), None, None, 10, offsets)
    assert len(full) < len(queries) / 2


def test_top_k_edge_cases(index):
    state = index.query_state("red dress")
    for k in (0, -1):
        items, scores = index.top_k(state, None, None, k)
        assert len(items) == 0 and len(scores) == 0


def test_a_facet_without_attributes(tmp_path):
    """Only a title and a colour: quality and style have an empty vocabulary."""
    items = pd.DataFrame({"item_id": [f"x{i}" for i in range(40)],
                          "title": [f"{c} thing {i % 3}" for i, c in enumerate(["red", "blue"] * 20)],
                          "color": ["red", "blue", "green", ""] * 10})
    index = _index(tmp_path, items)
    assert index.tables["style"].sets.shape[1] == 0
    for query in ["red thing", "blue", "nothing here", ""]:
        ref, _ = reference(index, query)
        state = index.query_state(query)
        np.testing.assert_allclose(index.score(state), ref, atol=1e-5)
        items_, _ = index.top_k(state, None, None, 7)
        np.testing.assert_array_equal(items_, sorted_top_k(index.score(state), None, 7))


def test_serving_index_is_small(big_index):
    assert big_index.nbytes() / big_index.n_items < 200


# ---- building blocks -----------------------------------------------------------------------------


def _naive_distinct(x: sp.csr_matrix) -> np.ndarray:
    seen: dict[tuple, int] = {}
    return np.array([seen.setdefault(tuple(sorted(x.indices[x.indptr[i]:x.indptr[i + 1]])), len(seen))
                     for i in range(x.shape[0])])


@pytest.mark.parametrize("collide", [False, True], ids=["hashed", "every-hash-collides"])
def test_distinct_rows(collide, monkeypatch):
    if collide:  # every set hashes alike: the exact check must catch it and regroup
        monkeypatch.setattr(sets_module, "_mix64", lambda x: np.zeros(np.shape(x), dtype=np.uint64))
    rng = np.random.default_rng(3)
    rows, cols = [], []
    for i in range(500):
        width = rng.integers(0, 4)  # some rows are empty
        picked = rng.choice(6, size=width, replace=False)  # unsorted, few distinct sets
        rows += [i] * width
        cols += picked.tolist()
    x = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(500, 6))
    x.has_sorted_indices = False
    sets, item_set = _distinct_rows(x)
    np.testing.assert_array_equal(item_set, _naive_distinct(x))  # numbered by first appearance
    np.testing.assert_array_equal(sets[item_set].toarray(), (x.toarray() > 0).astype(np.float32))
    assert sets.shape[0] == len(set(item_set.tolist()))


def test_prefix_tree_rebuilds_every_row():
    rng = np.random.default_rng(4)
    rows = [sorted(rng.choice(9, size=rng.integers(0, 5), replace=False).tolist()) for _ in range(300)]
    rows += [[0, 1, 2], [0, 1], [0, 1, 2, 3]]  # rows that are prefixes of others
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    x = sp.csr_matrix((np.ones(indptr[-1], dtype=np.float32), np.concatenate(rows).astype(np.int64),
                       indptr), shape=(len(rows), 9))
    parent, column, end = _prefix_tree(x)
    assert (parent < np.arange(len(parent))).all()  # parents come first
    assert len(parent) == len({tuple(r[:d]) for r in rows for d in range(1, len(r) + 1)})  # shared
    for row, node in zip(rows, end.tolist()):
        path = []
        while node >= 0:
            path.append(int(column[node]))
            node = int(parent[node])
        assert path[::-1] == row


def test_word_cache_drops_the_least_recently_used():
    cache = WordCache("test", capacity=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    assert cache.get("missing") is None and len(cache) == 2
    cache.clear()
    assert len(cache) == 0


def test_word_cache_shared_by_threads_stays_bounded_and_never_raises():
    """Serving threads share the caches: a key dropped by one thread between another's lookup
    and its move to the end, or the cache emptied during a put, is a miss at worst."""
    cache = WordCache("test", capacity=8)
    errors: list[BaseException] = []

    def hammer(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for key in rng.integers(0, 20, 20_000).tolist():
                if cache.get(key) is None:
                    cache.put(key, key + 1)
                elif key == 0:
                    cache.clear()
        except BaseException as exc:  # noqa: BLE001 (any exception fails the test)
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(cache) <= 8
    assert all(cache.get(k) in (None, k + 1) for k in range(20))


def test_fast_top_k_equals_sorting_every_score():
    rng = np.random.default_rng(5)
    for n in (1, 7, 100, 5000):
        scores = rng.integers(0, 20, n).astype(np.float32)  # many ties
        for mask in _masks(n, rng):
            for k in (0, 1, 3, 10, n, n + 5):
                np.testing.assert_array_equal(fast_top_k(scores, mask, k), sorted_top_k(scores, mask, k))


def test_the_compiled_maximum_is_numpys():
    """`kernels._max_of` (eight running maxima, what the top-k's bounds start from) on every
    length around its lanes, the maximum planted at each position: the same float as max()."""
    if compiled() is None:
        pytest.skip("numba is not installed")
    from recsys.kernels import _max_of

    rng = np.random.default_rng(6)
    for n in (1, 2, 7, 8, 9, 15, 16, 17, 100):
        values = (rng.standard_normal(n) * 3 - 50).astype(np.float32)
        for at in range(n):
            planted = values.copy()
            planted[at] = np.float32(-1.5)  # above every other value
            assert _max_of(planted) == planted.max() == np.float32(-1.5)
        assert _max_of(values) == values.max()


WORDS = ["red", "navy", "blue", "linen", "oak", "chair", "dress", "lamp", "soft", "tall", "acme", "borea"]


def _random_items(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """A catalogue drawn at random from small vocabularies: facets empty or multi-valued at
    random, and a fifth of the items copies of others (exact ties)."""
    def pick(values: list[str], most: int) -> str:
        return "|".join(rng.choice(values, size=rng.integers(0, most + 1), replace=False))
    rows = []
    for i in range(n):
        if rows and rng.random() < 0.2:
            rows.append({**rows[int(rng.integers(len(rows)))], "item_id": f"R{i:04d}"})
            continue
        title = " ".join(rng.choice(WORDS, size=rng.integers(1, 5)))
        rows.append({"item_id": f"R{i:04d}", "title": title, "description": pick(WORDS, 3).replace("|", " "),
                     "color": pick(COLORS[:-1], 2), "style": pick(STYLES[:2], 2),
                     "quality": ["premium", "standard", ""][int(rng.integers(3))],
                     "category": str(rng.choice(CATEGORIES)), "brand": str(rng.choice(BRANDS)),
                     "price": f"{rng.integers(5, 99)}.00"})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_k_on_random_catalogues_and_queries(tmp_path, seed):
    """Property-style: on random catalogues (random weights), random queries of known, unknown
    and repeated words (a profile's words are more query words), random filters and
    exclusions, k from 1 to past the eligible count, and pages (offset + k, then cut), the
    pruned top-k is a stable sort of every eligible score, floats and ties included, on both
    paths; and the query logits computed on the attributes with evidence only are the ones
    computed on every attribute."""
    rng = np.random.default_rng(seed)
    index = _index(tmp_path, _random_items(rng, int(rng.integers(300, 900))), seed=seed)
    n = index.n_items
    vocabulary = WORDS + ["scarlet", "zzqx", "navy blue", "dining", "casual", "premium"]
    for _ in range(12):
        query = " ".join(rng.choice(vocabulary, size=rng.integers(0, 7)))
        state = index.query_state(query)
        full = index.queries._state_arrays([index.queries._token_entry(t)[0] for t in state.tokens])
        for name in ("flat_logits", "flat_no_match"):
            np.testing.assert_array_equal(state._get(name), full[name])
        weights = None if rng.random() < 0.5 else rng.normal(1, 1, len(index.facets)).astype(np.float32)
        masks = _masks(n, rng)
        mask = masks[int(rng.integers(len(masks)))]
        for use_kernel in ([True, False] if compiled() is not None else [False]):
            index.use_kernel = use_kernel
            index.clear_caches()  # the two paths' exponentials may differ by an ulp: one path's words
            try:
                state = index.query_state(query)
                scores = index.score(state, weights)
                for k, offset in ((1, 0), (10, 0), (10, 10), (int(rng.integers(1, n)), 3), (n + 5, 0)):
                    items, item_scores = index.top_k(state, weights, mask, offset + k)
                    expected = sorted_top_k(scores, mask, offset + k)
                    np.testing.assert_array_equal(items[offset:], expected[offset:])
                    np.testing.assert_array_equal(item_scores, scores[expected])
            finally:
                index.use_kernel = True


# ---- the shop's synonyms (recsys.synonyms) ------------------------------------------------------

SYNONYMS = "scarlet, red\nnavy => blue\nseat => chair\ngown => dining table\ntee => shirt\n"
SYNONYM_QUERIES = ["scarlet gown", "dining seat", "navy seat", "tee", "red", "seat table", "blue navy",
                   "zzqx seat", "casual dress"]


def _reference_evidence(index: ScoringIndex, query: str, book: SynonymBook) -> dict[str, np.ndarray]:
    """facet -> (T, V, N_KINDS) by hand: each word's stored exact values, raised on each
    attribute to what its synonyms' phrases would have there (their words' stored values, 1 where
    a phrase has all the attribute's words), then the query's coverage; association and near
    evidence as `Evidence.dense_rows` reads them, association scaled as `Featurizer.assoc_scales`."""
    fz = index.featurizer
    enc = fz.encode_queries([query])
    tokens = enc.tokens[0]
    n = len(tokens)
    phrases = {match_key(w): [] for s in book.synonyms for w in s.words}
    for s in book.synonyms:
        for w in s.words:
            targets = s.to or tuple(x for x in s.words if x != w)
            phrases[match_key(w)] += [[match_key(x) for x in t.split()] for t in targets]
    out = {}
    for f in fz.catalog.facets:
        table = fz.evidence.exact[f].toarray()  # (n_words, V)
        n_words = np.maximum((table > 0).sum(0), 1)  # (V,) each attribute's words
        raw = np.zeros((n, table.shape[1]), dtype=np.float32)
        for t, tok in enumerate(tokens):
            if enc.word_id[0, t] >= 0:
                raw[t] = table[enc.word_id[0, t]]
            for phrase in phrases.get(tok.key, []):
                ids = [fz.words.id(k) for k in dict.fromkeys(phrase) if fz.words.id(k) >= 0]
                rows = table[ids] if ids else np.zeros((0, table.shape[1]), dtype=np.float32)
                said = (rows > 0).sum(0)
                value = np.where((said >= n_words) & (said > 0), 1.0, rows.max(0, initial=0.0))
                raw[t] = np.maximum(raw[t], value)
        whole = (raw > 0).sum(0) >= n_words
        exact = np.where(whole, (raw > 0).astype(np.float32), raw)
        _, assoc, near = fz.evidence.dense_rows(f, enc.word_id[0, :n], enc.near_id[0, :n], enc.near_sim[0, :n])
        assoc = assoc * fz.assoc_scales(enc)[0, :n, None]
        out[f] = np.stack([exact, assoc, near], -1).astype(np.float32)
    return out


def _reference_with_synonyms(index: ScoringIndex, query: str, book: SynonymBook) -> np.ndarray:
    """(n_items,) scores from FacetScorer.forward over every item, its evidence gathered from
    `_reference_evidence` at each item's attributes."""
    fz = index.featurizer
    enc = fz.encode_queries([query])
    dense = _reference_evidence(index, query, book)
    attrs, evidence = {}, {}
    for f in fz.catalog.facets:
        a = fz.padded_attributes(f)[None]  # (1, I, M)
        t_max, kinds = enc.mask.shape[1], dense[f].shape[-1]
        ev = np.zeros((1, a.shape[1], t_max, a.shape[2], kinds), dtype=np.float32)
        if len(dense[f]) and dense[f].shape[1]:
            gathered = dense[f][:, np.maximum(a[0], 0)]  # (T, I, M, K)
            ev[0, :, : len(dense[f])] = np.where((a[0] >= 0)[None, :, :, None], gathered, 0).transpose(1, 0, 2, 3)
        attrs[f], evidence[f] = torch.from_numpy(a), torch.from_numpy(ev)
    with torch.no_grad():
        out = index.model(enc.bucket, enc.grams, enc.mask, enc.specificity, attrs, evidence)
    return out["scores"][0].numpy()


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
def test_synonyms_score_as_the_reference(index, use_kernel):
    """With synonyms in force, the index's scores and top k equal the model's own computation over
    hand-built evidence, on both paths; words without synonyms score as before."""
    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    book = SynonymBook(parse_synonyms(SYNONYMS))
    before = {q: index.score(index.query_state(q)) for q in ["casual dress", "dining"]}
    index.use_kernel, index.synonyms = use_kernel, book
    try:
        for query in SYNONYM_QUERIES:
            ref = _reference_with_synonyms(index, query, book)
            scale = max(1.0, float(np.abs(ref).max()))
            for _ in range(2):  # cold, then from the per-word caches
                state = index.query_state(query)
                got = index.score(state)
                np.testing.assert_allclose(got, ref, atol=2e-6 * scale, rtol=0)
                assert np.array_equal(index.top_k(state, None, None, 7)[0], fast_top_k(got, None, 7))
        changed = index.score(index.query_state("dining seat"))
        for q, scores in before.items():
            assert np.array_equal(index.score(index.query_state(q)), scores)
    finally:
        index.use_kernel, index.synonyms = True, None
    assert not np.array_equal(index.score(index.query_state("dining seat")), changed)  # the cache keeps them apart


def test_a_synonym_state_has_the_reference_evidence(index):
    book = SynonymBook(parse_synonyms(SYNONYMS))
    index.synonyms = book
    try:
        for query in SYNONYM_QUERIES:
            state = index.query_state(query)
            want = _reference_evidence(index, query, book)
            for f in FACETS:
                np.testing.assert_allclose(state.evidence[f], want[f], atol=1e-6)
    finally:
        index.synonyms = None


# what an index holds that is not its item side: the model's tables, the featurizer (and the
# catalogue in it), the per-word caches and the synonyms
NOT_ITEM_SIDE = {"model", "featurizer", "queries", "word_parts", "synonyms", "_catalog"}


def _owned_arrays(obj, found: dict[int, np.ndarray], seen: set[int]) -> dict[int, np.ndarray]:
    """Every numpy array reachable from `obj` through the index's own objects (attributes, dicts,
    lists, sparse matrices) but NOT_ITEM_SIDE, each as the array that owns its memory."""
    if id(obj) in seen:
        return found
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        while isinstance(obj.base, np.ndarray):
            obj = obj.base
        found[id(obj)] = obj
    elif sp.issparse(obj):
        for part in (obj.data, obj.indices, obj.indptr):
            _owned_arrays(part, found, seen)
    elif isinstance(obj, dict):
        for value in obj.values():
            _owned_arrays(value, found, seen)
    elif isinstance(obj, list | tuple):
        for value in obj:
            _owned_arrays(value, found, seen)
    elif type(obj).__module__.startswith("recsys.index") and hasattr(obj, "__dict__"):
        for name, value in vars(obj).items():
            if name not in NOT_ITEM_SIDE:
                _owned_arrays(value, found, seen)
    return found


def test_nbytes_counts_every_array_of_the_item_side_once(tmp_path):
    """`nbytes` is the bytes of every array the index holds but NOT_ITEM_SIDE, each block of
    memory once: the explanations' slot lengths and, once built, the items' attribute columns
    among them. An array added to the item side is counted there, or named in NOT_ITEM_SIDE."""
    index = _index(tmp_path, _items(copies=1))
    held = lambda: sum(a.nbytes for a in _owned_arrays(index, {}, set()).values())  # noqa: E731
    before = index.nbytes()
    assert before == held() > 0
    rows = index.sets.item_rows()  # what a Recommender builds at load
    assert index.nbytes() - before == rows.ptr.nbytes + rows.cols.nbytes  # its values are the index's
    assert index.nbytes() == held()


def test_the_top_k_without_offsets_equals_the_one_with_zero_offsets(big_index):
    """`kernels._top_k_plain` (no rules apply) is the offsets kernel's fast path: with every
    offset 0 the two give the same items in the same order and the same floats."""
    if compiled() is None:
        pytest.skip("numba is not installed")
    index, rng = big_index, np.random.default_rng(3)
    zero = index.offsets(np.arange(index.n_items), np.zeros(index.n_items))
    for query, weights in itertools.product(QUERIES, WEIGHTS):
        state = index.query_state(query)
        for mask in _masks(index.n_items, rng):
            for k in (1, 10, 37):
                plain_items, plain_scores = index.top_k(state, weights, mask, k)
                items, scores = index.top_k(state, weights, mask, k, offsets=zero)
                assert plain_scores.dtype == np.float32 and scores.dtype == np.float64
                np.testing.assert_array_equal(items, plain_items)
                np.testing.assert_array_equal(scores, plain_scores.astype(np.float64))


def test_the_compiled_word_items_equal_the_numpy_ones(big_index):
    """`QueryMatches`' compiled pass (`kernels._word_items`, which sums only the sets a word
    could match) marks the same items as the numpy one (every set summed), word for word, on a
    catalogue with repeated sets and every query of QUERIES."""
    if compiled() is None:
        pytest.skip("numba is not installed")
    matches = QueryMatches(big_index)
    index = big_index
    seen = 0
    try:
        for query in QUERIES:
            state = index.query_state(query)
            if not state.tokens:
                continue
            flat, flat_nm = state.flat_logits, state.flat_no_match
            # where each word is said (`QueryState.lexical`), every column, and a pattern of its own
            pattern = [np.flatnonzero(np.arange(flat.shape[1]) % 3 != t % 3) for t in range(len(flat))]
            for countable in (state.lexical, None, pattern):
                index.use_kernel = True
                fast = matches._word_items(flat, countable, flat_nm)
                index.use_kernel = False
                slow = matches._word_items(flat, countable, flat_nm)
                np.testing.assert_array_equal(fast, slow)
            seen += int(count_items(fast).sum())
    finally:
        index.use_kernel = True
    assert seen > 0  # some words match some items: not only empty masks compared


def test_top_k_equals_sorting_where_the_start_ties_thousands_exactly(tmp_path):
    """The untrained start gives nothing for attributes a word does not match (`unmatched_offset`),
    so a word half the catalogue has ties those items exactly: the compiled top-k's seeds stop at
    SEEDS and its scan in index order stops once no later item can enter; both kernels (with a
    rule's offsets and without) must still give the stable sort's items and floats, with masks
    and every k."""
    if compiled() is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(5)
    n = 4000
    items = pd.DataFrame({
        "item_id": [f"T{i:05d}" for i in range(n)],
        "title": [f"{rng.choice(['wool', 'silk', 'linen'])} {rng.choice(['scarf', 'shawl', 'wrap', 'stole'])}"
                  for _ in range(n)],
        "quality": rng.choice(["standard", "premium", ""], size=n, p=[0.5, 0.3, 0.2]),
        "color": rng.choice(["red", "blue", "green", "black", "grey"], size=n),
        "price": [f"{10 + i % 90}.00" for i in range(n)],
    })
    path = tmp_path / "items.csv"
    items.to_csv(path, index=False)
    df, _ = read_items(path)
    catalog = Catalog.build(df)
    no_rows = pd.DataFrame({"query": pd.Series([], dtype=object), "item_idx": pd.Series([], dtype=np.int64),
                            "label": pd.Series([], dtype=np.float32), "weight": pd.Series([], dtype=np.float32)})
    featurizer = build_featurizer(catalog, no_rows, TrainConfig())
    index = ScoringIndex(start_model(featurizer, 0), featurizer)
    weights = np.ones(len(index.facets), dtype=np.float32)
    # a rule's offsets (the offsets kernel, the same stops): none at all; buries of a tenth of the
    # items; those and a boost of a few items
    buried = rng.choice(n, size=n // 10, replace=False)
    boosted = rng.choice(n, size=5, replace=False)
    offsets = [None, index.offsets(buried, np.full(len(buried), -0.5)),
               index.offsets(np.concatenate([buried, boosted]),
                             np.concatenate([np.full(len(buried), -0.5), np.full(5, 0.25)]))]
    tied = 0
    for query in ("standard", "standard zzzz", "red", "standard red scarf", "wool"):
        state = index.query_state(query)
        scores = index.score(state, weights)
        tied = max(tied, int((scores == scores.max()).sum()))
        for mask, offset in itertools.product(_masks(n, rng), offsets):
            want = scores if offset is None else scores.astype(np.float64) + offset.per_item
            for k in (1, 10, 37):
                got, got_scores = index.top_k(state, weights, mask, k, offsets=offset)
                expected = sorted_top_k(want, mask, k)
                np.testing.assert_array_equal(got, expected)
                np.testing.assert_array_equal(got_scores, want[expected])
    assert tied > 1000  # the case the test is for: thousands of exact ties at the top


def test_a_value_written_as_one_word_keeps_its_parts_shares(tmp_path):
    """"off-white" is one word as written that the tokeniser splits in two: a query with both
    parts counts each at its own share of the value (`formula.is_phrase`), as BM25 counts "off"
    and "white", where a phrase ("navy blue") covered whole is a full match for each word. The
    index holds the reference forward's scores either way."""
    items = _items(copies=1)
    extra = items.iloc[:8].copy()
    extra["item_id"] = [f"OW{i}" for i in range(len(extra))]
    extra["color"] = ["off-white"] * 3 + ["white"] * 5  # "white" alone is more common: a share below 1
    index = _index(tmp_path, pd.concat([items, extra], ignore_index=True))
    cat, ev = index.featurizer.catalog, index.featurizer.evidence
    off_white = next(i for i, a in enumerate(cat.vocab["color"]) if a.value == "off-white")
    navy_blue = next(i for i, a in enumerate(cat.vocab["color"]) if a.value == "navy blue")
    assert ev.phrase_of("color")[off_white] == 0 and ev.phrase_of("color")[navy_blue] == 1
    for query, col, whole in (("off white", off_white, False), ("navy blue", navy_blue, True)):
        exact = index.query_state(query).evidence["color"][:, col, EXACT]  # (T,)
        stored = [ev.exact["color"][index.featurizer.words.id(t.key), col] for t in index.query_state(query).tokens]
        np.testing.assert_array_equal(exact, np.ones(2) if whole else np.array(stored, dtype=np.float32))
        assert whole or ((exact > 0).all() and (exact < 1).any())
    for query in ("off white", "off-white dress", "white", "navy blue"):
        ref_scores, _ = reference(index, query)
        state = index.query_state(query)
        scale = max(1.0, float(np.abs(ref_scores).max()))
        np.testing.assert_allclose(index.score(state), ref_scores, atol=2e-6 * scale, rtol=0)
