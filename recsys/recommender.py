"""The one object the CLI and the API talk to: a loaded model version over its catalogue."""

from __future__ import annotations

import difflib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from .catalog import Catalog, FilterValues
from .encoding import Featurizer
from .errors import InputError
from .explain import (
    REASON_MIN,
    Explanation,
    HeadDetail,
    HeadExplanation,
    alone_margins,
    can_match,
    contrast_summaries,
    describe_difference,
    detail_item,
    explain_items,
    item_rows,
    rule_note,
    synonym_effects,
    unmatched_tokens,
)
from .facet_counts import FacetCounter, FacetCounts
from .index.query import QueryState
from .index.scoring import ScoringIndex
from .index.topk import ItemOffsets, fast_top_k
from .io.money import as_number
from .item_bits import count_items, holds_items, unpack_items
from .lru import WordCache
from .model import FacetScorer
from .rules import BASE_SETS, Adjustments, RuleEffect, place_pins, sum_effects
from .similar import (
    TITLE_KIND,
    ItemQuery,
    TitleKinds,
    inferred_kind_key,
    item_query,
    kind_filter,
    kind_keys,
    named_label,
    same_values,
)
from .synonyms import SynonymBook
from .words import without_joined_parts


@dataclass
class RankedItem:
    item_id: str
    title: str
    rank: int
    score: float
    attributes: dict[str, list[str]]
    explanation: Explanation | None
    numbers: dict[str, float] = field(default_factory=dict)  # `Catalog.item_numbers`
    value_names: dict[str, str] = field(default_factory=dict)  # `Catalog.item_value_names`


@dataclass
class Recommendation:
    query: str
    tokens: list[str]
    model_version: str
    items: list[RankedItem]
    total: int  # items that passed filters, exclusions and candidates
    unmatched_tokens: list[str]  # query words no item of the catalogue matches
    # the shopper's history words that were ranked with the query (`profile.Profile.words`,
    # those it did not say already); `tokens` and `unmatched_tokens` leave them out
    history: list[str] = field(default_factory=list)


@dataclass
class Ranking:
    """The k best items for a query, ids and scores only: what `recommend` dresses with titles,
    attributes and explanations."""

    query: str
    item_ids: list[str]  # best first
    scores: list[float]
    total: int  # items that passed filters, exclusions and candidates


@dataclass
class ItemDetail:
    query: str
    item_id: str
    tokens: list[str]
    score: float
    prior: float
    heads: list[HeadDetail]
    # the merchandising rules acting on the item for this query (`recsys.rules`): `score` is
    # prior + the heads' contributions + their amounts (a pin or a hide has none)
    rules: list[RuleEffect] = field(default_factory=list)


@dataclass
class Comparison:
    query: str
    item_a: str
    item_b: str
    score_a: float
    score_b: float
    prior_difference: float
    heads: list[dict[str, Any]]  # head, contribution_a, contribution_b, difference, attributes (the ones that differ)
    summary: str  # why A is above (or below) B, in the reason lines' words
    rules_a: list[RuleEffect] = field(default_factory=list)
    rules_b: list[RuleEffect] = field(default_factory=list)


# how an explanation names the matches of the shopper's history words (`recommend`'s `history`)
HISTORY_LABEL = "your history"
# with a typed query, the shopper's history re-ranks this many of the query's best items: on the
# simulated shoppers of benchmarks/shopper_loop.py, ranking it over the whole catalogue let
# history words outvote the typed ones (judged NDCG@10 0.745 -> 0.48 with 4 history words),
# over the best 50 it cost 0.085, over the best 20 0.034 (1,000 items, 60 shoppers, seed 0)
HISTORY_DEPTH = 20
# a query word names an attribute (`matched_attributes`) when it holds this much of its attention
# there: an explanation's match threshold (0.1) also lists weak ones. On the generator's queries
# (seed 0, 300 searches) a style was named where none was asked in 85 at 0.1, 39 at 0.3, while
# a colour asked was missed in 6 and 15; at 0.5, 17 and 24
NAMED_WEIGHT = 0.3

# words whose answer to "can it match anything?" a Recommender keeps (`_unmatched_tokens`): a
# bool and the word each, about 100 bytes, so at most ~5 MB; as many history words' match keys
# (`_word_keys`), a few hundred bytes each
WORD_MATCHES = 50_000
# facet counts are kept per listing (`FacetCounter.answers`) with up to this many items excluded
# (a request's exclusions and the items its rules hide); a listing of a longer list is counted
# afresh each time rather than kept under a long key
MAX_KEPT_EXCLUSIONS = 100


class Recommender:
    def __init__(self, model: FacetScorer, featurizer: Featurizer, version: str = "unsaved",
                 manifest: dict[str, Any] | None = None):
        self.model, self.featurizer = model, featurizer
        self.version, self.manifest = version, manifest or {}
        self.index = ScoringIndex(model, featurizer)
        item_rows(self.index)  # what batched explanations read, built now rather than on a request
        self.popularity: np.ndarray | None = None  # positive-label mass per item, for baselines
        self.word_matches: WordCache[bool] = WordCache("word matches", WORD_MATCHES)
        # per set of rules for any query (id of its Adjustments, kept so the id is not reused):
        # its offsets as the index adds them
        self._offsets: OrderedDict[int, tuple[Adjustments, ItemOffsets | None]] = OrderedDict()
        self._offsets_lock = threading.Lock()
        self.history_keys: WordCache[frozenset[str]] = WordCache("history word keys", WORD_MATCHES)

    @property
    def catalog(self) -> Catalog:
        return self.featurizer.catalog

    # ---- scoring ------------------------------------------------------------------------------

    @property
    def facets(self) -> tuple[str, ...]:
        """The model's heads, in order (its config's facets: the artifact's, when loaded)."""
        return self.model.cfg.facets

    def head_weight_vector(self, head_weights: Mapping[str, float] | None) -> np.ndarray:
        w = np.ones(len(self.facets), dtype=np.float32)
        for name, value in (head_weights or {}).items():
            if name not in self.facets:
                raise InputError(f"head_weights.{name}: unknown head; this model's heads are "
                                 f"{', '.join(self.facets)}")
            w[self.facets.index(name)] = value
        return w

    def scores(self, query: str, head_weights: Mapping[str, float] | None = None) -> np.ndarray:
        """(n_items,) scores of the whole catalogue."""
        state = self.index.query_state(query)
        return self.index.score(state, self.head_weight_vector(head_weights))

    def use_synonyms(self, book: SynonymBook | None) -> None:
        """Rank with the shop's synonyms `book` from the next query on (None: none): every
        query state of this model applies them (`recsys.synonyms`); no retraining."""
        self.index.synonyms = book if book is not None and len(book) else None

    @property
    def synonyms(self) -> SynonymBook | None:
        return self.index.synonyms

    def is_warm(self, query: str) -> bool:
        """Every word of `query` has its rows in the index's per-word cache: answering it computes
        no word's features (a word never seen costs up to 0.4 ms on Home Depot's vocabulary),
        only sums over the catalogue."""
        rows, tokens = self.index.queries.word_rows, self.featurizer.query_tokens(query, self.index.synonyms)
        return all(t.cache_key in rows for t in tokens)

    def top_indices(self, query: str, k: int) -> np.ndarray:
        """(k,) catalogue indices of the k best items for `query` over the whole catalogue, best
        first (the index's exact top-k: what `rank` shows, without ids or filters)."""
        return self.index.top_k(self.index.query_state(query), None, None, k)[0]

    def rank(
        self,
        query: str,
        k: int = 10,
        offset: int = 0,
        filters: Mapping[str, FilterValues] | None = None,
        exclude: Sequence[str] = (),
        candidates: Sequence[str] | None = None,
        head_weights: Mapping[str, float] | None = None,
        rules: Adjustments | None = None,
    ) -> Ranking:
        """The ranking alone (`recommend` without titles, attributes or explanations)."""
        _, _, shown, scores, total = self._top(query, k, offset, filters, exclude, candidates, head_weights,
                                               rules)
        ids = self.catalog.item_ids
        return Ranking(query, [ids[i] for i in shown.tolist()], scores.tolist(), total)

    def recommend(
        self,
        query: str,
        k: int = 10,
        offset: int = 0,
        filters: Mapping[str, FilterValues] | None = None,
        exclude: Sequence[str] = (),
        candidates: Sequence[str] | None = None,
        head_weights: Mapping[str, float] | None = None,
        explain: bool = True,
        history: Sequence[str] = (),
        rules: Adjustments | None = None,
        within: np.ndarray | None = None,
    ) -> Recommendation:
        """The k best items for `query` from `offset`, explained head by head. `history` (a
        shopper's profile words, `profile.build_profile`) is ranked as more query words, in the
        same heads, over the query's own HISTORY_DEPTH best items when it has words (the whole
        catalogue when it has none: a home page); each explanation lists those of them that
        matched the item. `rules` (`RuleBook.for_query`) boost, bury, hide and pin items; each
        explanation lists those that acted on its item. `within`: item indices the answer keeps
        to (like-this's kind read from titles), as `candidates` would by their ids."""
        added = self.history_words(query, history)
        with_history = " ".join([query, *added])
        if added and self.is_typed(query):
            # the history re-orders what the query finds and never brings in what it did not ask
            # for: a shopper who likes navy and types "shirt" still wants shirts
            _, _, top, _, total = self._top(query, max(HISTORY_DEPTH, offset + k), 0, filters, exclude,
                                            candidates, head_weights, rules, within)
            if rules is None or rules.empty:
                state, weights, shown, shown_scores = self._rerank(with_history, top, k, offset, head_weights)
            else:  # pins and hides place items by rank: ranked again, with the rules, over `top`
                state, weights, shown, shown_scores, _ = self._top(
                    with_history, k, offset, None, (), [self.catalog.item_ids[i] for i in top.tolist()],
                    head_weights, rules)
        else:
            state, weights, shown, shown_scores, total = self._top(with_history, k, offset, filters, exclude,
                                                                   candidates, head_weights, rules, within)
        ranks = list(range(offset + 1, offset + 1 + len(shown)))
        explanations: list[Explanation | None] = [None] * len(shown)
        if explain:
            # two or more: contrast_summaries writes every reason line, so none is written first
            explained = explain_items(self.index, state, shown, weights, ranks, summaries=len(shown) < 2)
            if rules is not None:  # the reason lines weigh the rules' terms beside the heads
                for e, effects in zip(explained, rules.effects_of(shown, self.unboosted(state, shown))):
                    e.rules = effects
            contrast_summaries(explained, ranks, words=bool(state.tokens))
            for e in explained:
                drew = {m.query_token for h in e.heads for m in h.matches if m.counts} if added else set()
                e.history = [w for w in added if w in drew]
                if e.history:
                    e.summary += f"; {HISTORY_LABEL}: {', '.join(e.history)}"
            if any(t.synonyms for t in state.tokens):
                for e, i in zip(explained, shown.tolist()):
                    e.synonyms = synonym_effects(self.index, state, i, e.heads)
                    if e.synonyms:
                        e.summary += "; " + "; ".join(s.note for s in e.synonyms)
            for e, rank in zip(explained, ranks):
                if e.rules:
                    e.summary += "; " + "; ".join(rule_note(r, rank) for r in e.rules)
            explanations = list(explained)
        items = [self._ranked_item(i, s, rank, e)
                 for i, s, rank, e in zip(shown.tolist(), shown_scores.tolist(), ranks, explanations)]
        said = [t.surface for t in state.tokens]
        tokens = [w for w in said if w not in added]
        unmatched = [w for w in self._unmatched_tokens(state) if w not in added]
        return Recommendation(query, tokens, self.version, items, total, unmatched,
                              [w for w in added if w in said])

    def _ranked_item(self, i: int, score: float, rank: int, explanation: Explanation | None) -> RankedItem:
        labels = self.catalog.attribute_labels(i)
        return RankedItem(item_id=self.catalog.item_ids[i], title=self.catalog.titles[i], rank=rank, score=score,
                          attributes=labels, explanation=explanation, numbers=self.catalog.item_numbers(i),
                          value_names=self.catalog.item_value_names(labels))

    def is_typed(self, query: str) -> bool:
        """Whether `query` has a word to rank (not empty, not stop words alone): a typed query,
        which a shopper's history only re-orders; otherwise a home page."""
        return bool(self.featurizer.query_tokens(query))

    def history_words(self, query: str, history: Sequence[str]) -> list[str]:
        """The words of `history` that `query` does not say already (by match key): a word
        typed is the shopper's own, and ranking it twice would count it twice."""
        if not history:  # most requests: the query is not tokenized once more for nothing
            return []
        typed = {t.key for t in self.featurizer.query_tokens(query)}
        return [w for w in history if not self._word_keys(w) <= typed]

    def _word_keys(self, word: str) -> frozenset[str]:
        """The match keys of a history word, remembered in `history_keys`: a shopper's profile
        is the same words for every request of a few seconds, so they are tokenized once, not
        per request (a few percent of a personalised typed query's time at 100k items)."""
        keys = self.history_keys.get(word)
        if keys is None:
            keys = frozenset(t.key for t in self.featurizer.query_tokens(word))
            self.history_keys.put(word, keys)
        return keys

    @cached_property
    def facet_counter(self) -> FacetCounter:
        """Facet counts over this catalogue (`recsys.facet_counts`), built on first use."""
        return FacetCounter(self.index)

    def facet_counts(self, query: str, keys: Sequence[str] | None = None,
                     filters: Mapping[str, FilterValues] | None = None, exclude: Sequence[str] = (),
                     candidates: Sequence[str] | None = None, rules: Adjustments | None = None) -> FacetCounts:
        """Values and counts of `keys` (None: every facet key) over the items matching `query`
        that a `recommend` with the same filters, exclusions, candidates and `rules` may return
        (the items they hide are not counted), each key's own filter left out
        (`recsys.facet_counts`)."""
        counter = self.facet_counter
        masks = {key: counter.filter_mask(key, values, self._filter_mask) for key, values in (filters or {}).items()}
        hidden = None if rules is None or not rules.hidden.size else rules.hidden
        listing = None  # what the counts are kept under: the filters, exclusions and hidden items
        if candidates is None and len(exclude) + (0 if hidden is None else hidden.size) <= MAX_KEPT_EXCLUSIONS:
            listing = "\x1c".join(("\x1f".join(sorted(counter.filter_name(k, v) for k, v in (filters or {}).items())),
                                   "\x1f".join(sorted(set(exclude))),
                                   "" if hidden is None else ",".join(map(str, hidden.tolist()))))
        return counter.count(self.index.query_state(query), keys, self._eligible(None, exclude, candidates), masks,
                             listing_key=listing, hidden=hidden)

    def _filter_mask(self, key: str, values: FilterValues) -> np.ndarray:
        mask = self._eligible({key: values}, (), None)
        assert mask is not None  # a filter always gives one
        return mask

    def _unmatched_tokens(self, state: QueryState) -> list[str]:
        """`explain.unmatched_tokens`, remembered per word in its context in `word_matches`.
        Whether a word can match anything depends on its logits alone, which are the same in
        any query where the same words couple to it (`QueryState.context_keys`: the word alone,
        for most); a query whose words are all remembered is answered without its logits, which
        ranking from cached word parts never computes (without explanations they were half of
        `recommend`'s time at 3k items). A word counts as remembered only while its rows are in
        the index's cache, so emptying that (`ScoringIndex.clear_caches`) makes it cold here too."""
        keys, rows = state.context_keys, self.index.queries.word_rows
        cacheable = [keys is not None and t.cache_key in rows for t in state.tokens]
        known = [self.word_matches.get(keys[i]) if ok and keys is not None else None
                 for i, ok in enumerate(cacheable)]
        if None not in known:
            unmatched = [t.surface for t, matches in zip(state.tokens, known) if not matches]
        else:
            unmatched = unmatched_tokens(self.index, state)
            for i, (t, ok) in enumerate(zip(state.tokens, cacheable)):
                if ok and keys is not None:
                    self.word_matches.put(keys[i], t.surface not in unmatched)
        return without_joined_parts(state.tokens, unmatched)

    def similar(
        self,
        item_id: str,
        k: int = 10,
        offset: int = 0,
        filters: Mapping[str, FilterValues] | None = None,
        exclude: Sequence[str] = (),
        explain: bool = True,
        same: Sequence[str] | None = None,
        rules: Adjustments | None = None,
    ) -> tuple[ItemQuery, Recommendation]:
        """Items like `item_id` (never itself): its own attributes as the query
        (`similar.item_query`), ranked and explained as `recommend` does; the first part says
        which of its attributes each query word came from, and which of its values the results
        were kept to (`ItemQuery.kept_to`). `same`: filter keys whose values the results must
        share with the item (`["category"]`: a chair's like-this are chairs; a key the item has
        no value of restricts nothing); None: its kind (`similar.kind_filter`), unless `filters`
        name a kind key (`kind_keys`: a column of a usual name, or the one whose values hold the
        titles' kinds), or in a catalogue with no kind column the kind its title names
        (`similar.TitleKinds`); (): nothing. `rules` act as on `recommend`."""
        item_id = self.catalog.canonical(item_id)  # a variant's page asks for its product's
        item_idx = self.catalog.idx(item_id)
        asked = item_query(self.catalog, item_idx, self.featurizer.attribute_df)
        kept = self._same_as(item_idx, same, filters)
        kind = self.title_kinds.kind_of(item_idx) if same is None and not self.kind_keys else None
        # only items that share some word with it are like it: a query that matches few items is
        # otherwise answered with the rest of the catalogue by prior after them
        within = self._matching(asked.query)
        if kind is not None:
            within = np.intersect1d(within, kind[1], assume_unique=True)
        result = self.recommend(asked.query, k=k, offset=offset, filters={**(filters or {}), **kept} or None,
                                exclude=[*exclude, item_id], explain=explain, rules=rules, within=within)
        if kind is not None:  # no kind column: the kind its title names
            kept = {**kept, TITLE_KIND: [kind[0]]}
        return replace(asked, kept_to=kept), result

    def _matching(self, query: str) -> np.ndarray:
        """(m,) int64 sorted: the items some word of `query` matches (`query_match`)."""
        bits = self.facet_counter.matches.matching(self.index.query_state(query))
        return np.flatnonzero(unpack_items(bits, self.catalog.n_items)).astype(np.int64)

    @cached_property
    def kind_keys(self) -> list[str]:
        """The filter keys like-this keeps to an item's kind by, finest first: those of the usual
        names (`similar.kind_keys`), else the column whose values hold the kind the titles name
        (`similar.inferred_kind_key`), counted on the first like-this; [] for none."""
        named = kind_keys(self.catalog)
        if named:
            return named
        inferred = inferred_kind_key(self.catalog, self.title_kinds)
        return [inferred] if inferred is not None else []

    @cached_property
    def title_kinds(self) -> TitleKinds:
        """Each item's kind as its title names it (`similar.TitleKinds`), read on the first
        like-this of a catalogue without a kind column."""
        return TitleKinds(self.catalog.titles)

    def _same_as(self, item_idx: int, same: Sequence[str] | None,
                 filters: Mapping[str, FilterValues] | None) -> dict[str, list[str]]:
        """The filters `same` adds to `filters`: for each of its keys, the item's own values of
        it; for None, its kind's (`similar.kind_filter`) unless `filters` name a kind key."""
        given = {self.catalog.filter_key(k) for k in filters or {}}
        if same is None:
            return kind_filter(self.catalog, item_idx, given, self.kind_keys)
        out: dict[str, list[str]] = {}
        for key in same:
            name = self.catalog.filter_key(key)
            if name is None:
                keys = ", ".join(sorted(self.catalog.filter_keys()))
                raise InputError(f"same: unknown key {key.strip()!r}; use one of: {keys}")
            if name in given:
                raise InputError(f"same: {key.strip()!r} is also a filter; give it once (the "
                                 f"filter names values, same takes the item's own)")
            values = same_values(self.catalog, item_idx, name)
            if values:
                out[name] = values
        return out

    def _top(self, query: str, k: int, offset: int, filters: Mapping[str, FilterValues] | None,
             exclude: Sequence[str], candidates: Sequence[str] | None,
             head_weights: Mapping[str, float] | None, rules: Adjustments | None = None,
             within: np.ndarray | None = None) -> tuple[QueryState, np.ndarray, np.ndarray, np.ndarray, int]:
        """(query state, head weights, the shown items' indices and scores, eligible count)."""
        weights = self.head_weight_vector(head_weights)
        eligible = self._eligible(filters, exclude, candidates, within)
        state = self.index.query_state(query)
        if rules is not None and not rules.empty:
            return self._top_with_rules(state, weights, head_weights, eligible, k, offset, rules)
        order, top_scores = self.index.top_k(state, weights if head_weights else None, eligible, offset + k)
        total = self.catalog.n_items if eligible is None else int(np.count_nonzero(eligible))
        return state, weights, order[offset:], top_scores[offset:], total

    def _rerank(self, query: str, items: np.ndarray, k: int, offset: int,
                head_weights: Mapping[str, float] | None,
                ) -> tuple[QueryState, np.ndarray, np.ndarray, np.ndarray]:
        """`_top` over `items` alone (as its `candidates`), with the same order, ties by catalogue
        order, and floats (tests/recsys/test_profile.py): only `items` scored
        (`ScoringIndex.score_items`), neither the catalogue ranked under a mask of them nor the
        groups' tables built for them, each a second pass for a typed query with a history."""
        weights = self.head_weight_vector(head_weights)
        state = self.index.query_state(query)
        scores = self.index.score_items(state, weights if head_weights else None, items).astype(np.float64)
        best = np.lexsort((items, -scores))[offset : offset + k]
        return state, weights, items[best], scores[best]

    def _top_with_rules(self, state: QueryState, weights: np.ndarray, head_weights: Mapping[str, float] | None,
                        eligible: np.ndarray | None, k: int, offset: int, rules: Adjustments,
                        ) -> tuple[QueryState, np.ndarray, np.ndarray, np.ndarray, int]:
        """`_top` with rules: the same answer as ranking every eligible, unhidden item by its
        score plus its boosts and buries (tests/recsys/test_rules.py, the reference), then placing
        the pins. The boosts and buries of the rules for any query (most of the items rules move)
        are a per-item offset of the index's own scores, which its pruned top-k bounds per table
        entry (`ScoringIndex.offsets`, built once per rule set); the items a query's own rules
        move are ranked beside them with their own sums (`top_k`'s extra items); hidden and pinned
        items are left out as exclusions are (docs/results.md, Merchandising rules)."""
        want = offset + k
        apart, values = rules.apart, rules.apart_values
        if eligible is None:
            ranked_mask, total, pins = rules.ranked, self.catalog.n_items - rules.hidden.size, rules.pins
        else:
            ranked_mask = rules.ranked & eligible
            total = int(np.count_nonzero(eligible)) - int(np.count_nonzero(eligible[rules.hidden]))
            pins = [(p, i) for p, i in rules.pins if eligible[i]]
            apart, values = apart[eligible[apart]], values[eligible[apart]]
        pins = [(min(p, total), i) for p, i in pins]
        w = weights if head_weights else None
        indexed = rules if rules.indexed else rules.base
        offsets = self._rule_offsets(indexed) if indexed is not None else None
        # a boost acts on what the query matches: a raised item it does not match keeps its buries
        # alone, in the offsets (below the bounds, which stay bounds) and among those apart
        bits = self.facet_counter.matches.matching(state) if state.tokens else None
        if offsets is not None and indexed is not None and bits is not None and bits.any():
            offsets = self._unboosted_offsets(indexed, offsets, bits)
        raised_apart = rules.raises(apart) if apart.size else apart[:0].astype(bool)
        left = self.unboosted(state, apart[raised_apart], bits) if raised_apart.any() else None
        if left is not None and left.any():
            at = np.flatnonzero(raised_apart)[left]
            values = values.copy()
            values[at] = rules.lowered_of(apart[at])
        ranked, ranked_scores = self.index.top_k(state, w, ranked_mask, want, offsets, (apart, values))
        if not pins:  # what `place_pins` gives without pins, and the scores with it
            shown = np.asarray(ranked[offset:want], dtype=np.int64)
            return state, weights, shown, ranked_scores[offset:want].astype(np.float64), total
        shown = place_pins(ranked, pins, want)[offset:]
        by_item = dict(zip(ranked.tolist(), ranked_scores.astype(np.float64).tolist()))
        pinned = np.array([i for _, i in pins], dtype=np.int64)
        left_pins = self.unboosted(state, pinned, bits)
        pinned_scores = (self.index.score_items(state, w, pinned).astype(np.float64)
                         + [rules.delta_of(i, bool(left_pins[n]) if left_pins is not None else False)
                            for n, i in enumerate(pinned.tolist())])
        by_item.update(zip(pinned.tolist(), pinned_scores.tolist()))
        shown_scores = np.array([by_item[i] for i in shown.tolist()], dtype=np.float64)
        return state, weights, shown, shown_scores, total

    def unboosted(self, state: QueryState, items: np.ndarray, bits: np.ndarray | None = None) -> np.ndarray | None:
        """(len(items),) bool: which of `items` a boost leaves alone for this query, those no
        word of it matches (a boost of a brand for any query lifted its items that match nothing
        above every real result of "cheddar"); None where boosts act on every item: a search
        with no word (a home page) or one no item matches, whose answer is by prior anyway.
        `bits`: the query's matching items (`QueryMatches.matching`), when the caller has them."""
        if not state.tokens or not len(items):
            return None
        if bits is None:
            bits = self.facet_counter.matches.matching(state)
        if not bits.any():
            return None
        left: np.ndarray = ~holds_items(bits, items)
        return left

    def _unboosted_offsets(self, indexed: Adjustments, offsets: ItemOffsets, bits: np.ndarray) -> ItemOffsets:
        """`offsets` for the raised items the query matches (`bits`), scored apart, and every
        other item's buries alone (`Adjustments.lowered`, once per set): the bounds of the
        pruned top-k then count no boost the query leaves out (`ItemOffsets.for_matches`); per
        query only the raised items' bits are joined with the matches' (a few microseconds)."""
        boosted = indexed.raised_bits() & bits
        if int(count_items(boosted)) == indexed.raised_items().size:
            return offsets  # the query matches every raised item: the bounds are its own
        return offsets.for_matches(indexed.lowered(), boosted)

    def _rule_offsets(self, rules: Adjustments) -> ItemOffsets | None:
        """The boosts and buries of the rules for any query (`rules.indexed`) as the index's
        per-item offsets (None: none), built once per set (about 10 ms at 100k items when they
        move most items) and kept as `RuleBook.for_query` keeps the sets."""
        with self._offsets_lock:
            hit = self._offsets.get(id(rules))
            if hit is not None and hit[0] is rules:
                self._offsets.move_to_end(id(rules))
                return hit[1]
        built = self.index.offsets(rules.offset_items, rules.offset_values) if rules.offset_items.size else None
        with self._offsets_lock:
            self._offsets[id(rules)] = (rules, built)
            while len(self._offsets) > BASE_SETS:
                self._offsets.popitem(last=False)
        return built

    def _scores_of(self, tables: list[np.ndarray], items: np.ndarray) -> np.ndarray:
        """(len(items),) float64 model scores of `items`, the same floats the index's top-k gives."""
        if not items.size:
            return np.zeros(0, dtype=np.float64)
        return self.index.grouped.item_scores(tables, items).astype(np.float64)

    def _eligible(self, filters: Mapping[str, FilterValues] | None, exclude: Sequence[str],
                  candidates: Sequence[str] | None, within: np.ndarray | None = None) -> np.ndarray | None:
        """The items a request may return; None when it restricts nothing (the common case,
        spared a full-catalogue mask). `within`: item indices it keeps to besides."""
        if not filters and candidates is None and not exclude and within is None:
            return None
        if filters:
            unknown = sorted(k.strip().lower() for k in filters if self.catalog.filter_key(k) is None)
            if unknown:
                keys = ", ".join(sorted(self.catalog.filter_keys()))
                raise InputError(f"filters: unknown key {unknown[0]!r}; filter on one of: {keys}")
            unknown_values = self.catalog.unknown_filter_values(filters)
            if unknown_values:
                raise InputError(self._unknown_filter_value(*unknown_values[0]))
            mask = self.catalog.filter_mask(filters)
        else:
            mask = np.ones(self.catalog.n_items, dtype=bool)
        if candidates is not None:
            only = np.zeros_like(mask)
            only[[self.catalog.idx(self.catalog.canonical(c)) for c in candidates]] = True
            mask &= only
        if within is not None:
            only = np.zeros_like(mask)
            only[within] = True
            mask &= only
        for item_id in map(self.catalog.canonical, exclude):  # a variant's SKU excludes its product
            if self.catalog.has(item_id):
                mask[self.catalog.idx(item_id)] = False
        return mask

    def _unknown_filter_value(self, key: str, value: str, shown: int = 20) -> str:
        """The message for a filter value that selects nothing: the value the model would match
        the word to ("crimson" -> red), or failing that the nearest spelling, and the values."""
        values = self.catalog.filter_values(key)
        suggestion = self._matched_value(key, value) or next(
            iter(difflib.get_close_matches(value.strip().lower(), values, n=1)), None)
        listed = ", ".join(values[:shown]) + (f", ... ({len(values)} in all)" if len(values) > shown else "")
        hint = f"; did you mean {suggestion!r}?" if suggestion else "."
        if not values:  # a facet no item has a value of (its column empty, or none at all)
            return f"filters: {key.strip()!r} has no value {value!r}: no item has any value of it"
        number = as_number(value.strip())
        if number is not None and self.catalog.filter_key(key) in self.catalog.numbers:
            # a year or a price is a number: its ranges are values, not what "2001" asks for
            bound = int(number) if float(number).is_integer() else number
            asked = json.dumps({key.strip(): {"min": bound, "max": bound}})
            return (f"filters: {key.strip()!r} holds numbers: filter a number as a range, {asked}; "
                    f"its values are ranges: {listed}")
        return f"filters: {key.strip()!r} has no value {value!r}{hint} Its values: {listed}"

    def _matched_value(self, key: str, value: str) -> str | None:
        """The attribute of filter `key` that the words of `value` match best as a query would,
        if any matches (MATCH_THRESHOLD)."""
        state = self.index.query_state(value)
        if not state.tokens:
            return None
        by_facet: dict[str, list[int]] = {}
        for f, a_idx in self.catalog.filter_attributes(key):
            by_facet.setdefault(f, []).append(a_idx)
        best, best_margin = None, -np.inf
        for f, cols in by_facet.items():
            margin = alone_margins(self.index, state, f)[:, cols].max(0)  # (len(cols),) best word
            m = int(np.argmax(margin))
            if margin[m] > best_margin:
                best, best_margin = self.catalog.vocab[f][cols[m]].value, float(margin[m])
        return best if best is not None and can_match(np.array(best_margin)) else None

    # ---- explanations -------------------------------------------------------------------------

    def explain(self, query: str, item_id: str,
                head_weights: Mapping[str, float] | None = None,
                rules: Adjustments | None = None) -> ItemDetail:
        weights = self.head_weight_vector(head_weights)  # a request's bad head before its bad item
        item_id = self.catalog.canonical(item_id)
        item_idx = self.catalog.idx(item_id)
        state = self.index.query_state(query)
        score, prior, heads = detail_item(self.index, state, item_idx, weights)
        left = self.unboosted(state, np.array([item_idx])) if rules is not None else None
        effects = rules.effects(item_idx, left is not None and bool(left[0])) if rules is not None else []
        return ItemDetail(query, item_id, [t.surface for t in state.tokens], score + sum_effects(effects),
                          prior, heads, effects)

    def matched_attributes(self, query: str, items: Sequence[int]) -> list[set[str]]:
        """Per item of `items` (catalogue indices), its attributes that a word of `query` names:
        holds at least NAMED_WEIGHT of the word's attention on, by named label
        (`similar.named_label`): what the query asked of it (`profile.build_profile`'s
        `matched`, which takes out of a shopper's choices what the query named)."""
        state = self.index.query_state(query)
        if not state.tokens or not len(items):
            return [set() for _ in items]
        explained = explain_items(self.index, state, np.asarray(items, dtype=np.int64),
                                  self.head_weight_vector(None), summaries=False)
        return [{named_label(h.head, m.attribute) for h in e.heads for m in h.matches if m.weight >= NAMED_WEIGHT}
                for e in explained]

    def compare(self, query: str, item_a: str, item_b: str,
                head_weights: Mapping[str, float] | None = None,
                rules: Adjustments | None = None) -> Comparison:
        self.head_weight_vector(head_weights)  # a bad head is reported before a bad item
        a = self.explain(query, item_a, head_weights, rules)
        b = self.explain(query, item_b, head_weights, rules)
        heads = []
        for ha, hb in zip(a.heads, b.heads):
            only_a = [x for x in ha.attributes[:-1] if x not in hb.attributes]
            only_b = [x for x in hb.attributes[:-1] if x not in ha.attributes]
            heads.append({
                "head": ha.head,
                "contribution_a": ha.contribution,
                "contribution_b": hb.contribution,
                "difference": ha.contribution - hb.contribution,
                "only_a": only_a,
                "only_b": only_b,
                "matches_a": ha.matches,
                "matches_b": hb.matches,
            })
        ea, eb = (Explanation(d.prior, "", [HeadExplanation(h.head, h.contribution, h.matches) for h in d.heads],
                              rules=d.rules)
                  for d in (a, b))
        difference = describe_difference(ea, eb, "B")
        gap = a.score - b.score
        lead = "the largest part: " if not difference.startswith(("as good a match", "above", "below")) else ""
        # within REASON_MIN, a third decimal: "+0.01" of a 0.0086 gap read as no tie
        summary = f"A scores {gap:+.3f} against B" if abs(gap) < REASON_MIN else f"A scores {gap:+.2f} against B"
        summary += f"; {lead}{difference}"
        ruled = sum_effects(a.rules) - sum_effects(b.rules)
        if ruled and not difference.startswith("rules "):  # what the rules add, where another part is named
            summary += f"; the rules {ruled:+.2f}, the model {gap - ruled:+.2f}"
        pinned = [f"{who} {r.note}" for who, d in (("A", a), ("B", b)) for r in d.rules if r.kind in ("pin", "hide")]
        if pinned:
            summary += "; " + "; ".join(pinned)
        return Comparison(query, a.item_id, b.item_id, a.score, b.score, a.prior - b.prior, heads, summary,
                          a.rules, b.rules)


def top_k(scores: np.ndarray, eligible: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best eligible items, best first; ties broken by catalogue order."""
    return fast_top_k(scores, eligible, k)
