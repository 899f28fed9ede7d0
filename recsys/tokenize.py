"""Text to tokens, the same way for queries and for item attributes.

A token keeps its surface form (what explanations show) and a match key (stemmed, lower-case),
so "Dresses" in a query and "dress" in a catalogue are exact-match evidence for each other.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

import snowballstemmer

# Words, numbers and fractions/decimals such as "1/2" or "2.5" stay whole: real search terms are
# full of sizes.
_WORD = re.compile(r"[0-9]+(?:[./][0-9]+)*|[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_STEMMER = snowballstemmer.stemmer("english")
_STEMMER_LOCK = threading.Lock()  # the snowball stemmer keeps the current word on itself


# Words that carry nothing in a product search: they never match in any head, a query made of
# them matches nothing, and BM25 drops them too. English function words (bm25s' English list and
# a few more a catalogue's titles are full of), compared in lower case before stemming.
STOPWORDS = frozenset(
    "a an and are as at be but by for from if in into is it its no not of on or our such that "
    "the their then there these they this those to was will with your my his her & + - x".split()
)


def fold(text: str) -> str:
    """Lower case, accents taken off ("Küche" -> "kuche"), as every word is matched."""
    if text.isascii():  # nothing to fold: the common case, spared a pass per character
        return text.lower()
    text = unicodedata.normalize("NFKD", text)
    return "".join(c for c in text if not unicodedata.combining(c)).lower()


def surface_words(text: str) -> list[str]:
    """Lower-cased words of `text` with their accents, in order: `words` as written."""
    return _WORD.findall(_joined_codes(text.lower()))


# French and Italian elision: the article or preposition before an apostrophe ("l'eau",
# "d'été", "qu'il", "dell'acqua") is no word of its own; the word after it is the word. Only before
# a vowel or an h, where elision happens: "men's", "o'clock" and "c'mon" stay whole.
_ELIDED = re.compile(r"^(?:[cdjlmnst]|qu|dell|nell|dall|sull|all|un)'(?=[aeiouyh])")


# a number written in hyphenated groups, nine digits or more: an ISBN, a GTIN, a part number
# ("978-0-490-81935-1"). It is one word, its groups joined: a shopper types it with or without
# the hyphens, and a group alone ("3", "978") is no word of it ("band 3" matched 17 ISBNs)
_DIGIT_CODE = re.compile(r"(?<![\w.-])\d+(?:-\d+){2,}(?:-x)?(?![\w-])", re.IGNORECASE)
_CODE_DIGITS = 9


def _joined_codes(text: str) -> str:
    if "-" not in text:
        return text
    return _DIGIT_CODE.sub(lambda m: m.group(0).replace("-", "") if sum(c.isdigit() for c in m.group(0))
                           >= _CODE_DIGITS else m.group(0), text)


def words(text: str) -> list[str]:
    """Lower-cased, accent-folded words of `text`, in order. A word whose accents alone set it
    apart from a stop word keeps them: French "thé" (tea) folded is "the", and a search for
    "thé vert" had only "vert" left. An elided article goes: "l'eau" is "eau" (`_ELIDED`)."""
    folded: list[str] = _WORD.findall(_joined_codes(fold(text)))
    if "'" in text:
        folded = [_ELIDED.sub("", w) if "'" in w else w for w in folded]
    if text.isascii() or not any(w in STOPWORDS for w in folded):
        return folded
    written = surface_words(text)
    if len(written) != len(folded):  # a letter that folds into a word apart: folded as it was
        return folded
    if "'" in text:
        written = [_ELIDED.sub("", w) if "'" in w else w for w in written]
    return [s if f in STOPWORDS and s != f else f for f, s in zip(folded, written)]


@lru_cache(maxsize=200_000)
def match_key(word: str) -> str:
    """The form two words must share to count as an exact match (English stem)."""
    if word[0].isdigit():
        return word
    with _STEMMER_LOCK:
        stem: str = _STEMMER.stemWord(word)
        return stem


def match_keys(text: str) -> list[str]:
    return [match_key(w) for w in words(text)]


def content_keys(text: str) -> list[str]:
    """Match keys of the words of `text` that are not stop words: what BM25 indexes."""
    return [match_key(w) for w in words(text) if w not in STOPWORDS]
