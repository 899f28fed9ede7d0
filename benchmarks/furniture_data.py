"""A second, independent synthetic data set: a furniture / home catalogue with a known ground truth.

It writes the product's CSV contract (PRODUCT.md section 3) with a structure deliberately unlike a
clean fashion catalogue, so the recommender is checked on a domain it was not tuned on:

* ``items.csv``: ``item_id,title,description,finish_colour,design_style,grade,product_type,room,
  attributes,price_usd,stars``. Items come in families (colour variants of one model), so many
  items share most attributes; some finishes are two-valued (``oak|white``); multi-word values
  ("mid-century", "dining table", "living room"); ``attributes`` is ``key:value|key:value``;
  descriptions are sentences with commas, inch marks (``"``) and decoy words (other colours).
* ``interactions.csv``: ``query,item_id,event,weight`` with no ``label`` column; ``event`` is one
  of impression/click/cart/purchase. Each session shows ~12 items picked by a noisy legacy
  ranker; clicks carry position bias, popularity bias (a latent item popularity that is not part
  of the utility) and noise clicks; some sessions have no click at all. ``weight`` is a recency
  weight in (0.5, 1].
* ``judgments.csv``: ``query,item_id,grade`` for held-out intents (value combinations never issued
  in training), every catalogue item with grade >= 1, graded from :func:`true_utility`.
* ``probes.csv``: ``query,word,facet,value``: which query word (first word of a phrase) names
  which facet value, facet by the product's column rule (finish_colour -> color, design_style ->
  style, grade -> quality, everything else -> other); value is the canonical catalogue value.

Queries speak the shopper's language: the canonical catalogue word is used ~40% of the time,
otherwise a synonym the catalogue never uses ("couch", "nordic", "dark wood", "plush", "budget").

Also here: a tiny learned reference scorer (:class:`ClickAssociation`), a word-overlap scorer and
:func:`evaluate_ndcg`. ``--check`` prints both NDCG@10 on the held-out judgments.

Usage: ``python benchmarks/furniture_data.py --out DIR [--items 3000] [--queries 5000]
[--seed 0] [--check]``. Only ``numpy.random.default_rng(seed)`` is used; output is deterministic.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

# --------------------------------------------------------------------------------------------
# Vocabulary. Every value maps to synonyms the catalogue never uses (checked by the tests).
# --------------------------------------------------------------------------------------------

COLOURS: dict[str, list[str]] = {
    "walnut": ["dark wood", "espresso", "chocolate"],
    "oak": ["light wood", "honey", "blonde"],
    "white": ["snow", "chalk", "alabaster"],
    "black": ["ebony", "jet", "onyx"],
    "grey": ["gray", "charcoal", "slate", "graphite"],
    "teal": ["peacock", "petrol", "turquoise"],
    "mustard": ["ochre", "saffron", "golden"],
    "navy": ["midnight", "indigo", "ink"],
    "cream": ["ivory", "ecru", "vanilla"],
    "terracotta": ["rust", "burnt orange", "clay"],
    "sage": ["olive", "moss", "eucalyptus"],
    "blush": ["dusty pink", "rose", "pink"],
}

STYLES: dict[str, list[str]] = {
    "mid-century": ["retro", "sixties", "mcm"],
    "scandinavian": ["nordic", "scandi", "hygge"],
    "industrial": ["loft", "warehouse", "factory"],
    "farmhouse": ["country", "cottage", "barn"],
    "rustic": ["reclaimed", "lodge", "cabin"],
    "modern": ["contemporary", "sleek", "minimalist"],
    "coastal": ["beach", "nautical", "seaside"],
    "bohemian": ["boho", "eclectic", "hippie"],
    "art deco": ["gatsby", "glam", "roaring twenties"],
    "traditional": ["classic", "heritage", "colonial"],
}

GRADES: dict[str, list[str]] = {
    "showroom": ["luxe", "high-end", "luxury", "premium", "designer"],
    "everyday": ["standard", "practical", "sturdy"],
    "value": ["cheap", "budget", "affordable", "bargain"],
}

ROOMS: dict[str, list[str]] = {
    "living room": ["lounge", "den", "sitting area"],
    "bedroom": ["sleeping", "boudoir", "guestroom"],
    "office": ["study", "workspace", "wfh"],
    "dining": ["kitchen", "dinner", "breakfast"],
    "outdoor": ["patio", "garden", "balcony", "terrace"],
}

MATERIALS: dict[str, list[str]] = {
    "velvet": ["plush", "velour", "crushed"],
    "leather": ["hide", "nappa", "aniline"],
    "linen": ["flax", "slub"],
    "boucle": ["teddy", "sherpa", "nubby"],
    "rattan": ["wicker", "cane"],
    "marble": ["stone", "carrara", "travertine"],
    "steel": ["metal", "iron", "chrome"],
    "glass": ["crystal", "transparent", "perspex"],
    "wool": ["merino", "tweed", "woollen"],
    "jute": ["sisal", "seagrass"],
    "hardwood": ["timber", "teak", "mango"],
}


@dataclass(frozen=True)
class ProductType:
    rooms: dict[str, float]
    materials: tuple[str, ...]
    synonyms: tuple[str, ...]
    base_price: float
    extra: dict[str, tuple[str, ...]]  # further attribute keys (all feed the "other" facet)


_ASSEMBLY = ("required", "none")
TYPES: dict[str, ProductType] = {
    "sofa": ProductType({"living room": 0.85, "outdoor": 0.15}, ("velvet", "leather", "linen", "boucle"),
                        ("couch", "settee", "chesterfield"), 900,
                        {"seats": ("2", "3", "4"), "upholstery": ("tufted", "channelled", "plain")}),
    "armchair": ProductType({"living room": 0.7, "bedroom": 0.15, "outdoor": 0.15},
                            ("velvet", "leather", "linen", "boucle", "rattan"), ("wingback", "fauteuil"), 450,
                            {"upholstery": ("tufted", "channelled", "plain")}),
    "coffee table": ProductType({"living room": 0.9, "outdoor": 0.1}, ("marble", "glass", "hardwood", "steel"),
                                ("cocktail", "ottoman"), 300,
                                {"shape": ("round", "oval", "rectangular", "square"), "assembly": _ASSEMBLY}),
    "bookcase": ProductType({"living room": 0.6, "office": 0.4}, ("hardwood", "steel"),
                            ("bookshelf", "library", "etagere"), 280,
                            {"shelves": ("3", "4", "5"), "assembly": _ASSEMBLY}),
    "tv stand": ProductType({"living room": 1.0}, ("hardwood", "steel", "glass"),
                            ("media console", "entertainment center"), 320, {"assembly": _ASSEMBLY}),
    "floor lamp": ProductType({"living room": 0.5, "bedroom": 0.2, "office": 0.3}, ("steel", "glass", "rattan"),
                              ("torchiere", "uplighter", "arc"), 150, {"bulb": ("e27", "led")}),
    "rug": ProductType({"living room": 0.5, "bedroom": 0.3, "dining": 0.1, "outdoor": 0.1}, ("wool", "jute"),
                       ("carpet", "runner", "kilim"), 220,
                       {"shape": ("round", "rectangular"), "pile": ("flatweave", "shaggy", "medium")}),
    "bed frame": ProductType({"bedroom": 1.0}, ("velvet", "linen", "hardwood", "steel", "boucle"),
                             ("bedstead", "divan"), 700,
                             {"size": ("queen", "king", "double"), "upholstery": ("tufted", "channelled", "plain")}),
    "nightstand": ProductType({"bedroom": 1.0}, ("hardwood", "marble", "rattan"), ("bedside", "commode"), 160,
                              {"assembly": _ASSEMBLY}),
    "dresser": ProductType({"bedroom": 1.0}, ("hardwood", "rattan"), ("bureau", "tallboy", "chest of drawers"),
                           520, {"assembly": _ASSEMBLY}),
    "wardrobe": ProductType({"bedroom": 1.0}, ("hardwood", "steel"), ("armoire", "closet"), 800,
                            {"doors": ("2", "3"), "assembly": _ASSEMBLY}),
    "desk": ProductType({"office": 1.0}, ("hardwood", "steel", "glass"), ("workstation", "escritoire"), 350,
                        {"assembly": _ASSEMBLY}),
    "office chair": ProductType({"office": 1.0}, ("leather", "linen", "steel"), ("swivel", "ergonomic"), 260,
                                {"upholstery": ("channelled", "plain")}),
    "dining table": ProductType({"dining": 0.85, "outdoor": 0.15}, ("hardwood", "marble", "glass"),
                                ("dinette", "refectory"), 650,
                                {"seats": ("4", "6", "8"), "shape": ("round", "oval", "rectangular")}),
    "dining chair": ProductType({"dining": 0.85, "outdoor": 0.15}, ("hardwood", "velvet", "rattan", "leather"),
                                ("carver", "ladderback"), 140, {"upholstery": ("channelled", "plain")}),
    "sideboard": ProductType({"dining": 0.8, "living room": 0.2}, ("hardwood", "marble", "rattan"),
                             ("buffet", "credenza"), 600, {"doors": ("2", "3", "4")}),
    "bar stool": ProductType({"dining": 1.0}, ("steel", "hardwood", "leather", "rattan"), ("barstool", "perch"),
                             120, {"seat height": ("65cm", "75cm")}),
    "sun lounger": ProductType({"outdoor": 1.0}, ("rattan", "steel", "hardwood"), ("deckchair", "chaise", "sunbed"),
                               380, {"assembly": _ASSEMBLY}),
}

# The facets of an intent, the catalogue column each one lives in, and its weight in the utility.
INTENT_FACETS = ("colour", "style", "product_type", "material", "room", "grade")
FACET_WEIGHTS = {"product_type": 3.0, "colour": 2.0, "style": 1.5, "material": 1.5, "room": 1.0, "grade": 1.0}
STARS_WEIGHT = 0.1  # utility per star above 3
FACET_COLUMN = {"colour": "finish_colour", "style": "design_style", "grade": "grade",
                "product_type": "product_type", "room": "room", "material": "attributes"}
# The product's column rule (PRODUCT.md section 3) applied to those columns.
PRODUCT_FACET = {"colour": "color", "style": "style", "grade": "quality",
                 "product_type": "other", "room": "other", "material": "other"}

SYNONYMS: dict[str, dict[str, list[str]]] = {
    "colour": COLOURS, "style": STYLES, "grade": GRADES, "room": ROOMS, "material": MATERIALS,
    "product_type": {t: list(pt.synonyms) for t, pt in TYPES.items()},
}

# Query words that name no facet value: some also occur in descriptions (noise for lexical
# matching), the rest occur nowhere in the catalogue.
FILLER_IN_CATALOGUE = ["for", "with", "and", "the", "small", "large", "home"]
FILLER_NOWHERE = ["cute", "best", "new", "cozy", "apartment", "gift", "ideas", "online", "sale",
                  "deal", "nice", "uk", "2024", "stylish", "trendy", "comfy"]

CANONICAL_P = 0.4
ITEM_ID_PREFIX = "F7-"
SHOWN = 12
LEG_REL, LEG_POP, LEG_NOISE = 1.0, 0.7, 1.0
ATTR_BIAS, ATTR_SLOPE, ZIPF_EXP, NOISE_CLICK = -3.5, 7.0, 0.5, 0.03

_NAMES = ["Halden", "Norvik", "Aster", "Belmont", "Corwin", "Dalby", "Elmore", "Fenwick", "Galloway",
          "Harlow", "Ingram", "Juniper", "Kestrel", "Linden", "Marlow", "Nolan", "Orwell", "Pembroke",
          "Quill", "Rowan", "Sutton", "Thorne", "Upton", "Vesper", "Wexford", "Yardley", "Zephyr",
          "Ashby", "Brixton", "Calder", "Darwin", "Everly", "Felton", "Greer", "Hollis", "Iver",
          "Kirby", "Langley", "Mercer", "Orsay"]
_ADJ = ["Timeless", "Compact", "Generous", "Elegant", "Simple", "Roomy", "Refined", "Relaxed"]
_DESC = [
    "{a_style} {type} finished in {colours}, with {material} detailing.",
    "{adj} {type} from the {name} collection: {material} on a {colours} frame, {extra}.",
    "Made to order, this {type} brings {style} character to the {room}; pairs well with {decoy} accents.",
    'Measures {w}" wide and {d}" deep, in {colours} {material}, {extra}.',
    "{adj}, {style} and easy to live with, a {type} in {material} that suits {decoy} walls.",
    "The {name} {type}, {colours}, {extra}. Ships in {boxes} boxes.",
]

_ROOM_PHRASE = {"living room": "living room", "bedroom": "bedroom", "office": "home office",
                "dining": "dining space", "outdoor": "outdoor space"}

_WORD = re.compile(r"[0-9]+(?:[./][0-9]+)*|[^\W_]+(?:'[^\W_]+)?", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-cased words, split the way the product's tokenizer splits them."""
    return _WORD.findall(str(text).lower())


# --------------------------------------------------------------------------------------------
# Ground truth
# --------------------------------------------------------------------------------------------

def true_utility(item: dict, intent: dict[str, str]) -> float:
    """The ground-truth utility of `item` for a shopper `intent`; the one definition of it.

    ``intent`` maps 2-3 facets (colour, style, product_type, material, room, grade) to a canonical
    value. Utility = sum of FACET_WEIGHTS[f] over the intent facets the item matches (a finish
    with two colours matches either) + STARS_WEIGHT * (stars - 3); the stars term is within
    +-0.2, below the smallest facet weight (1.0).
    """
    return float(sum(FACET_WEIGHTS[f] for f, v in intent.items() if v in item_values(item, f))
                 + STARS_WEIGHT * (float(item["stars"]) - 3.0))


def grade_from_utility(utility: float, intent: dict[str, str]) -> int:
    """3 = every intent value matched; 2 = utility >= 60% of the full match; 1 = >= 30%; else 0."""
    full = sum(FACET_WEIGHTS[f] for f in intent)
    if utility >= full - 0.5:
        return 3
    if utility >= 0.6 * full:
        return 2
    if utility >= 0.3 * full:
        return 1
    return 0


def item_values(item: dict, facet: str) -> set[str]:
    cell = str(item[FACET_COLUMN[facet]])
    if facet == "material":
        return {kv.split(":", 1)[1] for kv in cell.split("|") if kv.startswith("material:")}
    return set(cell.split("|"))


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------

def _choice(rng: np.random.Generator, seq, p=None):
    return seq[int(rng.choice(len(seq), p=p))]


def _make_items(rng: np.random.Generator, n_items: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Items in families (one model in 1-5 colourways); returns items and latent popularity."""
    colours = list(COLOURS)
    colour_p = np.array([3, 3, 3, 3, 3, 1.5, 1, 1.5, 2, 1, 1.2, 1], float)
    colour_p /= colour_p.sum()
    styles = list(STYLES)
    type_names = list(TYPES)
    type_p = np.array([3, 2, 1.5, 1.2, 1, 1.2, 2, 1.5, 1.2, 1, 0.8, 1.3, 1, 1.3, 1.2, 0.8, 0.8, 0.7])
    type_p /= type_p.sum()
    grade_names = list(GRADES)
    rows, pops = [], []
    family = 0
    while len(rows) < n_items:
        family += 1
        ptype = _choice(rng, type_names, type_p)
        spec = TYPES[ptype]
        style = _choice(rng, styles)
        grade = _choice(rng, grade_names, [0.25, 0.45, 0.30])
        rooms = list(spec.rooms)
        room = _choice(rng, rooms, np.array(list(spec.rooms.values())))
        material = _choice(rng, list(spec.materials))
        extra = {k: _choice(rng, list(v)) for k, v in spec.extra.items()}
        name = _choice(rng, _NAMES)
        fam_pop = rng.normal(0, 0.8)
        base_stars = {"showroom": 4.3, "everyday": 3.9, "value": 3.4}[grade] + rng.normal(0, 0.3)
        price = spec.base_price * {"showroom": 2.4, "everyday": 1.0, "value": 0.55}[grade] * rng.lognormal(0, 0.2)
        n_var = int(min(rng.integers(1, 6), n_items - len(rows)))
        fam_colours = rng.choice(len(colours), size=n_var, replace=False, p=colour_p)
        for c in fam_colours:
            fin = [colours[c]]
            if rng.random() < 0.12:  # two-tone finish, e.g. oak|white
                other = colours[int(rng.choice(len(colours), p=colour_p))]
                if other != fin[0]:
                    fin.append(other)
            attrs = {"material": material, **extra}
            if rng.random() < 0.3:  # a variant sometimes differs in one attribute
                k = _choice(rng, list(spec.extra)) if spec.extra else None
                if k:
                    attrs[k] = _choice(rng, list(spec.extra[k]))
            stars = float(np.clip(np.round(base_stars + rng.normal(0, 0.2), 1), 1.0, 5.0))
            rows.append({
                "family": family, "name": name, "finish_colour": "|".join(fin), "design_style": style,
                "grade": grade, "product_type": ptype, "room": room,
                "attributes": "|".join(f"{k}:{v}" for k, v in attrs.items()),
                "price_usd": round(float(price * rng.lognormal(0, 0.05)), 2), "stars": stars,
            })
            pops.append(fam_pop + rng.normal(0, 0.5))
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    pops = np.asarray(pops)[order]
    out = []
    for i, r in enumerate(rows):
        out.append({"item_id": f"{ITEM_ID_PREFIX}{i:05d}", "title": _title(rng, r),
                    "description": _description(rng, r), **{k: r[k] for k in (
                        "finish_colour", "design_style", "grade", "product_type", "room", "attributes",
                        "price_usd", "stars")}})
    return pd.DataFrame(out), pops


def _title(rng: np.random.Generator, r: dict) -> str:
    t = f"{r['name']} {r['product_type'].title()}"
    if "seats:" in r["attributes"] and r["product_type"] == "sofa":
        t = f"{r['name']} {r['attributes'].split('seats:')[1].split('|')[0]}-Seat Sofa"
    if rng.random() < 0.5:
        t += ", " + " and ".join(c.title() for c in r["finish_colour"].split("|"))
    return t


def _description(rng: np.random.Generator, r: dict) -> str:
    attrs = dict(kv.split(":", 1) for kv in r["attributes"].split("|"))
    extra_keys = [k for k in attrs if k != "material"]
    extra = f"{extra_keys[0]} {attrs[extra_keys[0]]}" if extra_keys else "assembly none"
    decoy = _choice(rng, [c for c in COLOURS if c not in r["finish_colour"].split("|")])
    style = r["design_style"]
    return _choice(rng, _DESC).format(
        a_style=("An " if style[0] in "aeiou" else "A ") + style, style=style, type=r["product_type"],
        colours=" and ".join(r["finish_colour"].split("|")),
        material=attrs["material"], adj=_choice(rng, _ADJ), name=r["name"], room=_ROOM_PHRASE[r["room"]],
        decoy=decoy,
        extra=extra, w=int(rng.integers(18, 96)), d=int(rng.integers(14, 40)), boxes=int(rng.integers(1, 4)))


def _item_facet_values(items: pd.DataFrame) -> dict[str, list[set[str]]]:
    recs = items.to_dict("records")
    return {f: [item_values(r, f) for r in recs] for f in INTENT_FACETS}


def _sample_intent(rng: np.random.Generator, item: dict) -> dict[str, str]:
    size = 2 if rng.random() < 0.5 else 3
    intent: dict[str, str] = {}
    if rng.random() < 0.85:
        intent["product_type"] = item["product_type"]
    others = ["colour", "style", "material", "grade", "room"]
    w = np.array([0.35, 0.25, 0.2, 0.1, 0.1])
    if "product_type" in intent and len(TYPES[item["product_type"]].rooms) == 1:
        w[4] = 0.0  # "bed frame bedroom" says nothing new
    while len(intent) < size:
        f = others[int(rng.choice(len(others), p=w / w.sum()))]
        w[others.index(f)] = 0.0
        vals = sorted(item_values(item, f))
        intent[f] = _choice(rng, vals)
    return intent


def _intent_key(intent: dict[str, str]) -> tuple:
    return tuple(sorted(intent.items()))


def _phrase_query(rng: np.random.Generator, intent: dict[str, str]) -> tuple[str, list[tuple[str, str, str]]]:
    """A query text for `intent` and its probes [(word, facet, value)]."""
    for _ in range(50):
        parts, probes = [], []
        for f, v in intent.items():
            phrase = v if rng.random() < CANONICAL_P else _choice(rng, SYNONYMS[f][v])
            parts.append(phrase)
            probes.append((words(phrase)[0], PRODUCT_FACET[f], v))
        # Mostly shopper order (colour/style/material/grade, then type, then room), sometimes shuffled.
        order_rank = {"grade": 0, "colour": 1, "style": 2, "material": 3, "product_type": 4, "room": 5}
        idx = sorted(range(len(parts)), key=lambda i: order_rank[list(intent)[i]])
        if rng.random() < 0.3:
            idx = list(rng.permutation(len(parts)))
        parts = [parts[i] for i in idx]
        n_fill = int(rng.choice(3, p=[0.45, 0.4, 0.15]))
        for _ in range(n_fill):
            pool = FILLER_IN_CATALOGUE if rng.random() < 0.4 else FILLER_NOWHERE
            filler = _choice(rng, pool)
            pos = int(rng.integers(0, len(parts) + 1))
            parts.insert(pos, filler)
        text = " ".join(parts)
        toks = words(text)
        heads = [p[0] for p in probes]
        if len(set(heads)) == len(heads) and all(toks.count(h) == 1 for h in heads):
            return text, probes
    raise RuntimeError(f"could not phrase {intent}")  # pragma: no cover


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def generate(out_dir, n_items: int = 3000, n_queries: int = 5000, seed: int = 0) -> dict:
    """Write items.csv, interactions.csv, judgments.csv and probes.csv to `out_dir`.

    `n_queries` is the number of training search sessions (each shows ~12 items). Returns a dict
    with the paths and a few counts.
    """
    rng = np.random.default_rng(seed)
    os.makedirs(out_dir, exist_ok=True)
    items, pop = _make_items(rng, n_items)
    recs = items.to_dict("records")
    n = len(items)
    fvals = _item_facet_values(items)
    stars = items["stars"].to_numpy(float)
    pop_z = (pop - pop.mean()) / (pop.std() + 1e-9)

    # Intent pool: distinct value combinations, each seeded from a real item so a perfect match
    # exists. About 10% (at least 50) are held out for judgments and never issued in training.
    n_intents = max(60, n_queries // 4)
    n_held = max(50, n_intents // 10)
    pool, seen = [], set()
    tries = 0
    while len(pool) < n_intents + n_held and tries < 50 * (n_intents + n_held):
        tries += 1
        it = _sample_intent(rng, recs[int(rng.integers(n))])
        k = _intent_key(it)
        if k not in seen:
            seen.add(k)
            pool.append(it)
    n_held = min(n_held, len(pool) // 2)
    held_idx = set(rng.choice(len(pool), size=n_held, replace=False).tolist())
    train_intents = [it for i, it in enumerate(pool) if i not in held_idx]
    held_intents = [it for i, it in enumerate(pool) if i in held_idx]

    def match_vectors(intent):
        """Per-item utility (without stars) and the full weight of the intent."""
        u = np.zeros(n)
        for f, v in intent.items():
            u += FACET_WEIGHTS[f] * np.fromiter((v in s for s in fvals[f]), bool, n)
        return u, sum(FACET_WEIGHTS[f] for f in intent)

    # Training sessions: Zipf-like intent popularity, a fresh phrasing per session.
    zipf = 1.0 / (np.arange(len(train_intents)) + 3.0) ** ZIPF_EXP
    zipf /= zipf.sum()
    examine = 0.95 / (1.0 + np.arange(SHOWN)) ** 0.6
    probe_rows: dict[str, list[tuple[str, str, str]]] = {}
    q_col, i_col, e_col, w_col = [], [], [], []
    cache: dict[int, tuple[np.ndarray, float]] = {}
    for s in range(n_queries):
        k = int(rng.choice(len(train_intents), p=zipf))
        intent = train_intents[k]
        if k not in cache:
            cache[k] = match_vectors(intent)
        u, full = cache[k]
        frac = u / full
        text, probes = _phrase_query(rng, intent)
        probe_rows.setdefault(text, probes)
        # Noisy legacy ranker: partly relevance-aware, partly popularity, plenty of noise.
        legacy = LEG_REL * frac + LEG_POP * pop_z + rng.normal(0, LEG_NOISE, n)
        shown = np.argpartition(-legacy, SHOWN)[:SHOWN]
        shown = shown[np.argsort(-legacy[shown])]
        fr = frac[shown]
        attract = _sigmoid(ATTR_BIAS + ATTR_SLOPE * fr + 0.4 * (stars[shown] - 3.8) + 0.6 * pop_z[shown])
        examined = rng.random(SHOWN) < examine
        clicked = examined & ((rng.random(SHOWN) < attract) | (rng.random(SHOWN) < NOISE_CLICK))
        if rng.random() < 0.1:  # abandoned session: nothing clicked
            clicked[:] = False
        cart = clicked & (rng.random(SHOWN) < 0.1 + 0.4 * fr ** 2)
        purchase = cart & (rng.random(SHOWN) < 0.15 + 0.45 * (fr >= 0.999))
        ev = np.where(purchase, "purchase", np.where(cart, "cart", np.where(clicked, "click", "impression")))
        weight = round(0.5 + 0.5 * (s + 1) / n_queries, 4)
        for j, e in zip(shown, ev):
            q_col.append(text)
            i_col.append(recs[j]["item_id"])
            e_col.append(str(e))
            w_col.append(weight)
    interactions = pd.DataFrame({"query": q_col, "item_id": i_col, "event": e_col, "weight": w_col})

    # Held-out judgments: one query per held-out intent, every item with grade >= 1.
    train_texts = set(probe_rows)
    j_rows = []
    for intent in held_intents:
        for _ in range(20):
            text, probes = _phrase_query(rng, intent)
            if text not in train_texts:
                break
        probe_rows.setdefault(text, probes)
        u, full = match_vectors(intent)
        util = u + STARS_WEIGHT * (stars - 3.0)
        for j in np.flatnonzero(util >= 0.3 * full):
            g = grade_from_utility(float(util[j]), intent)
            if g >= 1:
                j_rows.append((text, recs[j]["item_id"], g))
    judgments = pd.DataFrame(j_rows, columns=["query", "item_id", "grade"])
    probes = pd.DataFrame([(q, w, f, v) for q, ps in probe_rows.items() for (w, f, v) in ps],
                          columns=["query", "word", "facet", "value"])

    paths = {name: os.path.join(out_dir, f"{name}.csv") for name in ("items", "interactions", "judgments", "probes")}
    for name, df in (("items", items), ("interactions", interactions), ("judgments", judgments), ("probes", probes)):
        tmp = paths[name] + ".tmp"
        df.to_csv(tmp, index=False)
        os.replace(tmp, paths[name])
    return {
        "paths": paths, "n_items": n, "n_interactions": len(interactions),
        "n_train_queries": int(interactions["query"].nunique()), "n_train_intents": len(train_intents),
        "n_heldout_queries": int(judgments["query"].nunique()), "n_judgments": len(judgments),
        "events": interactions["event"].value_counts().to_dict(),
    }


# --------------------------------------------------------------------------------------------
# Reference scorers and evaluation
# --------------------------------------------------------------------------------------------

VALUE_COLUMNS = ("finish_colour", "design_style", "grade", "product_type", "room")
EVENT_POSITIVE = {"impression": 0.0, "click": 1.0, "cart": 1.0, "purchase": 1.0}


def item_value_tokens(items_df: pd.DataFrame) -> list[list[str]]:
    """Per item, its attribute values as tokens `column=value` and `key:value` (attribute pairs)."""
    out = []
    for r in items_df.to_dict("records"):
        toks = []
        for c in VALUE_COLUMNS:
            if c in r and isinstance(r[c], str):
                toks += [f"{c}={v}" for v in r[c].split("|") if v]
        if isinstance(r.get("attributes"), str):
            toks += [kv for kv in r["attributes"].split("|") if kv]
        out.append(toks)
    return out


class ClickAssociation:
    """Per (query word, attribute value): smoothed click rate, as lift over the word's own rate.

    assoc[w, v] = (clicks[w, v] + a * rate[w]) / (impressions[w, v] + a) - rate[w], where counts
    are weighted, a click is any event beyond an impression and rate[w] is the word's overall
    click rate. score(item) = sum over known query words of max over the item's values of assoc.
    """

    def __init__(self, smoothing: float = 200.0):
        self.smoothing = smoothing

    def fit(self, interactions_df: pd.DataFrame, items_df: pd.DataFrame) -> ClickAssociation:
        toks = item_value_tokens(items_df)
        self.values = sorted({t for ts in toks for t in ts})
        vidx = {v: i for i, v in enumerate(self.values)}
        nv = len(self.values)
        width = max(len(t) for t in toks)
        self._pad = np.full((len(toks), width), nv, dtype=np.int64)  # nv = padding slot (-inf)
        for i, ts in enumerate(toks):
            self._pad[i, : len(ts)] = [vidx[t] for t in ts]
        row_of = {iid: i for i, iid in enumerate(items_df["item_id"].astype(str))}

        df = interactions_df
        item_rows = df["item_id"].astype(str).map(row_of)
        keep = item_rows.notna().to_numpy()
        df = df[keep]
        item_rows = item_rows[keep].astype(int).to_numpy()
        if "label" in df.columns:
            pos = (df["label"].to_numpy(float) > 0).astype(float)
        else:
            pos = df["event"].map(EVENT_POSITIVE).fillna(0.0).to_numpy(float)
        wt = df["weight"].to_numpy(float) if "weight" in df.columns else np.ones(len(df))

        qwords = {q: sorted(set(words(q))) for q in df["query"].unique()}
        self.vocab = sorted({w for ws in qwords.values() for w in ws})
        widx = {w: i for i, w in enumerate(self.vocab)}
        nw = len(self.vocab)
        # Expand rows into (word, value) pairs.
        w_lists = [[widx[w] for w in qwords[q]] for q in df["query"]]
        n_w = np.fromiter((len(x) for x in w_lists), int, len(w_lists))
        w_flat = np.fromiter((w for x in w_lists for w in x), int, int(n_w.sum()))
        r_of_w = np.repeat(np.arange(len(df)), n_w)
        vals = self._pad[item_rows[r_of_w]]  # (pairs, width)
        ok = vals < nv
        pair_w = np.repeat(w_flat, width).reshape(-1, width)[ok]
        pair_r = np.repeat(r_of_w, width).reshape(-1, width)[ok]
        pair_v = vals[ok]
        flat = pair_w * nv + pair_v
        imp = np.bincount(flat, weights=wt[pair_r], minlength=nw * nv).reshape(nw, nv)
        clk = np.bincount(flat, weights=(wt * pos)[pair_r], minlength=nw * nv).reshape(nw, nv)
        w_imp = np.bincount(w_flat, weights=wt[r_of_w], minlength=nw)
        w_clk = np.bincount(w_flat, weights=(wt * pos)[r_of_w], minlength=nw)
        rate = w_clk / np.maximum(w_imp, 1e-9)
        a = self.smoothing
        assoc = (clk + a * rate[:, None]) / (imp + a) - rate[:, None]
        self.assoc = np.concatenate([assoc, np.full((nw, 1), -np.inf)], axis=1)
        self._widx = widx
        return self

    def score(self, query: str) -> np.ndarray:
        s = np.zeros(self._pad.shape[0])
        for w in set(words(query)):
            i = self._widx.get(w)
            if i is not None:
                s += self.assoc[i][self._pad].max(axis=1)
        return s


def item_text(items_df: pd.DataFrame) -> list[str]:
    """Title, description, every attribute column and the attribute pairs (not price, stars)."""
    cols = [c for c in items_df.columns if c not in ("item_id", "price_usd", "stars")]
    return [" ".join(str(r[c]).replace("|", " ").replace(":", " ") for c in cols) for r in items_df.to_dict("records")]


class WordOverlap:
    """Score = number of distinct query words that occur in the item's text."""

    def __init__(self, items_df: pd.DataFrame):
        self.sets = [set(words(t)) for t in item_text(items_df)]
        self.index: dict[str, np.ndarray] = {}
        vocab = sorted({w for s in self.sets for w in s})
        rows = {w: [] for w in vocab}
        for i, s in enumerate(self.sets):
            for w in s:
                rows[w].append(i)
        self.index = {w: np.asarray(r) for w, r in rows.items()}
        self.n = len(self.sets)

    def score(self, query: str) -> np.ndarray:
        s = np.zeros(self.n)
        for w in set(words(query)):
            if w in self.index:
                s[self.index[w]] += 1.0
        return s


def evaluate_ndcg(score_fn, items_df: pd.DataFrame, judgments_df: pd.DataFrame, k: int = 10) -> float:
    """Mean NDCG@k (linear gain, log2 discount) over judged queries, ranking the full catalogue.

    Ties are broken by catalogue order (stable sort), so a constant scorer gets no free credit.
    """
    ids = items_df["item_id"].astype(str).to_numpy()
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    out = []
    for q, g in judgments_df.groupby("query", sort=True):
        gains = dict(zip(g["item_id"].astype(str), g["grade"].astype(float)))
        ideal = np.sort(np.fromiter(gains.values(), float))[::-1][:k]
        idcg = float((ideal * disc[: len(ideal)]).sum())
        if idcg <= 0:
            continue
        s = np.asarray(score_fn(q), float)
        top = np.argsort(-s, kind="stable")[:k]
        dcg = float(sum(gains.get(ids[j], 0.0) * disc[r] for r, j in enumerate(top)))
        out.append(dcg / idcg)
    return float(np.mean(out)) if out else 0.0


def check(out_dir) -> dict:
    items = pd.read_csv(os.path.join(out_dir, "items.csv"), dtype=str, keep_default_na=False)
    inter = pd.read_csv(os.path.join(out_dir, "interactions.csv"), keep_default_na=False)
    judg = pd.read_csv(os.path.join(out_dir, "judgments.csv"), keep_default_na=False)
    ca = ClickAssociation().fit(inter, items)
    wo = WordOverlap(items)
    return {"click_association": evaluate_ndcg(ca.score, items, judg),
            "word_overlap": evaluate_ndcg(wo.score, items, judg)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--items", type=int, default=3000)
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="print NDCG@10 of the reference scorers")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    info = generate(args.out, n_items=args.items, n_queries=args.queries, seed=args.seed)
    t1 = time.perf_counter()
    print(f"wrote {info['n_items']} items, {info['n_interactions']} interactions "
          f"({info['n_train_queries']} distinct training queries), {info['n_judgments']} judgments "
          f"for {info['n_heldout_queries']} held-out queries to {args.out} in {t1 - t0:.1f}s")
    print("events: " + ", ".join(f"{k}={v}" for k, v in sorted(info["events"].items())))
    if args.check:
        res = check(args.out)
        print(f"held-out NDCG@10  click-association: {res['click_association']:.3f}  "
              f"word-overlap: {res['word_overlap']:.3f}  ({time.perf_counter() - t1:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
