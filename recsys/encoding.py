"""Turns queries and item lists into the tensors the scorer reads.

The `Featurizer` owns everything a model version needs besides its weights: the catalogue, the
word table and the evidence tables. It builds the model's structural buffers too, so a model can be
rebuilt from an artifact alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from .catalog import Catalog
from .evidence import Evidence, catalog_word_keys, term_document_frequency, word_document_frequency
from .formula import EVIDENCE_KINDS, assoc_scales, bm25_idf
from .model_config import LENGTH_UNITS, ModelConfig
from .spelling import NearWords
from .tokenize import content_keys
from .words import NGRAM_SLOTS, QueryToken, WordTable, hashed_features, query_tokens

if TYPE_CHECKING:
    from .synonyms import SynonymBook

NEAR_PER_TOKEN = 3  # near-spelled catalogue words kept per query word, the closest first


@dataclass
class EncodedQueries:
    tokens: list[list[QueryToken]]
    bucket: torch.Tensor  # (B, T)
    grams: torch.Tensor  # (B, T, G)
    mask: torch.Tensor  # (B, T) bool
    word_id: np.ndarray  # (B, T) ids in the word table, -1 unknown or padding
    near_id: np.ndarray  # (B, T, J) word ids of near-spelled catalogue words, -1 padding
    near_sim: np.ndarray  # (B, T, J) their similarity in (0, 1)
    specificity: torch.Tensor  # (B, T) `Featurizer.word_specificity` of each word, 0 padding


@dataclass
class Featurizer:
    catalog: Catalog
    words: WordTable
    evidence: Evidence
    cfg: ModelConfig
    _padded: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _speller: NearWords | None = field(default=None, repr=False)
    # training batches' evidence compiled when numba works here (`Evidence.pair_evidence`);
    # False: the numpy path, the same arrays
    use_kernel: bool = field(default=True, repr=False, compare=False)
    _specificity: np.ndarray | None = field(default=None, repr=False)

    def near_words(self, key: str) -> list[tuple[int, float]]:
        """(word id, similarity) of the catalogue words spelled within a small edit distance, or
        that a run-together word splits into (`NearWords.related`). A word the catalogue has is
        taken as typed: a near spelling of it counts only where `ModelConfig.near_known_ratio`
        times as many items say the near word ("fiberglas" in 2 titles, "fiberglass" in 300),
        so "shirts" does not match "shorts" nor "khaki" a title's "khakhi"."""
        if self._speller is None:
            self._speller = NearWords(self.catalog_keys())
        near = self._speller.related(key)[:NEAR_PER_TOKEN]
        ratio = self.cfg.near_known_ratio
        if ratio > 0 and near:
            df = self.word_document_frequency()
            own = ratio * df.get(key, 0)
            near = [(w, sim) for w, sim in near if df.get(w, 0) >= own]
        return [(self.words.id(w), sim) for w, sim in near if self.words.id(w) >= 0]

    def word_document_frequency(self) -> dict[str, int]:
        """How many items say each catalogue word (`evidence.word_document_frequency`), computed once."""
        if "_word_df" not in self.__dict__:
            self.__dict__["_word_df"] = word_document_frequency(self.catalog)
        df: dict[str, int] = self.__dict__["_word_df"]
        return df

    def catalog_keys(self) -> frozenset[str]:
        """The match keys of every word of the catalogue's attributes (computed once)."""
        if "_catalog_keys" not in self.__dict__:
            self.__dict__["_catalog_keys"] = frozenset(catalog_word_keys(self.catalog))
        keys: frozenset[str] = self.__dict__["_catalog_keys"]
        return keys

    def query_tokens(self, query: str, synonyms: SynonymBook | None = None) -> list[QueryToken]:
        """The query's tokens, with the pairs of its words that the catalogue writes as one
        (`words.query_tokens`) and the shop's `synonyms` of each (`SynonymBook.tokens`): what
        every path scores and explains."""
        if synonyms is None:
            return query_tokens(query, self.catalog_keys())
        return synonyms.tokens(query_tokens(query, self.catalog_keys(), synonyms.words))

    def word_specificity(self) -> np.ndarray:
        """(n_words,) float32: per word, the largest scaled IDF among the attributes it matches
        exactly (0 for a word no attribute has): how much naming it narrows the catalogue."""
        if self._specificity is None:
            spec = np.zeros(len(self.words), dtype=np.float32)
            for f in self.catalog.facets:
                exact = self.evidence.exact[f]
                if exact.nnz:
                    weighted = (exact > 0).multiply(self.attribute_idf(f)[None, :]).tocsr()
                    spec = np.maximum(spec, weighted.max(axis=1).toarray().ravel())
            self._specificity = spec
        return self._specificity

    def attribute_df(self, facet: str) -> np.ndarray:
        """(V,) float64 how many items have the attribute's term: an attribute of any facet with
        the same match keys. "title:clocks", "title:clock" and "description:clock" are one term to
        BM25, and so are `color:black` and "description:black": BM25 over the item's text counts
        every item that has the word, whichever field it is in. Counted per facet, a colour named
        in passing in descriptions looked rarer than the colour column's value (its items keep
        it out of their description words), and outranked it (furniture, 40 training queries:
        the start 0.388 against BM25's 0.440)."""
        cache = self.__dict__.setdefault("_df", {})
        if not cache:
            cache.update(term_document_frequency(self.catalog, self.cfg.word_df))
        df: np.ndarray = cache[facet]
        return df

    def attribute_idf(self, facet: str) -> np.ndarray:
        """(V,) float32 inverse document frequency of each attribute's term (`attribute_df`),
        scaled to [0, 1]: 0 when every item has it, 1 when none does."""
        counts, n = self.attribute_df(facet), self.catalog.n_items
        idf: np.ndarray = (np.log((n + 1.0) / (counts + 1.0)) / np.log(n + 1.0)).astype(np.float32)
        return idf

    def attribute_bm25_idf(self, facet: str) -> np.ndarray:
        """(V,) float32 BM25's (Lucene's) IDF of each attribute's term, log(1 + (N - df + 0.5) /
        (df + 0.5)), divided by twice its mean over all facets' attribute occurrences: a typical
        match is worth 0.5 in every catalogue, so the ranking loss trains at the same sharpness
        whatever the catalogue's size (the ranking itself is unchanged by a common factor)."""
        return (self._raw_bm25_idf(facet) / self._bm25_unit()).astype(np.float32)

    def _raw_bm25_idf(self, facet: str) -> np.ndarray:
        return bm25_idf(self.attribute_df(facet), self.catalog.n_items)

    def _bm25_unit(self) -> float:
        """Twice the mean raw BM25 IDF over all facets' attribute occurrences (computed once)."""
        if "_unit" not in self.__dict__:
            counts = {f: np.asarray(self.catalog.item_attrs[f].sum(axis=0)).ravel() for f in self.catalog.facets}
            weighted = sum(float((counts[f] * self._raw_bm25_idf(f)).sum()) for f in self.catalog.facets)
            occurrences = sum(float(counts[f].sum()) for f in self.catalog.facets)
            self.__dict__["_unit"] = 2.0 * weighted / occurrences if weighted > 0 else 1.0
        unit: float = self.__dict__["_unit"]
        return unit

    def attribute_tf(self, facet: str) -> np.ndarray:
        """(V,) float64 BM25F's term frequency of each attribute in the items that hold it: its
        occurrences at par plus `description_weight` times those in the description
        (`Attribute.occurrences`). Its log is the attribute's logit offset at the start, so
        softmax attention over [its matches, no match] is BM25's saturation tf / (tf + k1 L)."""
        w = self.cfg.description_weight
        return np.array([par + w * desc for par, desc in (a.occurrences for a in self.catalog.vocab[facet])],
                        dtype=np.float64)

    def attribute_lengths(self, facet: str) -> np.ndarray:
        """(V,) float64 what each attribute adds to an item's length (`ModelOptions.length_unit`):
        1 in "attributes" (each counted once however often the item says it and however many
        words it has); in "words", its content words (`tokenize.content_keys`: what BM25 indexes)
        times its field-weighted term frequency (`attribute_tf`), as BM25 over the text counts.
        Multiples of the description weight's halves: sums of them are exact in any order."""
        unit = self.cfg.length_unit
        if unit not in LENGTH_UNITS:
            raise ValueError(f"length_unit is {unit!r}: it must be one of {', '.join(LENGTH_UNITS)} (what an "
                             "item's length counts: its attributes, or its words as BM25 counts them)")
        cache = self.__dict__.setdefault("_lengths", {})  # every head's mean length reads every facet's
        if (facet, unit) not in cache:
            vocab = self.catalog.vocab[facet]
            if unit == "attributes":
                cache[facet, unit] = np.ones(len(vocab), dtype=np.float64)
            else:
                n_words = np.array([len(content_keys(a.value)) for a in vocab], dtype=np.float64)
                cache[facet, unit] = n_words * self.attribute_tf(facet)
        lengths: np.ndarray = cache[facet, unit]
        return lengths

    def item_lengths(self, facets: tuple[str, ...]) -> np.ndarray:
        """(n_items,) float64 each item's length over `facets` (BM25's |d|): the sum of its
        attributes' `attribute_lengths`. Counted in attributes, the start ranks the generators'
        known items better (a long, repetitive description does not cost an item its colour and
        type matches); in words, catalogues whose items differ in how much text each attribute
        holds (a spec list, a long title): training/length_unit.py chooses."""
        return item_lengths(self.catalog, {f: self.attribute_lengths(f) for f in facets})

    def attribute_mean_count(self, facet: str) -> np.float32:
        """() float32 BM25's average document length: the mean `item_lengths` over the items
        that have any attribute (of any head with one length per item, else of this head alone;
        items without any never match)."""
        facets = self.catalog.facets if self.cfg.length_per_item else (facet,)
        lengths = self.item_lengths(facets)
        having = lengths[lengths > 0]
        return np.float32(having.mean() if len(having) else 1.0)

    def attribute_buffers(self) -> tuple[dict[str, torch.Tensor], ...]:
        """Per facet: word buckets of each attribute's value words (V, W), -1 padded; the bucket
        of its key (V,); (V, 1) whether it has enough items to learn a vector of its own; its
        inverse document frequency scaled to [0, 1] (V,); its BM25 IDF (V,); the mean
        length per item (); its logit offset at the start, log tf (V,); and what it adds to an
        item's length (V,) (`attribute_lengths`), in `FacetScorer`'s argument order."""
        weight = self.cfg.description_weight
        if not (weight > 0 and np.isfinite(weight)):
            raise ValueError(f"description_weight is {weight!r}: it must be a positive number (0.5 counts a "
                             "description match as half a title match, 1 as a title match)")
        w_max = self.cfg.words_per_attribute
        attr_words: dict[str, torch.Tensor] = {}
        attr_keys: dict[str, torch.Tensor] = {}
        learnable: dict[str, torch.Tensor] = {}
        idf: dict[str, torch.Tensor] = {}
        bm25_idf: dict[str, torch.Tensor] = {}
        mean_count: dict[str, torch.Tensor] = {}
        source_offset: dict[str, torch.Tensor] = {}
        attr_length: dict[str, torch.Tensor] = {}
        for f in self.catalog.facets:
            vocab = self.catalog.vocab[f]
            table = np.full((len(vocab), w_max), -1, dtype=np.int64)
            keys = np.zeros(len(vocab), dtype=np.int64)
            for a_idx, attr in enumerate(vocab):
                ks = attr.match_keys[:w_max]
                table[a_idx, : len(ks)] = [self._bucket(k) for k in ks]
                keys[a_idx] = self._bucket("#" + attr.key.lstrip("#"))
            attr_words[f], attr_keys[f] = torch.from_numpy(table), torch.from_numpy(keys)
            counts = np.asarray(self.catalog.item_attrs[f].sum(axis=0)).ravel()
            common = (counts >= self.cfg.min_items_per_attribute).astype(np.float32)
            learnable[f] = torch.from_numpy(common).unsqueeze(1)
            idf[f] = torch.from_numpy(self.attribute_idf(f))
            bm25_idf[f] = torch.from_numpy(self.attribute_bm25_idf(f))
            mean_count[f] = torch.tensor(float(self.attribute_mean_count(f)))
            source_offset[f] = torch.from_numpy(np.log(self.attribute_tf(f)).astype(np.float32))
            attr_length[f] = torch.from_numpy(self.attribute_lengths(f))
        return attr_words, attr_keys, learnable, idf, bm25_idf, mean_count, source_offset, attr_length

    def _bucket(self, key: str) -> int:
        """An attribute word's own bucket (attribute words are always trained with their item)."""
        return hashed_features(key, self.cfg.word_buckets, self.cfg.ngram_buckets)[0]

    def token_features(self, key: str) -> tuple[int, np.ndarray]:
        """(word bucket, n-gram buckets) of a query word: unseen words share one bucket."""
        return hashed_features(key, self.cfg.word_buckets, self.cfg.ngram_buckets,
                               seen=self.words.seen_in_queries(key))

    # ---- queries ------------------------------------------------------------------------------

    def encode_queries(self, queries: list[str]) -> EncodedQueries:
        tokens = [self.query_tokens(q) for q in queries]
        t_max = max(1, max((len(t) for t in tokens), default=1))
        b = len(queries)
        bucket = np.zeros((b, t_max), dtype=np.int64)
        grams = np.zeros((b, t_max, NGRAM_SLOTS), dtype=np.int64)
        mask = np.zeros((b, t_max), dtype=bool)
        word_id = np.full((b, t_max), -1, dtype=np.int64)
        near_id = np.full((b, t_max, NEAR_PER_TOKEN), -1, dtype=np.int64)
        near_sim = np.zeros((b, t_max, NEAR_PER_TOKEN), dtype=np.float32)
        specificity = np.zeros((b, t_max), dtype=np.float32)
        word_spec = self.word_specificity()
        for i, toks in enumerate(tokens):
            for j, tok in enumerate(toks):
                bucket[i, j], grams[i, j] = self.token_features(tok.key)
                mask[i, j] = True
                word_id[i, j] = self.words.id(tok.key)
                if word_id[i, j] >= 0:
                    specificity[i, j] = word_spec[word_id[i, j]]
                for n, (w, sim) in enumerate(self.near_words(tok.key)):
                    near_id[i, j, n], near_sim[i, j, n] = w, sim
        return EncodedQueries(tokens, torch.from_numpy(bucket), torch.from_numpy(grams),
                              torch.from_numpy(mask), word_id, near_id, near_sim, torch.from_numpy(specificity))

    # ---- items --------------------------------------------------------------------------------

    def word_assoc_scales(self, word_ids: np.ndarray | int) -> np.ndarray:
        """(...) float32 the factor on the click association of each query word
        (`formula.assoc_scales`), from its id (...) (-1: a word the catalogue does not have, or
        padding). A word's own: the same in any query, so its cached parts are too."""
        if "_assoc_scale" not in self.__dict__:  # per word, then 1 for id -1
            said = self.word_specificity() > 0
            self.__dict__["_assoc_scale"] = np.append(assoc_scales(said, self.cfg.said_assoc_share), np.float32(1))
        table: np.ndarray = self.__dict__["_assoc_scale"]
        return table[np.asarray(word_ids, dtype=np.int64)]

    def assoc_scales(self, enc: EncodedQueries) -> np.ndarray:
        """(B, T) float32 `word_assoc_scales` of each encoded query's words (1 on padding)."""
        return self.word_assoc_scales(enc.word_id)

    def assoc_ties(self, facet: str) -> torch.Tensor:
        """(nnz,) int64 for each stored association value, the position of the one it is learned
        as: the first stored for the same word and attribute base (`Attribute.base`). Clicks on
        "apple" items say nothing of how often an item says "apple": what is learned for
        `brand:apple` said once holds for it said four times, and the pair's examples are not
        split between its variants."""
        cache = self.__dict__.setdefault("_ties", {})
        if facet not in cache:
            table = self.evidence.assoc[facet]
            base = self.catalog.base_matrix(facet).indices.astype(np.int64)  # (V,) each one's base
            rows = np.repeat(np.arange(table.shape[0], dtype=np.int64), np.diff(table.indptr))
            key = rows * max(1, len(base)) + base[table.indices]
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            cache[facet] = torch.from_numpy(first[inverse.ravel()].astype(np.int64))
        ties: torch.Tensor = cache[facet]
        return ties

    def padded_attributes(self, facet: str) -> np.ndarray:
        """(n_items, M) attribute indices of every item, -1 padded; M = the most any item has."""
        if facet not in self._padded:
            m = self.catalog.item_attrs[facet]
            counts = np.diff(m.indptr)
            width = max(1, int(counts.max(initial=0)))
            out = np.full((self.catalog.n_items, width), -1, dtype=np.int64)
            rows = np.repeat(np.arange(self.catalog.n_items), counts)
            cols = np.arange(m.nnz) - np.repeat(m.indptr[:-1], counts)
            out[rows, cols] = m.indices
            self._padded[facet] = out
        return self._padded[facet]

    def item_batch(self, item_idx: np.ndarray, enc: EncodedQueries,
                   assoc_values: dict[str, torch.Tensor] | None = None,
                   ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """item_idx (B, I) -> attributes {facet: (B, I, M)} and evidence {facet: (B, I, T, M, N_KINDS)},
        its last axis in `formula.EVIDENCE_KINDS` order.

        `assoc_values` replaces the association table's stored values (training learns them; the
        value of a word and an attribute said more or less often is one, `assoc_ties`).
        """
        attrs: dict[str, torch.Tensor] = {}
        evidence: dict[str, torch.Tensor] = {}
        scales = torch.from_numpy(self.assoc_scales(enc))[:, None, :, None]  # (B, 1, T, 1)
        for f in self.catalog.facets:
            a = self.padded_attributes(f)[item_idx]  # (B, I, M)
            a = a[..., : max(1, int((a >= 0).sum(-1).max(initial=0)))]  # trim padding columns
            exact, pos, near = self.evidence.pair_evidence(f, enc.word_id, enc.near_id, enc.near_sim, a,
                                                           self.use_kernel)  # (B, I, T, M) each
            values = (assoc_values[f][self.assoc_ties(f)] if assoc_values
                      else torch.from_numpy(self.evidence.assoc[f].data))
            pos_t = torch.from_numpy(pos)  # (B, I, T, M)
            if values.numel():
                assoc = torch.where(pos_t >= 0, values[pos_t.clamp(min=0)], values.new_zeros(()))
            else:
                assoc = torch.zeros(pos.shape)
            assoc = assoc * scales  # a said word's counts a share (`word_assoc_scales`)
            by_kind = {"exact": torch.from_numpy(exact), "assoc": assoc, "near": torch.from_numpy(near)}
            evidence[f] = torch.stack([by_kind[k] for k in EVIDENCE_KINDS], dim=-1)  # (B, I, T, M, N_KINDS)
            attrs[f] = torch.from_numpy(a)
        return attrs, evidence


def item_lengths(catalog: Catalog, attribute_lengths: dict[str, np.ndarray]) -> np.ndarray:
    """(n_items,) float64 each item's length: the sum over the facets of `attribute_lengths`
    (facet -> (V,)) of the lengths of its attributes there (`Featurizer.item_lengths`; the index
    reads the model's buffers, `AttributeSets`)."""
    total = np.zeros(catalog.n_items)
    for f, lengths in attribute_lengths.items():
        m = catalog.item_attrs[f]
        rows = np.repeat(np.arange(catalog.n_items), np.diff(m.indptr))
        total += np.bincount(rows, weights=np.asarray(lengths, dtype=np.float64)[m.indices[: m.indptr[-1]]],
                             minlength=catalog.n_items)
    return total
