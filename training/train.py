"""CSV files -> validated data -> fitted recommender -> evaluation -> a new model version."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from recsys.artifact import load_version, read_manifest, save_version
from recsys.catalog import Catalog, column_kinds, spec_list_summary
from recsys.errors import DataError
from recsys.io.readers import UNKNOWN_ITEMS, InteractionStream, read_items, read_judgments
from recsys.io.schema import Schema
from recsys.io.text import ReadReport, fingerprint
from recsys.metrics import evaluate_rankings, group_judgments
from recsys.promotion import same_catalogue
from recsys.recommender import Recommender
from recsys.synonyms import Synonym, SynonymBook, check_synonym

from .config import TrainConfig
from .evaluate import (
    Judgments,
    evaluate_all,
    judgments_from_rows,
    known_item_judgments,
    make_baselines,
    model_rankings,
)
from .evaluate_version import read_probes
from .faithfulness import faithfulness_report
from .fit import train_recommender
from .groups import InteractionCounts, split_queries

if TYPE_CHECKING:  # torch.distributed is imported only by the processes torchrun starts
    from .distributed import Replicas

Progress = Callable[[int, int, float], None]


@dataclass
class TrainInputs:
    items: Path
    interactions: Path | None  # None: no search log, the untrained start is the model
    schema: Path | None = None
    judgments: Path | None = None  # extra held-out judgments (e.g. the generator's)
    probes: Path | None = None  # which query word names which facet value
    encoding: str | None = None
    on_bad_lines: str = "error"
    unknown_items: str = UNKNOWN_ITEMS[0]  # interactions naming an item not in the items file
    # the served version: replayed on this training's evaluation sets (when its catalogue is the
    # same), so that the two are compared on the same queries (recsys/promotion.py)
    baseline: Path | None = None
    # the held-out queries, chosen by the caller (events: the most recent ones); None: a random
    # slice of the interactions' queries (TrainConfig.held_out_fraction, seeded)
    held_out: set[str] | None = None
    source: dict | None = None  # where the interactions came from (events), for the manifest
    schema_data: Schema | None = None  # a schema already read (a served version's), for `schema`
    # the shop's synonyms (`recsys train --synonyms`): the new version and the served one are
    # evaluated with them, as they will serve (`recsys.synonyms`); the model learns nothing of them
    synonyms: tuple[Synonym, ...] = ()


@dataclass
class TrainResult:
    version_dir: Path
    metrics: dict
    manifest: dict


def read_catalog(path: Path, schema: Schema, encoding: str | None = None,
                 on_bad_lines: str = "error") -> tuple[Catalog, pd.DataFrame, ReadReport]:
    """An items file read under the contract and built into the catalogue training sees."""
    items, report = read_items(path, encoding=encoding, on_bad_lines=on_bad_lines, schema=schema)
    catalog = Catalog.build(items, schema.columns, lexicon=schema.lexicon, facets=schema.facets)
    catalog.keep_aliases(report.aliases)
    return catalog, items, report


def load_training_data(inputs: TrainInputs) -> tuple[Catalog, pd.DataFrame, dict]:
    """Validated catalogue and interaction rows + data notes. The interactions are read a chunk
    at a time and kept as one row per distinct (query, item_idx, label) with its summed weight
    and its count of rows (`InteractionCounts`): a log larger than memory trains."""
    schema = Schema.load(inputs.schema) if inputs.schema else (inputs.schema_data or Schema())
    catalog, items, item_report = read_catalog(inputs.items, schema, inputs.encoding, inputs.on_bad_lines)
    data = {
        "items": {"file": str(inputs.items), "fingerprint": fingerprint(inputs.items),
                  "rows": item_report.rows, "skipped_lines": item_report.skipped_lines,
                  **_read_notes(item_report)},
        "interactions": {"file": None, "rows": 0},
        "schema": schema.to_json(),
    }
    rows = InteractionCounts().rows()
    if inputs.interactions is not None:
        rows, data["interactions"] = _read_interactions(inputs, catalog, schema, item_report.aliases)
    spec_list = spec_list_summary(items, schema.columns)
    if spec_list is not None:
        data["items"]["spec_list"] = spec_list
    if catalog.number_words:
        data["items"]["number_words"] = catalog.number_words
    kinds = column_kinds(items, schema.columns)
    if kinds.links:
        data["items"]["links"] = kinds.links
    if kinds.bookkeeping:
        data["items"]["bookkeeping"] = kinds.bookkeeping
    if kinds.paths:
        data["items"]["paths"] = kinds.paths
    if kinds.prose:
        data["items"]["prose"] = kinds.prose
    if inputs.judgments:
        data["judgments"] = {"file": str(inputs.judgments), "fingerprint": fingerprint(inputs.judgments)}
    if inputs.source:
        data["source"] = inputs.source
    return catalog, rows, data


def _read_interactions(inputs: TrainInputs, catalog: Catalog, schema: Schema,
                       aliases: dict[str, str]) -> tuple[pd.DataFrame, dict]:
    """The interactions file as counted rows (query, item_idx, label, weight, count) and its
    notes; `aliases`: the items file's other ids of its items (`ReadReport.aliases`)."""
    assert inputs.interactions is not None
    stream = InteractionStream(inputs.interactions, set(catalog.item_ids), encoding=inputs.encoding,
                               on_bad_lines=inputs.on_bad_lines, rename=schema.rename,
                               unknown_items=inputs.unknown_items, aliases=aliases)
    counts = InteractionCounts()
    positions = pd.Index(catalog.item_ids)  # every item_id the stream lets through is there
    for inter in stream:
        counts.add(pd.DataFrame({
            "query": inter["query"].to_numpy(),
            "item_idx": positions.get_indexer(pd.Index(inter["item_id"])),
            "label": inter["label"].to_numpy(dtype=np.float32),
            "weight": inter["weight"].to_numpy(dtype=np.float32),
        }))
    rows, report = counts.rows(), stream.report
    if not (rows["label"] > 0).any():
        raise DataError(str(inputs.interactions), "no row has a label > 0; training needs positives "
                        "(with no search log at all, leave --interactions out: the untrained start "
                        "is written)", column="label")
    return rows, {"file": str(inputs.interactions), "fingerprint": fingerprint(inputs.interactions),
                  "rows": report.rows, "skipped_lines": report.skipped_lines,
                  "dropped_duplicates": report.dropped_duplicates,
                  "unknown_items": report.unknown_items, "empty_queries": report.empty_queries,
                  **_read_notes(report)}


def _read_notes(report: ReadReport) -> dict:
    """What a file's report says that its reader should be told (cli/main.py prints it): the
    columns read under another name, and the notices."""
    return {"columns": report.renamed, "notices": report.notices}


def train(inputs: TrainInputs, out_dir: str | Path, cfg: TrainConfig,
          on_step: Progress | None = None, make_current: bool = True) -> TrainResult:
    result = train_replica(inputs, out_dir, cfg, on_step, None, make_current)
    assert result is not None  # one process writes its version
    return result


def train_replica(inputs: TrainInputs, out_dir: str | Path, cfg: TrainConfig,
                  on_step: Progress | None, replicas: Replicas | None,
                  make_current: bool = True) -> TrainResult | None:
    """`train` as one of the processes torchrun started (training/distributed.py): each reads
    the data and fits its share of every batch; the one that writes evaluates, saves and returns
    the result, the others return None once the weights are fitted. `make_current`: point the
    artifacts' `current` at the new version (else the caller decides)."""
    catalog, rows, data = load_training_data(inputs)
    rename = data["schema"]["rename"]
    extra_judgments = _read_extra(inputs, catalog, rename)
    rng = np.random.default_rng(cfg.seed)
    positive = rows.loc[rows["label"] > 0, "query"]
    if inputs.held_out is None:
        train_q, held_q = split_queries(positive, cfg.held_out_fraction, rng)
    else:
        held_q = set(inputs.held_out) & set(positive)
        train_q = set(positive) - held_q
    train_rows = rows[~rows["query"].isin(held_q)].reset_index(drop=True)
    held_rows = rows[rows["query"].isin(held_q)]
    rec, fit_report = train_recommender(catalog, train_rows, cfg, on_step, replicas)
    if replicas is not None and not replicas.writes:
        return None
    if inputs.synonyms:
        rec.use_synonyms(SynonymBook(inputs.synonyms))
        keys = rec.featurizer.catalog_keys()
        data["synonyms"] = {"rules": len(inputs.synonyms),
                            "unusable": [w for s in inputs.synonyms if (w := check_synonym(s, keys))]}
    baselines = make_baselines(rec, train_rows, cfg.seed)
    held_judgments = judgments_from_rows(held_rows)
    metrics = {"held_out": evaluate_all(rec, held_judgments, baselines)}
    judged_by = extra_judgments if extra_judgments is not None else held_judgments
    if not held_judgments:  # no search to judge by: searches drawn from the items' own words
        known_items = known_item_judgments(rec, cfg.seed)
        metrics["known_item"] = evaluate_all(rec, known_items, {"bm25": baselines["bm25"]})
        judged_by = judged_by or known_items
    if extra_judgments is not None:
        metrics["judgments"] = evaluate_all(rec, extra_judgments, baselines)
    probes = read_probes(inputs.probes, rename) if inputs.probes else None
    metrics["faithfulness"] = faithfulness_report(rec, None, probes=probes, judgments=judged_by,
                                                  seed=cfg.seed)
    if probes is not None:
        metrics["explanation_accuracy"] = metrics["faithfulness"]["explanation_accuracy"]
    if fit_report.synonyms:
        metrics["synonyms"] = fit_report.synonyms
    if inputs.baseline is not None:
        replayed = replay(inputs.baseline, data, held_judgments, extra_judgments, inputs.synonyms)
        if replayed is not None:
            metrics["replayed"] = replayed
    popularity = np.bincount(train_rows["item_idx"], weights=train_rows["label"] * train_rows["weight"],
                             minlength=catalog.n_items)
    manifest = {
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": data,
        "training": {**cfg.to_json(), "fit": asdict(fit_report), "train_queries": len(train_q),
                     "held_out_queries": len(held_q), "train_rows": int(train_rows["count"].sum()),
                     "held_out_fingerprint": queries_fingerprint(held_q)},
        "metrics": metrics,
    }
    folder = save_version(rec, out_dir, manifest, popularity=popularity, make_current=make_current)
    return TrainResult(folder, metrics, rec.manifest)


def queries_fingerprint(queries: set[str]) -> str:
    """"sha256:<hex>" of the sorted queries: two versions held out the same ones when equal."""
    return "sha256:" + hashlib.sha256(json.dumps(sorted(queries)).encode()).hexdigest()


def replay(baseline: Path, data: dict, held_out: Judgments, judgments: Judgments | None,
           synonyms: Sequence[Synonym] = ()) -> dict | None:
    """The `baseline` version's metrics on this training's evaluation sets (with its `synonyms`),
    None when it has another catalogue (its item indices mean other items)."""
    if not same_catalogue({"data": data}, read_manifest(baseline)):
        return None
    rec = load_version(baseline)
    rec.use_synonyms(SynonymBook(synonyms))
    out: dict = {"version": rec.version}
    for name, sets in (("held_out", held_out), ("judgments", judgments)):
        if sets is not None:
            out[name] = _model_metrics(rec, sets)
            out[f"{name}_queries"] = len(sets)
    return out


def _model_metrics(rec: Recommender, judgments: Judgments, k: int = 10) -> dict:
    return evaluate_rankings(model_rankings(rec, list(judgments), k), judgments, k)


def _read_extra(inputs: TrainInputs, catalog: Catalog, rename: dict[str, str]):
    if not inputs.judgments:
        return None
    df, _ = read_judgments(inputs.judgments, set(catalog.item_ids), encoding=inputs.encoding,
                           rename=rename, aliases=catalog.aliases)
    return group_judgments(df, {i: n for n, i in enumerate(catalog.item_ids)}, source=str(inputs.judgments))
