"""Interactions to training groups: a query, one preferred item and the items it should beat."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class TrainingGroups:
    """One row per (query, positive item): softmax over [positive, negatives] with this weight."""

    query_idx: np.ndarray  # (G,) index into `queries`
    positive: np.ndarray  # (G,) item idx
    weight: np.ndarray  # (G,) label x weight of the positive
    shown_negatives: list[np.ndarray]  # per group: items shown for the query with a lower label
    queries: list[str]
    positives_of_query: list[set[int]]  # every item with label > 0 for the query
    popularity_cdf: np.ndarray  # cumulative (positive mass + 1) over items, for sampling


class InteractionCounts:
    """Interaction rows reduced, chunk by chunk, to one row per distinct (query, item, label):
    its summed weight and how many rows it stands for (`count`). That is all the training groups
    (label max, weight sum), the evidence tables and the popularity (label x weight, a sum) and
    the baselines (rows counted) take from a log, so a log larger than memory trains in memory
    that grows with its distinct (query, item, label) triples, not with its rows. Rows keep the
    order in which their triple first appears."""

    KEYS = ("query", "item_idx", "label")

    def __init__(self) -> None:
        self._parts: list[pd.DataFrame] = []
        self._rows = 0

    def add(self, rows: pd.DataFrame) -> None:
        """rows: query, item_idx, label, weight (one chunk of the log)."""
        part = rows.groupby(list(self.KEYS), sort=False).agg(weight=("weight", "sum"), count=("weight", "size"))
        self._parts.append(part)
        self._rows += len(part)
        # merge once the parts hold as many rows as the merged table would at most: the
        # merging costs a pass over what is kept, not one per chunk
        if len(self._parts) > 1 and self._rows > 2 * len(self._parts[0]):
            self._merge()

    def _merge(self) -> None:
        merged = pd.concat(self._parts).groupby(level=[0, 1, 2], sort=False).sum()
        self._parts, self._rows = [merged], len(merged)

    def rows(self) -> pd.DataFrame:
        """query, item_idx, label, weight (float32), count (int64)."""
        if not self._parts:
            return pd.DataFrame({"query": [], "item_idx": np.zeros(0, np.int64), "label": np.zeros(0, np.float32),
                                 "weight": np.zeros(0, np.float32), "count": np.zeros(0, np.int64)})
        self._merge()
        out = self._parts[0].reset_index()
        return out.astype({"item_idx": np.int64, "label": np.float32, "weight": np.float32, "count": np.int64})


def split_queries(queries: pd.Series, held_out_fraction: float, rng: np.random.Generator,
                  min_held_out: int = 1) -> tuple[set[str], set[str]]:
    """Query-level split: no query string is in both parts."""
    distinct = np.array(sorted(queries.unique()))
    n_hold = round(len(distinct) * held_out_fraction)
    if held_out_fraction > 0:
        n_hold = max(min_held_out, n_hold)
    n_hold = min(n_hold, len(distinct) - 1)
    held = set(rng.choice(distinct, size=n_hold, replace=False)) if n_hold > 0 else set()
    return set(distinct) - held, held


def make_groups(rows: pd.DataFrame, n_items: int) -> TrainingGroups:
    """rows: query, item_idx, label, weight (training split only)."""
    queries = sorted(rows["query"].unique())
    q_index = {q: i for i, q in enumerate(queries)}
    query_idx, positive, weight, negatives = [], [], [], []
    positives_of_query: list[set[int]] = [set() for _ in queries]
    # the strongest label seen for an item under a query decides where it stands
    best = rows.groupby(["query", "item_idx"], sort=True).agg(
        label=("label", "max"), weight=("weight", "sum")
    ).reset_index()
    for q, grp in best.groupby("query", sort=True):
        qi = q_index[q]
        items, labels, weights = grp["item_idx"].to_numpy(), grp["label"].to_numpy(), grp["weight"].to_numpy()
        positives_of_query[qi] = set(items[labels > 0].tolist())
        for it, lab, w in zip(items, labels, weights):
            if lab <= 0:
                continue
            query_idx.append(qi)
            positive.append(it)
            weight.append(lab * w)
            negatives.append(items[labels < lab])
    return TrainingGroups(
        np.asarray(query_idx, dtype=np.int64),
        np.asarray(positive, dtype=np.int64),
        np.asarray(weight, dtype=np.float32),
        negatives,
        queries,
        positives_of_query,
        np.cumsum(np.bincount(rows["item_idx"], weights=rows["label"] * rows["weight"],
                              minlength=n_items) + 1.0),
    )


def sample_negatives(groups: TrainingGroups, batch: np.ndarray, n_items: int, n_shown: int,
                     n_random: int, rng: np.random.Generator, popular: np.ndarray | None,
                     popular_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Items (B, 1 + n_shown + n_random) with the positive first, and a validity mask.

    Random negatives that are positives of the same query are masked out, not counted against.
    `popular` (cumulative weights over items) draws `popular_fraction` of the random negatives as
    often as items are chosen, so that popularity alone does not tell positives from negatives;
    both come from TrainConfig, which holds their defaults.
    """
    width = 1 + n_shown + n_random
    items = np.zeros((len(batch), width), dtype=np.int64)
    valid = np.zeros((len(batch), width), dtype=bool)
    for r, g in enumerate(batch):
        items[r, 0], valid[r, 0] = groups.positive[g], True
        shown = groups.shown_negatives[g]
        if len(shown):
            pick = shown if len(shown) <= n_shown else rng.choice(shown, n_shown, replace=False)
            items[r, 1 : 1 + len(pick)], valid[r, 1 : 1 + len(pick)] = pick, True
        rand = rng.integers(0, n_items, n_random)
        if popular is not None:
            n_pop = round(n_random * popular_fraction)
            rand[:n_pop] = np.searchsorted(popular, rng.random(n_pop) * popular[-1])
        positives = groups.positives_of_query[groups.query_idx[g]]
        items[r, 1 + n_shown :] = rand
        valid[r, 1 + n_shown :] = [x not in positives for x in rand]
    return items, valid
