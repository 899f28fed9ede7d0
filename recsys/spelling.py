"""Near-exact word matches: catalogue words within a small edit distance of a query word.

Real search terms are misspelled ("accesories", "fiberglas") and run words together that the
catalogue writes apart ("rustoleum" for "Rust-Oleum", "snowblower"): `related` gives both, the
near spellings and the two words a run-together word splits into. Candidates come from deletion
neighbourhoods (the SymSpell idea: two words within distance d share a variant with at most d
letters deleted), then the true Damerau-Levenshtein distance decides. Numbers never match near:
"1/2" and "1/4" are different things. A short word (4 letters; 3-letter ones are too often
abbreviations) the catalogue lacks matches the one catalogue word it is a letter dropped, doubled
or two letters swapped from ("dres": dress, "redd": red); so does a word of 5 letters with a letter
added to a 4-letter one ("lampp"). Never
a letter changed ("lump" is a word of its own, not "lamp"), and nothing when two catalogue
words are that close, or when a 4-letter word is also a letter changed from one ("lapp")
(`benchmarks/typo_bench.py` measures it).

The work is bounded whatever the word: a word has about len**2 / 2 variants with two letters
deleted (130k strings of 510 letters for a 512-letter word, seconds of work), so words longer
than MAX_NEAR_CHARS get no near matches, on the query side and on the catalogue side alike: no
real search word is that long, and at that length a variant costs at most 529 strings.
"""

from __future__ import annotations

import string
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from itertools import combinations

from .tokenize import STOPWORDS, match_key
from .words import MIN_PART, code_pieces

MAX_NEAR_CHARS = 32  # longer words (a pasted id, a run of letters) have no near spellings
# lengths of the words that match near only by a unique dropped, added or swapped letter: 4.
# Words of 3 letters are more often abbreviations than typos in real searches: of Home Depot's
# 9,406 search terms, (3, 4) corrected 37 words and most of the 3-letter ones wrongly ("ref" to
# reef, "med" to mend, "ham" to hyam, "acc" to cac); (4, 4) corrects 10, most rightly ("onda"
# honda, "icnh" inch, "inov" innov, "prun" prune)
SHORT = (4, 4)


def is_run_together_part(word: str, part: str) -> bool:
    """Whether `part` (a word as written) can be one of the two parts `NearWords.parts` splits
    the run-together `word` into, its beginning or its end: "rust" of "rustoleum" (both parts
    at least MIN_PART letters)."""
    return len(part) >= MIN_PART and len(word) - len(part) >= MIN_PART \
        and (word.startswith(part) or word.endswith(part))


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
        # short words' near spellings: the catalogue words one letter longer than a short word,
        # by their variants with one letter dropped
        self._one_dropped: dict[str, list[str]] = defaultdict(list)
        for w in self.words:
            if SHORT[0] + 1 <= len(w) <= SHORT[1] + 1 and _plain(w):
                for v in _deletes(w, 1) - {w}:
                    self._one_dropped[v].append(w)
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
        is longest; () when there is none. Stop words are no part ("ourdoor" is a misspelling).
        Only a second part whose first is a word is stemmed: a few microseconds a word."""
        if word in self._known or len(word) > MAX_NEAR_CHARS:
            return ()
        if any(c.isdigit() for c in word):  # a model's name and number (`words.code_pieces`)
            return tuple(known for _, known in code_pieces(word, self._known))
        if len(word) < 2 * MIN_PART:
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
            return self._near_short(word)
        found: dict[str, float] = {}
        for v in _deletes(word, d):
            for i in self._variants.get(v, ()):
                w = self.words[i]
                if w == word or w in found or max_distance(w) == 0:
                    continue
                dist = distance(word, w)
                if dist <= min(d, max_distance(w)):
                    found[w] = 1.0 - dist / max(len(word), len(w))
        if not found and len(word) == SHORT[1] + 1 and _plain(word):  # a short word with a letter added
            shorter = {v for v in _deletes(word, 1) - {word} if v in self._known and _plain(v)}
            if len(shorter) == 1:
                (w,) = shorter
                found[w] = 1.0 - 1.0 / len(word)
        return tuple(sorted(found.items()))

    def _near_short(self, word: str) -> tuple[tuple[str, float], ...]:
        """The one catalogue word that a short `word` the catalogue lacks is a letter dropped
        from ("dres": dress), added to ("redd": red) or two neighbours swapped in ("lmap": lamp),
        as `_near` gives it; () when none or several are. A letter changed is not looked for:
        among short words that is mostly another word ("lump", "lamp")."""
        if not (SHORT[0] <= len(word) <= SHORT[1]) or word in self._known or not _plain(word):
            return ()
        found = set(self._one_dropped.get(word, ()))  # a letter dropped from a catalogue word
        found.update(v for v in _deletes(word, 1) - {word} if len(v) >= MIN_PART and v in self._known)
        found.update(swapped for i in range(len(word) - 1)
                     if (swapped := word[:i] + word[i + 1] + word[i] + word[i + 2:]) in self._known)
        found = {w for w in found if _plain(w) and w != word}
        # a catalogue word a letter changed away makes the typo ambiguous ("lapp": lap or lamp);
        # without this check, typo_bench's changed letters were corrected wrongly 0.25 of the time
        changed = any(word[:i] + c + word[i + 1:] in self._known
                      for i in range(len(word)) for c in string.ascii_lowercase if c != word[i])
        if len(found) != 1 or changed:
            return ()
        (w,) = found
        return ((w, 1.0 - 1.0 / max(len(word), len(w))),)


def _plain(word: str) -> bool:
    """A word a short near spelling may be of or lead to: letters only, not a stop word."""
    return word.isalpha() and word not in STOPWORDS
