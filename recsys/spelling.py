"""Near-exact word matches: catalogue words within a small edit distance of a query word.

Real search terms are misspelled ("accesories", "fiberglas") and run words together that the
catalogue writes apart ("rustoleum" for "Rust-Oleum", "snowblower"): `related` gives both, the
near spellings and the two words a run-together word splits into. Candidates come from deletion
neighbourhoods (the SymSpell idea: two words within distance d share a variant with at most d
letters deleted), then the true Damerau-Levenshtein distance decides. Short words and numbers
never match near: "lamp" and "lump", "1/2" and "1/4" are different things.

The work is bounded whatever the word: a word has about len**2 / 2 variants with two letters
deleted (130k strings of 510 letters for a 512-letter word, seconds of work), so words longer
than MAX_NEAR_CHARS get no near matches, on the query side and on the catalogue side alike: no
real search word is that long, and at that length a variant costs at most 529 strings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from itertools import combinations

from .tokenize import STOPWORDS, match_key

MAX_NEAR_CHARS = 32  # longer words (a pasted id, a run of letters) have no near spellings
MIN_PART = 3  # the shortest part a run-together word is split into ("a", "on" split anything)


def max_distance(word: str) -> int:
    if len(word) < 5 or len(word) > MAX_NEAR_CHARS or any(c.isdigit() for c in word):
        return 0
    return 1 if len(word) < 9 else 2


def _deletes(word: str, d: int) -> set[str]:
    out = {word}
    for n in range(1, d + 1):
        out.update("".join(c for i, c in enumerate(word) if i not in drop)
                   for drop in combinations(range(len(word)), n))
    return out


def distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (optimal string alignment)."""
    prev2, prev = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if prev2 is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


class NearWords:
    """Index of a vocabulary; `near(word)` lists its other words within the allowed distance."""

    def __init__(self, vocabulary: Iterable[str]):
        self.words = sorted(set(vocabulary))
        self._variants: dict[str, list[int]] = defaultdict(list)
        for i, w in enumerate(self.words):
            for v in _deletes(w, max_distance(w)):
                self._variants[v].append(i)
        self._known = frozenset(self.words)
        self.near = lru_cache(maxsize=100_000)(self._near)
        self.parts = lru_cache(maxsize=100_000)(self._parts)

    def related(self, word: str) -> list[tuple[str, float]]:
        """(word, similarity in (0, 1)) of the near spellings (`near`) and of the parts of a
        run-together word (`parts`), each part as similar as a word one edit away (a space or
        hyphen left out), the most similar first."""
        found = list(self.near(word))
        found += [(p, 1.0 - 1.0 / len(word)) for p in self.parts(word)]
        return sorted(found, key=lambda ws: -ws[1])

    def _parts(self, word: str) -> tuple[str, ...]:
        """The two vocabulary words that a word the vocabulary lacks runs together ("rustoleum":
        "rust", "oleum"; the second may be inflected, "snowblowers"), the split whose shorter part
        is longest; () when there is none. Words with digits are sizes and model numbers, not
        compounds, stop words no part ("ourdoor" is a misspelling). Only a second part whose first is
        a word is stemmed: a few microseconds a word."""
        if word in self._known or not (2 * MIN_PART <= len(word) <= MAX_NEAR_CHARS) \
                or any(c.isdigit() for c in word):
            return ()
        best: tuple[str, ...] = ()
        shorter = 0  # the shorter part's length of the best split so far
        for i in range(MIN_PART, len(word) - MIN_PART + 1):
            left, right = word[:i], word[i:]
            if min(i, len(right)) <= shorter or left not in self._known or left in STOPWORDS:
                continue
            right = right if right in self._known else match_key(right)
            if right in self._known and right not in STOPWORDS:
                best, shorter = (left, right), min(i, len(word) - i)
        return best

    def _near(self, word: str) -> tuple[tuple[str, float], ...]:
        """(word, similarity in (0, 1)) for each near word; similarity = 1 - distance / length."""
        d = max_distance(word)
        if d == 0:
            return ()
        found: dict[str, float] = {}
        for v in _deletes(word, d):
            for i in self._variants.get(v, ()):
                w = self.words[i]
                if w == word or w in found or max_distance(w) == 0:
                    continue
                dist = distance(word, w)
                if dist <= min(d, max_distance(w)):
                    found[w] = 1.0 - dist / max(len(word), len(w))
        return tuple(sorted(found.items()))
