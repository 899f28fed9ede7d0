"""Facet values read out of text: shades to canonical colours, phrases, no hits inside words."""

from __future__ import annotations

import pytest

from recsys.lexicon import BUILTIN, Lexicon, LexiconConfig, default_lexicon, extract


def values(text: str, kind: str | None = None, lexicon: Lexicon | None = None) -> list[str]:
    hits = (lexicon or default_lexicon()).matches(text)
    return [m.value for m in hits if kind is None or m.kind == kind]


@pytest.mark.parametrize(("word", "canonical"), [
    ("crimson", "red"), ("Scarlet", "red"), ("burgundy", "red"), ("maroon", "red"),
    ("navy", "blue"), ("cobalt", "blue"), ("Navy Blue", "blue"),
    ("ivory", "white"), ("cream", "white"), ("off-white", "white"),
    ("charcoal", "grey"), ("slate", "grey"), ("gray", "grey"),
    ("oil rubbed bronze", "bronze"), ("Brushed Nickel", "nickel"), ("polished chrome", "chrome"),
    ("brass", "brass"), ("copper", "copper"), ("turquoise", "teal"), ("espresso", "brown"),
])
def test_shades_and_finishes_map_to_a_canonical_colour(word, canonical):
    assert values(f"Acme {word} lamp", "color") == [canonical]


def test_extract_gives_facet_key_value_triples():
    assert extract("Crimson Cotton Dress") == [
        ("color", "title", "red"), ("other", "material", "cotton"),
    ]
    assert extract("Crimson Cotton Dress", source="description")[0] == ("color", "description", "red")
    assert extract("Rustic Heavy Duty Shelf") == [
        ("style", "title", "rustic"), ("quality", "title", "heavy duty"),
    ]


def test_multi_word_entries_match_as_phrases():
    lex = default_lexicon()
    assert values("Stainless Steel Sink", "material") == ["stainless steel"]  # not also "steel"
    assert values("Heavy-Duty Tarp", "quality") == ["heavy duty"]
    assert values("heavy tarp", "quality") == []  # one word of a phrase is not the phrase
    assert values("Oil Rubbed Bronze Cup Pull", "color") == ["bronze"]  # once, not twice
    assert values("Commercial Grade Shelving", "quality") == ["commercial grade"]
    assert values("Industrial Grade Fan", "style") == []  # the longer phrase wins over "industrial"
    assert values("Industrial Pendant", "style") == ["industrial"]
    assert values("Mid-Century Modern Chair", "style") == ["mid century"]
    assert lex.lookup("stainless steel") == {"color": "stainless", "material": "stainless steel"}


@pytest.mark.parametrize("text", [
    "Redwood Planter",  # red
    "Standard Toilet Seat",  # tan
    "Bluetooth Speaker",  # blue
    "Greenworks 40V Trimmer",  # green
    "Whitehall Mailbox",  # white
    "Goldendoodle Bed",  # gold, golden
    "Tanning Lotion",  # tan
    "Pinkerton Rake",  # pink
])
def test_no_colour_inside_other_words(text):
    assert values(text, "color") == []


def test_redwood_is_a_material_not_a_colour():
    assert extract("Redwood Planter") == [("other", "material", "redwood")]


def test_stop_phrases_hide_brands_and_fixed_expressions():
    assert extract("BLACK & DECKER 20V Drill") == []
    assert extract("Black and Decker Drill") == []
    assert values("Weber Charcoal Grill", "color") == []
    assert extract("Charcoal Grey Rug") == [("color", "title", "grey")]
    assert extract("BLACK+DECKER Vacuum") == []
    assert values("Commercial Electric LED Light", "quality") == []


def test_materials_feed_other_with_their_kind_as_key():
    hits = extract("Solid Oak and Tempered Glass Table")
    assert ("other", "material", "oak") in hits and ("other", "material", "glass") in hits
    assert ("other", "material", "faux leather") in extract("Leatherette Sofa")


def test_canonical_value_and_several_values_in_order():
    assert values("Black and White Striped Shirt", "color") == ["black", "white"]
    assert extract("red red crimson") == [("color", "title", "red")]  # distinct hits only


def test_schema_entries_extend_and_override_the_builtin_lexicon():
    lex = Lexicon({"color": {"teal": ["peacock", "petrol"], "blue": ["navy"]},
                   "pattern": {"striped": ["stripes"]}})
    assert values("Peacock Petrol Scarf", "color", lex) == ["teal", "teal"]
    assert extract("Navy Dress") == [("color", "title", "blue")]
    assert lex.extract("Crimson Stripes Scarf") == [
        ("color", "title", "red"), ("other", "pattern", "striped"),
    ]
    assert Lexicon({"color": {"teal": ["peacock"]}}).lookup("navy") == {"color": "blue"}


def test_schema_entry_can_turn_a_stop_phrase_into_a_value():
    lex = Lexicon({"color": {"grey": ["charcoal grill"]}})
    assert values("Charcoal Grill Cover", "color", lex) == ["grey"]


def test_builtin_off_keeps_only_the_schema_words():
    lex = LexiconConfig(builtin=False, entries={"style": {"boho": ["hippie"]}}).build()
    assert lex.extract("Red Hippie Skirt") == [("style", "title", "boho")]


def test_disabled_config_builds_no_lexicon():
    assert LexiconConfig(enabled=False).build() is None
    assert LexiconConfig().build() is default_lexicon()


def test_config_round_trips_through_json():
    cfg = LexiconConfig(True, False, {"color": {"teal": ["peacock"]}})
    assert LexiconConfig.from_json(cfg.to_json()) == cfg
    assert LexiconConfig.from_json(None) == LexiconConfig()


def test_every_builtin_synonym_reaches_its_canonical_value():
    lex = default_lexicon()
    for kind, table in BUILTIN.items():
        for canonical, synonyms in table.items():
            for word in (canonical, *synonyms):
                assert lex.lookup(word).get(kind) == canonical, (kind, word)
