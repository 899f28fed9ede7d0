"""Items like an item: its own attributes are the query (issue 32, "like this item").

A product page asks for what is like the product in hand, with no shopper's words. The heads need
no second model for it: the item's attribute values are keywords, so they are the query, and the
answer is explained as any ranking is, head by head, with each query word traced back to the
attribute of the item it came from ("scandi" of `style:scandi` drew `style:scandi`).

The query is the words of the item's attributes in facet order (named facets before `other`),
each word once, stop words left out, codes too (a column of SKUs, barcodes or part numbers,
`catalog.is_code_column`: "LS-NAVY-S" would draw every item whose code shares "ls" or "s").
Description words are left out while the item has `MIN_WORDS` others: a description is long and
loosely worded, and what a product page means by
"like this" is its kind, colour, style and brand. The words are capped at `MAX_WORDS`, the rarest
in the catalogue kept (a rare word says more about the item than one most items share).

Asked nothing else, the results keep to the item's kind (`kind_filter`): a chair's like-this are
chairs. In the item's query its kind is one word of about ten, weighed like its brand, so a
ranking of the whole catalogue puts tables of the same brand and wood beside the chairs (on the
simulated shops, 18-23% of the results were another kind of item, and overlap within the
category beat it; docs/results.md, "Like this item"). A catalogue says what kind an item is in a
column of one of the usual names (`KIND_KEYS`, matched as column names are: `Product Type`,
`product_type` and `productType` are one); the finest such column whose value the item shares with
at least `MIN_SAME_KIND` other items is the one kept to, so a kind of three items widens to its
category. Of a column's values, the rarest that enough items share: a category path's deepest
level such, widening a level at a time. A catalogue with no such column keeps to the column
whose values hold the kinds its titles name (`inferred_kind_key`: a `Warengruppe` of "Shirts"),
and one with none (titles alone, as Home Depot's and CrowdFlower's) to the kind its titles
name (`TitleKinds`): a product title says
its kind last in its main clause ("... Convection Microwave in Stainless Steel with Sensor
Cooking"), and the items whose titles end their main clause on the same word (by match key:
shoe and shoes) are kept to when at least `MIN_SAME_KIND` others do; else every item is ranked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from .catalog import Catalog
from .errors import InputError
from .facets import DESCRIPTION
from .io.headers import is_code_column
from .tokenize import STOPWORDS, match_key, words

MAX_WORDS = 16  # query words at most: a longer query would dilute every head's attention
MIN_WORDS = 3  # below this many words from its other attributes, the description's are used too
# filter keys that name an item's kind, finest first, in `_key_form` (fashion's articleType before
# its subCategory before its masterCategory; Shopify's and Google Merchant feeds' product_type
# before their categories)
KIND_KEYS = ("articletype", "productclass", "producttype", "itemtype", "type", "kind",
             # a product's type in the languages of shop exports ("tipo de producto", "Produktart", "soort")
             "tipodeproducto", "tipoproducto", "tipo", "tipodeproduto", "typedeproduit", "typeproduit",
             "tipodiprodotto", "produkttyp", "produktart", "typ", "artikelart", "soort", "productsoort",
             "subcategory", "subcategoria", "souscategorie", "sottocategoria", "unterkategorie", "subcategorie",
             "productgroup", "itemgroup", "warengruppe", "artikelgruppe", "produktgruppe", "productgroep",
             "artikelgroep", "productcategory", "category", "categories", "categoria", "categorias",
             "categorie", "categorieen", "kategorie", "kategorien", "kategoria", "kategori", "rubrique",
             "categoryhierarchy", "categorypath", "breadcrumbs", "breadcrumb", "googleproductcategory",
             "department", "departamento", "abteilung", "afdeling", "rayon", "mastercategory")
MIN_SAME_KIND = 10  # other items of the item's kind, at least, for the results to keep to it
NO_SAME = "none"  # `same` naming this alone: like-this over every item, not kept to its kind
TITLE_KIND = "kind in its title"  # `ItemQuery.kept_to`'s key for a kind read from the titles
# where a title's main clause ends: what the item is in, with or for, a comma, a bracket, a dash
# ("... Faucet Trim Kit in Chrome (Valve Not Included)"); not "and" or "of", which join a kind's
# own words ("Wood and Concrete Coating", "House of Fara ... Fluted Casing")
_CLAUSE_END = re.compile(r"\s(?:with|in|for|w/|featuring|by)\s|[,(\[;:]|\s[-–—|]\s", re.IGNORECASE)


# words that name how an item is packed, not what it is: "File Set" is a file, "Faucet Trim
# Kit" a trim
_PACKING = frozenset({"set", "sets", "kit", "kits", "pack", "packs", "piece", "pieces", "combo", "bundle",
                      "collection", "assortment", "pair", "pairs", "lot", "refill", "refills"})


def title_kind(title: str) -> str | None:
    """The word a product title names its kind by: the last word of three letters or more, no
    digit and no stop word, of its main clause (`_CLAUSE_END`), or the one before it when that
    names the packing (`_PACKING`); None when it has none."""
    main = _CLAUSE_END.split(title, maxsplit=1)[0]
    found = [w for w in words(main) if len(w) >= 3 and w.isalpha() and w not in STOPWORDS]
    if len(found) >= 2 and found[-1] in _PACKING:
        return found[-2]
    return found[-1] if found else None


class TitleKinds:
    """Each item's kind as its title names it (`title_kind`), and the items of each kind (by
    match key), for like-this on a catalogue with no kind column."""

    def __init__(self, titles: Sequence[str]):
        self.words = [title_kind(t) for t in titles]
        self.keys = [match_key(w) if w else None for w in self.words]
        members: dict[str, list[int]] = {}
        for i, key in enumerate(self.keys):
            if key:
                members.setdefault(key, []).append(i)
        self.members = {key: np.array(items, dtype=np.int64) for key, items in members.items()}

    def kind_of(self, item_idx: int) -> tuple[str, np.ndarray] | None:
        """(the word, the items of the kind, itself among them) when at least MIN_SAME_KIND
        other items share its kind, and not every item does (titles "Product 1", "Product 2"
        name no kind); else None."""
        key = self.keys[item_idx]
        items = self.members.get(key) if key else None
        if items is None or len(items) - 1 < MIN_SAME_KIND or len(items) == len(self.keys):
            return None
        return str(self.words[item_idx]), items


@dataclass(frozen=True)
class ItemQuery:
    """The query an item makes of itself."""

    item_id: str
    query: str  # the chosen words, space-joined, in the item's own order
    drawn_by: dict[str, list[str]]  # query word -> the item's attribute labels it came from
    # query word -> how many items say the rarest of its attributes (`attribute_df`)
    df: dict[str, float] = field(default_factory=dict)
    # filter key -> the item's values the results were kept to (`Recommender.similar`'s `same`)
    kept_to: dict[str, list[str]] = field(default_factory=dict)


def item_query(catalog: Catalog, item_idx: int, attribute_df: Callable[[str], np.ndarray]) -> ItemQuery:
    """The query of item `item_idx`'s own attributes (the module's docstring); `attribute_df(facet)`
    (V,) is how many items say each attribute's term (`Featurizer.attribute_df`)."""
    sources: dict[str, list[str]] = {}  # word -> labels, in first-seen order
    said_elsewhere: set[str] = set()  # words some attribute other than a description word says
    df: dict[str, float] = {}  # word -> items saying the rarest of its attributes
    for facet in catalog.facets:
        vocab, held = catalog.vocab[facet], attribute_df(facet)
        for a in catalog.attributes_of(item_idx, facet).tolist():
            attr = vocab[a]
            # an SKU or a barcode says which item, not what it is like; a number's band ("27-39")
            # is no word: its bounds would draw the bands that share one
            if is_code_column(attr.key) or attr.key.startswith("#"):
                continue
            for w in words(attr.value):
                if w in STOPWORDS:
                    continue
                labels, label = sources.setdefault(w, []), named_label(facet, attr.label)
                if label not in labels:
                    labels.append(label)
                df[w] = min(df.get(w, np.inf), float(held[a]))
                if attr.key != DESCRIPTION:
                    said_elsewhere.add(w)
    chosen = [w for w in sources if w in said_elsewhere]
    if len(chosen) < MIN_WORDS:
        chosen = list(sources)
    if len(chosen) > MAX_WORDS:
        order = {w: i for i, w in enumerate(chosen)}
        rarest = set(sorted(chosen, key=lambda w: (df[w], order[w]))[:MAX_WORDS])
        chosen = [w for w in chosen if w in rarest]
    return ItemQuery(catalog.item_ids[item_idx], " ".join(chosen), {w: sources[w] for w in chosen},
                     {w: df[w] for w in chosen})


def same_keys(given: Sequence[str] | None) -> Sequence[str] | None:
    """`same` as a request or the command line gives it, as `Recommender.similar` takes it: not
    given (None) keeps to the item's kind, `NO_SAME` alone to nothing."""
    if given is None:
        return None
    named = [key.strip().lower() for key in given]
    if NO_SAME in named and len(named) > 1:
        raise InputError(f"same: {NO_SAME!r} ranks every item and stands alone; give it or the keys "
                         f"{', '.join(repr(k) for k in given if k.strip().lower() != NO_SAME)}, not both")
    return () if named == [NO_SAME] else given


def kind_keys(catalog: Catalog) -> list[str]:
    """The catalogue's filter keys that name an item's kind (`KIND_KEYS`), finest first."""
    keys = (catalog.filter_key(name) for name in KIND_KEYS)
    return list(dict.fromkeys(key for key in keys if key is not None))


# a column whose values hold the word each item's title names its kind by (`TitleKinds`) for at
# least this share of the items is the catalogue's kind column, whatever its name
MIN_KIND_SHARE = 0.5
KIND_SAMPLE = 2000  # items the share is counted on
# keys that are not a column of the items' own: a facet's name, the words the lexicon reads from
# titles (`title`, `material`, `pattern`, ...)
_NOT_COLUMNS = frozenset({"title", "description", "other", "quality", "color", "colour", "style", "material",
                          "pattern"})


def inferred_kind_key(catalog: Catalog, kinds: TitleKinds) -> str | None:
    """The filter key whose values hold, for the most items, the word the item's title names its
    kind by (a `Warengruppe` of "Shirts" for "... Navy Blue Shirt"), when at least MIN_KIND_SHARE
    of a sample of the items have it; None else. For a catalogue whose kind column has a name
    `KIND_KEYS` does not know: a brand is said in titles too, but first, not as their kind."""
    keys = sorted(k for k in catalog.filter_keys() if k not in _NOT_COLUMNS and k not in catalog.facets
                  and k not in catalog.buckets)
    sample = np.unique(np.linspace(0, catalog.n_items - 1, min(KIND_SAMPLE, catalog.n_items)).astype(np.int64))
    best, best_share = None, 0.0
    for key in keys:
        hits = 0
        for i in sample.tolist():
            kind = kinds.keys[i]
            if kind and any(kind in {match_key(w) for w in words(v)} for v in catalog.item_filter_values(i, key)):
                hits += 1
        share = hits / max(len(sample), 1)
        if share > best_share:
            best, best_share = key, share
    return best if best_share >= MIN_KIND_SHARE else None


def kind_filter(catalog: Catalog, item_idx: int, chosen: Collection[str | None] = (),
                keys: Sequence[str] | None = None) -> dict[str, list[str]]:
    """The filter that keeps item `item_idx`'s like-this to its kind (the module's docstring):
    {key: the item's values} of the finest of `keys` (default `kind_keys`) whose values the item
    shares with at least `MIN_SAME_KIND` other items, or {} (no such key: every item is ranked;
    or one of `chosen`, the filter keys the caller gave, is a kind key: the caller chose the
    kind)."""
    keys = kind_keys(catalog) if keys is None else keys
    if any(key in chosen for key in keys):
        return {}
    for key in keys:
        # of its values the rarest first: a category path's levels are values of one key
        # (`catalog.path_levels`), so a shirt keeps to shirts before apparel. Counted as the
        # filter counts them: a value is several attributes where titles say it too (one for
        # the items that say it once, one for twice), each with a share of its items
        held = sorted((int(np.count_nonzero(catalog.filter_mask({key: [value]}))), value)
                      for value in catalog.item_filter_values(item_idx, key))
        for count, value in held:
            if count - 1 >= MIN_SAME_KIND:
                return {key: [value]}
    return {}


def same_values(catalog: Catalog, item_idx: int, key: str) -> list[str]:
    """The item's own values of filter `key` that `same=key` keeps to: all of them (items that
    share one), but of a category path's levels only the finest, whose items every other level
    holds: "electronics > headphones > earbuds" kept to any level was 393 of 394 items (every
    electronics item); to earbuds it is the earbuds."""
    values = catalog.item_filter_values(item_idx, key)
    if len(values) < 2:
        return values
    masks = sorted(((catalog.filter_mask({key: [v]}), v) for v in values), key=lambda mv: int(np.count_nonzero(mv[0])))
    finest, value = masks[0]
    if all(not np.any(finest & ~wider) for wider, _ in masks[1:]):  # nested: a path's levels
        return [value]
    return values


def named_label(facet: str, label: str) -> str:
    """An attribute's label with its facet where the label alone does not say it: `style:scandi`
    (an `other` attribute's label names its column already: `material:walnut`)."""
    return label if ":" in label else f"{facet}:{label}"
