"""Held-out evaluation of a recommender next to the baselines, and explanation accuracy."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from recsys.baselines import (
    BM25Ranker,
    ClickAssociationRanker,
    PopularityRanker,
    RandomRanker,
    Ranker,
)
from recsys.explain import head_attention
from recsys.known_item import NOISE, TopicSampler
from recsys.metrics import evaluate_rankings, paired_difference
from recsys.recommender import Recommender, top_k

Judgments = Mapping[str, Mapping[int, float]]


def model_rankings(rec: Recommender, queries: list[str], k: int = 10) -> dict[str, np.ndarray]:
    return {q: rec.top_indices(q, k) for q in dict.fromkeys(queries)}


def make_baselines(rec: Recommender, train_rows: pd.DataFrame | None, seed: int = 0) -> dict:
    """BM25 over the same item text, popularity, random, and (with interactions) click association."""
    texts = rec.catalog.texts
    rows = None
    if train_rows is not None and len(train_rows):
        rows = train_rows[["query", "item_idx", "label", *(["count"] if "count" in train_rows else [])]]
    baselines: dict[str, Ranker | _StoredPopularity] = {"bm25": BM25Ranker().fit(texts, None)}
    if rows is not None:
        baselines["popularity"] = PopularityRanker().fit(texts, rows)
        baselines["click_assoc"] = ClickAssociationRanker().fit(texts, rows)
    elif rec.popularity is not None:
        baselines["popularity"] = _StoredPopularity(rec.popularity)
    baselines["random"] = RandomRanker(seed).fit(texts, None)
    return baselines


class _StoredPopularity:
    """Popularity from the counts a model version stored, for evaluation without interactions."""

    name = "popularity"

    def __init__(self, counts: np.ndarray):
        self.counts = np.asarray(counts, dtype=np.float32)

    def top_k(self, query: str, k: int) -> np.ndarray:
        return top_k(self.counts, np.ones(len(self.counts), dtype=bool), k)


def evaluate_all(rec: Recommender, judgments: Judgments, baselines: Mapping, k: int = 10) -> dict:
    """Each system's means, and the model against BM25 query by query (`against_bm25`,
    `paired_difference`: whether a gap between them is more than the queries' noise)."""
    queries = list(judgments)
    mine = model_rankings(rec, queries, k)
    report: dict = {"model": evaluate_rankings(mine, judgments, k)}
    for name, ranker in baselines.items():
        rankings = {q: ranker.top_k(q, k) for q in queries}
        report[name] = evaluate_rankings(rankings, judgments, k)
        if name == "bm25":
            report["against_bm25"] = paired_difference(mine, rankings, judgments, k)
    return report


# known-item searches sampled for a catalogue trained with no search log: enough that the figure
# moves by about a point between seeds, few enough to take seconds on 100k items
KNOWN_ITEM_TOPICS = 200


def known_item_judgments(rec: Recommender, seed: int, n: int = KNOWN_ITEM_TOPICS) -> dict[str, dict[int, float]]:
    """Known-item searches drawn from the catalogue's own texts (recsys/known_item.py), as
    judgments: each query's item is the one it was drawn from (two items drawn to the same words
    are both relevant)."""
    out: dict[str, dict[int, float]] = {}
    for query, item in TopicSampler(rec.catalog.texts).sample(np.random.default_rng(seed), n, NOISE):
        out.setdefault(query, {})[item] = 1.0
    return out


def judgments_from_rows(rows: pd.DataFrame) -> dict[str, dict[int, float]]:
    """Held-out interactions as graded judgments: the best label seen for each (query, item)."""
    best = rows.groupby(["query", "item_idx"])["label"].max().reset_index()
    out: dict[str, dict[int, float]] = {}
    for q, item, label in best.itertuples(index=False):
        if label > 0:
            out.setdefault(q, {})[int(item)] = float(label)
    return out


# how a probe's word names its value, the kinds issue 29's probes are counted by: the word is the
# value ("blue", `color:blue`), one of its words ("blue", `color:navy blue`), or neither, so only
# clicks can tie them (a synonym: "navy", `color:blue`)
PROBE_KINDS = ("the value", "a word of it", "synonym")


def probe_kind(word: str, value: str) -> str:
    """Which of PROBE_KINDS the (lower-cased) probe word is of its (lower-cased) value."""
    if word == value:
        return PROBE_KINDS[0]
    return PROBE_KINDS[1] if word in value.split() else PROBE_KINDS[2]


def explanation_accuracy(rec: Recommender, probes: pd.DataFrame, k: int = 10) -> dict:
    """Share of cases where the probe's head puts its top weight, for the probe's word, on the
    probe's attribute. Cases: each probe x each of the query's top-k items that has the value.
    Also per kind of probe (`PROBE_KINDS`) and per head, each {"accuracy", "cases"}: a synonym
    the start shows as "no match" hides among the many exact cases of the overall figure.

    probes: query, word, facet, value (the generator knows which word names which value).
    """
    counts: dict[tuple[str, str], list[int]] = {}  # (kind, facet) -> [hits, cases]
    for query, group in probes.groupby("query", sort=False):
        state = rec.index.query_state(str(query))
        surfaces = [t.surface for t in state.tokens]
        ranked, _ = rec.index.top_k(state, None, None, k)
        probe_rows = [(str(w).lower(), f, str(v).lower())
                      for w, f, v in group[["word", "facet", "value"]].itertuples(index=False)]
        for item in ranked:
            heads = {}  # facet -> (attention, attribute values), once per item and facet
            for word, facet, value in probe_rows:
                if facet not in heads:
                    att = head_attention(rec.index, state, int(item), facet)
                    heads[facet] = (att, [rec.catalog.vocab[facet][a].value for a in att.attr_idx])
                att, values = heads[facet]
                if word not in surfaces or value not in values:
                    continue
                best = int(np.argmax(att.weights[surfaces.index(word)]))  # the last slot is no-match
                tally = counts.setdefault((probe_kind(word, value), facet), [0, 0])
                tally[0] += int(best < len(values) and values[best] == value)
                tally[1] += 1
    return {**_share(counts.values()),
            "kinds": {kind: _share(c for (k, _), c in counts.items() if k == kind)
                      for kind in PROBE_KINDS if any(k == kind for k, _ in counts)},
            "heads": {facet: _share(c for (_, f), c in counts.items() if f == facet)
                      for facet in dict.fromkeys(f for _, f in counts)}}


def _share(tallies: Iterable[list[int]]) -> dict:
    hits = cases = 0
    for h, c in tallies:
        hits, cases = hits + h, cases + c
    return {"accuracy": hits / cases if cases else 0.0, "cases": cases}
