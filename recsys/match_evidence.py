"""What kind of evidence a query word has on each of an item's attributes, in words: the part of
an explanation that says why the head may attend there ("navy -> color:blue (learned from 41
searches)").

Read off the query state's evidence channels (`formula.EVIDENCE_KINDS`), the strongest channel
first: a shop's synonym rule (exact evidence of the word the rule makes it count as,
`recsys.synonyms`), an exact match (of a title or column value, of a description word, or of two query words
run together), a near spelling (or a run-together query word's part), then a click association,
with its confident lift and the distinct training searches that carry it when the version has
them (`Evidence.confident`, `Evidence.support`; versions saved before have neither).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from .catalog import Attribute
from .evidence import Evidence
from .facets import DESCRIPTION as DESCRIPTION_KEY  # a description word's attribute key
from .formula import ASSOC, EXACT, NEAR
from .spelling import is_run_together_part
from .synonyms import synonym_of
from .words import QueryToken, WordTable

EXACT_KIND, DESCRIPTION, NEAR_SPELLING, RUN_TOGETHER, CLICKS = (
    "exact", "description", "near spelling", "words run together", "click association")
SYNONYM = "synonym"  # a shop's synonym rule (`recsys.synonyms`): exact evidence of another word
# every kind a cell can have, "" last: attention from the learned vectors alone
CELL_KINDS = (EXACT_KIND, DESCRIPTION, NEAR_SPELLING, RUN_TOGETHER, SYNONYM, CLICKS, "")


@dataclass
class CellEvidence:
    kind: str  # one of the kinds above, "" where the word has no evidence on the attribute
    lift: float | None = None  # click association: the pair's confident lift, when known
    searches: int | None = None  # and the distinct training searches that chose the value
    rule: str | None = None  # a synonym: the rule's name

    def describe(self) -> str:
        """The cell's evidence in a shopper's words: "exact", "learned from 41 searches",
        "synonym rule 'navy'"."""
        if self.kind == SYNONYM:
            return f"synonym rule {self.rule!r}"
        if self.kind != CLICKS:
            return self.kind
        if self.searches is None:
            return "learned from clicks"
        lift = f", lift {self.lift:.2f}" if self.lift else ""  # a lift of 0: not confidently above chance
        return f"learned from {self.searches} search{'' if self.searches == 1 else 'es'}{lift}"


def cell_evidence(evidence: Evidence, words: WordTable, tokens: list[QueryToken], facet: str,
                  attrs: list[Attribute], attr_idx: np.ndarray, channels: np.ndarray) -> list[list[CellEvidence]]:
    """One row per query token over the item's attributes `attrs` (their indices `attr_idx`):
    the kind of evidence of each pair. channels: (T, M, N_KINDS) the state's evidence of the
    tokens on those attributes (`QueryState.evidence[facet][:, attr_idx]`)."""
    joined = joined_words(tokens)
    rows = []
    for t, tok in enumerate(tokens):
        row = []
        for m, attr in enumerate(attrs):
            exact, assoc, near = (float(channels[t, m, k]) for k in (EXACT, ASSOC, NEAR))
            kind = cell_kind(tok, attr, exact, assoc, near, joined)
            if kind == CLICKS:
                row.append(_clicks(evidence, words.id(tok.key), facet, int(attr_idx[m])))
            elif kind == SYNONYM:
                use = synonym_of(tok, attr)
                row.append(CellEvidence(SYNONYM, rule=use.name if use is not None else None))
            else:
                row.append(CellEvidence(kind))
        rows.append(row)
    return rows


def joined_words(tokens: list[QueryToken]) -> set[str]:
    """The surfaces of two consecutive query words run together (`cell_kind`'s `joined`)."""
    return {a.surface + b.surface for a, b in pairwise(tokens)}


def cell_kind(tok: QueryToken, attr: Attribute, exact: float, assoc: float, near: float, joined: set[str]) -> str:
    """The kind of evidence of one word on one attribute from its channels (exact after
    coverage), the strongest first. `joined`: `joined_words` of the query."""
    if exact > 0:
        if tok.synonyms and synonym_of(tok, attr) is not None:
            return SYNONYM
        return RUN_TOGETHER if tok.surface in joined else (DESCRIPTION if attr.key == DESCRIPTION_KEY else EXACT_KIND)
    if near > 0:
        return RUN_TOGETHER if _is_part(attr, tok) else NEAR_SPELLING
    return CLICKS if assoc > 0 else ""


def countable(lexical: list[np.ndarray] | None, t: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(P,) bool: whether the attention of token t[p] on flat attribute column cols[p] can make an
    item a result of the query (`explain.Explanation.matched`, facet counts, totals) when it
    reaches MATCH_THRESHOLD. `lexical`: `QueryState.lexical` (None: every cell counts).

    A word the catalogue says somewhere (it has exact or near evidence on some attribute)
    matches only where it is said: a head can also learn to attend elsewhere (clicks, the
    trained embeddings), which moves the score and is shown as such, but does not make the item
    one the query found. Else, after training on a small log, "charger" reached the colour black
    of every black phone case, and "matched" 110 of a feed's 110 items (22 said it). A word the
    catalogue never says ("navy" where only "blue" is written) has nothing else: what the head
    learned is what it means, and those cells count."""
    t, cols = np.asarray(t, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    out = np.ones(len(t), dtype=bool)
    if lexical is None:
        return out
    for tt in set(t.tolist()):
        said = lexical[tt]
        if len(said):
            at = np.flatnonzero(t == tt)
            found = said[np.minimum(np.searchsorted(said, cols[at]), len(said) - 1)]
            out[at] = found == cols[at]
    return out


def _is_part(attr: Attribute, tok: QueryToken) -> bool:
    """Whether one of the attribute's words is a part the query word runs together with another
    ("rust" of "rustoleum"), not a near spelling of it."""
    return any(is_run_together_part(tok.surface, w) for w in attr.value.split())


def _clicks(evidence: Evidence, word_id: int, facet: str, attr: int) -> CellEvidence:
    if evidence.confident is None or evidence.support is None or word_id < 0:
        return CellEvidence(CLICKS)
    return CellEvidence(CLICKS, round(float(evidence.confident[facet][word_id, attr]), 4),
                        int(evidence.support[facet][word_id, attr]))


def countable_grid(lexical: list[np.ndarray] | None, tokens: list[int], lo: int, hi: int) -> np.ndarray:
    """(len(tokens), hi - lo) bool: `countable` of each of `tokens` on the flat columns lo..hi."""
    out = np.ones((len(tokens), hi - lo), dtype=bool)
    if lexical is None:
        return out
    for row, t in enumerate(tokens):
        said = lexical[t]
        if len(said):
            out[row] = False
            out[row, said[(said >= lo) & (said < hi)] - lo] = True
    return out
