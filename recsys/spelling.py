"""Near-exact word matches: catalogue words within a small edit distance of a query word.

Real search terms are misspelled ("accesories", "fiberglas"). Candidates come from deletion
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

MAX_NEAR_CHARS = 32  # longer words (a pasted id, a run of letters) have no near spellings


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
        self.near = lru_cache(maxsize=100_000)(self._near)

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
