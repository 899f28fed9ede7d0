""""Did you mean": whole queries near one whose words match nothing (issue 31, point 5).

A query word that no item can match (`explain.unmatched_tokens`) is answered by prior; the answer
then offers queries the shopper may have meant, from two sources, in this order:

- **near spellings**: each unmatched word replaced by a catalogue word within a small edit
  distance, or by the two words it runs together (`spelling.NearWords` over the
  suggester's words, the most similar first, then the most common): "blck dres" -> "black dress";
- **suggestions**: the suggester's completions of the query, whose last word may be a typo of one
  edit (`suggest.Suggester.suggest`): "red dersses" -> "red dresses".

Only a query every word of which matches some item is offered (`matches`): each one, asked,
would be answered by matches rather than by prior.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from .explain import unmatched_tokens
from .index.scoring import ScoringIndex
from .spelling import NearWords
from .suggest import Suggester
from .tokenize import words
from .words import without_joined_parts

MAX_OFFERED = 3  # queries offered, the best first
PER_WORD = 3  # corrections tried per unmatched word

# per suggester (one per served version and its searches), the near spellings of its words: built
# on the first query that needs them, dropped with the suggester
_SPELLERS: weakref.WeakKeyDictionary[object, tuple[NearWords, dict[str, int]]] = weakref.WeakKeyDictionary()


def corrections(suggester: Suggester, word: str) -> list[str]:
    """Catalogue words (or two of them) spelled near `word`, the most similar first, then the
    most common among the catalogue's items."""
    speller = _SPELLERS.get(suggester.terms)
    if speller is None:
        counts = {t: c for t, c in zip(suggester.terms.keys, suggester.terms.counts) if " " not in t}
        speller = _SPELLERS[suggester.terms] = (NearWords(counts), counts)
    near, counts = speller
    found = list(near.near(word))
    parts = near.parts(word)
    if parts:  # as similar as a word one edit away (a space left out), as `NearWords.related` rates it
        found.append((" ".join(parts), 1.0 - 1.0 / len(word)))
    ranked = sorted(found, key=lambda ws: (-ws[1], -counts.get(ws[0], 0), ws[0]))
    return [w for w, _ in ranked]


def did_you_mean(query: str, unmatched: Sequence[str], suggester: Suggester,
                 matches: Callable[[str], bool]) -> list[str]:
    """At most MAX_OFFERED queries near `query` whose every word matches (`matches(text)`), the
    near spellings first, then the suggester's completions; [] when no word is `unmatched`."""
    if not unmatched:
        return []
    typed = words(query)
    bad = set(unmatched)
    fixes = {w: corrections(suggester, w)[:PER_WORD] for w in typed if w in bad}
    candidates = []
    if any(fixes.values()):
        candidates.append(" ".join(fixes[w][0] if fixes.get(w) else w for w in typed))
        for w, options in fixes.items():  # one word at a time, its other corrections
            for option in options[1:]:
                candidates.append(" ".join(option if x == w else (fixes[x][0] if fixes.get(x) else x)
                                           for x in typed))
    candidates += [s.text for s in suggester.suggest(query, 2 * MAX_OFFERED)]
    offered: list[str] = []
    for text in dict.fromkeys(candidates):
        if len(offered) == MAX_OFFERED:
            break
        if text != " ".join(typed) and matches(text):
            offered.append(text)
    return offered


def every_word_matches(index: ScoringIndex, text: str) -> bool:
    """`text` has words, and each of them matches some item of the catalogue."""
    state = index.query_state(text)
    return bool(state.tokens) and not without_joined_parts(state.tokens, unmatched_tokens(index, state))
