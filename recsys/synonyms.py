"""A shop's synonyms: query words that count as other words, as evidence of their own kind.

Two forms, as Solr's and Elasticsearch's synonyms.txt write them (one rule a line):

- one-way, `navy => blue` (`navy, marine => blue`): a query word on the left counts as the words
  on the right; "blue" does not count as "navy";
- two-way, `sofa, couch, settee`: each word counts as every other.

Every word of a two-way list is one query word; the left of a one-way rule may be a phrase
(`navy blue => indigo`), found when its words follow each other in the query's words (stop words
aside), each of them then counting as the right side; a word it counts as may be a phrase
(`couch => sofa bed`). In the heads, a query word with a synonym gets, on every attribute,
at least the exact-match evidence the synonym's phrase would have there as a query of its own
(its words' stored exact values, the phrase's attributes a full match), before the query's own
coverage: so it attends to `color:blue` as strongly as the word "blue" does, through the same
exact-match weight, and no weight is learned: a change serves without retraining. The
explanation names the rule ("navy -> color:blue (synonym rule 'navy')", `synonym_of`).

Synonyms are data: read from the store (`store.synonyms`, the admin API) and from a file
(`read_synonyms_file`); a `SynonymBook` is the set in force and rewrites a query's tokens
(`SynonymBook.tokens`). A query none of whose words has a synonym keeps its tokens unchanged, and
so costs what it costs without any synonym.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from .catalog import Attribute
from .rules import RuleError
from .tokenize import STOPWORDS, match_key, words
from .words import QueryToken

MAX_WORDS = 32  # words of one synonym (each side): a longer list is a paste error
MAX_PHRASE_WORDS = 4  # words of one phrase (either side of a one-way rule)
_NAME = re.compile(r"^[\w.\-]{1,64}$")


class SynonymError(RuleError):
    """A synonym that cannot be stored: `field` names the bad field, the message the fix (a
    rule's error, `rules.RuleError`, by another name)."""


@dataclass(frozen=True)
class Synonym:
    name: str
    words: tuple[str, ...]  # the query words (two-way: every word of the list)
    to: tuple[str, ...] = ()  # one-way: what they count as (words or phrases); () = two-way

    @property
    def two_way(self) -> bool:
        return not self.to

    def line(self) -> str:
        """The rule as a synonyms.txt line: `navy => blue`, `sofa, couch, settee`."""
        return ", ".join(self.words) + (f" => {', '.join(self.to)}" if self.to else "")

    def targets(self, word: str) -> list[str]:
        """What the query word `word` (one of `words`) counts as."""
        return list(self.to) if self.to else [w for w in self.words if w != word]


def clean(text: str) -> str:
    """A word or phrase as stored: lower case, single spaces."""
    return " ".join(words(text))


def make_synonym(words_: Sequence[str], to: Sequence[str] = (), name: str | None = None) -> Synonym:
    """A checked synonym (SynonymError naming the field otherwise); `name` defaults to its first
    word, what explanations call it."""
    left = [clean(w) for w in words_]
    right = [clean(w) for w in to]
    if len(left) > MAX_WORDS or len(right) > MAX_WORDS:
        raise SynonymError("words" if len(left) > MAX_WORDS else "to",
                           f"at most {MAX_WORDS} words a side, got {max(len(left), len(right))}")
    for n, (raw, w) in enumerate(zip(words_, left)):
        if not w:
            raise SynonymError(f"words.{n}", f"{raw[:80]!r} has no word: give a query word")
        if " " in w:
            _check_phrase(raw, w, f"words.{n}", one_way=bool(right))
        elif w in STOPWORDS:
            raise SynonymError(f"words.{n}", f"{w!r} is a stop word, which queries drop: it can "
                                             f"never apply")
    for n, (raw, w) in enumerate(zip(to, right)):
        if not w:
            raise SynonymError(f"to.{n}", f"{raw[:80]!r} has no word: give a word or a phrase")
        if len(w.split()) > MAX_PHRASE_WORDS:
            raise SynonymError(f"to.{n}", f"{raw[:80]!r} has more than {MAX_PHRASE_WORDS} words")
    if not left:
        raise SynonymError("words", "give at least one query word")
    if not right and len(set(left)) < 2:
        raise SynonymError("words", "a two-way list needs two different words ('sofa, couch'); "
                                    "a one-way rule needs `to` ('navy => blue')")
    if right and set(right) <= set(left):
        raise SynonymError("to", f"{', '.join(right)!r} only repeats the words: name other words")
    name = left[0].replace(" ", "-") if name is None else name
    if not _NAME.match(name):
        raise SynonymError("name", f"{name[:80]!r}: a name is 1-64 letters, digits, '_', '-' or '.'")
    return Synonym(name, tuple(dict.fromkeys(left)), tuple(dict.fromkeys(right)))


def _check_phrase(raw: str, phrase: str, field: str, one_way: bool) -> None:
    """A phrase on the left: only of a one-way rule, of at most MAX_PHRASE_WORDS words, none a
    stop word (queries drop those, so the phrase could never be found)."""
    n = len(phrase.split())
    if not one_way:
        raise SynonymError(field, f"{raw[:80]!r} is {n} words; each word of a two-way list is one query "
                                  f"word: write each word apart, or make it one-way ('navy blue => indigo')")
    if n > MAX_PHRASE_WORDS:
        raise SynonymError(field, f"{raw[:80]!r} has more than {MAX_PHRASE_WORDS} words")
    stop = [w for w in phrase.split() if w in STOPWORDS]
    if stop:
        raise SynonymError(field, f"{raw[:80]!r} has the stop word {stop[0]!r}, which queries drop: the "
                                  f"phrase could never be found; leave it out")


def parse_line(line: str) -> Synonym | None:
    """One synonyms.txt line as a synonym; None for a blank line or a `#` comment."""
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    left, arrow, right = text.partition("=>")
    if arrow and "=>" in right:
        raise SynonymError("line", "one '=>' a line: 'navy, marine => blue'")
    split = [w for w in (p.strip() for p in left.split(",")) if w]
    return make_synonym(split, [w for w in (p.strip() for p in right.split(",")) if w] if arrow else ())


def parse_synonyms(text: str, source: str = "synonyms") -> list[Synonym]:
    """Every rule of a synonyms.txt text, each named by its first word (a name used twice gets
    `-2`, `-3`, ... after it); SynonymError says the line and what is wrong."""
    out: list[Synonym] = []
    names: set[str] = set()
    for n, line in enumerate(text.splitlines(), start=1):
        try:
            s = parse_line(line)
        except SynonymError as exc:
            raise SynonymError("line", f"{source}: line {n}: {exc} (the line: {line.strip()[:120]!r})") from None
        if s is None:
            continue
        name, k = s.name, 1
        while name in names:
            k += 1
            name = f"{s.name}-{k}"
        names.add(name)
        out.append(Synonym(name, s.words, s.to))
    return out


def read_synonyms_file(path: str | Path) -> list[Synonym]:
    """The rules of a synonyms.txt file (UTF-8): `navy => blue`, `sofa, couch, settee`, `#` comments."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SynonymError("file", f"{p}: cannot read the synonyms file ({exc})") from None
    return parse_synonyms(text, str(p))


def check_synonym(synonym: Synonym, catalog_keys: Collection[str]) -> str | None:
    """A warning when the catalogue (its words' match keys, `Featurizer.catalog_keys`) cannot use
    `synonym`: no item says any of its targets, so it changes no ranking (accepted: the catalogue
    may change); None when it can."""
    def occurs(phrase: str) -> bool:
        keys = [match_key(w) for w in phrase.split()]
        return bool(keys) and all(k in catalog_keys for k in keys)

    if any(occurs(w) for w in (synonym.to or synonym.words)):  # a two-way list: one word is enough
        return None
    said = [w for w in synonym.words if occurs(w)]
    what = ("neither side occurs in any item" if not said else
            f"no item says {', '.join(repr(t) for t in synonym.to)}")
    return (f"synonym {synonym.name!r} ({synonym.line()}): {what}; it is stored and changes no "
            f"result until an item has it")


@dataclass(frozen=True)
class SynonymUse:
    """One synonym of a query word: the rule's name and what the word counts as (each phrase as
    its words' match keys)."""

    name: str
    phrases: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class SynonymEffect:
    """A synonym as a term of one item's explanation: the query word, the attribute it matched
    through the rule."""

    name: str
    query_token: str
    attribute: str
    note: str  # "navy -> color:blue (synonym rule 'navy')"


class SynonymBook:
    """The synonyms in force (the store's at `revision`, with a file's), by query word."""

    def __init__(self, synonyms: Sequence[Synonym] = (), revision: int = 0):
        self.synonyms, self.revision = tuple(synonyms), revision
        by_key: dict[str, list[SynonymUse]] = {}
        # a phrase on the left, by its first word's key: (its words' keys, the use)
        by_first: dict[str, list[tuple[tuple[str, ...], SynonymUse]]] = {}
        for s in self.synonyms:
            for w in s.words:
                use = SynonymUse(s.name, tuple(tuple(match_key(x) for x in t.split()) for t in s.targets(w)))
                keys = tuple(match_key(x) for x in w.split())
                if len(keys) == 1:
                    by_key.setdefault(keys[0], []).append(use)
                else:
                    by_first.setdefault(keys[0], []).append((keys, use))
        self._by_key = {k: tuple(v) for k, v in by_key.items()}
        self._by_first = {k: tuple(v) for k, v in by_first.items()}

    def __len__(self) -> int:
        return len(self.synonyms)

    @property
    def words(self) -> frozenset[str]:
        """The match keys of the one-word sides of the rules: words a query reads whole, never as
        a glued name's pieces (`words.query_tokens`), so that "ps5 => playstation 5" applies."""
        return frozenset(self._by_key)

    def tokens(self, tokens: list[QueryToken]) -> list[QueryToken]:
        """`tokens` with each one's synonyms (`QueryToken.synonyms`); the same list when none
        has any (the common case, which then costs a dict lookup a word)."""
        if not any(t.key in self._by_key or t.key in self._by_first for t in tokens):
            return tokens
        uses = [list(self._by_key.get(t.key, ())) for t in tokens]
        for i, t in enumerate(tokens):  # a phrase: its words one after the other, from here
            for keys, use in self._by_first.get(t.key, ()):
                if tuple(x.key for x in tokens[i : i + len(keys)]) == keys:
                    for j in range(i, i + len(keys)):
                        uses[j].append(use)
        if not any(uses):
            return tokens
        return [QueryToken(t.surface, t.key, tuple(u)) if u else t for t, u in zip(tokens, uses)]


def synonym_of(token: QueryToken, attribute: Attribute) -> SynonymUse | None:
    """The first of the token's synonyms through which it matches `attribute` exactly (a word of
    one of its phrases is one of the attribute's words), when its own word is not one of them:
    the rule an explanation names for the pair. None otherwise."""
    if not token.synonyms or token.key in attribute.match_keys:
        return None
    for use in token.synonyms:
        assert isinstance(use, SynonymUse)  # QueryToken, in words.py, cannot name the type
        if any(k in attribute.match_keys for phrase in use.phrases for k in phrase):
            return use
    return None


def effect_note(token: str, label: str, name: str) -> str:
    return f"{token} -> {label} (synonym rule {name!r})"
