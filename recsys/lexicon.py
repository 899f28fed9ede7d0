"""Facet values found in free text: colours, styles, materials and quality words of titles.

Real catalogues often have no facet columns (a title is all there is) or sparse ones. A `Lexicon`
maps words and phrases to a canonical value of a *kind*: `color`, `style` and `quality` feed their
own facet, `material` (and any other kind a schema adds, like `pattern`) feeds `other` as
`material:<value>`, unless the catalogue has a facet of that name (a schema's `[facets] add`).
Shades and synonyms map to one canonical value ("crimson", "scarlet" and "burgundy" are all `red`;
"oil rubbed bronze" is `bronze`).

Matching works on whole words (`recsys.tokenize.words`: lower-case, accents folded), longest
phrase first, left to right: "redwood" is not red, "tan" in "standard" is not tan, and in
"stainless steel sink" the phrase wins over "steel". A few phrases map to nothing on purpose
(brands and fixed expressions such as "Black & Decker", "Rust-Oleum", "charcoal grill"): they
consume their words so that no colour is read out of them.

A schema file extends the built-in lexicon (`[lexicon.color] teal = ["peacock", "petrol"]`),
replaces it (`builtin = false`) or turns extraction off (`enabled = false`); see `LexiconConfig`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .facets import FACETS, TITLE
from .tokenize import words

# kind -> canonical value -> words and phrases that mean it (the canonical value itself always
# matches too). Kept to words that are facet values in almost every context they appear in.
BUILTIN: dict[str, dict[str, list[str]]] = {
    "color": {
        "red": ["crimson", "scarlet", "burgundy", "maroon", "ruby", "vermilion", "oxblood",
                "cherry red", "wine red", "brick red", "fire red"],
        "pink": ["fuchsia", "magenta", "blush", "hot pink", "rose pink", "baby pink",
                 "salmon pink"],
        "orange": ["tangerine", "apricot", "coral", "peach", "burnt orange", "terracotta"],
        "yellow": ["mustard", "canary", "golden yellow", "lemon yellow"],
        "green": ["emerald", "olive", "sage", "jade", "mint", "lime green", "forest green",
                  "sea green", "hunter green", "olive green", "army green", "fluorescent green"],
        "blue": ["navy", "cobalt", "azure", "sapphire", "indigo", "navy blue", "royal blue",
                 "sky blue", "light blue", "dark blue", "baby blue", "midnight blue"],
        "teal": ["turquoise", "aqua", "cyan", "turquoise blue"],
        "purple": ["violet", "lavender", "lilac", "plum", "mauve", "aubergine", "eggplant"],
        "brown": ["chocolate", "tan", "camel", "mocha", "espresso", "caramel", "chestnut", "cognac",
                  "coffee brown", "mushroom brown", "dark brown"],
        "beige": ["khaki", "taupe", "ecru", "nude", "almond", "bisque", "biscuit", "bone"],
        "black": ["ebony", "onyx", "jet black", "matte black", "matt black"],
        "white": ["ivory", "cream", "off white", "snow white", "bright white", "alabaster",
                  "pure white"],
        "grey": ["gray", "charcoal", "slate", "graphite", "pewter", "gunmetal", "grey melange",
                 "heather grey", "heather gray", "dark grey", "dark gray", "light grey",
                 "light gray"],
        "gold": ["golden", "rose gold", "gold tone", "goldtone"],
        "silver": ["silver tone", "silvertone"],
        # metal finishes are colours too in home improvement
        "bronze": ["oil rubbed bronze", "rubbed bronze", "venetian bronze", "antique bronze",
                   "mediterranean bronze"],
        "brass": ["polished brass", "antique brass", "satin brass", "brushed brass"],
        "copper": ["antique copper", "brushed copper"],
        "nickel": ["brushed nickel", "satin nickel", "polished nickel"],
        "chrome": ["polished chrome", "brushed chrome"],
        "stainless": ["stainless steel"],
        "clear": ["transparent"],
        "multicolor": ["multicolour", "multi color", "multi colour", "multicolored",
                       "multicoloured", "multi colored", "multi coloured"],
    },
    "style": {
        "modern": [],
        "contemporary": [],
        "traditional": [],
        "rustic": [],
        "industrial": [],
        "farmhouse": ["farm house"],
        "vintage": ["antique style"],
        "retro": [],
        "classic": [],
        "casual": ["smart casual"],
        "formal": [],
        "sporty": ["sports", "sport", "athletic", "athleisure"],
        "boho": ["bohemian", "boho chic"],
        "minimalist": ["minimal", "minimalistic"],
        "mid century": ["mid century modern", "midcentury"],
        "coastal": ["nautical"],
        "transitional": [],
        "scandinavian": [],
        "art deco": [],
        "glam": [],
        "shabby chic": [],
        "cottage": [],
        "victorian": [],
        "ethnic": [],
        "party": ["partywear", "party wear"],
        "preppy": [],
    },
    "material": {
        "wood": ["wooden", "hardwood", "solid wood"],
        "oak": ["red oak", "white oak"],
        "walnut": ["black walnut"],
        "maple": [],
        "cherry": [],
        "pine": [],
        "cedar": [],
        "teak": [],
        "birch": [],
        "mahogany": [],
        "bamboo": [],
        "hickory": [],
        "acacia": [],
        "redwood": [],
        "plywood": [],
        "mdf": [],
        "particleboard": ["particle board"],
        "pvc": [],
        "cpvc": [],
        "abs": [],
        "pex": [],
        "steel": [],
        "stainless steel": ["stainless"],
        "galvanized steel": ["galvanized", "galvanised"],
        "cast iron": [],
        "wrought iron": [],
        "aluminum": ["aluminium"],
        "brass": ["solid brass"],
        "copper": [],
        "zinc": [],
        "metal": [],
        "vinyl": [],
        "plastic": [],
        "polypropylene": [],
        "polyethylene": [],
        "acrylic": [],
        "resin": [],
        "fiberglass": ["fibreglass"],
        "rubber": [],
        "silicone": [],
        "ceramic": [],
        "porcelain": [],
        "glass": ["tempered glass"],
        "stone": ["natural stone"],
        "granite": [],
        "marble": [],
        "quartz": [],
        "slate": [],
        "travertine": [],
        "concrete": [],
        "cement": [],
        "cotton": ["organic cotton"],
        "wool": ["merino", "merino wool"],
        "leather": ["genuine leather"],
        "faux leather": ["leatherette", "pu leather"],
        "suede": [],
        "silk": [],
        "linen": [],
        "polyester": [],
        "nylon": [],
        "denim": [],
        "velvet": [],
        "rayon": ["viscose"],
        "spandex": ["lycra", "elastane"],
        "fleece": [],
        "canvas": [],
        "jute": [],
        "wicker": ["rattan"],
        "microfiber": ["microfibre"],
        "cashmere": [],
        "chiffon": [],
        "georgette": [],
    },
    "quality": {
        "premium": ["deluxe", "luxury", "luxurious", "high end", "high quality", "top quality",
                    "superior", "super premium", "ultra premium"],
        "heavy duty": ["extra heavy duty", "industrial strength", "industrial grade",
                       "heavy weight"],
        "commercial grade": ["commercial", "contractor grade"],
        "professional": ["professional grade", "pro grade"],
        "budget": ["economy", "economical", "value grade"],
    },
}

# Phrases that hold lexicon words without meaning them (brands, fixed expressions): matched like
# any phrase, they yield nothing.
BUILTIN_STOP_PHRASES: tuple[str, ...] = (
    "black & decker", "black and decker", "red head", "red devil", "blue hawk",
    "commercial electric", "charcoal grill", "charcoal grills", "charcoal filter",
    "charcoal filters", "charcoal lighter", "activated charcoal", "white noise", "gold bond",
    "green house", "silver lining", "black out",
)


def facet_of_kind(kind: str, facets: Sequence[str] = FACETS) -> str:
    """A kind that names one of `facets` (`color`, `style`, `quality`, or one a schema adds, like
    `material`) feeds that facet; every other kind feeds `other`."""
    return kind if kind in facets and kind != "other" else "other"


@dataclass(frozen=True)
class Match:
    """One lexicon hit: its kind and canonical value, and the words of the text it covers."""

    kind: str
    value: str
    surface: str
    start: int  # word position in `words(text)`
    end: int

    def facet(self, facets: Sequence[str] = FACETS) -> str:
        """The facet it feeds in a catalogue of these facets."""
        return facet_of_kind(self.kind, facets)

    def key(self, source: str = TITLE, facets: Sequence[str] = FACETS) -> str:
        """The attribute key: the source field for the facets' own kinds, else the kind."""
        return source if self.kind in facets else self.kind


@dataclass(frozen=True)
class LexiconConfig:
    """What a schema's `[lexicon]` table says (and the default when there is none).

    `enabled = false` turns extraction off; `builtin = false` drops the built-in lexicon and keeps
    only `entries`: kind -> canonical value -> synonyms, added to (and winning over) the built-in
    ones. Kinds `color`, `style`, `quality` (and any facet a schema adds) feed their facet; any
    other kind name feeds `other`.
    """

    enabled: bool = True
    builtin: bool = True
    entries: Mapping[str, Mapping[str, Sequence[str]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "builtin": self.builtin,
                "entries": {k: {c: list(s) for c, s in v.items()} for k, v in self.entries.items()}}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> LexiconConfig:
        if not obj:
            return cls()
        entries = {k: {c: list(s) for c, s in v.items()} for k, v in obj.get("entries", {}).items()}
        return cls(bool(obj.get("enabled", True)), bool(obj.get("builtin", True)), entries)

    def build(self) -> Lexicon | None:
        """The lexicon this configuration describes, or None when extraction is off."""
        if not self.enabled:
            return None
        if self.builtin and not self.entries:
            return default_lexicon()
        return Lexicon(self.entries, builtin=self.builtin)


class Lexicon:
    """Words and phrases -> (kind, canonical value), matched as whole words, longest first."""

    def __init__(self, entries: Mapping[str, Mapping[str, Iterable[str]]] | None = None, *,
                 builtin: bool = True, stop_phrases: Iterable[str] | None = None):
        # phrase (tuple of words) -> {kind: canonical}; later entries win within a kind
        self._phrases: dict[tuple[str, ...], dict[str, str]] = {}
        if builtin:
            for phrase in BUILTIN_STOP_PHRASES if stop_phrases is None else stop_phrases:
                self._phrases.setdefault(_phrase(phrase), {})
            for kind, table in BUILTIN.items():
                self._add_kind(kind, table)
        elif stop_phrases is not None:
            for phrase in stop_phrases:
                self._phrases.setdefault(_phrase(phrase), {})
        for kind, kind_entries in (entries or {}).items():
            self._add_kind(kind, kind_entries, override=True)
        self._phrases.pop((), None)
        self.max_len = max((len(p) for p in self._phrases), default=1)
        # first word -> the lengths of the phrases it starts, longest first: most words of a
        # title start none, and are passed over with one lookup
        starts: dict[str, set[int]] = {}
        for p in self._phrases:
            starts.setdefault(p[0], set()).add(len(p))
        self._lengths = {w: sorted(lengths, reverse=True) for w, lengths in starts.items()}

    def _add_kind(self, kind: str, table: Mapping[str, Iterable[str]],
                  override: bool = False) -> None:
        kind = kind.strip().lower()
        for canonical, synonyms in table.items():
            value = " ".join(words(canonical))
            if not value:
                continue
            for phrase in (canonical, *synonyms):
                key = _phrase(phrase)
                if not key:
                    continue
                if override:
                    # a schema entry replaces whatever this phrase meant in the same kind, and
                    # turns a stop phrase back into a real one
                    self._phrases.setdefault(key, {})[kind] = value
                else:
                    self._phrases.setdefault(key, {}).setdefault(kind, value)

    @property
    def kinds(self) -> set[str]:
        return {k for targets in self._phrases.values() for k in targets}

    def lookup(self, phrase: str) -> dict[str, str]:
        """kind -> canonical value for one word or phrase ({} if it means nothing)."""
        return dict(self._phrases.get(_phrase(phrase), {}))

    def matches(self, text: str) -> list[Match]:
        """Every hit in `text`, in text order (a phrase meaning two kinds gives two matches)."""
        tokens = words(text)
        out: list[Match] = []
        i, n = 0, len(tokens)
        while i < n:
            for length in self._lengths.get(tokens[i], ()):
                if length > n - i:
                    continue
                targets = self._phrases.get(tuple(tokens[i : i + length]))
                if targets is None:
                    continue
                surface = " ".join(tokens[i : i + length])
                out.extend(Match(k, v, surface, i, i + length) for k, v in targets.items())
                i += length
                break
            else:
                i += 1
        return out

    def extract(self, text: str, source: str = TITLE,
                facets: Sequence[str] = FACETS) -> list[tuple[str, str, str]]:
        """(facet, key, value) for each distinct hit, in text order: ("color", "title", "red")
        for "crimson", ("other", "material", "stainless steel") for "Stainless Steel" (with the
        default facets; ("material", "title", "stainless steel") where `facets` has material)."""
        seen: dict[tuple[str, str, str], None] = {}
        for m in self.matches(text):
            seen.setdefault((m.facet(facets), m.key(source, facets), m.value), None)
        return list(seen)


def _phrase(text: str) -> tuple[str, ...]:
    return tuple(words(text))


@lru_cache(maxsize=1)
def default_lexicon() -> Lexicon:
    return Lexicon()


def extract(text: str, source: str = TITLE) -> list[tuple[str, str, str]]:
    """(facet, key, value) hits of the built-in lexicon in `text`."""
    return default_lexicon().extract(text, source)
