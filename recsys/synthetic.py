"""A synthetic fashion catalogue and search log with a known ground truth.

The generative story (everything is drawn from ``np.random.default_rng(seed)``, so the same seed
gives byte-identical files):

1. **Catalogue.** "Base products" (category, material compatible with the category, brand, style,
   quality from the brand's tier) each get 1-8 *variants* that differ mostly in colour (sometimes
   in style, material or quality), so many items differ in one facet only. About 10% of the items
   carry two styles (``casual|vintage``). Price follows category, quality and material; rating
   follows quality. Titles are built from the brand, the category and only *some* of the other
   canonical attributes (the colour is in the title about half of the time). Every item has a
   latent, heavy-tailed popularity that is **not** part of the true utility and is not written.
2. **Intents.** A shopper's intent is 2-3 facet values (the category in most of them), read off a
   random catalogue item so every intent is satisfiable. Intents are split into training intents
   and held-out intents (about 10%): a held-out intent is a value combination that no training
   query ever expresses.
3. **Queries.** Each intent value is written either as its canonical word (35%) or as a synonym or
   shade that the catalogue never uses ("crimson" for red, "trainers" for sneakers); brands are
   always named as they are. 0-2 filler words ("for", "women") and, in a quarter of the queries, a
   word that matches nothing ("gift", "summer") are added; words are sometimes shuffled. Every
   intent value is named by exactly one query word.
4. **Search log.** For each training session a noisy "legacy ranker" shows 10-20 items (partial
   matches, popular items, random items), shoppers click with position bias, with a click
   probability that rises with the true utility *and* with popularity, plus noise clicks and
   missed good items; some clicks on fully matching items become purchases.

Files written (UTF-8, header row): ``items.csv``, ``interactions.csv`` (training),
``judgments.csv`` (held-out queries, graded from the true utility) and ``probes.csv`` (for each
held-out query, which word names which facet value: the ground truth for explanations).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError

__all__ = [
    "BRANDS",
    "CATEGORIES",
    "COLORS",
    "FACET_OF",
    "FACET_WEIGHTS",
    "FILLER_WORDS",
    "INTENT_FACETS",
    "MATERIALS",
    "NOISE_WORDS",
    "QUALITIES",
    "STYLES",
    "facet_values",
    "generate",
    "grade_from_matches",
    "synonyms",
    "true_utility",
    "word_index",
]

# --------------------------------------------------------------------------------------------
# Vocabulary. Canonical value -> words the catalogue never uses for it (single words only).
# --------------------------------------------------------------------------------------------

COLORS: dict[str, list[str]] = {
    "red": ["crimson", "scarlet", "ruby", "cherry"],
    "blue": ["azure", "cobalt", "sapphire", "indigo"],
    "green": ["emerald", "olive", "sage", "jade"],
    "black": ["ebony", "onyx", "jet", "raven"],
    "white": ["ivory", "pearl", "snow", "chalk"],
    "yellow": ["mustard", "lemon", "gold", "canary"],
    "pink": ["blush", "rose", "fuchsia", "magenta"],
    "purple": ["violet", "lavender", "lilac", "plum"],
    "orange": ["tangerine", "rust", "coral", "apricot"],
    "brown": ["chocolate", "tan", "camel", "mocha"],
    "grey": ["gray", "charcoal", "slate", "ash"],
    "beige": ["sand", "khaki", "taupe", "ecru"],
    "navy": ["midnight", "marine", "ink", "nautical"],
}

STYLES: dict[str, list[str]] = {
    "casual": ["everyday", "relaxed", "laidback", "easygoing"],
    "formal": ["dressy", "office", "business", "smart"],
    "sporty": ["athletic", "active", "gym", "workout"],
    "vintage": ["retro", "oldschool", "throwback", "classic"],
    "boho": ["bohemian", "hippie", "festival", "earthy"],
    "minimalist": ["simple", "clean", "plain", "sleek"],
    "elegant": ["chic", "graceful", "sophisticated", "classy"],
    "streetwear": ["urban", "street", "hiphop", "skater"],
    "preppy": ["collegiate", "ivy", "varsity", "polished"],
}

QUALITIES: dict[str, list[str]] = {
    "premium": ["luxury", "designer", "upscale", "deluxe"],
    "standard": ["regular", "midrange", "ordinary", "decent"],
    "budget": ["cheap", "affordable", "bargain", "inexpensive"],
}

CATEGORIES: dict[str, list[str]] = {
    "dress": ["gown", "frock", "sundress"],
    "shirt": ["buttondown", "oxford", "collared"],
    "jeans": ["dungarees", "bootcut", "jeggings"],
    "jacket": ["blazer", "bomber", "windbreaker", "anorak"],
    "sneakers": ["trainers", "kicks", "runners", "plimsolls"],
    "boots": ["booties", "wellies", "stompers"],
    "handbag": ["purse", "tote", "clutch", "satchel"],
    "sweater": ["jumper", "pullover", "cardigan", "knitwear"],
    "skirt": ["miniskirt", "midi", "kilt"],
    "coat": ["overcoat", "parka", "trench", "peacoat"],
    "blouse": ["tunic", "camisole", "chemise"],
    "trousers": ["pants", "slacks", "chinos"],
    "scarf": ["shawl", "muffler", "bandana", "stole"],
    "sandals": ["flipflops", "slides", "espadrilles"],
}

MATERIALS: dict[str, list[str]] = {
    "cotton": ["pima", "poplin", "muslin", "calico"],
    "wool": ["merino", "fleece", "tweed"],
    "leather": ["hide", "nappa", "calfskin", "lambskin"],
    "silk": ["satin", "chiffon", "charmeuse"],
    "denim": ["chambray", "twill", "selvedge"],
    "linen": ["flax", "hemp", "ramie"],
    "polyester": ["synthetic", "nylon", "microfiber"],
    "cashmere": ["pashmina", "angora", "mohair"],
    "suede": ["nubuck", "buckskin", "chamois"],
    "velvet": ["velour", "plush", "panne"],
}

# Invented brand names; the first 8 are luxury houses, the last 8 discount labels.
BRANDS: list[str] = [
    "Nordwell", "Aurelle", "Vantora", "Belmere", "Corvina", "Lumeo", "Tessaro", "Halvorn",
    "Brisela", "Quillon", "Mirava", "Solenne", "Dravik", "Esterly", "Fennick", "Garrowe",
    "Iveran", "Kaleon", "Lorvane", "Mebbin", "Neveri", "Ostrelle",
    "Pellam", "Roskin", "Savrin", "Tolvane", "Ulmora", "Veskel", "Wrenna", "Zelmar",
]

FILLER_WORDS: list[str] = [
    "for", "women", "men", "with", "new", "nice", "a", "the", "looking", "womens", "mens", "ladies",
]
# Words that match nothing in the catalogue (and carry no facet meaning).
NOISE_WORDS: list[str] = [
    "gift", "summer", "winter", "spring", "trendy", "size", "small", "medium", "large", "xl",
    "cute", "stylish", "outfit", "wardrobe", "unisex", "fashionable",
]

# Intent facets, in the order query words are naturally written ("nordwell luxury red casual
# wool dress"). Column index into the intent / item value matrices.
INTENT_FACETS: tuple[str, ...] = ("brand", "quality", "color", "style", "material", "category")
_BRAND, _QUALITY, _COLOR, _STYLE, _MATERIAL, _CATEGORY = range(6)
# The model's head that each intent facet feeds (see recsys.facets).
FACET_OF: dict[str, str] = {
    "brand": "other", "quality": "quality", "color": "color", "style": "style",
    "material": "other", "category": "other",
}
# Worth of a matched intent value in the true utility: quality counts less.
FACET_WEIGHTS: dict[str, float] = {
    "brand": 1.0, "quality": 0.5, "color": 1.0, "style": 1.0, "material": 1.0, "category": 1.0,
}
_W = np.array([FACET_WEIGHTS[f] for f in INTENT_FACETS])
# the default catalogue's size: `recsys generate`, and what `recsys serve` trains on first start
DEFAULT_ITEMS, DEFAULT_QUERIES = 3000, 4000
RATING_BONUS = 0.3  # utility added for a 5.0 rating, nothing at 3.5 or below

_VALUE_LISTS: dict[str, list[str]] = {
    "brand": BRANDS,
    "quality": list(QUALITIES),
    "color": list(COLORS),
    "style": list(STYLES),
    "material": list(MATERIALS),
    "category": list(CATEGORIES),
}
_SYNONYMS: dict[str, dict[str, list[str]]] = {
    "brand": {b: [] for b in BRANDS},
    "quality": QUALITIES,
    "color": COLORS,
    "style": STYLES,
    "material": MATERIALS,
    "category": CATEGORIES,
}

_CATEGORY_TITLE = {c: c.capitalize() for c in CATEGORIES}
# base price per category
_CATEGORY_PRICE = {
    "dress": 60, "shirt": 40, "jeans": 55, "jacket": 90, "sneakers": 75, "boots": 110,
    "handbag": 80, "sweater": 50, "skirt": 45, "coat": 140, "blouse": 45, "trousers": 55,
    "scarf": 30, "sandals": 40,
}
_CATEGORY_WEIGHT = {
    "dress": 1.4, "shirt": 1.2, "jeans": 1.1, "jacket": 1.0, "sneakers": 1.1, "boots": 0.9,
    "handbag": 0.9, "sweater": 1.0, "skirt": 0.8, "coat": 0.8, "blouse": 0.8, "trousers": 0.9,
    "scarf": 0.5, "sandals": 0.6,
}
# materials a category comes in, with relative weights
_CATEGORY_MATERIALS: dict[str, dict[str, float]] = {
    "dress": {"cotton": 3, "silk": 2, "linen": 1.5, "polyester": 2, "velvet": 1, "wool": 0.5},
    "shirt": {"cotton": 4, "linen": 2, "silk": 1, "polyester": 1.5, "denim": 1},
    "jeans": {"denim": 6, "cotton": 1},
    "jacket": {"leather": 2, "denim": 2, "wool": 1.5, "polyester": 2, "suede": 1, "cotton": 1},
    "sneakers": {"leather": 3, "polyester": 2, "suede": 1.5, "cotton": 1},
    "boots": {"leather": 4, "suede": 2},
    "handbag": {"leather": 4, "suede": 1.5, "polyester": 1, "cotton": 1, "velvet": 0.5},
    "sweater": {"wool": 3, "cashmere": 1.5, "cotton": 2, "polyester": 1},
    "skirt": {"cotton": 2, "denim": 2, "silk": 1, "wool": 1, "linen": 1, "leather": 0.5,
              "velvet": 0.5},
    "coat": {"wool": 3, "cashmere": 1, "polyester": 1.5, "leather": 1, "suede": 0.5},
    "blouse": {"silk": 2, "cotton": 2, "linen": 1, "polyester": 1.5},
    "trousers": {"cotton": 3, "wool": 1.5, "linen": 1.5, "polyester": 1.5, "velvet": 0.5},
    "scarf": {"wool": 2, "cashmere": 1.5, "silk": 1.5, "cotton": 1},
    "sandals": {"leather": 3, "suede": 1, "polyester": 1},
}
_MATERIAL_PRICE = {
    "cotton": 1.0, "wool": 1.2, "leather": 1.5, "silk": 1.5, "denim": 1.0, "linen": 1.1,
    "polyester": 0.8, "cashmere": 1.8, "suede": 1.4, "velvet": 1.2,
}
_COLOR_WEIGHT = {
    "red": 1.0, "blue": 1.1, "green": 0.8, "black": 1.8, "white": 1.5, "yellow": 0.6,
    "pink": 0.8, "purple": 0.6, "orange": 0.5, "brown": 0.9, "grey": 1.1, "beige": 0.9,
    "navy": 1.0,
}
_STYLE_WEIGHT = {
    "casual": 2.0, "formal": 1.2, "sporty": 1.0, "vintage": 0.9, "boho": 0.6,
    "minimalist": 0.9, "elegant": 1.0, "streetwear": 0.8, "preppy": 0.6,
}
_QUALITY_PRICE = {"premium": 2.4, "standard": 1.0, "budget": 0.5}
_QUALITY_RATING = {"premium": 4.4, "standard": 3.9, "budget": 3.3}
# P(quality) per brand tier; columns follow QUALITIES (premium, standard, budget)
_TIER_QUALITY = np.array([[0.70, 0.25, 0.05], [0.20, 0.60, 0.20], [0.04, 0.36, 0.60]])
_BRAND_TIER = np.array([0] * 8 + [1] * 14 + [2] * 8)

# Which intent facets a shopper mentions besides the category, and how often.
_INTENT_FACET_WEIGHT = {"brand": 0.10, "quality": 0.15, "color": 0.35, "style": 0.25,
                        "material": 0.15}
P_CATEGORY_IN_INTENT = 0.85
P_CANONICAL = 0.35
P_NOISE_WORD = 0.25
P_SHUFFLE = 0.3
# click model: logit of attraction = ATTRACT_SLOPE * (matched share - 0.8)
#   + POPULARITY_BIAS * z(log popularity) + 2 * rating bonus
ATTRACT_SLOPE = 7.0
POPULARITY_BIAS = 0.5
P_MISS = 0.10  # an examined, attractive item is still not clicked
P_NOISE_CLICK = 0.03  # clicked whatever it is
MIN_WORD_SESSIONS = 3  # a held-out query's words each occur in at least this many sessions


def facet_values(facet: str) -> list[str]:
    """The canonical catalogue values of an intent facet (see INTENT_FACETS)."""
    return list(_VALUE_LISTS[facet])


def synonyms(facet: str, value: str) -> list[str]:
    """The words (never used by the catalogue) that a query may use for `value` of `facet`."""
    return list(_SYNONYMS[facet][value])


def word_index() -> dict[str, tuple[str, str]]:
    """Every query word that names a facet value -> (intent facet, canonical value).

    Canonical words are lower-cased (brands too). Fillers and noise words are not in it.
    """
    out: dict[str, tuple[str, str]] = {}
    for facet in INTENT_FACETS:
        for value in _VALUE_LISTS[facet]:
            for w in [value.lower(), *_SYNONYMS[facet][value]]:
                if w in out:
                    raise AssertionError(f"query word {w!r} is ambiguous")
                out[w] = (facet, value)
    return out


def true_utility(match_weight: np.ndarray | float, rating: np.ndarray) -> np.ndarray:
    """The ground-truth utility of an item for an intent.

    ``match_weight`` is the sum, over the intent's facet values that the item has, of
    ``FACET_WEIGHTS[facet]`` (1 for every facet, 0.5 for quality); a multi-valued item matches
    if any of its values is the intent's. Items with a high rating get a small bonus:
    ``RATING_BONUS * clip((rating - 3.5) / 1.5, 0, 1)``. Popularity plays no part.
    """
    bonus = RATING_BONUS * np.clip((np.asarray(rating, dtype=float) - 3.5) / 1.5, 0.0, 1.0)
    return np.asarray(match_weight, dtype=float) + bonus


def grade_from_matches(match_weight: np.ndarray, intent_weight: float) -> np.ndarray:
    """Judgment grade from the matched share of the intent (weighted as in `true_utility`).

    3 when every intent value matches; 2 when all but one do (at least half the weight: with
    three values, a missed quality still leaves 80%); 1 for a partial match (at least 30% of the
    weight, e.g. one of three values, but not a lone quality match); 0 (not listed) otherwise.
    The rating bonus of the true utility does not change grades.
    """
    frac = np.asarray(match_weight, dtype=float) / float(intent_weight)
    return np.select([frac >= 1.0 - 1e-9, frac >= 0.5 - 1e-9, frac >= 0.3 - 1e-9], [3, 2, 1], 0)


# --------------------------------------------------------------------------------------------
# Catalogue
# --------------------------------------------------------------------------------------------


def _probs(weights: dict[str, float], order: list[str]) -> np.ndarray:
    p = np.array([weights[k] for k in order], dtype=float)
    probs: np.ndarray = p / p.sum()
    return probs


def _draw(rng: np.random.Generator, p: np.ndarray, n: int) -> np.ndarray:
    """n categorical draws from probability vector p (vectorised)."""
    drawn: np.ndarray = np.searchsorted(np.cumsum(p), rng.random(n) * p.sum(), side="right").clip(0, len(p) - 1)
    return drawn


def _draw_rows(rng: np.random.Generator, cum: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One categorical draw per entry of `rows` from the cumulative distribution cum[rows]."""
    c = cum[rows]
    u = rng.random(len(rows))[:, None]
    drawn: np.ndarray = np.minimum((u >= c).sum(axis=1), cum.shape[1] - 1)
    return drawn


class _Catalogue:
    """Item facet values as integer arrays (value indices into _VALUE_LISTS)."""

    def __init__(self, rng: np.random.Generator, n_items: int):
        cats, mats, cols, stys = (list(CATEGORIES), list(MATERIALS), list(COLORS), list(STYLES))
        n_base = max(1, int(np.ceil(n_items / 3.2)) + 8)
        sizes = np.minimum(1 + rng.geometric(0.32, size=n_base) - 1, 8)  # 1..8, mean ~3
        while sizes.sum() < n_items:  # tiny catalogues: make sure there are enough variants
            sizes = sizes + 1
        base_of = np.repeat(np.arange(n_base), sizes)[:n_items]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        variant = np.arange(n_items) - starts[base_of]

        # base products
        b_cat = _draw(rng, _probs(_CATEGORY_WEIGHT, cats), n_base)
        mat_w = np.array([[_CATEGORY_MATERIALS[c].get(m, 0.0) for m in mats] for c in cats])
        mat_cum = np.cumsum(mat_w / mat_w.sum(axis=1, keepdims=True), axis=1)
        b_mat = _draw_rows(rng, mat_cum, b_cat)
        brand_p = 1.0 / (np.arange(len(BRANDS)) + 4.0) ** 0.7
        brand_p = brand_p[rng.permutation(len(BRANDS))]
        b_brand = _draw(rng, brand_p / brand_p.sum(), n_base)
        b_qual = _draw_rows(rng, np.cumsum(_TIER_QUALITY, axis=1), _BRAND_TIER[b_brand])
        b_style = _draw(rng, _probs(_STYLE_WEIGHT, stys), n_base)
        b_color = _draw(rng, _probs(_COLOR_WEIGHT, cols), n_base)
        b_step = rng.integers(1, len(cols), size=n_base)  # colour rotation between variants
        b_pop = rng.lognormal(0.0, 1.3, size=n_base)

        # variants: another colour; sometimes another style, material or quality
        n = n_items
        self.category = b_cat[base_of]
        self.color = (b_color[base_of] + variant * b_step[base_of]) % len(cols)
        style = b_style[base_of].copy()
        chg = (variant > 0) & (rng.random(n) < 0.15)
        style[chg] = _draw(rng, _probs(_STYLE_WEIGHT, stys), int(chg.sum()))
        mat = b_mat[base_of].copy()
        chg = (variant > 0) & (rng.random(n) < 0.10)
        mat[chg] = _draw_rows(rng, mat_cum, self.category[chg])
        qual = b_qual[base_of].copy()
        chg = (variant > 0) & (rng.random(n) < 0.06)
        qual[chg] = rng.integers(0, len(QUALITIES), size=int(chg.sum()))
        self.style, self.material, self.quality = style, mat, qual
        self.brand = b_brand[base_of]
        two = rng.random(n) < 0.10
        self.style2 = np.where(
            two, (style + 1 + rng.integers(0, len(stys) - 1, size=n)) % len(stys), -1
        )
        self.popularity = b_pop[base_of] * rng.lognormal(0.0, 0.5, size=n)

        qnames = list(QUALITIES)
        cat_price = np.array([_CATEGORY_PRICE[c] for c in cats], dtype=float)
        q_price = np.array([_QUALITY_PRICE[q] for q in qnames])
        m_price = np.array([_MATERIAL_PRICE[m] for m in mats])
        price = cat_price[self.category] * q_price[qual] * m_price[mat]
        price *= rng.lognormal(0.0, 0.25, size=n)
        self.price = np.maximum(np.round(price) - 0.01, 4.99)
        q_rating = np.array([_QUALITY_RATING[q] for q in qnames])
        rating = q_rating[qual] + rng.normal(0.0, 0.45, size=n)
        self.rating10 = np.clip(np.round(rating * 10), 10, 50).astype(np.int64)  # rating * 10
        self.rating = self.rating10 / 10.0

        # title: brand [colour] [style] [material] category
        show_color = rng.random(n) < 0.5
        show_style = rng.random(n) < 0.2
        show_mat = rng.random(n) < 0.4
        self._title_parts: tuple[np.ndarray, ...] = (show_color, show_style, show_mat)

        # shuffle the rows so item ids do not reveal the base-product groups
        perm = rng.permutation(n)
        for name in ("category", "color", "style", "style2", "material", "quality", "brand",
                     "popularity", "price", "rating10", "rating"):
            setattr(self, name, getattr(self, name)[perm])
        self._title_parts = tuple(p[perm] for p in self._title_parts)
        self.n = n

    def values(self) -> np.ndarray:
        """(n_items, 6) matrix of value indices in INTENT_FACETS order (first style only)."""
        stacked: np.ndarray = np.stack(
            [self.brand, self.quality, self.color, self.style, self.material, self.category],
            axis=1,
        )
        return stacked

    def matches(self, items: np.ndarray, intents: np.ndarray) -> np.ndarray:
        """(len, 6) bool: does item `items[k]` have intent value `intents[k, f]` (absent = -1)?"""
        vals = self.values()[items]
        m: np.ndarray = (vals == intents) & (intents >= 0)
        m[:, _STYLE] |= (self.style2[items] == intents[:, _STYLE]) & (intents[:, _STYLE] >= 0)
        return m

    def item_ids(self) -> np.ndarray:
        width = max(6, len(str(self.n - 1)))
        ids = pd.Series(np.arange(self.n)).astype(str).str.zfill(width)
        return ("SKU-" + ids).to_numpy(dtype=object)

    def frame(self, ids: np.ndarray) -> pd.DataFrame:
        cols, stys, cats = list(COLORS), list(STYLES), list(CATEGORIES)
        def obj(xs: list[str]) -> np.ndarray:
            return np.array(xs, dtype=object)

        brand = obj(BRANDS)[self.brand]
        color = obj(cols)[self.color]
        style1 = obj(stys)[self.style]
        style = style1.copy()
        two = self.style2 >= 0
        style[two] = style1[two] + "|" + obj(stys)[self.style2[two]]
        material = obj(list(MATERIALS))[self.material]
        category = obj(cats)[self.category]
        show_color, show_style, show_mat = self._title_parts
        empty = np.full(self.n, "", dtype=object)
        title = (
            brand
            + np.where(show_color, " " + obj([c.capitalize() for c in cols])[self.color], empty)
            + np.where(show_style, " " + obj([s.capitalize() for s in stys])[self.style], empty)
            + np.where(show_mat, " " + obj([m.capitalize() for m in MATERIALS])[self.material],
                       empty)
            + " "
            + obj([_CATEGORY_TITLE[c] for c in cats])[self.category]
        )
        rating_str = obj([f"{r / 10:.1f}" for r in range(51)])[self.rating10]
        return pd.DataFrame(
            {
                "item_id": ids,
                "title": title,
                "color": color,
                "style": style,
                "quality": obj(list(QUALITIES))[self.quality],
                "category": category,
                "material": material,
                "brand": brand,
                "price": self.price,
                "rating": rating_str,
            }
        )


class _Postings:
    """Items having each (facet, value): an inverted index as one sorted array plus offsets."""

    def __init__(self, cat: _Catalogue):
        sizes = [len(_VALUE_LISTS[f]) for f in INTENT_FACETS]
        self.offset = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        vals = cat.values()
        keys = [vals[:, f] + self.offset[f] for f in range(6)]
        items = [np.arange(cat.n)] * 6
        two = np.flatnonzero(cat.style2 >= 0)
        keys.append(cat.style2[two] + self.offset[_STYLE])
        items.append(two)
        key = np.concatenate(keys)
        item = np.concatenate(items)
        order = np.argsort(key, kind="stable")
        self.items = item[order]
        sorted_key = key[order]
        n_keys = int(sum(sizes))
        self.start = np.searchsorted(sorted_key, np.arange(n_keys), side="left")
        self.count = np.searchsorted(sorted_key, np.arange(n_keys), side="right") - self.start

    def sample(self, rng: np.random.Generator, facet: np.ndarray, value: np.ndarray,
               k: int) -> np.ndarray:
        """(len, k) items drawn uniformly (with replacement) from each (facet, value) list."""
        key = self.offset[facet] + value
        cnt = np.maximum(self.count[key], 1)
        pos = self.start[key][:, None] + (rng.random((len(key), k)) * cnt[:, None]).astype(int)
        drawn: np.ndarray = self.items[np.minimum(pos, len(self.items) - 1)]
        return drawn


# --------------------------------------------------------------------------------------------
# Intents and queries
# --------------------------------------------------------------------------------------------


def _draw_intents(rng: np.random.Generator, cat: _Catalogue, n: int) -> np.ndarray:
    """Up to n distinct intents, (n, 6) value indices with -1 for facets not mentioned."""
    others = [f for f in INTENT_FACETS if f != "category"]
    logw = np.log(np.array([_INTENT_FACET_WEIGHT[f] for f in others]))
    other_idx = np.array([INTENT_FACETS.index(f) for f in others])
    found: list[np.ndarray] = []
    seen: set[bytes] = set()
    total = 0
    for _ in range(20):
        m = max(2 * (n - total), 64)
        items = rng.integers(0, cat.n, size=m)
        vals = cat.values()[items]
        use2 = (cat.style2[items] >= 0) & (rng.random(m) < 0.5)
        vals[use2, _STYLE] = cat.style2[items][use2]
        has_cat = rng.random(m) < P_CATEGORY_IN_INTENT
        k = np.where(rng.random(m) < 0.5, 2, 3)
        n_other = k - has_cat
        keys = logw[None, :] - np.log(-np.log(rng.random((m, len(others)))))  # Gumbel top-k
        rank = np.argsort(np.argsort(-keys, axis=1), axis=1)
        mask = np.zeros((m, 6), dtype=bool)
        mask[:, other_idx] = rank < n_other[:, None]
        mask[:, _CATEGORY] = has_cat
        intents = np.where(mask, vals, -1)
        for row in intents:
            key = row.tobytes()
            if key not in seen:
                seen.add(key)
                found.append(row)
                total += 1
                if total == n:
                    return np.array(found)
    return np.array(found).reshape(-1, 6)


def _intent_values(row: np.ndarray) -> list[tuple[str, str]]:
    return [(INTENT_FACETS[f], _VALUE_LISTS[INTENT_FACETS[f]][v]) for f, v in enumerate(row)
            if v >= 0]


def _phrase(rng: np.random.Generator, row: np.ndarray,
            support: dict[str, int] | None = None) -> tuple[str, list[tuple[str, str, str]]]:
    """A query string for an intent and, per intent value, (word, facet, canonical value).

    With `support` (word -> number of training sessions using it), a value is only named by
    words used in at least MIN_WORD_SESSIONS sessions (or, for a rare value, its most used
    word; the canonical word if training never names the value).
    """
    core: list[str] = []
    probes: list[tuple[str, str, str]] = []
    for facet, value in _intent_values(row):
        canon, syns = value.lower(), _SYNONYMS[facet][value]
        if support is not None:
            ok = [w for w in [canon, *syns] if support.get(w, 0) >= MIN_WORD_SESSIONS]
            if not ok:  # rare value: its most used word, if training uses any
                best = max([canon, *syns], key=lambda w: support.get(w, 0))
                ok = [best] if support.get(best, 0) > 0 else [canon]
            syns = [w for w in ok if w != canon]
            if canon not in ok:  # training only uses synonyms for it
                canon = syns[int(rng.integers(len(syns)))]
        if syns and rng.random() >= P_CANONICAL:
            word = syns[int(rng.integers(len(syns)))]
        else:
            word = canon
        core.append(word)
        probes.append((word, facet, value))
    if rng.random() < P_SHUFFLE:
        core = [core[i] for i in rng.permutation(len(core))]
    words = core
    n_fill = int(rng.choice(3, p=[0.4, 0.4, 0.2]))
    extra = [FILLER_WORDS[i] for i in rng.choice(len(FILLER_WORDS), n_fill, replace=False)]
    if rng.random() < P_NOISE_WORD:
        extra.append(NOISE_WORDS[int(rng.integers(len(NOISE_WORDS)))])
    for w in extra:
        pos = int(rng.integers(len(words) + 1))
        words = words[:pos] + [w] + words[pos:]
    return " ".join(words), probes


# --------------------------------------------------------------------------------------------
# Sessions: legacy ranker, clicks, purchases
# --------------------------------------------------------------------------------------------


def _sessions(rng: np.random.Generator, cat: _Catalogue, post: _Postings,
              intents: np.ndarray) -> dict[str, np.ndarray]:
    """Shown lists and labels for sessions with the given (n_sessions, 6) intents."""
    s = len(intents)
    length = rng.integers(10, 21, size=s)
    n_slots = 26
    kind: np.ndarray = _draw(rng, np.array([0.55, 0.25, 0.20]), s * n_slots).reshape(s, n_slots)
    sess = np.repeat(np.arange(s), n_slots)
    kind = kind.ravel()
    log_pop = np.log(cat.popularity)
    pop_z = (log_pop - log_pop.mean()) / max(log_pop.std(), 1e-9)
    intent_w = (intents >= 0) @ _W

    def utility(items: np.ndarray, rows: np.ndarray) -> np.ndarray:
        mw = cat.matches(items, intents[rows]) @ _W
        return true_utility(mw, cat.rating[items])

    item = rng.integers(0, cat.n, size=s * n_slots)  # kind 2: random items
    # kind 0: partial matches. Pick one intent value, draw 6 items having it, keep the one the
    # legacy ranker likes best (a noisy mix of relevance and popularity).
    rel = np.flatnonzero(kind == 0)
    if len(rel):
        present = intents[sess[rel]] >= 0
        g = np.where(present, -np.log(-np.log(rng.random(present.shape))), -np.inf)
        facet = np.argmax(g, axis=1)
        value = intents[sess[rel], facet]
        k = 6
        cand = post.sample(rng, facet, value, k)
        rows = np.repeat(sess[rel], k)
        score = utility(cand.ravel(), rows) + 0.5 * pop_z[cand.ravel()]
        score = score + rng.gumbel(0.0, 0.8, size=score.shape)
        best = np.argmax(score.reshape(-1, k), axis=1)
        item[rel] = cand[np.arange(len(rel)), best]
    pop = np.flatnonzero(kind == 1)
    if len(pop):
        cum = np.cumsum(cat.popularity)
        item[pop] = np.minimum(np.searchsorted(cum, rng.random(len(pop)) * cum[-1], side="right"),
                               cat.n - 1)

    # order each shown list by the legacy ranker's noisy score, dedupe, cut to the list length
    u = utility(item, sess)
    legacy = u + 0.5 * pop_z[item] + rng.normal(0.0, 1.0, size=len(item))
    df = pd.DataFrame({"s": sess, "item": item, "legacy": legacy, "u": u})
    df = df.drop_duplicates(["s", "item"], keep="first")
    df = df.sort_values(["s", "legacy"], ascending=[True, False], kind="stable")
    df["rank"] = df.groupby("s").cumcount()
    df = df[df["rank"].to_numpy() < length[df["s"].to_numpy()]]
    ss = df["s"].to_numpy()
    it = df["item"].to_numpy()
    rank = df["rank"].to_numpy()
    u = df["u"].to_numpy()

    # clicks: examination (position bias) x attraction (utility and popularity), noise, misses
    frac = np.clip((u - true_utility(0.0, cat.rating[it])) / intent_w[ss], 0.0, 1.0)
    examine = (1.0 / (rank + 1.0)) ** 0.6
    attract = 1.0 / (1.0 + np.exp(-(ATTRACT_SLOPE * (frac - 0.8) + POPULARITY_BIAS * pop_z[it]
                                    + 2.0 * (u - frac * intent_w[ss]))))
    n = len(it)
    click = (rng.random(n) < examine) & (rng.random(n) < attract) & (rng.random(n) >= P_MISS)
    noise = rng.random(n) < P_NOISE_CLICK
    full = frac >= 1.0 - 1e-9
    buy = click & (rng.random(n) < np.where(full, 0.35, np.where(frac >= 0.6, 0.05, 0.0)))
    label = np.where(buy, 2, np.where(click | noise, 1, 0))
    return {"session": ss, "item": it, "rank": rank, "label": label, "frac": frac}


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _write_csv(df: pd.DataFrame, path: Path, **kw: Any) -> None:
    """Write atomically: a temporary file in the same folder, then rename."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        df.to_csv(tmp, index=False, encoding="utf-8", lineterminator="\n", **kw)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def generate(out_dir: str | Path, n_items: int = DEFAULT_ITEMS, n_queries: int = DEFAULT_QUERIES, seed: int = 0,
             *, max_judged_per_query: int | None = 5000) -> dict[str, Any]:
    """Writes out_dir/items.csv, interactions.csv, judgments.csv, probes.csv; returns a summary
    dict (counts).

    `n_queries` is the number of training search sessions (each one query string and its shown
    list); popular intents recur, so distinct query strings are fewer. About 10% more intents
    (at least 50 when there are enough sessions) are held out for judgments.csv.

    judgments.csv lists every item with grade >= 1 for each held-out query. Only for huge
    catalogues, when a query would list more than `max_judged_per_query` items, its lowest
    grades are dropped whole (grade 1, then grade 2; grade 3 is always complete), so the file
    stays a reasonable size. None means no limit.
    """
    t0 = time.perf_counter()
    if n_items < 1 or n_queries < 1:
        raise InputError(f"n_items and n_queries must be at least 1, got {n_items} and {n_queries}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    cat = _Catalogue(rng, n_items)
    post = _Postings(cat)
    ids = cat.item_ids()

    # intents: training ones recur over sessions (Zipf-like), held-out ones are never used
    n_train_int = max(1, n_queries // 3)
    n_held = max(round(n_train_int / 9), min(50, n_train_int // 2), 1)
    all_int = _draw_intents(rng, cat, n_train_int + n_held)
    perm = rng.permutation(len(all_int))
    n_held = min(n_held, max(len(all_int) - 1, 0))
    held_int = all_int[np.sort(perm[:n_held])]
    train_int = all_int[np.sort(perm[n_held:])]

    n_phr = 3
    phrasings: list[list[str]] = []
    for row in train_int:
        qs = [_phrase(rng, row)[0] for _ in range(n_phr)]
        phrasings.append(qs)
    zipf = 1.0 / (np.arange(len(train_int)) + 3.0) ** 0.8
    zipf = zipf[rng.permutation(len(train_int))]
    sess_int = _draw(rng, zipf / zipf.sum(), n_queries)
    sess_phr = _draw(rng, np.array([0.6, 0.25, 0.15]), n_queries)
    sess_query = np.array([phrasings[i][j] for i, j in zip(sess_int, sess_phr)], dtype=object)
    # a held-out query may only use words that training sessions use (MIN_WORD_SESSIONS times)
    word_sessions: dict[str, int] = {}
    for q, c in pd.Series(sess_query).value_counts(sort=False).items():
        for w in set(str(q).split()):
            word_sessions[w] = word_sessions.get(w, 0) + int(c)

    shown = _sessions(rng, cat, post, train_int[sess_int])

    n_users = max(1, n_queries // 4)
    user_p = rng.lognormal(0.0, 1.0, size=n_users)
    sess_user = _draw(rng, user_p / user_p.sum(), n_queries)
    uwidth = max(5, len(str(n_users - 1)))
    user_ids = ("U-" + pd.Series(np.arange(n_users)).astype(str).str.zfill(uwidth)).to_numpy()
    start = np.sort(rng.integers(0, 180 * 86400, size=n_queries))
    ss = shown["session"]
    ts = (np.datetime64("2024-01-01T00:00:00") + (start[ss] + 3 * shown["rank"]).astype(
        "timedelta64[s]")).astype(str)
    inter = pd.DataFrame(
        {
            "query": sess_query[ss],
            "item_id": ids[shown["item"]],
            "label": shown["label"],
            "user_id": user_ids[sess_user[ss]],
            "timestamp": ts,
        }
    )

    # held-out queries: synonyms only among words that training queries use
    j_q: list[np.ndarray] = []
    j_item: list[np.ndarray] = []
    j_grade: list[np.ndarray] = []
    probe_rows: list[tuple[str, str, str, str]] = []
    held_queries: list[str] = []
    truncated = 0
    vals = cat.values()
    for row in held_int:
        query, probes = _phrase(rng, row, support=word_sessions)
        present = row >= 0
        m = (vals[:, present] == row[present])
        if present[_STYLE]:
            si = int(present[:_STYLE].sum())  # column of style within m
            m[:, si] |= cat.style2 == row[_STYLE]
        grade = grade_from_matches(m @ _W[present], float(_W[present].sum()))
        if not (grade == 3).any():
            continue
        keep = grade >= 1
        if max_judged_per_query is not None and keep.sum() > max_judged_per_query:
            truncated += 1
            keep = grade >= (2 if (grade >= 2).sum() <= max_judged_per_query else 3)
        idx = np.flatnonzero(keep)
        order = np.lexsort((idx, -grade[idx]))
        idx = idx[order]
        qi = len(held_queries)
        held_queries.append(query)
        j_q.append(np.full(len(idx), qi))
        j_item.append(idx)
        j_grade.append(grade[idx])
        for word, facet, value in probes:
            probe_rows.append((query, word, FACET_OF[facet], value))

    if held_queries:
        jq = np.concatenate(j_q)
        ji = np.concatenate(j_item)
        jg = np.concatenate(j_grade)
    else:
        jq = ji = jg = np.zeros(0, dtype=np.int64)
    judg = pd.DataFrame(
        {"query": np.array(held_queries, dtype=object)[jq] if len(jq) else [],
         "item_id": ids[ji] if len(ji) else [], "grade": jg}
    )
    probes_df = pd.DataFrame(probe_rows, columns=["query", "word", "facet", "value"])

    items = cat.frame(ids)
    _write_csv(items, out / "items.csv", float_format="%.2f")
    _write_csv(inter, out / "interactions.csv")
    _write_csv(judg, out / "judgments.csv")
    _write_csv(probes_df, out / "probes.csv")

    labels = np.bincount(shown["label"], minlength=3)
    return {
        "out_dir": str(out),
        "seed": seed,
        "items": int(cat.n),
        "sessions": int(n_queries),
        "interactions": len(inter),
        "labels": {"0": int(labels[0]), "1": int(labels[1]), "2": int(labels[2])},
        "distinct_training_queries": len(pd.unique(sess_query)),
        "training_intents": len(train_int),
        "training_intents_used": len(np.unique(sess_int)),
        "heldout_queries": len(held_queries),
        "judgments": len(judg),
        "judgments_grade3": int((jg == 3).sum()),
        "judgments_truncated_queries": truncated,
        "probes": len(probes_df),
        "users": int(n_users),
        "vocabulary": {
            facet: {"values": len(_VALUE_LISTS[facet]),
                    "synonyms": sum(len(v) for v in _SYNONYMS[facet].values())}
            for facet in INTENT_FACETS
        },
        "seconds": round(time.perf_counter() - t0, 3),
    }
