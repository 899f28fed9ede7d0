"""Logs larger than memory: interactions.csv read a chunk at a time (recsys.io.readers.InteractionStream)
and kept as distinct (query, item, label) rows with counts (training.groups.InteractionCounts)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recsys.baselines import ClickAssociationRanker, PopularityRanker
from recsys.errors import DataError
from recsys.io.readers import InteractionStream, read_interactions
from training.groups import InteractionCounts, make_groups

ITEMS = {"A1", "B2", "C3", "Dé"}

# Tiny chunks and blocks: every file below spans several of both, so records, lines, "\r\n" and
# multi-byte characters are cut at every place a boundary can fall.
SMALL = {"chunk_rows": 2, "block_bytes": 5}

GOOD = {
    "duplicates across chunks, empty weights, an ignored column, quotes over lines": (
        "query,item_id,label,weight,note\n"
        "red dress,A1,1,2,x\n"
        "red dress,B2,0,,y\n"
        '"blue\nshirt",C3,1,1,z\n'
        "red dress,A1,1,2,x\n"
        "crème,Dé,3,0.5,\n"
        "red dress,B2,0,,w\n"
        "crème,Dé,3,0.5,\n"
    ),
    "crlf endings, a byte order mark, events for labels": (
        "\ufeffquery,item_id,event,user_id\r\n"
        "red dress,A1,click,u1\r\n"
        "red dress,A1,click,u2\r\n"
        "\r\n"
        "red dress,B2,impression,u1\r\n"
        "red dress,A1,click,u1\r\n"
    ),
}

BAD = {
    "a bad label in a later chunk": "query,item_id,label\nq,A1,1\nq,B2,0\nq,C3,1\nq,A1,-2\n",
    "an unknown item in a later chunk": "query,item_id,label\nq,A1,1\nq,B2,0\nq,C3,1\nq,ZZ,1\n",
    "bad lines in two chunks": "query,item_id,label\nq,A1,1\nq,B2\nq,C3,1\nq,A1,1\nq,B2,1,9\n",
    "a missing column": "query,item,label\nq,A1,1\n",
    "only a header": "query,item_id,label\n\n",
    "an empty file": "",
    "a query left empty": "query,item_id,label\nq,A1,1\nq,B2,1\n,C3,1\n",
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "interactions.csv"
    path.write_bytes(text.encode("utf-8"))
    return path


def _streamed(path: Path, **options) -> tuple[pd.DataFrame, object]:
    stream = InteractionStream(path, ITEMS, **{**SMALL, **options})
    chunks = list(stream)
    return pd.concat(chunks, ignore_index=True), stream.report


@pytest.mark.parametrize("case", list(GOOD))
def test_streamed_rows_and_report_are_read_interactions_ones(tmp_path, case):
    path = _write(tmp_path, GOOD[case])
    whole, report = read_interactions(path, ITEMS)
    streamed, streamed_report = _streamed(path)
    pd.testing.assert_frame_equal(streamed, whole)
    assert streamed_report == report
    assert report.dropped_duplicates and report.warnings  # the case holds what it says


def test_skipped_lines_and_items_are_reported_as_for_a_whole_file(tmp_path):
    path = _write(tmp_path, "query,item_id,label\nq,A1,1\nq,ZZ,1\nq,B2\nq,C3,1\nq,YY,0\nq,A1,1,1\nq,A1,1\n")
    whole, report = read_interactions(path, ITEMS, on_bad_lines="skip")
    streamed, streamed_report = _streamed(path, on_bad_lines="skip")
    pd.testing.assert_frame_equal(streamed, whole)
    assert streamed_report == report
    assert report.skipped_lines == [3, 4, 6, 7] and report.dropped_duplicates == 1


@pytest.mark.parametrize("case", list(BAD))
def test_a_problem_is_named_as_for_a_whole_file(tmp_path, case):
    path = _write(tmp_path, BAD[case])
    with pytest.raises(DataError) as whole:
        read_interactions(path, ITEMS, unknown_items="error")
    with pytest.raises(DataError) as streamed:
        _streamed(path, unknown_items="error")
    assert str(streamed.value) == str(whole.value)


@pytest.mark.parametrize("data", [
    b"query,item_id,label\nq,A1,1\nq,B2,1\nq,C\x003,1\n",  # a NUL byte blocks into the file
    "query,item_id,label\ncrème,A1,1\nq,B2,1\nq,C3,1\n".encode("latin-1"),  # not UTF-8, late
    "query,item_id,label\nq,A1,1\ncr\u00e8me,Dé,1\n".encode()[:-7] + b"\xff",  # cut character
])
def test_bytes_that_are_no_text_are_named_at_their_offset_and_row(tmp_path, data):
    path = tmp_path / "interactions.csv"
    path.write_bytes(data)
    with pytest.raises(DataError) as whole:
        read_interactions(path, ITEMS)
    with pytest.raises(DataError) as streamed:
        _streamed(path)
    assert str(streamed.value) == str(whole.value)
    assert "byte offset" in str(whole.value)


def _log(repeats: int) -> pd.DataFrame:
    """A log of 4 distinct (query, item, label) triples, each row repeated by other users."""
    base = pd.DataFrame({"query": ["red dress", "red dress", "blue shirt", "red dress"],
                         "item_idx": [0, 1, 2, 0], "label": np.float32([1, 0, 2, 3]),
                         "weight": np.float32([1, 1, 2, 1])})
    return pd.concat([base] * repeats, ignore_index=True)


def test_counts_keep_what_groups_and_baselines_take_from_every_row():
    rows = _log(5)
    counts = InteractionCounts()
    for chunk in np.array_split(np.arange(len(rows)), 6):  # chunks that cut the repeats anywhere
        counts.add(rows.iloc[chunk])
    kept = counts.rows()
    # one row a distinct triple, in the order they first appear, whatever the log's length
    assert kept[["query", "item_idx", "label"]].values.tolist() == [
        ["red dress", 0, 1.0], ["red dress", 1, 0.0], ["blue shirt", 2, 2.0], ["red dress", 0, 3.0]]
    assert kept["count"].tolist() == [5, 5, 5, 5] and kept["weight"].tolist() == [5, 5, 10, 5]
    # the training groups are those of the whole log
    a, b = make_groups(rows, 3), make_groups(kept, 3)
    for name in ("query_idx", "positive", "weight", "popularity_cdf"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.queries == b.queries and a.positives_of_query == b.positives_of_query
    # and so are the baselines that count rows
    texts = ["red dress acme", "red shirt borea", "blue shirt acme"]
    for ranker in (PopularityRanker, ClickAssociationRanker):
        one, other = ranker().fit(texts, rows), ranker().fit(texts, kept)
        for query in ("red dress", "blue shirt", "crimson"):
            np.testing.assert_allclose(one.score(query), other.score(query), rtol=1e-6)
