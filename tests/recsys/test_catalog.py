"""Items to facet attribute tokens: the column rule, multi-values, pairs, numbers, titles, filters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recsys.catalog import Catalog, NumberRange
from recsys.facets import facet_for_column


@pytest.mark.parametrize(("column", "facet"), [
    ("color", "color"), ("Colour", "color"), ("baseColour", "color"), ("style", "style"),
    ("quality", "quality"), ("grade", "quality"), ("rating", "quality"), ("brand", "other"),
    ("item_id", None), ("title", None), ("description", None),
    # colour columns of German, French, Dutch, Danish, Norwegian, Polish and Czech exports
    ("Farbe", "color"), ("Grundfarbe", "color"), ("couleur", "color"), ("Kleur", "color"), ("farve", "color"),
    ("Farge", "color"), ("kolor", "color"), ("barva", "color"), ("decor", "other"), ("score", "other"),
])
def test_column_rule(column, facet):
    assert facet_for_column(column) == facet


def test_schema_overrides_the_rule():
    assert facet_for_column("usage", {"usage": "style"}) == "style"
    assert facet_for_column("year", {"year": "ignore"}) is None


def catalog() -> Catalog:
    items = pd.DataFrame({
        "item_id": ["a", "b", "c", "d"],
        "title": ["Acme Red Cotton Dress", "Borea Shirt", "Acme Boots", "Plain Hat"],
        "color": ["red", "blue|white", "black", ""],
        "style": ["casual", "formal", "casual", "vintage"],
        "material": ["cotton", "linen", "leather", "wool"],
        "attributes": ["fit:slim|sleeve:long", "", "heel colour:brown", "lonely"],
        "price": ["10", "25", "40", "55"] * 1,
        "description": ["a dress", "a shirt", "boots", "a hat"],
    })
    items = pd.concat([items] + [items.assign(item_id=items.item_id + str(i)) for i in range(3)])
    return Catalog.build(items.reset_index(drop=True))


def labels(cat: Catalog, item_id: str) -> dict[str, list[str]]:
    return cat.attribute_labels(cat.idx(item_id))


def test_columns_values_and_pairs_go_to_their_facets():
    cat = catalog()
    a, b, c = labels(cat, "a"), labels(cat, "b"), labels(cat, "c")
    assert a["color"] == ["red"] and b["color"] == ["blue", "white"]
    assert a["style"] == ["casual"]
    assert "material:cotton" in a["other"] and "fit:slim" in a["other"] and "sleeve:long" in a["other"]
    assert "brown" in c["color"]  # an attribute key with "colour" in its name feeds color


def test_title_words_feed_other_unless_they_repeat_an_attribute():
    a = labels(catalog(), "a")
    assert "title:acme" in a["other"] and "title:dress" in a["other"]
    assert "title:red" not in a["other"] and "title:cotton" not in a["other"]


def test_numbers_become_bucket_tokens():
    cat = catalog()
    prices = {lab for i in range(cat.n_items) for lab in cat.attribute_labels(i)["other"] if lab.startswith("price:")}
    assert 2 <= len(prices) <= 5
    assert all(any(ch.isdigit() for ch in p) for p in prices)


def test_bucket_tokens_split_at_the_edges():
    from recsys.catalog import NumericBuckets

    b = NumericBuckets([10.0, 20.0, 150.0])
    assert b.labels() == ["<10", "10-20", "20-150", "150+"]
    values = [-1.0, 9.99, 10.0, 19.5, 20.0, 149.0, 150.0, 1e9]
    expected = ["<10", "<10", "10-20", "10-20", "20-150", "20-150", "150+", "150+"]
    assert [b.token(x) for x in values] == expected
    assert [b.labels()[i] for i in b.bucket(np.array(values)).tolist()] == expected


@pytest.mark.parametrize("chunk", [7, 65_536])
def test_a_column_is_numeric_when_nearly_every_filled_cell_is_a_number(chunk):
    from recsys.catalog import _numeric_values

    def column(junk: int, empty: int = 20) -> pd.Series:  # junk: numbers written otherwise
        return pd.Series([str(i * 1.5) for i in range(100 - junk)] + [f"about {i}" for i in range(junk)]
                         + [""] * empty)

    values = _numeric_values(column(junk=2), chunk=chunk)  # 98% of the filled cells: numeric
    np.testing.assert_array_equal(values[:98], np.arange(98) * 1.5)
    assert np.isnan(values[98:]).all()  # the two junk cells and the empty ones have no number
    assert _numeric_values(column(junk=3), chunk=chunk) is None
    assert _numeric_values(pd.Series(["red", "blue"] * 50), chunk=chunk) is None
    assert _numeric_values(pd.Series(["1", "2", "3"] * 40), chunk=chunk) is None  # few values
    values = _numeric_values(column(junk=0), chunk=chunk)
    assert values[:3].tolist() == [0.0, 1.5, 3.0] and np.isnan(values[-1])


@pytest.mark.parametrize("chunk", [7, 65_536])
def test_a_number_column_whose_other_cells_are_a_few_words_is_numeric(chunk):
    """A price list that says "POA" or "Call for price" where it has no price: read as text for
    those, every price was a word of its own and no range filter held."""
    from recsys.catalog import _numeric_values

    def column(words: list[str]) -> pd.Series:
        return pd.Series([str(i * 1.5) for i in range(80)] + words * (20 // len(words)) + [""] * 5)

    values = _numeric_values(column(["POA", "Call for price", "n/a"]), chunk=chunk)  # 80%, 3 words
    np.testing.assert_array_equal(values[:80], np.arange(80) * 1.5)
    assert np.isnan(values[80:]).all()
    assert _numeric_values(column(["POA", "poa ", "Free", "-"]), chunk=chunk) is not None  # case aside
    assert _numeric_values(column(["POA", "Call", "n/a", "Free"]), chunk=chunk) is None  # 4 words
    assert _numeric_values(column(["from 30", "POA"]), chunk=chunk) is None  # a digit: no placeholder
    assert _numeric_values(pd.Series([str(i) for i in range(79)] + ["POA"] * 21), chunk=chunk) is None  # 79%


def test_a_price_lists_placeholders_are_words_in_no_range():
    items = pd.DataFrame({"item_id": [f"p{n}" for n in range(40)], "title": [f"lamp {n}" for n in range(40)],
                          "price": ["POA" if n % 8 == 0 else f"${n * 5}.00" for n in range(40)],
                          "rating": ["n/a" if n % 10 == 0 else str(n % 5 + 1) for n in range(40)]})
    cat = Catalog.build(items)
    poa = sorted(f"p{n}" for n in range(0, 40, 8))
    assert cat.number_words == {"price": {"POA": 5}}
    assert np.isnan(cat.numbers["price"][::8]).all() and np.isfinite(cat.numbers["price"][1::8]).all()
    selected = cat.filter_mask({"price": NumberRange(None, 20)})
    assert sorted(cat.item_ids[i] for i in np.flatnonzero(selected)) == ["p1", "p2", "p3", "p4"]
    assert sorted(cat.item_ids[i] for i in np.flatnonzero(cat.filter_mask({"price": ["poa"]}))) == poa
    assert "price:poa" in cat.attribute_labels(0)["other"]
    # a column of a few numbers takes ranges though some cells say "n/a"
    high = cat.filter_mask({"rating": NumberRange(4, None)})
    assert sorted(cat.item_ids[i] for i in np.flatnonzero(high)) == sorted(
        f"p{n}" for n in range(40) if n % 10 and n % 5 + 1 >= 4)
    assert "rating" in cat.range_keys()


def test_filters_or_within_a_key_and_across_keys():
    cat = catalog()
    ids = lambda mask: sorted({cat.item_ids[i][0] for i in np.flatnonzero(mask)})  # noqa: E731
    assert ids(cat.filter_mask({"color": ["red", "black"]})) == ["a", "c"]
    assert ids(cat.filter_mask({"color": ["red", "black"], "style": ["casual"]})) == ["a", "c"]
    assert ids(cat.filter_mask({"color": ["red", "black"], "material": ["leather"]})) == ["c"]
    assert ids(cat.filter_mask({"color": ["purple"]})) == []


def test_unknown_item_names_the_id():
    from recsys.errors import UnknownItemError

    with pytest.raises(UnknownItemError, match="'nope'"):
        catalog().idx("nope")


# --- facet values read out of titles (the lexicon) ----------------------------------------------


def titles_only() -> Catalog:
    return Catalog.build(pd.DataFrame({
        "item_id": ["t1", "t2", "t3", "t4"],
        "title": ["Crimson Velvet Rustic Armchair", "Oil Rubbed Bronze Heavy Duty Stainless Steel Hinge",
                  "Standard Redwood Planter", "Plain Mug"],
    }))


def test_titles_only_catalogue_gets_facets_from_its_titles():
    cat = titles_only()
    t1, t2 = labels(cat, "t1"), labels(cat, "t2")
    assert t1["color"] == ["red"] and t1["style"] == ["rustic"]
    assert "material:velvet" in t1["other"]
    assert t2["color"] == ["bronze", "stainless"] and t2["quality"] == ["heavy duty"]
    assert "material:stainless steel" in t2["other"]
    t3 = labels(cat, "t3")
    assert t3["color"] == [] and "material:redwood" in t3["other"]  # "redwood" is not red...
    assert "title:standard" in t3["other"]  # ...and "standard" holds no "tan"
    assert labels(cat, "t4") == {"quality": [], "color": [], "style": [], "other": ["title:plain", "title:mug"]}


def test_extracted_attributes_keep_their_source_and_the_title_word():
    cat = titles_only()
    red = [a for a in cat.vocab["color"] if a.value == "red"]
    assert [(a.key, a.label) for a in red] == [("title", "red")]
    t1 = labels(cat, "t1")
    assert "title:crimson" in t1["other"]  # the shopper's word still matches the title word
    t2 = labels(cat, "t2")
    assert "title:bronze" not in t2["other"] and "title:steel" not in t2["other"]  # not twice
    assert "title:oil" in t2["other"]


def test_extracted_values_can_be_filtered_on():
    cat = titles_only()
    assert [cat.item_ids[i] for i in np.flatnonzero(cat.filter_mask({"color": ["red"]}))] == ["t1"]
    assert [cat.item_ids[i] for i in np.flatnonzero(cat.filter_mask({"material": ["redwood"]}))] == ["t3"]


def test_texts_for_the_lexical_baseline_hold_no_extracted_values():
    cat = titles_only()
    assert cat.texts == cat.titles  # no "red", "rustic", "material" words added


def test_columns_win_over_the_title():
    cat = Catalog.build(pd.DataFrame({
        "item_id": ["a", "b"],
        "title": ["Crimson Modern Oak Table", "Crimson Modern Oak Table"],
        "color": ["brown", ""],
        "material": ["walnut", ""],
        "style": ["", ""],
    }))
    a, b = labels(cat, "a"), labels(cat, "b")
    assert a["color"] == ["brown"] and "material:walnut" in a["other"]
    assert "material:oak" not in a["other"]
    assert a["style"] == ["modern"]  # no style column value: the title fills it
    assert b["color"] == ["red"] and "material:oak" in b["other"]  # empty cells: the title fills them


def test_an_attributes_pair_counts_as_a_column():
    cat = Catalog.build(pd.DataFrame({
        "item_id": ["a"], "title": ["Navy Cotton Shirt"], "attributes": ["fabric colour:white"],
    }))
    assert labels(cat, "a")["color"] == ["white"]


def test_description_fills_only_what_the_title_did_not():
    cat = Catalog.build(pd.DataFrame({
        "item_id": ["a", "b"],
        "title": ["Navy Shirt", "Plain Shirt"],
        "description": ["A classic cotton shirt, also in red", "A crimson linen shirt"],
    }))
    a, b = labels(cat, "a"), labels(cat, "b")
    assert a["color"] == ["blue"]  # the title said navy: the description's red is not added
    assert a["style"] == ["classic"] and "material:cotton" in a["other"]
    assert b["color"] == ["red"] and "material:linen" in b["other"]
    assert [x.key for x in cat.vocab["color"] if x.value == "red"] == ["description"]


def test_lexicon_can_be_turned_off_or_extended():
    from recsys.lexicon import LexiconConfig

    items = pd.DataFrame({"item_id": ["a"], "title": ["Peacock Crimson Scarf"]})
    assert labels(Catalog.build(items, lexicon=LexiconConfig(enabled=False)), "a")["color"] == []
    extended = LexiconConfig(entries={"color": {"teal": ["peacock"]}})
    assert labels(Catalog.build(items, lexicon=extended), "a")["color"] == ["teal", "red"]


def test_a_schema_file_sets_columns_and_lexicon(tmp_path):
    from recsys.io.schema import Schema

    path = tmp_path / "schema.toml"
    path.write_text('[columns]\nusage = "style"\n[lexicon.color]\nteal = ["peacock"]\n'
                    '[lexicon.pattern]\nstriped = ["stripes"]\n')
    schema = Schema.load(path)
    items = pd.DataFrame({"item_id": ["a"], "title": ["Peacock Stripes Scarf"], "usage": ["Casual"]})
    a = labels(Catalog.build(items, schema.columns, lexicon=schema.lexicon), "a")
    assert a["color"] == ["teal"] and a["style"] == ["casual"] and "pattern:striped" in a["other"]
    path.write_text("[lexicon]\nenabled = false\n")
    off = Schema.load(path)
    assert labels(Catalog.build(items, off.columns, lexicon=off.lexicon), "a")["color"] == []


def test_planted_column_catalogue_is_unchanged_by_the_lexicon():
    from recsys.lexicon import LexiconConfig

    items = pd.DataFrame({
        "item_id": ["a"], "title": ["Acme Red Cotton Dress"], "color": ["red"], "style": ["casual"],
        "material": ["cotton"],
    })
    on = Catalog.build(items)
    off = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
    assert on.attribute_labels(0) == off.attribute_labels(0) and on.texts == off.texts


def test_description_words_feed_other_after_the_title_words():
    cat = Catalog.build(pd.DataFrame({
        "item_id": ["a"],
        "title": ["Acme Shirt"],
        "description": ["The acme shirts: breathable and washable, breathable again"],
    }))
    other = labels(cat, "a")["other"]
    assert other[:2] == ["title:acme", "title:shirt"]
    # stopwords, words of the title (by stem: "shirts") and repeats are left out
    assert [x for x in other if x.startswith("description:")] == [
        "description:breathable", "description:washable", "description:again"]


def test_every_description_word_counts_up_to_the_per_item_bound():
    """No cut after the first few description words: a word at the end of a long description
    matches too; only the bound on work per item (MAX_ATTRIBUTES_PER_FACET) stops them."""
    from recsys.catalog import MAX_ATTRIBUTES_PER_FACET

    many = " ".join(f"word{i}x" for i in range(MAX_ATTRIBUTES_PER_FACET + 10))
    cat = Catalog.build(pd.DataFrame({"item_id": ["a"], "title": ["Hat"], "description": [many]}))
    described = [x for x in labels(cat, "a")["other"] if x.startswith("description:")]
    assert described == [f"description:word{i}x" for i in range(MAX_ATTRIBUTES_PER_FACET - 1)]


def test_rows_from_every_source_in_the_order_they_are_read():
    # two columns of one key, a repeated value in a cell, pairs, the lexicon, title and
    # description words: each item's row holds every attribute once, in the order of its
    # sources, and the vocabulary numbers attributes source by source, item by item
    items = pd.DataFrame({
        "item_id": ["a", "b", "c", "d", "e"],
        "title": ["Crimson Linen Shirt", "blue shirt", "Plain Hat", "Casual red hat", "Wool Scarf"],
        "color": ["red|red|navy", "", "green", "", ""],
        "Color ": ["navy", "teal", "", "", ""],
        "brand": ["Acme", "acme", "Zed", "", "Acme|Zed"],
        "attributes": ["material:linen|colour:Red|lonely", "style:Casual", "", "size:M", "fit:slim"],
        "description": ["a crimson shirt", "", "a plain hat", "red and casual", "warm wool"],
    })
    cat = Catalog.build(items)
    # an attribute's occurrences are (at par: its value and its title words, in the description):
    # "Linen" the pair's value and a title word; the lexicon's red in "d" read from its title and
    # said again in its description; title words the description repeats; a variant numbered when
    # its count is known, so the vocabulary holds only what some item has
    assert {f: [(a.key, a.value, a.occurrences) for a in v] for f, v in cat.vocab.items()} == {
        "quality": [],
        "color": [("color", "red", (1, 0)), ("color", "navy", (1, 0)), ("color", "green", (1, 0)),
                  ("color", "teal", (1, 0)), ("colour", "red", (1, 0)), ("title", "red", (1, 1))],
        "style": [("style", "casual", (1, 0)), ("title", "casual", (1, 1))],
        "other": [("brand", "acme", (1, 0)), ("brand", "zed", (1, 0)), ("size", "m", (1, 0)),
                  ("fit", "slim", (1, 0)), ("material", "linen", (2, 0)), ("title", "crimson", (1, 1)),
                  ("title", "shirt", (1, 1)), ("title", "blue", (1, 0)), ("title", "shirt", (1, 0)),
                  ("title", "plain", (1, 1)), ("title", "hat", (1, 1)), ("title", "hat", (1, 0)),
                  ("material", "wool", (1, 1)), ("title", "scarf", (1, 0)), ("description", "warm", (0, 1))],
    }
    rows = {f: (m.indptr.tolist(), m.indices.tolist()) for f, m in cat.item_attrs.items()}
    assert rows == {
        "quality": ([0, 0, 0, 0, 0, 0], []),
        "color": ([0, 3, 4, 5, 6, 6], [0, 1, 4, 3, 2, 5]),
        "style": ([0, 0, 1, 1, 2, 2], [0, 1]),
        "other": ([0, 4, 7, 10, 12, 18], [0, 4, 5, 6, 0, 7, 8, 1, 9, 10, 2, 11, 0, 1, 3, 12, 13, 14]),
    }
    for m in cat.item_attrs.values():
        assert m.dtype == np.float32 and m.indices.dtype == np.int32 and (m.data == 1).all()
    # the text BM25 reads: title, description, and the values not read out of those (each once)
    assert cat.texts == ["Crimson Linen Shirt a crimson shirt red navy red acme linen",
                         "blue shirt  teal casual acme", "Plain Hat a plain hat green zed",
                         "Casual red hat red and casual m", "Wool Scarf warm wool acme zed slim"]


def test_a_missing_description_gives_no_words_and_the_word_nan_is_a_word(tmp_path):
    # the readers make a missing cell "" (an empty CSV cell, a record's None), which gives no
    # words; "nan" written in a description is a word like any other
    from recsys.io.readers import items_from_records, read_items
    from recsys.lexicon import LexiconConfig

    path = tmp_path / "items.csv"
    path.write_bytes(b"item_id,title,description\na,Wool Hat,\nb,Wool Cap,nan\nc,Wool Scarf,warm\n")
    read, _ = read_items(path)
    given = items_from_records([{"item_id": "a", "title": "Wool Hat", "description": None},
                                {"item_id": "b", "title": "Wool Cap", "description": "nan"},
                                {"item_id": "c", "title": "Wool Scarf", "description": "warm"}])
    for items in (read, given):
        cat = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
        assert cat.texts == ["Wool Hat ", "Wool Cap nan", "Wool Scarf warm"]  # each word once, as written
        assert [labels(cat, i)["other"] for i in "abc"] == [
            ["title:wool", "title:hat"],
            ["title:wool", "title:cap", "description:nan"],
            ["title:wool", "title:scarf", "description:warm"],
        ]
        assert all(labels(cat, i)[f] == [] for i in "abc" for f in ("quality", "color", "style"))
    # no description column at all: the title alone, without the empty description's space
    cat = Catalog.build(read.drop(columns="description"), lexicon=LexiconConfig(enabled=False))
    assert cat.texts == ["Wool Hat", "Wool Cap", "Wool Scarf"]


def test_attribute_labels_are_each_items_own_whatever_the_cache_holds(monkeypatch):
    """`attribute_labels` keeps the labels of the items asked last: every answer is the item's
    own labels in the order read (as the catalogue's rows say), in fresh lists, however many
    items have pushed it out of the cache since."""
    import recsys.catalog as catalog_module

    monkeypatch.setattr(catalog_module, "LABEL_CACHE_ITEMS", 3)
    items = pd.DataFrame({"item_id": [f"i{n}" for n in range(8)],
                          "title": [f"{c} cotton dress {n}" for n, c in enumerate(["red", "blue"] * 4)],
                          "color": ["red", "blue"] * 4, "style": ["casual", "formal", "boho", "casual"] * 2})
    catalog = Catalog.build(items)

    def own(i: int) -> dict[str, list[str]]:
        return {f: [catalog.labels(f)[a] for a in catalog.attributes_of(i, f)] for f in catalog.facets}

    for i in [0, 1, 2, 0, 3, 4, 5, 0, 7, 6, 1, 1, 2]:
        got = catalog.attribute_labels(i)
        assert got == own(i), i
        got["color"].append("mutated")  # a caller's change stays with the caller
    assert catalog.attribute_labels(1) == own(1) and len(catalog._label_cache) <= 3


@pytest.mark.parametrize("cell, value", [
    ("$19.99", 19.99), ("19.99 USD", 19.99), ("EUR 5", 5.0), ("1,299.00", 1299.0), ("1,299", 1299.0),
    ("19,99 €", 19.99), ("£7", 7.0), ("1,234,567.5", 1234567.5), ("12", 12.0),
    # European thousands and Swiss whole amounts
    ("1.299,00 €", 1299.0), ("1 299,50 €", 1299.5), ("1\u202f299 €", 1299.0), ("1.299.000 IDR", 1299000.0),
    ("CHF 45.–", 45.0), ("45,- €", 45.0), ("-3,50 €", -3.5), ("1.299", 1.299),
    # a lone dot before three digits in a price or a whole amount separates thousands: no price
    # has a third decimal (German shops: "1.299,- €" was 1.299)
    ("1.299,- €", 1299.0), ("1.299,-", 1299.0), ("1.299 €", 1299.0), ("EUR 2.500", 2500.0),
    # currencies as shops write them, and a footnote's star
    ("19,99 Euro", 19.99), ("US$ 21.50", 21.5), ("Fr. 24.90", 24.9), ("24,90 SFr.", 24.9), ("19,99 €*", 19.99),
])
def test_a_price_as_exports_write_it_is_a_number(cell, value):
    """Google Merchant feeds say "15.00 USD", shops "$19.99" or "19,99 €": read as text, every
    price was an attribute of its own and no price filter held."""
    from recsys.catalog import _as_numbers

    column = pd.Series([cell] + [f"${n}.50" for n in range(30)])
    assert _as_numbers(column)[0] == pytest.approx(value)


def test_a_price_column_with_currency_signs_is_bucketed_and_filtered():
    items = pd.DataFrame({"item_id": [f"p{n}" for n in range(40)], "title": [f"lamp {n}" for n in range(40)],
                          "price": [f"${n * 5},00" if n % 2 else f"{n * 5}.00 USD" for n in range(40)]})
    cat = Catalog.build(items)
    assert all(a.key == "#price" for a in cat.vocab["other"] if "price" in a.key)
    assert np.isfinite(cat.numbers["price"]).all()
    cheap = cat.filter_mask({"price": NumberRange(None, 20)})
    assert sorted(cat.item_ids[i] for i in np.flatnonzero(cheap)) == ["p0", "p1", "p2", "p3", "p4"]


def test_a_text_column_is_not_read_as_prices():
    from recsys.catalog import _as_numbers

    assert np.isnan(_as_numbers(pd.Series(["red", "blue", "USD", "navy"] * 10))).all()


def test_a_tags_column_lists_its_values_with_commas():
    """Shopify's `Tags` say "summer, cotton, casual": three values, each counted and filtered on
    its own; a comma anywhere else is part of the value."""
    items = pd.DataFrame({"item_id": ["t1", "t2", "t3"], "title": ["Shirt", "Dress", "Cap"],
                          "Tags": ["summer, cotton, casual", "cotton|linen", ""],
                          "brand": ["Smith, Jones & Co", "Acme", "Acme"]})
    cat = Catalog.build(items)
    labels = {cat.item_ids[i]: sorted(lab for lab in cat.attribute_labels(i)["other"] if not lab.startswith("title:"))
              for i in range(3)}
    assert labels["t1"] == ["brand:smith, jones & co", "tags:casual", "tags:cotton", "tags:summer"]
    assert labels["t2"] == ["brand:acme", "tags:cotton", "tags:linen"]
    assert sorted(cat.item_ids[i] for i in np.flatnonzero(cat.filter_mask({"tags": ["cotton"]}))) == ["t1", "t2"]


def test_a_shops_own_records_are_not_read_as_attributes():
    """A Shopify export's `Cost per item` and stock, WooCommerce's `Tax class`, Magento's
    `created_at`: facet values a shopper could filter by, words that matched queries ("'pebble'
    matched tax class:parent"). Left out and said; a schema that maps one reads it."""
    from recsys.catalog import column_kinds

    items = pd.DataFrame({"item_id": ["s1", "s2", "s3"], "title": ["Shirt", "Dress", "Cap"],
                          "Vendor": ["Harbor", "Nordic", "Harbor"], "Cost per item": ["12.5", "30", "4"],
                          "Variant Inventory Qty": ["3", "0", "12"], "Tax class": ["parent"] * 3,
                          "created_at": ["3/15/23, 2:13 PM"] * 3,
                          "configurable_variation_labels": ["size=Size,color=Color"] * 3})
    cat = Catalog.build(items)
    assert {a.key for a in cat.vocab["other"]} == {"vendor", "title"} and cat.vocab["color"] == []
    kinds = column_kinds(items, {})
    assert kinds.bookkeeping == ["Cost per item", "Variant Inventory Qty", "Tax class", "created_at",
                                 "configurable_variation_labels"] and kinds.specs == []
    mapped = Catalog.build(items, {"cost per item": "other"})
    assert "cost per item" in {a.key.lstrip("#") for a in mapped.vocab["other"]}


def test_woocommerce_categories_are_a_list_of_paths():
    """WooCommerce's `Categories` say "Kitchen > Cookware, Sale": two paths. "Sale" starts no
    other cell, so the comma was read as part of the level, `cookware, sale`, and a filter on
    `cookware` missed the Dutch oven on sale. A comma inside a name is written `\\,`."""
    items = pd.DataFrame({"item_id": ["d1", "p2", "t3", "c4"], "title": ["Dutch oven", "Pan", "Table", "Chair"],
                          "Categories": ["Kitchen > Cookware, Sale", "Kitchen > Cookware",
                                         "Furniture > Tables\\, Chairs", "Furniture > Tables\\, Chairs, Sale"]})
    cat = Catalog.build(items)

    def selected(value: str) -> list[str]:
        return sorted(cat.item_ids[i] for i in np.flatnonzero(cat.filter_mask({"categories": [value]})))

    assert selected("cookware") == ["d1", "p2"] and selected("sale") == ["c4", "d1"]
    assert selected("tables, chairs") == ["c4", "t3"] and selected("kitchen") == ["d1", "p2"]


def test_a_column_of_links_is_not_read_as_attributes():
    """An export's `image_link` put `https`, the host and the file name's words on every item:
    "black" matched the picture `black-shirt.jpg`. A schema that maps the column reads it."""
    items = pd.DataFrame({"item_id": ["s1", "s2", "s3"], "title": ["Shirt", "Dress", "Cap"],
                          "image_link": [f"https://cdn.example.com/{c}-shirt.jpg" for c in ("black", "red", "blue")],
                          "brand": ["Acme", "Acme", "Borea"]})
    cat = Catalog.build(items)
    assert {a.key for a in cat.vocab["other"]} == {"brand", "title"} and cat.spec_items == 0  # nor spec lists
    assert "black" not in cat.texts[0]
    mapped = Catalog.build(items, overrides={"image_link": "other"})
    assert "image_link" in {a.key for a in mapped.vocab["other"]}


@pytest.mark.parametrize("name, code", [("gtin", True), ("GTIN13", True), ("Variant Barcode", True), ("mpn", True),
                                        ("ISBN", True), ("ID", True), ("price", False), ("rating", False),
                                        ("year", False), ("grid", False)])
def test_which_columns_hold_codes(name, code):
    from recsys.catalog import is_code_column

    assert is_code_column(name) is code


def test_a_column_of_codes_is_text_a_shopper_can_type():
    """A Merchant feed's `gtin` is digits: read as a number it was bucketed
    (`gtin:5900000000000+` on a fifth of the items) and its code matched nothing."""
    n = 40
    items = pd.DataFrame({"item_id": [f"i{i}" for i in range(n)], "title": [f"lamp {i}" for i in range(n)],
                          "gtin": [str(5901234123457 + 7919 * i) for i in range(n)],
                          "price": [str(10 + i) for i in range(n)]})
    cat = Catalog.build(items)
    assert set(cat.buckets) == {"price"}
    assert "gtin:5901234131376" in cat.attribute_labels(1)["other"]
    assert cat.item_ids[int(np.flatnonzero(cat.filter_mask({"gtin": ["5901234131376"]}))[0])] == "i1"


def test_a_column_of_any_name_that_lists_values_with_commas_is_split_like_tags():
    """A dietary column's "vegan, gluten-free" was one value: a "vegan" filter found 35 of a
    shop's 189 vegan products and the facet listed each combination apart."""
    items = pd.DataFrame({"item_id": list("abcdef"), "title": ["Oat drink", "Cheddar", "Bread", "Lager", "Tofu", "Ale"],
                          "dietary": ["vegan, gluten-free", "vegetarian", "vegan", "gluten-free, organic",
                                      "vegan, organic", ""],
                          "brand": ["Smith, Jones & Co", "Acme", "Acme", "Smith, Jones & Co", "Oatly", "Brew"],
                          "size": ["1,5 l", "200 g", "500 g", "0,5 l", "400 g", "0,33 l"]})
    cat = Catalog.build(items)
    assert cat.filter_mask({"dietary": ["vegan"]}).tolist() == [True, False, True, False, True, False]
    assert cat.filter_mask({"dietary": ["gluten-free"]}).tolist() == [True, False, False, True, False, False]
    labels = cat.attribute_labels(0)["other"]
    assert "dietary:vegan" in labels and "dietary:gluten-free" in labels
    assert "brand:smith, jones & co" in labels  # its parts recur nowhere: one value
    assert "size:1,5 l" in labels  # a decimal comma is no list
