"""Tokens and match keys; the service stems query words from many threads at once."""

from __future__ import annotations

import random
import sys
import threading

from snowballstemmer.english_stemmer import EnglishStemmer

from recsys import tokenize
from recsys.tokenize import match_key


def test_the_c_stemmer_is_used_and_stems_as_snowballs_python_one():
    """PyStemmer (a dependency) is what snowballstemmer hands out when installed: the service's
    stems must be the pure-Python Snowball English stems a model's words were made with."""
    assert type(tokenize._STEMMER).__module__ == "Stemmer"
    rng = random.Random(2)
    suffixes = ["", "s", "es", "ies", "ing", "ed", "ly", "ness", "ational", "ization", "fulness", "'s"]
    words = ["dresses", "lighting", "leds", "men's", "skies", "dying", "ugly", "news", "generously", "café",
             "straße", "кофе", "日本語", "y", "ab", "showerhead", "fiberglass", "stainless", "cordless"]
    words += ["".join(rng.choice("abcdefghijklmnoprstuvwyz") for _ in range(rng.randint(2, 12))) + rng.choice(suffixes)
              for _ in range(20000)]
    python = EnglishStemmer()
    c = tokenize._STEMMER
    assert [c.stemWord(w) for w in words] == [python.stemWord(w) for w in words]


def test_concurrent_stemming_is_correct():
    rng = random.Random(1)
    suffixes = ["ing", "ed", "ness", "ational", "ies", "ly", "s", "fulness"]
    words = list({"".join(rng.choice("abcdefghilmnoprstuy") for _ in range(rng.randint(4, 12)))
                  + rng.choice(suffixes) for _ in range(6000)})
    reference = EnglishStemmer()
    expected = {w: reference.stemWord(w) for w in words}
    wrong, errors = [], []

    def stem(chunk):
        for w in chunk:
            try:
                if match_key(w) != expected[w]:
                    wrong.append(w)
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=stem, args=(words[i::8],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors and not wrong, (errors[:3], wrong[:3])


def test_an_accented_word_that_folds_into_a_stop_word_is_a_word():
    """French "thé" (tea) folded to the stop word "the": a search for "thé" had no word at all."""
    from recsys.tokenize import content_keys, words

    assert words("Thé vert à la menthe, the best") == ["thé", "vert", "à", "la", "menthe", "the", "best"]
    assert content_keys("THÉ vert") == ["thé", "vert"] and content_keys("the tea") == ["tea"]
    assert words("Küche über Müll") == ["kuche", "uber", "mull"]  # other accents fold as before


def test_a_search_for_the_french_word_for_tea_finds_the_tea():
    import pandas as pd

    from recsys.catalog import Catalog
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    items = pd.DataFrame({"item_id": ["T1", "C1", "M1"],
                          "title": ["Thé vert à la menthe", "Café moulu", "Tasse à thé en porcelaine"]})
    events = pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []})
    rec = untrained_recommender(Catalog.build(items), events, TrainConfig(seed=0))
    got = rec.recommend("thé vert", k=3)
    assert got.tokens == ["thé", "vert"] and got.items[0].item_id == "T1"
    assert {it.item_id for it in got.items if it.explanation.matched} == {"T1", "M1"}


def test_an_elided_article_is_no_word_and_the_word_after_it_is():
    """French "l'eau" and "d'été" were one word each: "eau" and "été" found neither."""
    from recsys.tokenize import words

    assert words("Eau de toilette l'eau d'été, qu'il, dell'acqua, L'Oréal") == [
        "eau", "de", "toilette", "eau", "ete", "il", "acqua", "oreal"]
    # no elision before a consonant, nor of a longer word: English stays whole
    assert words("Men's shirt o'clock c'mon women's rock'n'roll") == [
        "men's", "shirt", "o'clock", "c'mon", "women's", "rock'n", "roll"]
    assert words("Thé à l'orange") == ["thé", "à", "orange"]


def test_a_hyphenated_number_of_nine_digits_or_more_is_one_word():
    """An ISBN typed without its hyphens found nothing, and with them its groups matched other
    books' ("978", "7"); "band 3" matched the "3" of 17 ISBNs."""
    from recsys.tokenize import words

    assert words("ISBN 978-0-490-81935-1, Band 3") == ["isbn", "9780490819351", "band", "3"]
    assert words("call 1-800-591-3869") == ["call", "18005913869"]
    # sizes and short codes keep their groups
    assert words("6-12-Teeth 2-in-1 1-1/2 in. SP-LAMP-086 000-12") == [
        "6", "12", "teeth", "2", "in", "1", "1", "1/2", "in", "sp", "lamp", "086", "000", "12"]


def test_a_book_is_found_by_its_isbn_typed_either_way():
    import pandas as pd

    from recsys.catalog import Catalog
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    items = pd.DataFrame({"item_id": ["B1", "B2", "B3"], "title": ["Die Enkelin", "Selbs Justiz", "Band 3 der Reihe"],
                          "isbn": ["978-0-490-81935-1", "9780050325827", "978-3-257-07003-7"]})
    events = pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []})
    rec = untrained_recommender(Catalog.build(items), events, TrainConfig(seed=0))
    for query, want in (("9780490819351", "B1"), ("978-0-490-81935-1", "B1"), ("978-0-050-32582-7", "B2"),
                        ("9780050325827", "B2")):
        got = rec.recommend(query, k=3)
        assert got.items[0].item_id == want and got.unmatched_tokens == [], (query, got)
        assert [it.item_id for it in got.items if it.explanation.matched] == [want], query
    band = rec.recommend("band 3", k=3)
    assert [it.item_id for it in band.items if it.explanation.matched] == ["B3"]
