"""The model's configuration, in two parts: the options a training run chooses (`ModelOptions`,
the same for any catalogue) and the full config a model is built from (`ModelConfig`: the
options plus what the catalogue decides, its facets and their vocabulary sizes).

Each default is defined here once. The module is torch-free so that the command line and the
service can show and record the defaults without loading torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from .facets import FACETS

# What an item's length (BM25's |d|, `ModelOptions.length_unit`) counts
LENGTH_UNITS = ("attributes", "words")


@dataclass
class ModelOptions:
    dim: int = 16  # D: the size of word, n-gram and attribute vectors
    d_k: int = 8  # K: the size of a head's queries and keys
    word_buckets: int = 1 << 17
    ngram_buckets: int = 1 << 17
    logit_cap: float = 12.0
    words_per_attribute: int = 4
    min_items_per_attribute: int = 3
    # The start is BM25 over the items' attributes (title words, description words, values): an
    # exact match's logit sits log(bm25_k1) below the no-match slot, attributes that do not
    # match sit `-init_match_bias` below it (a leak of e^-8 each), the slot counts
    # (1 - b + b * n / mean n) times (BM25's length normalisation, b learned per head), and a
    # value is the attribute's BM25 IDF (in units that make a typical match worth 0.5: the
    # scale of the scores sets how sharply the ranking loss trains). Softmax attention over
    # [matches, no-match] is then BM25's term saturation: tf x / (tf x + k1 (1 - b + b n / avg)).
    # Items rarely repeat a word within a facet (tf is 0 or 1), so k1 only sets how much length
    # costs; 0.5 ranks like the baseline's 1.5 while a word's one match keeps most of its head's
    # attention (1 / (1 + k1) at average length): the heatmap shows the match, not "no match"
    bm25_k1: float = 0.5
    init_exact: float = 8.0
    init_assoc: float = 8.0  # a certain association (1) is as strong as an exact match
    init_near: float = 7.0
    init_rare: float = 0.0
    init_match_bias: float = -8.0
    init_length: float = 0.75  # BM25's b: how much the item's attribute count raises the slot
    # learned from 0 (the start is plain BM25): the no-match logit may rise with how specific
    # the query word is in this catalogue (the scaled IDF of what it matches exactly) while its
    # exact matches rise by as much (rare_weight), so only the lookalikes of a specific word
    # ("riding" for "toro") lose ground against "no match"
    init_specific: float = 0.0
    # a no-match logit per head that ignores the token: every word must earn a match with
    # evidence against the same bar, so a weak match cannot hide behind a tuned-up threshold
    token_no_match: bool = False
    # A word found only in an item's description starts as this share of a match in its title
    # (BM25F's field weight): log of it is added to the description attribute's logit, so in the
    # saturation a description occurrence counts as w of a title one, and the learned source
    # bias moves it from there. Descriptions are long and loosely worded; at weight 1 a word
    # mentioned in passing ranks as high as the product's name (CrowdFlower, 5 seeds: the start
    # 0.797 -> 0.816 NDCG@10 at 0.5, every seed higher). A catalogue without descriptions is
    # unaffected.
    description_weight: float = 0.5
    # An item's length, BM25's |d|, is one per item: its distinct attributes over every head
    # (`Featurizer.item_lengths`, rounded by `formula.quantized_length`), so a long
    # description costs its colour match too, as in BM25 over the text (tests/
    # test_bm25_agreement.py). False: each head's own attribute count (versions saved before).
    length_per_item: bool = True
    # What that length counts (`LENGTH_UNITS`): "attributes", its distinct attributes (each one
    # 1); "words", as BM25 over the text counts it, each attribute's content words times its
    # field-weighted term frequency (`Featurizer.attribute_lengths`), so a long repetitive spec
    # or description makes the item longer. Which one ranks a catalogue's known items better
    # differs by catalogue, and words split the index's (set, length) groups finer (slower):
    # `recsys train` chooses per catalogue (training/length_unit.py). Versions saved before:
    # "attributes".
    length_unit: str = "attributes"
    # A query word that is one of the words of a longer attribute ("blue" of `color:navy blue`)
    # starts as a match worth the word's own BM25 IDF, not the phrase's (`formula.
    # partial_worth`), as BM25 over the text counts it. False: as the share of the attribute's
    # words the query has, half a match for one of two words (versions saved before). Known
    # items (benchmarks/known_item.py, seeds 0-4), start / BM25 MRR: furniture 1.005 -> 1.080,
    # synthetic 1.034 -> 1.062, fashion 0.955 -> 0.966.
    partial_worth: bool = True
    # With `partial_worth`: such a word is a full match (its attention saturates with the word's
    # other matches in the head, as BM25's term frequency does) worth the word's share of the
    # value (`formula.partial_share`: its IDF over the phrase's), instead of a weaker match on the
    # phrase's whole value, whose small attention added up past BM25 beside the word's other
    # matches. False: versions saved before. Measured: docs/results.md, "Spec lists".
    partial_value: bool = True
    # Subtracted after the cap from the logit of an attribute no evidence links to the query
    # word (`formula.unlinked`): the cap holds the start's -8 at -7, a leak of e^-7 of attention
    # per attribute, which on items with many attributes (a spec list, a long description) adds
    # up to part of a match. The untrained start has it; training fits at 0 (the leak's gradient
    # is what teaches a head to stay off unnamed attributes) and a share alpha of the way to
    # the fitted weights keeps (1 - alpha) of it (`training.fit`). 0: versions saved before.
    # The index subtracts it as `FacetHead.match_logits` does (`QueryTables._subtract_offsets`).
    # At 30 (e^-37 of a match: nothing a float32 score holds) the start counts nothing for
    # words an item lacks, as BM25 does, and items BM25 ties it ties exactly, broken by
    # catalogue order as BM25 breaks them; the leak broke them toward items with rare unmatched
    # attributes. At 12 a leak of 1e-7 remained: it still broke ties, and it spread thousands of
    # tied items over a sliver the top-k cannot prune (the generated 100k catalogue's model p50
    # +17%); exact ties the top-k's scan in index order stops on (`kernels._top_k_plain`). Known
    # items (benchmarks/known_item.py, seeds 0-4), start / BM25 MRR, with the near-spelling rule
    # below: fashion 0.966 -> 0.992 (tie-aware 0.968 -> 1.001), CrowdFlower 1.013 -> 1.028, Home
    # Depot 1.020 -> 1.009 (tie-aware 1.010 -> 1.009), synthetic 1.062 -> 1.020, furniture 1.080
    # -> 1.081. Judged, the learning curve: docs/results.md
    unmatched_offset: float = 30.0
    # A query word the catalogue has is taken as typed: its near spellings (`Featurizer.
    # near_words`) count only when at least this many times as many items say them, as a typo
    # in a few titles is to the word it misspells. Known items are never misspelled, so there
    # a near match can only raise the wrong items ("shirts" raised `articletype:shorts`); on Home
    # Depot's misspelled searches it keeps almost all of the start's gain from near spellings.
    # 0: every near spelling counts (versions saved before).
    near_known_ratio: float = 10.0
    # A title or description word (`title:phone`) is worth the IDF of the word over every item
    # that says it, in a longer value too (`category:cell phones`), as BM25 over the text counts
    # it. False: over the items with a one-word attribute of it alone (versions saved before):
    # title words that repeat a value are kept in the value, so the phones' "phone" was in
    # `category:cell phones` only, the word looked rare, and power banks whose titles said
    # "phone" ranked above every phone (a marketplace's first hour, 7 December 2026: its start
    # 0.801 -> 0.843 against BM25's 0.819). A column's one-word value keeps its own term's
    # count: for every one-word attribute, known-item start / BM25 on the synthetic generator
    # fell 1.013 -> 0.997 (seeds 0-4); for title and description words alone it stays 1.013
    # (docs/results.md, "A title word as rare as the word").
    word_df: bool = True
    # A query word the catalogue says has exact matches of its own, and what its searches also
    # chose is mostly what its items tend to have ("slides" -> sliding doors, "white table" ->
    # one brand's outdoor furniture, on Home Depot; one- and two-word searches lost most): its
    # click association counts this share of a word the catalogue never says (a learned
    # synonym's), at the start and in training (`formula.assoc_scales`). Home Depot, all
    # training terms, against BM25 in the same run, seeds 0-4: docs/results.md, "A said word's
    # clicks". 1: the association whole (versions saved before).
    said_assoc_share: float = 0.5

    @property
    def value_shares(self) -> bool:
        """Whether the exact tables store `formula.partial_share`s: `partial_value` on tables of
        partial matches (`partial_worth`; without them a word of a phrase counts by the share of
        its words the query has, as versions saved before did)."""
        return self.partial_worth and self.partial_value


# keyword-only: the catalogue's part has no default and comes after the options' fields
@dataclass(kw_only=True)
class ModelConfig(ModelOptions):
    vocab_sizes: dict[str, int]  # facet -> number of attributes
    # the heads, in order: the catalogue's facets for a new model, the artifact's for a loaded one
    facets: tuple[str, ...] = FACETS

    @classmethod
    def for_catalog(cls, options: ModelOptions, vocab_sizes: dict[str, int]) -> ModelConfig:
        """The config of a model with these options over a catalogue of these vocabularies, one
        head per facet of `vocab_sizes`, in its order (`{f: len(v) for f, v in catalog.vocab.items()}`)."""
        chosen = {f.name: getattr(options, f.name) for f in fields(ModelOptions)}
        return cls(**chosen, vocab_sizes=dict(vocab_sizes), facets=tuple(vocab_sizes))

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["facets"] = list(self.facets)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ModelConfig:
        """A manifest's `config` (the flat object `to_json` writes, older formats' included)."""
        d = dict(d)
        d["facets"] = tuple(d["facets"])
        # models saved before the field existed were built and trained with descriptions at par
        d.setdefault("description_weight", 1.0)
        d.setdefault("length_per_item", False)  # and their lengths were per head attribute counts
        d.setdefault("partial_worth", False)  # and a word of a phrase counted by its share
        d.setdefault("partial_value", False)  # or (with partial_worth) as a weaker match on its value
        d.setdefault("unmatched_offset", 0.0)  # and unlinked attributes kept the capped logit
        d.setdefault("length_unit", "attributes")  # and an item's length counted its attributes
        d.setdefault("near_known_ratio", 0.0)  # and every near spelling of a word counted
        d.setdefault("word_df", False)  # and a one-word attribute's IDF counted its own term's items
        d.setdefault("said_assoc_share", 1.0)  # and a said word's click association counted whole
        return cls(**d)
