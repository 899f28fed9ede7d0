"""Free-text columns other than `description` (a book's `synopsis`, a `features` column, Amazon's
`bullet_point_1..5`) are read as the description's words (`recsys.catalog.prose_columns`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recsys.catalog import Catalog, column_kinds
from training.config import TrainConfig
from training.start import untrained_recommender

WORDS = ("lazy susan turntable spins smoothly oak shelf reach kitchen corner cabinet storage wide tray "
         "bamboo rustic handle stainless bowl serving rotating organizer pantry spice rack").split()
NO_ROWS = pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []})


def _text(i: int, n: int) -> str:
    rng = np.random.default_rng(i)
    return " ".join(rng.choice(WORDS, size=n).tolist())


def _items(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({
        "item_id": [f"i{k}" for k in range(n)],
        "title": [f"{WORDS[k % len(WORDS)].title()} {WORDS[(3 * k) % len(WORDS)]} set" for k in range(n)],
        "brand": [("Acme", "Borea", "Corvo")[k % 3] for k in range(n)],
        "material": [("oak wood", "bamboo", "stainless steel")[k % 3] for k in range(n)],
        "features": [_text(k, 12 + k % 9) for k in range(n)],
    })


def test_a_long_distinct_text_column_is_prose_and_short_or_repeated_ones_are_not():
    items = _items()
    items["tags"] = [", ".join(_text(k, 9).split()) for k in range(len(items))]  # a tags column: values
    items["sku"] = [f"{_text(k, 9)}" for k in range(len(items))]  # codes, however long
    items["care"] = "Wipe clean with a damp cloth and dry at once, never in a dishwasher"  # one text for all
    kinds = column_kinds(items, {})
    assert kinds.prose == ["features"]
    assert "features" not in kinds.columns and {"brand", "material", "tags", "sku", "care"} <= set(kinds.columns)
    assert column_kinds(items, {"features": "other"}).prose == []  # a schema that maps it keeps it a value


def test_a_prose_column_reads_as_the_description_would():
    """The same text as `features` or as `description`: the same attributes, item texts and
    untrained scores (on CrowdFlower with its description named `features`, the start's
    known-item MRR was 0.952 of BM25's, 1.014 as `description`)."""
    as_features = _items()
    as_description = as_features.rename(columns={"features": "description"})
    a, b = Catalog.build(as_features), Catalog.build(as_description)
    assert a.texts == b.texts
    for f in a.facets:
        assert [x.label for x in a.vocab[f]] == [x.label for x in b.vocab[f]]
        assert (a.item_attrs[f] != b.item_attrs[f]).nnz == 0
    ra, rb = (untrained_recommender(c, NO_ROWS, TrainConfig(seed=0)) for c in (a, b))
    for query in ("lazy susan", "oak turntable", "bamboo spice rack", "acme"):
        np.testing.assert_allclose(ra.scores(query), rb.scores(query), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("columns", [["bullet_1", "bullet_2"], ["description", "bullet_1"]])
def test_several_prose_columns_join_the_description(columns):
    items = _items().drop(columns=["features"])
    for k, column in enumerate(columns):
        items[column] = [_text(100 * k + i, 10) for i in range(len(items))]
    joined = items.drop(columns=columns)
    joined["description"] = [" ".join(row) for row in items[columns].itertuples(index=False)]
    a, b = Catalog.build(items), Catalog.build(joined)
    assert a.texts == b.texts
    assert {x.label for x in a.vocab["other"]} == {x.label for x in b.vocab["other"]}


def test_recsys_train_says_which_columns_it_read_as_free_text(tmp_path, capsys):
    from cli.main import main

    items = tmp_path / "items.csv"
    _items().to_csv(items, index=False)
    assert main(["train", "--items", str(items), "--out", str(tmp_path / "a")]) == 0
    assert ("features: free text, read as the description's words (a schema's [columns] can map them as "
            "values)") in capsys.readouterr().err
