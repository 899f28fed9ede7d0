"""A tiny planted catalogue: the right answers are known before any training.

Items are every combination of colour x style x category (x 2 copies), titled with a brand only.
Shoppers ask for a colour and a category, written with a synonym the catalogue never uses
("scarlet gown" means red dress), and click only items that have both.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd

COLORS = {"red": ["scarlet", "crimson"], "blue": ["azure", "cobalt"],
          "green": ["emerald", "olive"], "black": ["ebony", "onyx"]}
CATEGORIES = {"dress": ["gown", "frock"], "shirt": ["blouse", "tee"], "shoes": ["sneakers", "kicks"]}
STYLES = ["casual", "formal"]
BRANDS = ["Acme", "Borea"]


def planted_items() -> pd.DataFrame:
    rows = []
    combos = itertools.product(COLORS, STYLES, CATEGORIES, BRANDS)
    for n, (color, style, category, brand) in enumerate(combos):
        quality = "premium" if n % 3 == 0 else "standard"
        rows.append({"item_id": f"P{n:03d}", "title": f"{brand} {category}", "color": color,
                     "style": style, "quality": quality, "category": category,
                     "price": f"{10 + (n * 7) % 90}.00"})
    return pd.DataFrame(rows)


def planted_interactions(items: pd.DataFrame, n_queries: int = 500, seed: int = 0) -> pd.DataFrame:
    def ask(rng: np.random.Generator) -> tuple[str, np.ndarray]:
        color, category = rng.choice(list(COLORS)), rng.choice(list(CATEGORIES))
        words = [rng.choice(COLORS[color] + [color]), rng.choice(CATEGORIES[category] + [category])]
        query = " ".join(words if rng.random() < 0.5 else words[::-1])
        return query, ((items.color == color) & (items.category == category)).to_numpy()

    return sessions(items, ask, n_queries, seed)


def sessions(items: pd.DataFrame, ask, n_queries: int, seed: int) -> pd.DataFrame:
    """`ask(rng)` -> (query, which items are right): 2 right items clicked, 6 random ones shown
    (clicked when right), per query."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_queries):
        query, right = ask(rng)
        good = items.item_id.to_numpy()[right]
        for item in rng.choice(good, 2, replace=False):
            rows.append((query, item, 1))
        for item in rng.choice(items.item_id.to_numpy(), 6, replace=False):
            rows.append((query, item, int(item in good)))
    return pd.DataFrame(rows, columns=["query", "item_id", "label"])


def planted_judgments(items: pd.DataFrame) -> pd.DataFrame:
    """Held-out phrasings: every synonym pair, graded 2 for colour+category, 1 for colour only."""
    rows = []
    for color, color_words in COLORS.items():
        for category, cat_words in CATEGORIES.items():
            query = f"{color_words[0]} {cat_words[1]}"
            for item in items.itertuples():
                grade = 2 if (item.color == color and item.category == category) else 0
                if grade:
                    rows.append((query, item.item_id, grade))
    return pd.DataFrame(rows, columns=["query", "item_id", "grade"])


def write_planted(folder: Path, seed: int = 0) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    items = planted_items()
    paths = {"items": folder / "items.csv", "interactions": folder / "interactions.csv",
             "judgments": folder / "judgments.csv"}
    items.to_csv(paths["items"], index=False)
    planted_interactions(items, seed=seed).to_csv(paths["interactions"], index=False)
    planted_judgments(items).to_csv(paths["judgments"], index=False)
    return paths


# ---- a fifth facet, declared by a schema ---------------------------------------------------------
#
# Items differ in material, colour and category; titles name only the brand and the category. A
# shopper asks for a material and a category ("wool dress"), and clicks only items of both: the
# material word is the only way to the right items, through the head the schema adds.

MATERIALS = ["wool", "cotton", "linen", "silk"]
MATERIAL_SCHEMA = '[facets]\nadd = ["material"]\n\n[columns]\nmaterial = "material"\n'


def material_items() -> pd.DataFrame:
    rows = []
    combos = itertools.product(MATERIALS, ["red", "blue"], ["dress", "shirt"], BRANDS, range(2))
    for n, (material, color, category, brand, _) in enumerate(combos):
        rows.append({"item_id": f"M{n:03d}", "title": f"{brand} {category}", "color": color,
                     "category": category, "material": material})
    return pd.DataFrame(rows)


def material_interactions(items: pd.DataFrame, n_queries: int = 300, seed: int = 0) -> pd.DataFrame:
    def ask(rng: np.random.Generator) -> tuple[str, np.ndarray]:
        material, category = rng.choice(MATERIALS), rng.choice(["dress", "shirt"])
        return f"{material} {category}", ((items.material == material) & (items.category == category)).to_numpy()

    return sessions(items, ask, n_queries, seed)


def write_material(folder: Path) -> dict[str, Path]:
    """items.csv, interactions.csv and schema.toml (which adds the `material` facet)."""
    folder.mkdir(parents=True, exist_ok=True)
    items = material_items()
    paths = {"items": folder / "items.csv", "interactions": folder / "interactions.csv",
             "schema": folder / "schema.toml"}
    items.to_csv(paths["items"], index=False)
    material_interactions(items).to_csv(paths["interactions"], index=False)
    paths["schema"].write_text(MATERIAL_SCHEMA)
    return paths


# ---- a furniture shop, for its synonyms ---------------------------------------------------------
#
# Every category x colour x brand; no item says "couch", "settee" or "navy": a shop's synonyms
# (`recsys.synonyms`) are the only way those words reach its sofas and its blue items.

FURNITURE = ["sofa", "armchair", "table", "bed"]
FURNITURE_COLORS = ["blue", "red", "green"]


def furniture_items() -> pd.DataFrame:
    rows = []
    for n, (category, color, brand) in enumerate(itertools.product(FURNITURE, FURNITURE_COLORS, BRANDS)):
        rows.append({"item_id": f"F{n:03d}", "title": f"{brand} {category}", "color": color,
                     "category": category})
    return pd.DataFrame(rows)


# Shopify's product export, trimmed to the columns that matter here: the shirt has three
# variants and an image row of its own, the boots none (Shopify's "Title: Default Title")
SHOPIFY = """Handle,Title,Body (HTML),Vendor,Type,Tags,Option1 Name,Option1 Value,Option2 Name,Option2 Value,\
Variant SKU,Variant Price,Image Src
linen-shirt,Linen Shirt,<p>A relaxed <strong>linen</strong> shirt.</p>,Harbor,Shirts,"summer, linen",\
Color,Navy,Size,S,LS-NAVY-S,49.00,https://cdn.example.com/navy.jpg
linen-shirt,,,,,,,Navy,,M,LS-NAVY-M,52.50,https://cdn.example.com/navy-2.jpg
linen-shirt,,,,,,,White,,S,LS-WHITE-S,49.00,
linen-shirt,,,,,,,,,,,,https://cdn.example.com/white.jpg
wrap-dress,Crimson Wrap Dress,<p>A red cotton wrap dress.</p>,Nordic,Dresses,"cotton, party",Size,S,,,WD-S,89.00,\
https://cdn.example.com/dress.jpg
wrap-dress,,,,,,,M,,,WD-M,89.00,
chelsea-boots,Brown Suede Boots,<p>Chelsea boots in brown suede.</p>,Harbor,Boots,suede,Title,Default Title,,,\
CB-42,129.00,https://cdn.example.com/boots.jpg
"""


def charger_shop() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(items, clicks as query,item_id,label): six black chargers, twelve phone cases (six
    black, one blue), twelve lamps (two blue). Every "charger" search chose a black charger, so
    clicks tie "charger" to black, which the black cases have too; every "navy" search (a word
    no item says) chose a blue item."""
    colors = ["red", "blue", "green", "white", "grey", "pink"]
    rows = [(f"C{i}", f"Volta wall charger {i}", "black") for i in range(6)]
    rows += [(f"K{i}", f"Slim phone case {i}", "black" if i < 6 else colors[i - 6]) for i in range(12)]
    rows += [(f"L{i}", f"Desk lamp {i}", colors[i % 6]) for i in range(12)]
    items = pd.DataFrame(rows, columns=["item_id", "title", "color"])
    chargers = ["charger", "wall charger", "fast charger", "usb charger", "charger plug", "phone charger"] * 3
    navy = ["navy", "navy lamp", "navy desk lamp", "lamp navy", "navy light", "navy shade"] * 3
    chosen = [f"C{i % 6}" for i in range(len(chargers))] + [("L1", "K7", "L7")[i % 3] for i in range(len(navy))]
    clicks = pd.DataFrame({"query": chargers + navy, "item_id": chosen, "label": 1})
    return items, clicks
