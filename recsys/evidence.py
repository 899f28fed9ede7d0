"""Lexical evidence between query words and attributes, as sparse (n_words x V_f) tables.

Two kinds, both inputs to the attention logits (so explanations stay attention weights):
- exact: the query word's stem is one of the attribute value's word stems;
- association: how far choosing an item with the attribute, when the query has the word, is
  from chance to certain, from training interactions: (p(a | w) - p(a)) / (1 - p(a)), 0 when
  the word tells nothing about the attribute, 1 when every chosen item has it. On the same 0..1
  scale as an exact match, so "scarlet" that shoppers always answer with red items starts as
  strong a match for `red` as the word "red" itself (PMI, log p(a | w) / p(a), cannot: it is
  at most log 4 for a colour a quarter of the items have). It is what a click-association
  model knows, handed to the heads as evidence they learn how far to trust. Clicks are noisy
  (even the word that names a value is answered with it far from always), so a pair whose
  lift's lower bound over distinct searches is as high as the catalogue's own words' starts as
  a full match (`association_evidence`).
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .catalog import Catalog
from .facets import DESCRIPTION, TITLE
from .formula import bm25_idf, covered, is_phrase, partial_share, partial_worth
from .kernels import compiled
from .model_config import ModelOptions
from .words import WordTable, query_tokens

ASSOC_PSEUDO_COUNT = 5.0
ASSOC_SHRINK = 3.0  # scaled by n / (n + ASSOC_SHRINK): a few clicks are weak evidence
ASSOC_MIN_ITEMS = 3  # attributes of fewer items would let the evidence memorise single items


@dataclass
class Evidence:
    """The exact and association tables of every facet, and what is derived from them once (the
    `_derived` cache: per (name, facet) one array, so bounded by the facets): each attribute's
    words and word count, the association table's sorted (row, column) keys and its row pointers
    and columns as int64, for pair lookups. Training rewrites the
    association values in place, never the tables' structure, so the derived arrays stay valid."""

    exact: dict[str, sp.csr_matrix]  # facet -> (n_words, V_f): the word is one of the attribute's
    # words, stored as its `formula.partial_worth` (or 1: `build_exact`)
    assoc: dict[str, sp.csr_matrix]  # facet -> (n_words, V_f)
    # whether the exact tables store partial worths (`formula.covered`); False: versions saved
    # before, whose words of a phrase count by the share of it the query has
    partial: bool = True
    # (n_words, V_f) per facet, beside `assoc`: the pair's confident lift and its support in
    # distinct training searches (`Association`), what explanations name; None: versions saved
    # before, and catalogues re-indexed without clicks
    confident: dict[str, sp.csr_matrix] | None = None
    support: dict[str, sp.csr_matrix] | None = None
    # (V_f,) float32 per facet: 1 where a query with all of an attribute's words matches it
    # whole, 0 where its value is one word as written (`formula.is_phrase`, `phrases`); None: 1
    # everywhere (versions saved before `ModelOptions.partial_value`)
    phrase: dict[str, np.ndarray] | None = None
    _derived: dict[tuple[str, str], np.ndarray] = field(default_factory=dict, init=False, repr=False,
                                                        compare=False)

    def dense_rows(self, facet: str, word_ids: np.ndarray, near_ids: np.ndarray,
                   near_sims: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(exact, assoc, near) as dense (T, V_f) float32 arrays for T query words (the order of
        `formula.EVIDENCE_KINDS`; exact after coverage); unknown
        words (-1) get zero exact and assoc rows. near_ids, near_sims: (T, J)."""
        known = word_ids >= 0
        v = self.exact[facet].shape[1]
        exact = np.zeros((len(word_ids), v), dtype=np.float32)
        assoc = np.zeros((len(word_ids), v), dtype=np.float32)
        near = np.zeros((len(word_ids), v), dtype=np.float32)
        if known.any():
            exact[known] = self.exact[facet][word_ids[known]].toarray()
            assoc[known] = self.assoc[facet][word_ids[known]].toarray()
        for t, j in zip(*np.nonzero(near_ids >= 0)):
            row = self.exact[facet][near_ids[t, j]].toarray()[0] > 0
            near[t] = np.maximum(near[t], row * near_sims[t, j])
        return covered(exact, self._words_per_attribute(facet), self.partial, self.phrase_of(facet)), assoc, near

    def phrase_of(self, facet: str) -> np.ndarray | None:
        """(V_f,) float32 the facet's `phrase` flags, or None where every one is 1."""
        return None if self.phrase is None else self.phrase[facet]

    def pair_evidence(self, facet: str, word_ids: np.ndarray, near_ids: np.ndarray, near_sims: np.ndarray,
                      attr_ids: np.ndarray, use_kernel: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A batch's evidence between its queries' tokens, word_ids (B, T) with near_ids and
        near_sims (B, T, J) (`EncodedQueries`), and its items' attributes attr_ids (B, I, M), -1
        padding: exact evidence after coverage, the position of each pair's association value
        (`locate`) and near evidence, each (B, I, T, M). Compiled when numba works here
        (`kernels.pair_evidence`); `use_kernel=False`, or no numba: the numpy path, the same
        arrays."""
        kernels = compiled() if use_kernel else None
        if kernels is None:
            exact, assoc_pos = self.locate(facet, word_ids[:, None, :, None], attr_ids[:, :, None, :])
            near = self.near_values(facet, near_ids[:, None, :, None, :], near_sims[:, None, :, None, :],
                                    attr_ids[:, :, None, :])
            return exact, assoc_pos, near
        if ("assoc_indptr", facet) not in self._derived:  # int64 once, as the kernel reads them
            table = self.assoc[facet]
            self._derived[("assoc_indptr", facet)] = table.indptr.astype(np.int64)
            self._derived[("assoc_indices", facet)] = table.indices.astype(np.int64)
        indptr, indices = self._derived[("assoc_indptr", facet)], self._derived[("assoc_indices", facet)]
        return kernels.pair_evidence(
            np.ascontiguousarray(word_ids, dtype=np.int64), np.ascontiguousarray(near_ids, dtype=np.int64),
            np.ascontiguousarray(near_sims, dtype=np.float32), np.ascontiguousarray(attr_ids, dtype=np.int64),
            self._attribute_words(facet), self._attribute_worth(facet), self._words_per_attribute(facet),
            self.phrase_flags(facet), self.partial, indptr, indices)

    def near_values(self, facet: str, near_ids: np.ndarray, near_sims: np.ndarray,
                    attr_ids: np.ndarray) -> np.ndarray:
        """Near-spelling evidence for broadcast pairs: the best similarity among the query
        word's near-spelled words (..., J) that are words of the attribute."""
        words = self._attribute_words(facet)[attr_ids]  # (..., M, K)
        out: np.ndarray | None = None
        for j in range(near_ids.shape[-1]):
            value = np.where(_has_word(words, near_ids[..., j]), near_sims[..., j], np.float32(0.0))
            out = value if out is None else np.maximum(out, value)
        assert out is not None  # near_ids has J >= 1 columns
        return out.astype(np.float32, copy=False)

    def _attribute_words(self, facet: str) -> np.ndarray:
        """(V_f + 1, K) int64: the word ids of each attribute's words (the exact table's
        column), -1 padded, then a row of -1 that attribute id -1 (padding) reads; K is the most
        any attribute has. Pairs are looked up from the attribute's few words, a handful of
        comparisons: a search of the whole table per pair took most of a training step's input
        time (Home Depot: 78 of 250 s)."""
        return self._by_attribute(facet)[0]

    def _attribute_worth(self, facet: str) -> np.ndarray:
        """(V_f + 1, K) float32: the exact table's value for each of `_attribute_words`, 0 padded."""
        return self._by_attribute(facet)[1]

    def _by_attribute(self, facet: str) -> tuple[np.ndarray, np.ndarray]:
        words = self._derived.get(("attribute_words", facet))
        if words is None:
            by_attr = self.exact[facet].tocsc()
            by_attr.sort_indices()
            counts = np.diff(by_attr.indptr)
            v = by_attr.shape[1]
            k = max(1, int(counts.max(initial=0)))
            at = (np.repeat(np.arange(v), counts), np.arange(by_attr.nnz) - np.repeat(by_attr.indptr[:-1], counts))
            words = np.full((v + 1, k), -1, dtype=np.int64)
            words[at] = by_attr.indices
            worth = np.zeros((v + 1, k), dtype=np.float32)
            worth[at] = by_attr.data
            self._derived[("attribute_words", facet)] = words
            self._derived[("attribute_worth", facet)] = worth
        return words, self._derived[("attribute_worth", facet)]

    def phrase_flags(self, facet: str) -> np.ndarray:
        """(V_f,) float32 `phrase_of`, ones where it is None (what the compiled passes read)."""
        phrase = self.phrase_of(facet)
        if phrase is None:
            phrase = self._derived.get(("phrase", facet))
            if phrase is None:
                phrase = self._derived[("phrase", facet)] = np.ones(self.exact[facet].shape[1], dtype=np.float32)
        return phrase

    def _words_per_attribute(self, facet: str) -> np.ndarray:
        """(V_f,) the number of words of each attribute (at least 1): what coverage divides by."""
        n_words = self._derived.get(("n_words", facet))
        if n_words is None:
            counts = np.diff(self.exact[facet].tocsc().indptr)  # its words: stored values, not their sum
            n_words = self._derived[("n_words", facet)] = np.maximum(counts, 1.0).astype(np.float32)
        return n_words

    def locate(self, facet: str, word_ids: np.ndarray, attr_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For pairs broadcast as (..., T, M) (query tokens x attributes, -1 padding): exact
        evidence and the position of each pair among the association table's stored values, -1
        where it has none. Training learns those values in place, so the positions are what it
        needs."""
        exact = _word_worth(self._attribute_words(facet)[attr_ids], self._attribute_worth(facet)[attr_ids],
                            word_ids)
        word_ids, attr_ids = np.broadcast_arrays(word_ids, attr_ids)
        ok = (word_ids >= 0) & (attr_ids >= 0)
        assoc_pos = np.full(word_ids.shape, -1, dtype=np.int64)
        assoc_pos[ok] = self._assoc_positions(facet, word_ids[ok], attr_ids[ok])
        n_words, phrase = self._words_per_attribute(facet), self.phrase_of(facet)
        at = np.maximum(attr_ids, 0)
        n_words = n_words[at] if len(n_words) else np.ones(attr_ids.shape)  # (..., T, M)
        phrase = phrase[at] if phrase is not None and len(phrase) else None
        return covered(exact, n_words, self.partial, phrase), assoc_pos

    def _assoc_positions(self, facet: str, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Position of assoc[rows[i], cols[i]] in the table's data for every i (-1 where not
        stored), vectorised through its sorted (row, col) keys."""
        table = self.assoc[facet]
        if table.nnz == 0 or len(rows) == 0:
            return np.full(len(rows), -1, dtype=np.int64)
        keys = self._derived.get(("assoc", facet))
        if keys is None:
            at = np.repeat(np.arange(table.shape[0], dtype=np.int64), np.diff(table.indptr))
            keys = self._derived[("assoc", facet)] = at * table.shape[1] + table.indices
        wanted = rows.astype(np.int64) * table.shape[1] + cols
        pos = np.searchsorted(keys, wanted).clip(max=len(keys) - 1)
        return np.where(keys[pos] == wanted, pos, -1)


def _has_word(attr_words: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """Broadcast pairs: whether the query word (-1: none) is one of the attribute's words,
    attr_words (..., M, K) (`Evidence._attribute_words`, -1 padded) against word_ids (..., M)."""
    hit: np.ndarray = attr_words[..., 0] == word_ids
    for k in range(1, attr_words.shape[-1]):
        hit |= attr_words[..., k] == word_ids
    return hit & (word_ids >= 0)


def _word_worth(attr_words: np.ndarray, attr_worth: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """Broadcast pairs: the exact table's value of the query word (-1: none) on the attribute
    (0 where it is not one of its words), attr_words and attr_worth (..., M, K) against
    word_ids (..., M)."""
    hit = (attr_words == word_ids[..., None]) & (word_ids[..., None] >= 0)  # (..., M, K)
    out: np.ndarray = (attr_worth * hit).max(axis=-1).astype(np.float32)
    return out


def catalog_word_keys(catalog: Catalog) -> set[str]:
    return {k for f in catalog.facets for a in catalog.vocab[f] for k in a.match_keys}


def _items_having(catalog: Catalog, links: dict[str, tuple[np.ndarray, np.ndarray]], n_terms: int) -> np.ndarray:
    """(n_terms,) how many items have each term, an item counted once however many of its
    attributes, forms and fields have it; `links`: facet -> (attribute, term) index pairs."""
    none = np.zeros(0, dtype=np.int64)
    per_term = sp.csr_matrix((np.zeros(0, dtype=np.float32), (none, none)), shape=(catalog.n_items, n_terms))
    for f, (attrs, terms) in links.items():
        has = sp.csr_matrix((np.ones(len(attrs), dtype=np.float32), (attrs, terms)),
                            shape=(len(catalog.vocab[f]), n_terms))  # (V_f, n_terms)
        per_term = per_term + catalog.item_attrs[f] @ has  # (n_items, n_terms)
    per_term = per_term.tocsr()
    per_term.data[:] = 1.0
    counts: np.ndarray = np.asarray(per_term.sum(axis=0)).ravel() if n_terms else np.zeros(0)
    return counts


def word_document_frequency(catalog: Catalog) -> dict[str, int]:
    """How many items have each catalogue word (match key) in any attribute of any facet."""
    keys: dict[str, int] = {}
    links = {}
    for f in catalog.facets:
        pairs = [(a_i, keys.setdefault(k, len(keys))) for a_i, a in enumerate(catalog.vocab[f]) for k in a.match_keys]
        links[f] = (np.array([a for a, _ in pairs], dtype=np.int64), np.array([k for _, k in pairs], dtype=np.int64))
    df = _items_having(catalog, links, len(keys))
    return {k: int(df[i]) for k, i in keys.items()}


def term_document_frequency(catalog: Catalog, words_anywhere: bool = False) -> dict[str, np.ndarray]:
    """facet -> (V_f,) float64 how many items have each attribute's term: an attribute of any
    facet with the same match keys (`Featurizer.attribute_df`). `words_anywhere`
    (`ModelOptions.word_df`): a title or description word counts every item that says the word,
    in a longer value too, as BM25 over the text counts it (`word_document_frequency`)."""
    terms: dict[tuple[str, ...], int] = {}
    term_of = {f: np.array([terms.setdefault(a.match_keys, len(terms)) for a in catalog.vocab[f]],
                           dtype=np.int64) for f in catalog.facets}
    term_df = _items_having(catalog, {f: (np.arange(len(t)), t) for f, t in term_of.items()}, len(terms))
    out = {f: term_df[term_of[f]].astype(np.float64) for f in catalog.facets}
    if words_anywhere:
        said = word_document_frequency(catalog)
        for f in catalog.facets:
            for a_idx, a in enumerate(catalog.vocab[f]):
                if a.key in (TITLE, DESCRIPTION) and len(a.match_keys) == 1:
                    out[f][a_idx] = max(out[f][a_idx], said.get(a.match_keys[0], 0))
    return out


def build_exact(catalog: Catalog, table: WordTable, options: ModelOptions | None = None) -> dict[str, sp.csr_matrix]:
    """facet -> (n_words, V_f): each word of each attribute, stored as its `formula.
    partial_share` (`ModelOptions.partial_value`) or `formula.partial_worth` at the model's
    starting exact weight (`ModelOptions.partial_worth`), else 1 (no options, or a version saved
    before)."""
    out = {}
    for f in catalog.facets:
        rows, cols = [], []
        for a_idx, attr in enumerate(catalog.vocab[f]):
            for key in set(attr.match_keys):
                rows.append(table.id(key))
                cols.append(a_idx)
        data = np.ones(len(rows), dtype=np.float32)
        m = sp.csr_matrix((data, (rows, cols)), shape=(len(table), len(catalog.vocab[f])))
        m.sum_duplicates()
        m.data[:] = 1.0
        m.sort_indices()
        out[f] = m
    if options is not None and options.partial_worth:
        _store_partial_worth(catalog, out, options)
    return out


def phrases(catalog: Catalog, exact: dict[str, sp.csr_matrix], options: ModelOptions
            ) -> dict[str, np.ndarray] | None:
    """facet -> (V_f,) float32 `Evidence.phrase`: 1 where `formula.is_phrase` holds for the
    attribute's value and its words in `exact`, else 0; None unless the tables store value
    shares (`ModelOptions.value_shares`)."""
    if not options.value_shares:
        return None
    out = {}
    for f, m in exact.items():
        n_words = np.diff(m.tocsc().indptr)
        out[f] = np.array([is_phrase(a.value, int(n)) for a, n in zip(catalog.vocab[f], n_words)],
                          dtype=np.float32)
    return out


def _store_partial_worth(catalog: Catalog, exact: dict[str, sp.csr_matrix], options: ModelOptions) -> None:
    """Replaces the 1s of `exact` by each pair's `formula.partial_share` (`options.partial_value`)
    or `formula.partial_worth`: from the word's BM25 IDF over the items that say it in any
    attribute, against the attribute's term's."""
    if not exact:
        return
    # (n_items, n_words): which words each item says, in any attribute
    says = sum((catalog.item_attrs[f] @ exact[f].T).tocsr() for f in catalog.facets).tocsr()
    says.data[:] = 1.0
    word_idf = bm25_idf(np.asarray(says.sum(axis=0)).ravel(), catalog.n_items)  # (n_words,)
    for f, attr_df in term_document_frequency(catalog, options.word_df).items():
        m = exact[f]
        rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
        attr_idf = bm25_idf(attr_df, catalog.n_items)[m.indices]
        m.data[:] = (partial_share(word_idf[rows], attr_idf) if options.value_shares else
                     partial_worth(word_idf[rows], attr_idf, options.init_exact, options.bm25_k1))


def query_word_matrix(queries: list[str], table: WordTable, vocabulary: Container[str] = frozenset()
                      ) -> sp.csr_matrix:
    """(n_queries, n_words) 0/1: which known words each query has (with the pairs `vocabulary`,
    the catalogue's word keys, has as one word: `words.query_tokens`)."""
    rows, cols = [], []
    for r, q in enumerate(queries):
        for t in query_tokens(q, vocabulary):
            w = table.id(t.key)
            if w >= 0:
                rows.append(r)
                cols.append(w)
    data = np.ones(len(rows), dtype=np.float32)
    return sp.csr_matrix((data, (rows, cols)), shape=(len(queries), len(table)))


ASSOC_CONFIDENCE_Z = 1.0  # the lower bound one standard error below: one-sided 84%
ASSOC_PRIOR_SEARCHES = 2.0  # searches at chance added to every word's: one search is not enough
# a confident lift of this share of what the catalogue's own words get counts as a full match.
# The lexical start's probe accuracy at 1/2, 1/3, 1/4: synthetic 0.950, 0.968, 0.960, furniture
# 0.916, 0.947, 0.944 (a quarter raises quality pairs that are brands, "corvina" -> premium);
# trained (furniture, seed 0) a third cost judged NDCG@10 0.954 -> 0.945 and explanation
# accuracy 0.957 -> 0.932: more raised pairs, that training then has to lower
ASSOC_STRONG_SHARE = 0.5
# facets with fewer pairs of a word and the value it names (`strong_lift`) use every facet's
ASSOC_MIN_NAMING_PAIRS = 3
# the confident lift that counts as a full match is at least this: where clicks hardly follow
# the catalogue's own words, a weak lift must not pass for a match
ASSOC_MIN_STRONG = 0.1


@dataclass
class Association:
    """The association tables of every facet, each (n_words, V_f) with the same stored pairs:
    the evidence the model starts from (`lift`), the lift's lower bound (`confident`) and how
    many distinct training searches with the word chose an item with the value (`support`)."""

    lift: dict[str, sp.csr_matrix]
    confident: dict[str, sp.csr_matrix]
    support: dict[str, sp.csr_matrix]


def confident_lift(share_sum: np.ndarray, n_searches: np.ndarray, chance: np.ndarray,
                   z: float = ASSOC_CONFIDENCE_Z, prior: float = ASSOC_PRIOR_SEARCHES) -> np.ndarray:
    """The lift (p - chance) / (1 - chance) of the Wilson lower bound (z standard errors) of p,
    the share of a word's chosen items that carry the value, from `n_searches` distinct
    searches with the word whose shares add up to `share_sum`, plus `prior` searches that chose
    at chance. Each search is one vote however often it was repeated: one search clicked 40
    times is one piece of evidence of what the word means, and one or two searches stay weak
    evidence whatever they chose. Negative: no more often than chance."""
    n = np.asarray(n_searches, dtype=np.float64) + prior
    p_hat = np.clip((np.asarray(share_sum, dtype=np.float64) + prior * chance) / np.maximum(n, 1e-12), 0.0, 1.0)
    n = np.maximum(n, 1.0)
    z2 = z * z
    centre = p_hat + z2 / (2 * n)
    spread = z * np.sqrt(p_hat * (1 - p_hat) / n + z2 / (4 * n * n))
    low = (centre - spread) / (1 + z2 / n)
    out: np.ndarray = (low - chance) / (1.0 - chance + 1e-9)
    return out


def strong_lift(named: np.ndarray, fallback: float) -> float:
    """The confident lift at which click evidence counts as a full match in a facet:
    ASSOC_STRONG_SHARE of the median lift (`named`, point estimates) of the pairs whose word
    names the value ("blue" and `color:blue`). That lift is how reliably this log's clicks
    follow a word that certainly means the value: noise clicks, popular items and the query's
    other words keep it well below 1 (the generators' colours: about 0.3 furniture, 0.6
    synthetic). A synonym whose searches choose the value, one standard error below, at least
    half as reliably is as good a match. `fallback` (every facet's median) where fewer than
    ASSOC_MIN_NAMING_PAIRS pairs name a value; at least ASSOC_MIN_STRONG."""
    reference = float(np.median(named)) if len(named) >= ASSOC_MIN_NAMING_PAIRS else fallback
    return max(ASSOC_STRONG_SHARE * reference, ASSOC_MIN_STRONG)


def association_evidence(point: np.ndarray, confident: np.ndarray, strong: float, unsaid: np.ndarray,
                         words: np.ndarray) -> np.ndarray:
    """The association evidence (0..1, the exact match's scale) of pairs with this point lift and
    confident lift: for a word the catalogue never says (`unsaid`), a full match (1, the start
    logit of an exact match) once the confident lift reaches the facet's `strong_lift`, in
    proportion below it; never below the point lift (weak or few clicks stay the weak evidence
    they were). A word the catalogue says has its own exact matches, and what its searches also
    chose is mostly what its items tend to have ("carpet" and the oak of oak carpets): raised,
    those pairs put attention on heads the shopper did not name.

    `words` (the pairs' word ids): of one word's pairs (all of one head)
    above the bar only the surest is 1, the others their share of its confident lift. The
    values a synonym's value implies are chosen with it ("carpet" finds rugs, many of them
    shaggy): raised alike, they split the head's attention with it, and on the furniture
    generator training then moved "carpet" onto shaggy (seeds 0-5: its other-head synonyms
    0.855-0.946 of probes, 0.934-0.969 this way)."""
    top = np.zeros(int(words.max()) + 1 if len(words) else 0)  # per word, its surest raised pair's
    np.maximum.at(top, words, np.where(unsaid, confident, 0.0))
    bar = np.maximum(strong, top[words])
    raised = np.where(unsaid, np.clip(confident / bar, 0.0, 1.0), 0.0)
    out: np.ndarray = np.maximum(point, raised)
    return out


def build_association(
    catalog: Catalog,
    table: WordTable,
    queries: list[str],
    item_idx: np.ndarray,
    mass: np.ndarray,
) -> Association:
    """Association of each (word, attribute) over positive interactions, 0..1 (the module's
    docstring), with its confident lift and support; `mass` = label x weight per row (> 0)."""
    positive = mass > 0
    texts = [q for q, p in zip(queries, positive) if p]
    vocabulary = catalog_word_keys(catalog)
    q_words = query_word_matrix(texts, table, vocabulary)
    mass, items = mass[positive].astype(np.float32), item_idx[positive]
    weighted_q = sp.diags(mass) @ q_words  # (rows, n_words)
    word_mass = np.asarray(weighted_q.sum(axis=0)).ravel()  # (n_words,)
    # the distinct searches: each one's share of chosen mass per value, and its words
    search_of, distinct = _factorize(texts)
    per_search = sp.csr_matrix((mass, (search_of, np.arange(len(mass)))), shape=(len(distinct), len(mass)))
    search_mass = np.asarray(per_search.sum(axis=1)).ravel()  # (n_searches,)
    search_words = query_word_matrix(distinct, table, vocabulary)  # (n_searches, n_words) 0/1
    searches_per_word = np.asarray(search_words.sum(axis=0)).ravel()  # (n_words,)
    lifts: dict[str, tuple[sp.coo_matrix, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    named: dict[str, np.ndarray] = {}  # facet -> the lifts of its pairs whose word names the value
    for f in catalog.facets:
        # clicks say which attribute was chosen, not how often the item says it: the lift is
        # counted over each attribute's base (B_f of them) and every variant of it shares it
        bases = catalog.base_matrix(f)  # (V_f, B_f)
        x_all = (catalog.item_attrs[f] @ bases).tocsr()  # (n_items, B_f)
        x = x_all[items]  # (rows, B_f)
        counts = (weighted_q.T @ x).tocoo()  # (n_words, B_f)
        clicked_freq = np.asarray(x.T @ mass).ravel() / max(mass.sum(), 1e-9)
        catalog_freq = np.asarray(x_all.sum(axis=0)).ravel() / max(catalog.n_items, 1)
        p_attr = 0.5 * clicked_freq + 0.5 * catalog_freq + 1e-9  # (B_f,)
        cond = (counts.data + ASSOC_PSEUDO_COUNT * p_attr[counts.col]) / (
            word_mass[counts.row] + ASSOC_PSEUDO_COUNT
        )
        p = p_attr[counts.col]
        lift = np.clip((cond - p) / (1.0 - p + 1e-9), 0.0, 1.0)
        lift *= counts.data / (counts.data + ASSOC_SHRINK)
        shares = sp.diags(1.0 / np.maximum(search_mass, 1e-12)) @ (per_search @ x)  # (n_searches, B_f)
        share_sum = _at((search_words.T @ shares).tocsr(), counts.row, counts.col)
        chose = _at((search_words.T @ (shares > 0).astype(np.float32)).tocsr(), counts.row, counts.col)
        confident = confident_lift(share_sum, searches_per_word[counts.row], p)
        items_with = np.asarray(x_all.sum(axis=0)).ravel()
        keep = (lift > 0) & (items_with[counts.col] >= ASSOC_MIN_ITEMS)
        naming = _names_value(catalog, table, f, counts) & keep
        # the naming pairs' lifts as point estimates (a bound at z = 0)
        named[f] = confident_lift(share_sum[naming], searches_per_word[counts.row[naming]], p[naming], 0.0, 0.0)
        lifts[f] = (counts, lift, confident, chose, keep)
    every = np.concatenate(list(named.values()))
    fallback = float(np.median(every)) if len(every) >= ASSOC_MIN_NAMING_PAIRS else 2.0
    out = Association({}, {}, {})
    unsaid = np.array([k not in vocabulary for k in table.keys], dtype=bool)  # (n_words,)
    for f in catalog.facets:
        counts, lift, confident, chose, keep = lifts[f]
        strong = strong_lift(named[f], fallback)
        evidence = association_evidence(lift, confident, strong, unsaid[counts.row], counts.row)
        bases = catalog.base_matrix(f)
        for tables, values in ((out.lift, evidence), (out.confident, np.maximum(confident, 0.0)),
                               (out.support, chose)):
            m = sp.csr_matrix((values[keep].astype(np.float32), (counts.row[keep], counts.col[keep])),
                              shape=counts.shape)
            m = (m @ bases.T).tocsr()  # (n_words, V_f)
            m.sort_indices()
            tables[f] = m
    return out


def _factorize(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """(index of each text among the distinct ones, the distinct texts in first-seen order)."""
    first: dict[str, int] = {}
    codes = np.array([first.setdefault(t, len(first)) for t in texts], dtype=np.int64)
    return codes, list(first)


def _at(m: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """m[rows[i], cols[i]] for every i, as float64."""
    if len(rows) == 0:
        return np.zeros(0)
    out: np.ndarray = np.asarray(m[rows, cols], dtype=np.float64).ravel()
    return out


def _names_value(catalog: Catalog, table: WordTable, facet: str, pairs: sp.coo_matrix) -> np.ndarray:
    """(nnz,) bool: whether each (word, base) pair's word is the whole value of the base (one
    word, "blue" of `color:blue`), as `strong_lift` calibrates on."""
    bases = catalog.base_matrix(facet)
    word_of_base = np.full(bases.shape[1], -2, dtype=np.int64)
    for a, attr in enumerate(catalog.vocab[facet]):
        keys = set(attr.match_keys)
        if len(keys) == 1:
            word_of_base[bases.indices[a]] = table.id(next(iter(keys)))
    out: np.ndarray = word_of_base[pairs.col] == pairs.row
    return out
