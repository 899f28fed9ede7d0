"""The synthetic generator: determinism, file contracts and the ground truth it promises."""

from __future__ import annotations

import csv

import pandas as pd
import pytest

from recsys import synthetic
from recsys.tokenize import match_key, words

FILES = ("items.csv", "interactions.csv", "judgments.csv", "probes.csv")
COLUMNS = {
    "items.csv": ["item_id", "title", "color", "style", "quality", "category", "material", "brand",
                  "price", "rating"],
    "interactions.csv": ["query", "item_id", "label", "user_id", "timestamp"],
    "judgments.csv": ["query", "item_id", "grade"],
    "probes.csv": ["query", "word", "facet", "value"],
}
SMALL = dict(n_items=300, n_queries=400)


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    out = tmp_path_factory.mktemp("syn")
    summary = synthetic.generate(out, seed=0, **SMALL)
    return out, summary


@pytest.fixture(scope="module")
def data(gen):
    out, _ = gen
    read = lambda f: pd.read_csv(out / f, dtype=str, keep_default_na=False)  # noqa: E731
    return {f: read(f) for f in FILES}


def _catalogue_keys(items: pd.DataFrame) -> set[str]:
    keys: set[str] = set()
    for col in items.columns:
        if col in ("item_id", "price", "rating"):
            continue
        for text in items[col].unique():
            keys.update(match_key(w) for w in words(text.replace("|", " ")))
    return keys


def _facet_values(items: pd.DataFrame) -> dict[str, set[str]]:
    styles = {s for cell in items["style"] for s in cell.split("|")}
    return {
        "color": set(items["color"]),
        "style": styles,
        "quality": set(items["quality"]),
        "other": set(items["category"]) | set(items["material"]) | set(items["brand"]),
    }


def _item_has(row: pd.Series, facet: str, value: str) -> bool:
    if facet == "style":
        return value in row["style"].split("|")
    if facet == "other":
        return value in (row["category"], row["material"], row["brand"])
    return row[facet] == value


def _value_set(query: str, index: dict[str, tuple[str, str]]) -> frozenset:
    return frozenset(index[w] for w in query.split() if w in index)


def test_deterministic_per_seed(gen, tmp_path):
    out, _ = gen
    synthetic.generate(tmp_path / "same", seed=0, **SMALL)
    synthetic.generate(tmp_path / "other", seed=1, **SMALL)
    for f in FILES:
        assert (tmp_path / "same" / f).read_bytes() == (out / f).read_bytes(), f
    assert (tmp_path / "other" / "items.csv").read_bytes() != (out / "items.csv").read_bytes()
    assert (tmp_path / "other" / "interactions.csv").read_bytes() != (
        out / "interactions.csv"
    ).read_bytes()


def test_columns_and_counts(gen, data):
    out, summary = gen
    for f in FILES:
        with open(out / f, encoding="utf-8", newline="") as fh:
            assert next(csv.reader(fh)) == COLUMNS[f], f
    items = data["items.csv"]
    assert len(items) == SMALL["n_items"] == summary["items"]
    assert items["item_id"].is_unique and items["item_id"].str.match(r"^SKU-\d{6}$").all()
    assert (items["title"].str.len() > 0).all()
    price = items["price"].astype(float)
    rating = items["rating"].astype(float)
    assert (price > 0).all() and rating.between(1.0, 5.0).all()
    assert items["rating"].str.match(r"^\d\.\d$").all()
    multi = items["style"].str.contains("|", regex=False).mean()
    assert 0.03 < multi < 0.2
    # quality drives price and rating
    by_q = pd.DataFrame({"q": items["quality"], "p": price, "r": rating}).groupby("q").mean()
    assert by_q.loc["premium", "p"] > by_q.loc["standard", "p"] > by_q.loc["budget", "p"]
    assert by_q.loc["premium", "r"] > by_q.loc["budget", "r"]
    assert summary["interactions"] == len(data["interactions.csv"])
    assert summary["judgments"] == len(data["judgments.csv"])
    assert summary["probes"] == len(data["probes.csv"])
    assert summary["heldout_queries"] == data["judgments.csv"]["query"].nunique() >= 40
    assert set(data["interactions.csv"]["item_id"]) <= set(items["item_id"])
    assert set(data["judgments.csv"]["item_id"]) <= set(items["item_id"])


def test_items_share_most_attributes(data):
    items = data["items.csv"]
    facets = ["color", "style", "quality", "category", "material", "brand"]
    # many items have a sibling that differs in exactly one facet
    keyed = items[facets].astype(str)
    has_sibling = pd.Series(False, index=items.index)
    for f in facets:
        rest = [g for g in facets if g != f]
        sizes = keyed.groupby(rest)[f].transform("nunique")
        has_sibling |= sizes > 1
    assert has_sibling.mean() > 0.4


def test_vocabulary_is_consistent():
    index = synthetic.word_index()  # raises on an ambiguous word
    canonical = {v.lower() for f in synthetic.INTENT_FACETS for v in synthetic.facet_values(f)}
    canon_keys = {match_key(w) for v in canonical for w in words(v)}
    extra = set(synthetic.FILLER_WORDS) | set(synthetic.NOISE_WORDS)
    for word in set(index) - canonical:
        assert words(word) == [word], word  # one word per value
        assert match_key(word) not in canon_keys, word
    for word in extra:
        assert word not in index and match_key(word) not in canon_keys, word
    for facet in ("quality", "color", "style", "material", "category"):
        for value in synthetic.facet_values(facet):
            assert len(synthetic.synonyms(facet, value)) >= 3, (facet, value)


def test_heldout_intents_never_in_training(data):
    inter, probes, judg = data["interactions.csv"], data["probes.csv"], data["judgments.csv"]
    index = synthetic.word_index()
    train_queries = set(inter["query"])
    held_queries = set(judg["query"])
    assert set(probes["query"]) == held_queries
    assert not (train_queries & held_queries)
    train_sets = {_value_set(q, index) for q in train_queries}
    train_words = {w for q in train_queries for w in q.split()}
    for q, rows in probes.groupby("query"):
        assert _value_set(q, index) not in train_sets, q
        assert 2 <= len(rows) <= 3
        # the words themselves do occur in training, in other combinations (unless no word
        # for that value does)
        for word, (facet, value) in zip(rows["word"], map(index.get, rows["word"])):
            spellings = {value.lower(), *synthetic.synonyms(facet, value)}
            assert word in train_words or not (spellings & train_words), (q, word)


def test_probes_point_at_catalogue_values(data):
    items, probes = data["items.csv"], data["probes.csv"]
    values = _facet_values(items)
    index = synthetic.word_index()
    for row in probes.itertuples():
        assert row.word in row.query.split(), row
        assert row.facet in ("quality", "color", "style", "other"), row
        assert row.value in values[row.facet], row
        facet, value = index[row.word]
        assert value == row.value and synthetic.FACET_OF[facet] == row.facet, row


def test_query_synonyms_never_in_catalogue(data):
    items, inter, judg = data["items.csv"], data["interactions.csv"], data["judgments.csv"]
    cat_words = {w for col in ("title", "color", "style", "quality", "category", "material",
                               "brand") for t in items[col].unique()
                 for w in words(t.replace("|", " "))}
    cat_keys = _catalogue_keys(items)
    index = synthetic.word_index()
    canonical = {v.lower() for f in synthetic.INTENT_FACETS for v in synthetic.facet_values(f)}
    query_words = {w for q in set(inter["query"]) | set(judg["query"]) for w in q.split()}
    unknown = query_words - set(index) - set(synthetic.FILLER_WORDS) - set(synthetic.NOISE_WORDS)
    assert not unknown
    syns = {w for w in query_words if w in index and w not in canonical}
    assert len(syns) > 50
    noise = query_words & (set(synthetic.NOISE_WORDS) | set(synthetic.FILLER_WORDS))
    for w in syns | noise:
        assert w not in cat_words and match_key(w) not in cat_keys, w


def test_grades_follow_the_ground_truth(data):
    items = data["items.csv"].set_index("item_id")
    judg, probes = data["judgments.csv"], data["probes.csv"]
    intents = {q: list(zip(r["facet"], r["value"])) for q, r in probes.groupby("query")}
    assert set(judg["grade"]) <= {"1", "2", "3"}
    for q, rows in judg.groupby("query"):
        assert (rows["grade"] == "3").any(), q
        for item_id, grade in zip(rows["item_id"], rows["grade"]):
            has = [_item_has(items.loc[item_id], f, v) for f, v in intents[q]]
            if grade == "3":
                assert all(has), (q, item_id)
            else:
                assert not all(has) and any(has), (q, item_id, grade)
    # every fully matching item is listed with grade 3
    first = next(iter(intents))
    full = [i for i, row in items.iterrows()
            if all(_item_has(row, f, v) for f, v in intents[first])]
    listed = set(judg.loc[(judg["query"] == first) & (judg["grade"] == "3"), "item_id"])
    assert listed == set(full)


def test_labels_have_clicks_and_purchases(data):
    labels = data["interactions.csv"]["label"].value_counts()
    assert set(labels.index) == {"0", "1", "2"}
    assert labels["0"] > labels["1"] > labels["2"] > 0
    sizes = data["interactions.csv"].groupby(["user_id", "timestamp"]).size()
    assert sizes.max() <= 20


def test_clicks_prefer_matching_items(data):
    """Clicks carry signal: clicked items match more of the query than shown-only ones."""
    items = data["items.csv"].set_index("item_id")
    inter = data["interactions.csv"].head(3000)
    index = synthetic.word_index()
    share = []
    for q, item_id in zip(inter["query"], inter["item_id"]):
        values = _value_set(q, index)
        row = items.loc[item_id]
        has = [_item_has(row, synthetic.FACET_OF[f], v) for f, v in values]
        share.append(sum(has) / len(has))
    inter = inter.assign(share=share)
    by_label = inter.groupby("label")["share"].mean()
    assert by_label["1"] > by_label["0"] + 0.1
    assert by_label["2"] > by_label["1"]


def test_exact_word_overlap_is_not_enough(data):
    probes = data["probes.csv"]
    canonical_word = probes["word"] == probes["value"].str.lower()
    has_synonym = (~canonical_word).groupby(probes["query"]).any()
    assert has_synonym.mean() > 0.6
    # and the held-out queries carry words that match nothing, too
    queries = probes["query"].unique()
    noisy = [q for q in queries if set(q.split()) & set(synthetic.NOISE_WORDS)]
    assert abs(len(noisy) / len(queries) - synthetic.P_NOISE_WORD) < 0.15, (len(noisy), len(queries))


def test_default_size(tmp_path):
    summary = synthetic.generate(tmp_path)
    assert 40_000 <= summary["interactions"] <= 80_000
    assert summary["heldout_queries"] >= 100
