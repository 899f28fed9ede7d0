"""Shopper events (the store) -> the interactions the trainer reads, and the held-out slice.

One row per (query, item): `label` is the strongest event type the item got for the query
(`recsys.io.contract.EVENT_LABELS`: impression 0, click 1, cart 2, purchase 3), so an item shown and
not chosen is a 0 (shown-not-chosen). Position bias: in a position-based model a shopper
examines rank r with probability (1 / r) ** ETA, so a choice made at rank r stands for r ** ETA
choices (inverse propensity weighting, Joachims et al. 2017), clipped at MAX_WEIGHT to bound the
variance. A chosen item's `weight` is the sum of those over the answers it was chosen in (an
event without a position counts 1); shown-not-chosen rows weigh 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from recsys.artifact import served_catalogue
from recsys.errors import DataError, InputError
from recsys.io.contract import EVENT_LABELS
from recsys.io.text import csv_bytes
from store.db import Database
from store.events import read_events

from .train import TrainInputs

ETA = 1.0  # examination ~ 1 / rank: the usual fit of click logs; not fitted to ours
MAX_WEIGHT = 10.0  # rank 10 and below weigh as rank 10 (eta 1)


@dataclass
class EventData:
    interactions: Path  # interactions.csv written from the events
    held_out: set[str]  # the most recent queries, evaluated on and not trained on
    source: dict  # for the manifest: the store, the window, the counts


def propensity_weight(position: pd.Series) -> np.ndarray:
    """r ** ETA clipped to MAX_WEIGHT; 1 where the position is unknown."""
    r = pd.to_numeric(position, errors="coerce").to_numpy(dtype=float)
    w = np.minimum(np.power(np.where(np.isnan(r), 1.0, r), ETA), MAX_WEIGHT)
    return np.where(np.isnan(r), 1.0, w)


def events_to_interactions(events: pd.DataFrame) -> pd.DataFrame:
    """events (`store.events.EVENT_COLUMNS`) -> query, item_id, label, weight."""
    if events.empty:
        return pd.DataFrame(columns=["query", "item_id", "label", "weight"])
    ev = events.assign(label=events["type"].map(EVENT_LABELS).astype(float),
                       answer=events["request_id"].fillna("").astype(str))
    # one (answer, query, item): its strongest event, at the best position it was shown at
    shown = ev.groupby(["answer", "query", "item_id"], sort=False).agg(
        label=("label", "max"), position=("position", "min")).reset_index()
    shown["ipw"] = propensity_weight(shown["position"])
    out = shown.groupby(["query", "item_id"], sort=True).agg(label=("label", "max")).reset_index()
    chosen = shown[shown["label"] > 0].groupby(["query", "item_id"])["ipw"].sum()
    weight = chosen.reindex(pd.MultiIndex.from_frame(out[["query", "item_id"]])).to_numpy()
    out["weight"] = np.where(out["label"] > 0, weight, 1.0)
    return out


def recent_queries(events: pd.DataFrame, interactions: pd.DataFrame, fraction: float) -> set[str]:
    """The latest `fraction` of the queries that have a choice, by their last event: the slice
    a retrain is evaluated on (and the served version replayed on). At least one, never all."""
    positive = set(interactions.loc[interactions["label"] > 0, "query"])
    last = events[events["query"].isin(positive)].groupby("query")["timestamp"].max()
    n = min(max(1, round(len(last) * fraction)), len(last) - 1)
    if n <= 0:
        return set()
    # ties in time broken by the query text, so the slice is the same on every run
    order = last.reset_index().sort_values(["timestamp", "query"])
    return set(order["query"].iloc[-n:])


def prepare(url: str, since: datetime | None, folder: Path, held_out_fraction: float) -> EventData:
    """Read the events of the store at `url` and write `folder/interactions.csv`."""
    db = Database(url)
    try:
        events = read_events(db, since)
    finally:
        db.dispose()
    window = f" since {since.isoformat()}" if since else ""
    if events.empty:
        raise DataError(db.public_url, f"no events{window}: nothing to train on")
    interactions = events_to_interactions(events)
    if not (interactions["label"] > 0).any():
        raise DataError(db.public_url, f"no click, cart or purchase among the {len(events)} "
                                       f"events{window}: training needs positives")
    path = Path(folder) / "interactions.csv"
    path.write_bytes(csv_bytes(interactions))  # a query may hold a carriage return
    by_type = {t: int(n) for t, n in events["type"].value_counts().items()}
    source = {"events": db.public_url, "since": since.isoformat() if since else None,
              "until": events["timestamp"].max().isoformat(), "n_events": len(events),
              "by_type": by_type, "propensity": {"eta": ETA, "max_weight": MAX_WEIGHT}}
    return EventData(path, recent_queries(events, interactions, held_out_fraction), source)


def inputs_from_events(url: str, since: datetime | None, folder: Path, held_out_fraction: float, *,
                       items: Path | None = None, schema: Path | None = None,
                       served: Path | None = None, judgments: Path | None = None,
                       probes: Path | None = None) -> TrainInputs:
    """What `train` needs to learn from the events at `url`: on `items` when given, else on the
    catalogue of the `served` version folder; evaluated on the most recent queries, with the
    served version replayed on them."""
    schema_data = None
    if items is None:
        if served is None:
            raise InputError("there is no served version to take the catalogue from: give an items "
                             "file (--items, or \"items\" in the admin request)")
        items, schema_data = served_catalogue(served)
    data = prepare(url, since, folder, held_out_fraction)
    return TrainInputs(items=items, interactions=data.interactions, schema=schema,
                       schema_data=schema_data, judgments=judgments, probes=probes, baseline=served,
                       held_out=data.held_out, source=data.source)
