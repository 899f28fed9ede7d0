"""Per-item explanations read straight off the scorer: attention, contributions, erasure.

Everything here recomputes the item's head outputs from the same query state the ranking used,
so contributions add up exactly to the score.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .facets import WORDS_FACET
from .formula import ASSOC, EXACT, LENGTH_LEVELS, NEAR
from .index.attribute_sets import ItemRows
from .index.query import QueryState, channels_at
from .index.scoring import ScoringIndex
from .match_evidence import cell_evidence, cell_kind, countable, countable_grid, joined_words
from .rules import RuleEffect, sum_effects
from .synonyms import SynonymEffect, effect_note, synonym_of

NO_MATCH = "(no match)"
# A query word matches an attribute when the attribute holds at least this share of the word's
# attention in its head: below it, the pair is not listed as a match anywhere (explanations,
# reason lines, `matched`, `unmatched_tokens`); the heatmap still shows every weight.
MATCH_THRESHOLD = 0.1
# what the compiled explanations take for a query whose words are worth every value whole
_NO_SHARE = np.zeros((0, 0), dtype=np.float32)
# A reason line names a match, or a difference between two results, only when it is worth at
# least this much of the score: below it, erasing the match or swapping the results' parts would
# not change the order in any way a shopper could see, and "+0.89 against +0.89" is no reason.
REASON_MIN = 0.01
# a match of its own leads an item's line in a ranking (`contrast_summaries`) only when it is worth
# at least this share of what the item's heads give it: a Spanish shop's "camiseta negra" put a
# skirt 4th "for 'camiseta' drew categoría:ropa by click association (worth 0.02)", its heads
# giving it 2.13, most of it for the "negra" every result said (a probe, 7 December 2026)
REASON_OWN_SHARE = 0.1
# An explanation is exactly additive (PRODUCT.md 5): score == prior + the heads' contributions, to
# this; float32 sums of a few terms stay far inside it, a broken model does not.
ADDITIVE_TOLERANCE = 1e-4
# what a reason line adds for an item that only the learned part of a head drew (no match of its
# counts: `Match.counts`)
NOT_SAID = "no query word is among its attributes"
# what the reason line of an item without a single match says
NO_MATCH_WORDS = "no query word matched its attributes"
# a search with no word to rank by (empty, or stop words alone): no word could have matched
NO_WORDS = "the search has no word to match"


@dataclass
class Match:
    query_token: str
    attribute: str
    weight: float
    # what the item's score loses if the attribute is erased from it (its head's weight times
    # the head's output change, `HeadAttention.without`): what the reason lines rank matches by
    worth: float = 0.0
    # the kind of evidence behind it (`match_evidence`: "exact", "description", "near spelling",
    # "words run together", "synonym", "click association"; "" where the trained model attends
    # with none of them)
    evidence: str = ""
    # whether it makes the item a result of the query (`matched`, facet counts, totals): the
    # item says the word, or the word is one the catalogue never says (`match_evidence.countable`)
    counts: bool = True


@dataclass
class HeadExplanation:
    head: str
    contribution: float
    matches: list[Match]


@dataclass
class Explanation:
    prior: float
    summary: str
    heads: list[HeadExplanation]
    # the shopper's history words that matched one of its attributes (`Recommender.recommend`)
    history: list[str] = field(default_factory=list)
    # the merchandising rules that acted on it (`recsys.rules`): terms of its score beside the heads
    rules: list[RuleEffect] = field(default_factory=list)
    # the shop's synonyms through which a query word matched one of its attributes (`synonym_effects`)
    synonyms: list[SynonymEffect] = field(default_factory=list)
    # some query word matched one of the item's attributes (MATCH_THRESHOLD) in a way that makes
    # it a result of the query (`Match.counts`)
    matched: bool = field(init=False)

    def __post_init__(self) -> None:
        self.matched = any(m.counts for h in self.heads for m in h.matches)


def additivity_gap(score: float, explanation: Explanation) -> float | None:
    """How far `score` is from the explanation's prior plus its heads' contributions plus its
    rules' amounts when that is more than ADDITIVE_TOLERANCE (or not a number); None when it adds
    up."""
    gap = abs(score - explanation.prior - sum(h.contribution for h in explanation.heads)
              - sum_effects(explanation.rules))
    return None if gap <= ADDITIVE_TOLERANCE else gap


@dataclass
class Erasure:
    attribute: str
    score_change: float


@dataclass
class HeadDetail:
    head: str
    contribution: float
    attributes: list[str]  # the item's attributes of this facet, then NO_MATCH
    attention: list[list[float]]  # one row per query token over `attributes`
    erasure: list[Erasure]
    matches: list[Match] = field(default_factory=list)
    # one row per query token over the item's attributes (not the no-match slot): the kind of
    # evidence of each pair in words (`match_evidence.CellEvidence.describe`), "" where none
    evidence: list[list[str]] = field(default_factory=list)


@dataclass
class HeadAttention:
    """One item, one head: attention (T, M + 1) with the no-match slot last, values (M,), or
    (T, M) when a word is worth a share of an attribute's value (`QueryState.value_share`)."""

    attr_idx: np.ndarray
    labels: list[str]
    weights: np.ndarray
    exps: np.ndarray  # (T, M) exp(logits), for erasure
    den: np.ndarray  # (T,)
    values: np.ndarray
    # (T, M) change of the no-match slot's exp when attribute m is erased: its multiplicity
    # falls from s(L) to s(L - length of m); None = it stays
    slot_change: np.ndarray | None = None
    item_idx: int = -1  # whose attention it is
    # (M,) what each attribute adds to the item's length (`AttributeSets.attribute_length`);
    # None: 1 each
    lengths: np.ndarray | None = None
    e_slot: np.ndarray | None = None  # (T,) exp of the no-match logit, before its multiplicity

    @property
    def output(self) -> float:
        return float((self.weights[:, :-1] * self.values).sum())

    @property
    def worth(self) -> np.ndarray:
        """(T, M) what each attribute is worth to each word: its value, times the word's share
        of it."""
        return np.broadcast_to(self.values, self.exps.shape)

    def output_at(self, multiplicity: np.ndarray) -> np.ndarray:
        """(S,) the head output were the no-match slot's multiplicity each of `multiplicity` (S,):
        what another head's erasure does here when the item's one length falls with it."""
        assert self.e_slot is not None  # set by head_attention
        num = (self.exps * self.values).sum(1)  # (T,)
        den = self.exps.sum(1)[:, None] + self.e_slot[:, None] * np.asarray(multiplicity)[None, :]  # (T, S)
        out: np.ndarray = (num[:, None] / den).sum(0)
        return out

    def without(self, m: int) -> float:
        """The head output if attribute m were removed from the item."""
        num = (self.exps * self.values).sum(1) - self.exps[:, m] * self.values[..., m]
        den = self.den - self.exps[:, m]
        if self.slot_change is not None:
            den = den + self.slot_change[:, m]
        return float((num / den).sum())


def head_attention(index: ScoringIndex, state: QueryState, item_idx: int, facet: str) -> HeadAttention:
    catalog = index.featurizer.catalog
    attrs = catalog.attributes_of(item_idx, facet)
    all_labels = catalog.labels(facet)
    labels = [all_labels[a] for a in attrs]
    values = index.tables[facet].values[attrs]  # (M,), or (T, M) with the words' shares of them
    share = state.value_share if state.tokens else None
    if share is not None:
        values = values * share[:, index.vocab_offsets[index.facets.index(facet)] + attrs]
    lengths = index.sets.attribute_length(facet)[attrs]  # (M,)
    if not state.tokens:
        empty = np.zeros((0, len(attrs)))
        return HeadAttention(attrs, labels, np.zeros((0, len(attrs) + 1)), empty, np.zeros(0), values,
                             lengths=lengths)
    exps = np.exp(state.logits[facet][:, attrs].astype(np.float64))  # (T, M)
    e_slot = np.exp(state.no_match[facet].astype(np.float64))  # (T,)
    before = float(index.sets.slot_after(facet, item_idx, np.zeros(1))[0])
    after = index.sets.slot_after(facet, item_idx, lengths)  # (M,) without each
    e_none = e_slot * before  # (T,)
    den = exps.sum(1) + e_none  # (T,)
    weights = np.concatenate([exps, e_none[:, None]], 1) / den[:, None]
    return HeadAttention(attrs, labels, weights, exps, den, values, e_slot[:, None] * (after - before)[None, :],
                         item_idx, lengths, e_slot)


def erasure_elsewhere(index: ScoringIndex, state: QueryState, item_idx: int, facet: str,
                      head_weights: np.ndarray, atts: dict[str, HeadAttention]) -> np.ndarray:
    """(M,) what erasing each of the item's attributes of `facet` costs the rest of its score,
    beside its own head (`HeadAttention.without`): with one length per item
    (`AttributeSets.per_item`) every other head's weighted output (`atts`: the item's
    `head_attention` per facet), whose no-match slot shrinks with the item, and the item's
    prior, a mean over the facet's attributes' priors."""
    sets = index.sets
    h = index.facets.index(facet)
    attrs = index.featurizer.catalog.attributes_of(item_idx, facet)
    lengths = sets.attribute_length(facet)[attrs]  # (M,)
    out = np.zeros(len(attrs))
    if sets.per_item and state.tokens:
        for h2, f2 in enumerate(index.facets):
            if h2 != h:
                other = atts[f2]
                out += head_weights[h2] * (other.output - other.output_at(sets.slot_after(f2, item_idx, lengths)))
    priors = sets.attr_prior[int(index.vocab_offsets[h]) + np.asarray(attrs, dtype=np.int64)]  # (M,)
    if len(priors):
        kept = (priors.sum() - priors) / (len(priors) - 1) if len(priors) > 1 else np.zeros(1)
        out += priors.sum() / len(priors) - kept
    return out


def matches_of(index: ScoringIndex, att: HeadAttention, state: QueryState, facet: str,
               head_weight: float = 1.0, elsewhere: np.ndarray | None = None) -> list[Match]:
    """The head's listed matches; each one's worth is what erasing its attribute costs the score:
    its head's output times `head_weight`, plus `elsewhere` (M,) (`erasure_elsewhere`)."""
    out = att.output
    rest = np.zeros(len(att.labels)) if elsewhere is None else elsewhere
    hit_t, hit_m = np.nonzero(att.weights[:, :-1] >= MATCH_THRESHOLD)
    offset = int(index.vocab_offsets[index.facets.index(facet)])
    kinds, counts = match_kinds(index, state, hit_t, offset + np.asarray(att.attr_idx, dtype=np.int64)[hit_m])
    found = [
        Match(state.tokens[t].surface, att.labels[m], round(float(att.weights[t, m]), 4),
              round(float(head_weight * (out - att.without(m)) + rest[m]), 4), kind, ok)
        for t, m, kind, ok in zip(hit_t.tolist(), hit_m.tolist(), kinds, counts)
    ]
    return sorted(found, key=lambda x: -x.weight)


def match_kinds(index: ScoringIndex, state: QueryState, t: np.ndarray, cols: np.ndarray
                ) -> tuple[list[str], list[bool]]:
    """Per match (token t, flat attribute column, P of each): its kind of evidence
    (`match_evidence.cell_kind`) and whether it counts (`match_evidence.countable`)."""
    t, cols = np.asarray(t, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    if not len(t):
        return [], []
    offsets, facets = index.vocab_offsets, index.facets
    channels = channels_at(state, offsets, facets, t, cols)  # (P, N_KINDS)
    joined, tokens, starts = joined_words(state.tokens), state.tokens, offsets.tolist()
    vocab = index.featurizer.catalog.vocab
    heads = (np.searchsorted(offsets, cols, side="right") - 1).tolist()
    kinds = [cell_kind(tokens[tt], vocab[facets[h]][c - starts[h]], ch[EXACT], ch[ASSOC], ch[NEAR], joined)
             for tt, c, h, ch in zip(t.tolist(), cols.tolist(), heads, channels.tolist())]
    return kinds, countable(state.lexical, t, cols).tolist()


def explain_item(index: ScoringIndex, state: QueryState, item_idx: int, head_weights: np.ndarray,
                 rank: int | None = None) -> Explanation:
    """One item, head by head through `head_attention` (the reference `explain_items` equals)."""
    heads = []
    atts = {f: head_attention(index, state, item_idx, f) for f in index.facets}
    for h, f in enumerate(index.facets):
        att = atts[f]
        elsewhere = erasure_elsewhere(index, state, item_idx, f, head_weights, atts)
        heads.append(HeadExplanation(f, float(head_weights[h] * att.output),
                                     matches_of(index, att, state, f, float(head_weights[h]), elsewhere)))
    prior = float(index.prior[item_idx])
    return Explanation(prior, summarize(heads, prior, rank, words=bool(state.tokens)), heads)


def explain_items(index: ScoringIndex, state: QueryState, items: np.ndarray, head_weights: np.ndarray,
                  ranks: list[int] | None = None, summaries: bool = True) -> list[Explanation]:
    """`explain_item` for many items at once: one pass over every item's attributes of every
    facet (the rows of `item_rows`, side by side; compiled, `kernels._explain_pass`, or in numpy,
    `_explain_numpy`), then Python objects only for the listed matches. Equal to `explain_item`
    item by item up to float64 summation order (tests/recsys/test_explain.py). `summaries` False
    leaves every summary empty, for a caller that writes them all (`contrast_summaries` of two
    items or more)."""
    items = np.asarray(items, dtype=np.int64)
    n, n_heads = len(items), len(index.facets)
    rows = item_rows(index)
    surfaces = [tok.surface for tok in state.tokens]
    contributions = np.zeros((n, n_heads), dtype=np.float64)
    found: list[list[list[Match]]] = [[[] for _ in range(n_heads)] for _ in range(n)]
    if surfaces and n:
        flat, flat_nm = state.flat_logits, state.flat_no_match
        if flat is None:  # a state built by hand
            flat = np.concatenate([state.logits[f] for f in index.facets], axis=1)
            flat_nm = np.stack([state.no_match[f] for f in index.facets], axis=1)
        assert flat_nm is not None  # set with flat_logits
        kernels, sets = index.kernels(), index.sets
        if kernels is not None:
            b, mean = sets.head_norms
            share = state.value_share
            passed = kernels.explain_pass(flat, flat_nm, items, rows.ptr, rows.cols, rows.values,
                                          _NO_SHARE if share is None else share, sets.per_item,
                                          sets.item_slot_length, sets._total_length, sets.attr_length,
                                          sets.attr_prior, LENGTH_LEVELS, b, mean, np.asarray(head_weights),
                                          MATCH_THRESHOLD)
        else:
            passed = _explain_numpy(index, flat, flat_nm, state.value_share, items, rows, np.asarray(head_weights))
        contributions, hit_t, hit_seg, hit_col, hit_w, worth = passed
        labels = rows.labels
        kinds, counts = match_kinds(index, state, hit_t, hit_col)
        for t, s, c, w, x, kind, ok in zip(hit_t.tolist(), hit_seg.tolist(), hit_col.tolist(), hit_w.tolist(),
                                           worth.tolist(), kinds, counts):
            found[s // n_heads][s % n_heads].append(Match(surfaces[t], labels[c], round(w, 4), round(x, 4), kind, ok))
    out = []
    # a head's weight times its output, as `float(head_weights[h] * output)` rounds it: in the
    # weights' precision (numpy's rule for a Python float), for every item at once
    hw = np.asarray(head_weights)
    weighted = (contributions.astype(hw.dtype) * hw).tolist()
    for i, (prior, contributed) in enumerate(zip(index.prior[items].tolist(), weighted)):
        heads = [HeadExplanation(f, contributed[h], sorted(found[i][h], key=_by_weight))
                 for h, f in enumerate(index.facets)]
        summary = summarize(heads, prior, ranks[i] if ranks is not None else None, words=bool(state.tokens)) \
            if summaries else ""
        out.append(Explanation(prior, summary, heads))
    return out


def _explain_numpy(index: ScoringIndex, flat: np.ndarray, flat_nm: np.ndarray, share: np.ndarray | None,
                   items: np.ndarray, rows: ItemRows, head_weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """`kernels._explain_pass` in numpy, where numba cannot compile: the same numbers in the same
    order of operations (tests/recsys/test_explain.py holds the two equal)."""
    n, n_heads, ptr, cols, values = len(items), len(index.facets), rows.ptr, rows.cols, rows.values
    first = (items[:, None] * n_heads + np.arange(n_heads)).ravel()  # (n * H,) segments of the index
    lo = ptr[first].astype(np.int64)
    lengths = ptr[first + 1] - lo  # (n * H,)
    total = int(lengths.sum())
    seg_start = np.cumsum(lengths) - lengths  # where each segment starts among the gathered
    seg = np.repeat(np.arange(n * n_heads), lengths)  # (N,) segment of each gathered attribute
    gathered = cols[np.repeat(lo - seg_start, lengths) + np.arange(total)]  # (N,) flat columns
    attr_length = index.sets.attr_length[gathered]  # (N,) what each adds to its item's length
    per_head = _segment_sums(attr_length[None, :], lengths, seg_start)[0].reshape(n, n_heads)
    before = index.sets.items_multiplicity(items, per_head)
    exps = np.exp(flat[:, gathered].astype(np.float64))  # (T, N)
    e_slot = np.exp(flat_nm.astype(np.float64))  # (T, H)
    den = _segment_sums(exps, lengths, seg_start) + (e_slot[:, None, :] * before).reshape(-1, n * n_heads)
    weights = exps / den[:, seg]  # (T, N)
    # what each gathered attribute is worth to each word: its value times the word's share of it
    worth = values[gathered] if share is None else values[gathered] * share[:, gathered]  # (N,) or (T, N)
    numer = _segment_sums(exps * worth, lengths, seg_start)  # (T, n * H)
    outputs = np.zeros(n * n_heads)
    for t in range(len(flat)):  # word after word, as the compiled pass sums
        outputs += numer[t] / den[t]
    hit_t, hit = np.nonzero(weights >= MATCH_THRESHOLD)  # token-major, then attribute
    s = seg[hit]  # (P,) segment of each: item s // H, head s % H
    item, head = s // n_heads, s % n_heads
    e = exps[:, hit]  # (T, P)
    # HeadAttention.without: the item loses the attribute's length with it
    after = index.sets.items_multiplicity(items[item], per_head[item, head], attr_length[hit], head)  # (P,)
    slot_change = e_slot[:, head] * (after - before[item, head])[None, :]  # (T, P)
    terms = (numer[:, s] - e * worth[..., hit]) / (den[:, s] - e + slot_change)  # (T, P)
    erased = np.zeros(len(hit))
    for t in range(len(flat)):
        erased += terms[t]
    elsewhere = np.zeros(len(hit))  # the other heads, when the item's one length falls with it
    if index.sets.per_item and len(hit):
        change = index.sets.items_multiplicity(items[item], per_head[item], attr_length[hit]) - before[item]  # (P, H)
        segs = item[:, None] * n_heads + np.arange(n_heads)  # (P, H)
        other = np.zeros(segs.shape)
        for t in range(len(flat)):
            other += numer[t][segs] / (den[t][segs] + e_slot[t][None, :] * change)
        lost = head_weights[None, :] * (outputs[segs] - other)  # (P, H)
        for h2 in range(n_heads):
            elsewhere += np.where(head == h2, 0.0, lost[:, h2])
    # the prior: a mean over the facet's attributes, without this one
    prior_sum = _segment_sums(index.sets.attr_prior[gathered][None, :], lengths, seg_start)[0]  # (n * H,)
    count = lengths[s]
    kept = np.where(count > 1, (prior_sum[s] - index.sets.attr_prior[gathered[hit]]) / np.maximum(count - 1, 1), 0.0)
    worth = head_weights[head] * (outputs[s] - erased) + elsewhere + (prior_sum[s] / count - kept)
    return outputs.reshape(n, n_heads), hit_t, s, gathered[hit], weights[hit_t, hit], worth


def _by_weight(m: Match) -> float:
    return -m.weight


def _segment_sums(x: np.ndarray, lengths: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(T, n) sums of consecutive column runs of x (run j: `lengths[j]` columns from
    `starts[j]`; an empty run sums to 0), left to right like a per-item `.sum(1)`."""
    out = np.zeros((x.shape[0], len(lengths)), dtype=x.dtype)
    nonempty = lengths > 0
    if nonempty.all():
        out[:] = np.add.reduceat(x, starts, axis=1)
    elif nonempty.any():
        out[:, nonempty] = np.add.reduceat(x, starts[nonempty], axis=1)
    return out


def item_rows(index: ScoringIndex) -> ItemRows:
    """Every item's attributes as flat columns (`AttributeSets.item_rows`: built once per index and
    kept by it; `Recommender` asks at load, not on a request)."""
    return index.sets.item_rows()


def detail_item(index: ScoringIndex, state: QueryState, item_idx: int,
                head_weights: np.ndarray) -> tuple[float, float, list[HeadDetail]]:
    """(score, prior, per-head details with attention matrices, erasure and each cell's kind of
    evidence)."""
    details = []
    fz = index.featurizer
    atts = {f: head_attention(index, state, item_idx, f) for f in index.facets}
    for h, f in enumerate(index.facets):
        att = atts[f]
        cells = cell_evidence(fz.evidence, fz.words, state.tokens, f, [fz.catalog.vocab[f][a] for a in att.attr_idx],
                              att.attr_idx, state.evidence[f][:, att.attr_idx])
        out = att.output
        elsewhere = erasure_elsewhere(index, state, item_idx, f, head_weights, atts)
        erasure = [
            Erasure(att.labels[m], float(head_weights[h] * (att.without(m) - out) - elsewhere[m]))
            for m in range(len(att.labels))
        ]
        details.append(HeadDetail(
            head=f,
            contribution=float(head_weights[h] * out),
            attributes=att.labels + [NO_MATCH],
            attention=np.round(att.weights, 6).tolist(),
            erasure=erasure,
            matches=matches_of(index, att, state, f, float(head_weights[h]), elsewhere),
            evidence=[[c.describe() for c in row] for row in cells],
        ))
    prior = float(index.prior[item_idx])
    return prior + sum(d.contribution for d in details), prior, details


def synonym_effects(index: ScoringIndex, state: QueryState, item_idx: int,
                    heads: list[HeadExplanation]) -> list[SynonymEffect]:
    """The synonyms behind the item's listed matches: each match of a query word with synonyms on
    an attribute it matches through one of them (`synonyms.synonym_of`), in the heads' order."""
    by_surface = {t.surface: t for t in state.tokens if t.synonyms}
    if not by_surface:
        return []
    catalog = index.featurizer.catalog
    out = []
    for h in heads:
        if not any(m.query_token in by_surface for m in h.matches):
            continue
        vocab = catalog.vocab[h.head]
        attrs = {vocab[a].label: vocab[a] for a in catalog.attributes_of(item_idx, h.head)}
        for m in h.matches:
            tok, attr = by_surface.get(m.query_token), attrs.get(m.attribute)
            use = synonym_of(tok, attr) if tok is not None and attr is not None else None
            if use is not None:
                label = m.attribute if ":" in m.attribute else f"{h.head}:{m.attribute}"
                out.append(SynonymEffect(use.name, m.query_token, m.attribute,
                                         effect_note(m.query_token, label, use.name)))
    return out


def summarize(heads: list[HeadExplanation], prior: float, rank: int | None, words: bool = True) -> str:
    """The reason line of one item on its own: the match its score would lose most without (by
    erasure: `Match.worth`), when that is at least REASON_MIN. `words`: whether the search has a
    word to match at all (not empty, not stop words alone)."""
    lead = f"ranked {_ordinal(rank)}" if rank is not None else "scored"
    if not any(h.matches for h in heads):
        return _no_match_line(lead, prior, sum(h.contribution for h in heads), words)
    head, m = max(((h, m) for h in heads for m in h.matches), key=_by_worth)
    unsaid = "" if any(m.counts for h in heads for m in h.matches) else f"; {NOT_SAID}"
    if m.worth < REASON_MIN:
        return f"{lead}: no single match is worth {REASON_MIN} of its score{unsaid}"
    return f"{lead} mostly for {_match_words(m)} ({_worth(head, m)}){unsaid}"


def _match_words(m: Match) -> str:
    """A match in a reason line: "'sofa' matched type:sofa"; one that does not make the item a
    result (`Match.counts`) says what drew the head there: "'charger' drew black by click
    association"."""
    if m.counts:
        return f"'{m.query_token}' matched {m.attribute}"
    return f"'{m.query_token}' drew {m.attribute} by {m.evidence or 'training'}"


def _verb(m: Match) -> str:
    return "matched" if m.counts else "drew"


def _by_worth(hm: tuple[HeadExplanation, Match]) -> tuple[float, float, str, str]:
    return hm[1].worth, hm[1].weight, hm[1].query_token, hm[1].attribute


def _worth(head: HeadExplanation, m: Match) -> str:
    return f"{_said(head.head)}, worth {m.worth:.2f}"


def _said(part: str) -> str:
    """A part of the score as a line says it: the words facet's head is named "other", which in
    a sentence reads as "another" ("other +2.36 against ..."), so it is its "other attributes"."""
    return "other attributes" if part == WORDS_FACET else part


def contrast_summaries(explanations: list[Explanation], ranks: list[int], words: bool = True) -> None:
    """Rewrite the reason lines of a ranking (in place) to say what sets each item apart: its
    match worth most (`Match.worth`, at least REASON_MIN and REASON_OWN_SHARE of its heads'
    total) that not every listed item has; when
    it has none, or another line of the page names the same, what puts it above the next item
    (below the previous one, for the last; `describe_difference`). The matches every result
    shares are said once, on the first line. A pinned item (its `rules`, set before) is placed by
    its pin, not by its score: its line compares nothing, and no line compares with it. `words`:
    whether the search has a word to match at all (`summarize`)."""
    if len(explanations) < 2:
        return
    keyed = [[((h.head, m.query_token, m.attribute), h, m) for h in e.heads for m in h.matches]
             for e in explanations]
    pinned = [any(r.kind == "pin" for r in e.rules) for e in explanations]
    # what the results placed by their scores share (a pinned item need not match at all)
    ranked = [pairs for pairs, p in zip(keyed, pinned) if not p]
    common = set.intersection(*({key for key, _, _ in pairs} for pairs in ranked)) if ranked else set()
    # what "every result matches" names: the common matches that make each item a result
    common_said = set.intersection(*({key for key, _, m in pairs if m.counts} for pairs in ranked)) if ranked \
        else set()
    reasons: list[str | None] = []  # each item's best own match in words, None: it has none
    named: list[tuple[str, str, str] | None] = []  # and which match it is
    for e, pairs, placed in zip(explanations, keyed, pinned):
        least = max(REASON_MIN, REASON_OWN_SHARE * abs(_heads_total(e)))
        own = [(key, h, m) for key, h, m in pairs if m.worth >= least and key not in common and not placed]
        if own:
            key, h, m = max(own, key=lambda khm: _by_worth(khm[1:]))
            reasons.append(f"for {_match_words(m)} ({_worth(h, m)})")
            named.append(key)
        else:
            reasons.append(None)
            named.append(None)
    # a match another line names too (at another worth) tells neither item apart
    seen = Counter(named)
    for i, (e, rank, reason, match) in enumerate(zip(explanations, ranks, reasons, named)):
        lead = f"ranked {_ordinal(rank)}"
        # the next item, or the previous one for the last; never a pinned one, nor for one
        below = (j for j in range(i + 1, len(explanations)) if not pinned[j])
        above = (j for j in range(i - 1, -1, -1) if not pinned[j])
        j = None if pinned[i] else next(below, next(above, None))
        # what sets it apart from its neighbour, worded only where the line says it (most lines
        # name their own match: wording every difference was most of a request's explaining)
        neighbour = explanations[j] if j is not None else None
        other = f"the {_ordinal(ranks[j])}" if j is not None else ""
        if not any(h.matches for h in e.heads):
            e.summary = _no_match_line(lead, e.prior, _heads_total(e), words)
            if neighbour is not None and _differs(e, neighbour):
                e.summary += f"; {describe_difference(e, neighbour, other)}"
            continue
        e.summary = f"{lead} {reason}" if reason else lead
        if neighbour is not None and (reason is None or seen[match] > 1):  # what the line says alone, another says too
            difference = describe_difference(e, neighbour, other)
            e.summary += f"; {difference}" if reason else f": {difference}"
        if not e.matched:
            e.summary += f"; {NOT_SAID}"
        if i == next((j for j, p in enumerate(pinned) if not p), None) and common_said:
            who = "every result" if not any(pinned) else "every result not pinned"
            e.summary += f"; {who} matches {_match_list(common_said)}"


def _score_parts(e: Explanation) -> list[tuple[str, float]]:
    """The terms of an item's score, heads first (of equal gaps, the first is named), then the
    prior and the rules' amounts (0 where none acted on it)."""
    return [(h.head, h.contribution) for h in e.heads] + [("prior", e.prior), ("rules", sum_effects(e.rules))]


def _gaps(a: Explanation, b: Explanation) -> list[tuple[str, float, float]]:
    return [(part, va, vb) for (part, va), (_, vb) in zip(_score_parts(a), _score_parts(b))]


def _differs(a: Explanation, b: Explanation) -> bool:
    """Whether `describe_difference` names a part: the scores differ by REASON_MIN or more."""
    return abs(sum(va - vb for _, va, vb in _gaps(a, b))) >= REASON_MIN


def describe_difference(a: Explanation, b: Explanation, other: str) -> str:
    """What puts `a` where it stands against `b`, in words: above `b`, the part of the score (a
    head, the prior or the rules) where `a` gains most; below it, where `a` loses most. The
    wording `/compare` and the reason lines share."""
    gaps = _gaps(a, b)
    ahead = sum(va - vb for _, va, vb in gaps)
    if abs(ahead) < REASON_MIN:
        if all(abs(va - vb) < REASON_MIN for _, va, vb in gaps):
            return f"as good a match as {other}: no part of the score differs by {REASON_MIN} or more"
        # the part that differs most, and what evens it out
        big = max(gaps, key=lambda g: abs(g[1] - g[2]))
        sign = 1.0 if big[1] > big[2] else -1.0
        back = max(gaps, key=lambda g: -sign * (g[1] - g[2]))
        text = (f"as good a match as {other} within {REASON_MIN}: its parts even out (most: {_said(big[0])} "
                f"{_signed(big[1])} against {_signed(big[2])}")
        if -sign * (back[1] - back[2]) >= REASON_MIN:
            return f"{text}, {_said(back[0])} {_signed(back[1])} against {_signed(back[2])})"
        return f"{text}, against small differences in its other parts)"
    sign = 1.0 if ahead > 0 else -1.0
    part, va, vb = max(gaps, key=lambda g: sign * (g[1] - g[2]))
    if sign * (va - vb) < REASON_MIN:  # small differences in several parts add up
        return (f"{'above' if sign > 0 else 'below'} {other} by {abs(ahead):.2f}, no part of the score "
                f"by {REASON_MIN} or more")
    text = f"{_said(part)} {_signed(va)} against {_signed(vb)} for {other}"
    if part == "prior":
        return text + f" (a {'higher' if va > vb else 'lower'} prior, learned from its attributes)"
    if part == "rules":
        return text
    head_a = next(h for h in a.heads if h.head == part)
    head_b = next(h for h in b.heads if h.head == part)
    pairs_a = {(m.query_token, m.attribute) for m in head_a.matches}
    pairs_b = {(m.query_token, m.attribute) for m in head_b.matches}
    mine = [m for m in head_a.matches if (m.query_token, m.attribute) not in pairs_b]
    theirs = [m for m in head_b.matches if (m.query_token, m.attribute) not in pairs_a]
    # a match named as the cause adds to its item's score (`Match.worth` above REASON_MIN)
    mine = [m for m in mine if m.worth >= REASON_MIN]
    theirs = [m for m in theirs if m.worth >= REASON_MIN]
    if mine and va > vb:
        m = max(mine, key=lambda x: (x.worth, x.weight))
        text += f" ({_match_words(m)}; {_instead(head_b, m.query_token, other, part)})"
    elif theirs and vb > va:
        m = max(theirs, key=lambda x: (x.worth, x.weight))
        text += (f" ({other}'s {_match_words(m)}; "
                 f"{_instead(head_a, m.query_token, 'this one', part)})")
    elif pairs_a == pairs_b and pairs_a:
        # the same matches, weighed differently: an item's length, how often it says the word and
        # its other attributes all move the attention, and the line does not know which did
        text += " (the same matches)"
    return text


def _instead(head: HeadExplanation, token: str, who: str, part: str) -> str:
    """What `who`'s head made of the query word instead: another match, or none."""
    theirs = [m for m in head.matches if m.query_token == token]
    if theirs:
        return f"{who}'s '{token}' {_verb(theirs[0])} {theirs[0].attribute}"
    return f"{who} has no match for it in its {_said(part)}"


def _match_list(keys: set[tuple[str, str, str]]) -> str:
    return ", ".join(f"'{tok}' {attr}" for _, tok, attr in sorted(keys, key=lambda k: (k[1], k[2])))


def _signed(x: float) -> str:
    """x with its sign, to 2 decimals; a rounded zero reads +0.00, never -0.00."""
    text = f"{x:+.2f}"
    return "+0.00" if text == "-0.00" else text


def _heads_total(e: Explanation) -> float:
    return sum(h.contribution for h in e.heads)


def _no_match_line(lead: str, prior: float, heads: float, words: bool = True) -> str:
    """The reason line of an item no query word matched: its prior, and what the heads gave it
    from attention below a match (a word's weak pull, learned from clicks), when that shows. A
    search with no word to match says so, rather than that its words matched nothing."""
    weak = f", attention below a match {heads:+.2f}" if abs(heads) >= REASON_MIN else ""
    return f"{lead}: {NO_MATCH_WORDS if words else NO_WORDS} (prior {_signed(prior)}{weak})"


def alone_margins(index: ScoringIndex, state: QueryState, facet: str) -> np.ndarray:
    """(T, V) how far each attribute's logit is above the no-match slot for an item with that one
    attribute alone (the slot at its smallest multiplicity, the attribute's own length): the most
    attention the attribute can get from the word in any item is 1 / (1 + e^-margin)."""
    own = index.sets.slot_length(index.sets.attribute_length(facet))  # (V,)
    alone = np.log(index.slot_multiplicity(facet, own))  # (V,)
    slot = state.no_match[facet].astype(np.float64)[:, None] + alone[None, :]  # (T, V)
    margin: np.ndarray = state.logits[facet].astype(np.float64) - slot  # (T, V)
    return margin


def can_match(margin: np.ndarray) -> np.ndarray:
    """Which `alone_margins` reach MATCH_THRESHOLD of the word's attention somewhere."""
    reaches: np.ndarray = 1.0 / (1.0 + np.exp(-margin)) >= MATCH_THRESHOLD
    return reaches


def unmatched_tokens(index: ScoringIndex, state: QueryState) -> list[str]:
    """The query words that no item of the catalogue can match: in every head, even an item with
    the best-scoring attribute alone would give it less than MATCH_THRESHOLD of the attention
    (on an attribute where the match would count: `match_evidence.countable`)."""
    if not state.tokens:
        return []
    matches = np.zeros(len(state.tokens), dtype=bool)
    tokens = list(range(len(state.tokens)))
    for h, f in enumerate(index.facets):
        if state.logits[f].shape[1]:
            lo, hi = int(index.vocab_offsets[h]), int(index.vocab_offsets[h + 1])
            margin = np.where(countable_grid(state.lexical, tokens, lo, hi), alone_margins(index, state, f), -np.inf)
            matches |= can_match(margin.max(1))
    return [tok.surface for tok, ok in zip(state.tokens, matches.tolist()) if not ok]


def rule_note(effect: RuleEffect, rank: int) -> str:
    """A rule's note in the line of the item it acted on, shown at `rank`: a pin whose item is
    not at its position says where it is and why (another pin holds the place, or the ranking
    has fewer items than the position)."""
    if effect.kind != "pin" or effect.position is None or effect.position == rank:
        return effect.note
    why = (f"another pin holds position {effect.position}" if rank > effect.position
           else f"fewer than {effect.position} results")
    return f"{effect.note}, shown {_ordinal(rank)}: {why}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
