"""CSV files -> validated data -> fitted recommender -> evaluation -> a new model version."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from recsys.artifact import save_version
from recsys.catalog import Catalog
from recsys.dataio import Schema, fingerprint, read_interactions, read_items, read_judgments
from recsys.errors import DataError
from recsys.metrics import group_judgments

from .config import TrainConfig
from .evaluate import evaluate_all, judgments_from_rows, make_baselines
from .examples import split_queries
from .faithfulness import faithfulness_report
from .fit import train_recommender

Progress = Callable[[int, int, float], None]


@dataclass
class TrainInputs:
    items: Path
    interactions: Path
    schema: Path | None = None
    judgments: Path | None = None  # extra held-out judgments (e.g. the generator's)
    probes: Path | None = None  # which query word names which facet value
    encoding: str | None = None
    on_bad_lines: str = "error"


@dataclass
class TrainResult:
    version_dir: Path
    metrics: dict
    manifest: dict


def load_training_data(inputs: TrainInputs) -> tuple[Catalog, pd.DataFrame, dict]:
    """Validated catalogue and interaction rows (query, item_idx, label, weight) + data notes."""
    schema = Schema.load(inputs.schema) if inputs.schema else Schema()
    items, item_report = read_items(inputs.items, encoding=inputs.encoding,
                                    on_bad_lines=inputs.on_bad_lines, schema=schema)
    catalog = Catalog.build(items, schema.columns, lexicon=schema.lexicon)
    inter, inter_report = read_interactions(
        inputs.interactions, set(catalog.item_ids), encoding=inputs.encoding, on_bad_lines=inputs.on_bad_lines
    )
    if not (inter["label"] > 0).any():
        raise DataError(str(inputs.interactions), "no row has a label > 0; training needs positives",
                        column="label")
    rows = pd.DataFrame({
        "query": inter["query"].to_numpy(),
        "item_idx": inter["item_id"].map(catalog.idx).to_numpy(),
        "label": inter["label"].to_numpy(dtype=np.float32),
        "weight": inter["weight"].to_numpy(dtype=np.float32),
    })
    data = {
        "items": {"file": str(inputs.items), "fingerprint": fingerprint(inputs.items),
                  "rows": item_report.rows, "skipped_lines": item_report.skipped_lines},
        "interactions": {"file": str(inputs.interactions), "fingerprint": fingerprint(inputs.interactions),
                         "rows": inter_report.rows, "skipped_lines": inter_report.skipped_lines,
                         "dropped_duplicates": inter_report.dropped_duplicates},
        "schema": schema.to_json(),
    }
    return catalog, rows, data


def train(inputs: TrainInputs, out_dir: str | Path, cfg: TrainConfig,
          on_step: Progress | None = None) -> TrainResult:
    catalog, rows, data = load_training_data(inputs)
    extra_judgments = _read_extra(inputs, catalog)
    rng = np.random.default_rng(cfg.seed)
    train_q, held_q = split_queries(rows.loc[rows["label"] > 0, "query"], cfg.held_out_fraction, rng)
    train_rows = rows[~rows["query"].isin(held_q)].reset_index(drop=True)
    held_rows = rows[rows["query"].isin(held_q)]
    rec, fit_report = train_recommender(catalog, train_rows, cfg, on_step)
    baselines = make_baselines(rec, train_rows, cfg.seed)
    held_judgments = judgments_from_rows(held_rows)
    metrics = {"held_out": evaluate_all(rec, held_judgments, baselines)}
    if extra_judgments is not None:
        metrics["judgments"] = evaluate_all(rec, extra_judgments, baselines)
    probes = pd.read_csv(inputs.probes, dtype=str, keep_default_na=False) if inputs.probes else None
    metrics["faithfulness"] = faithfulness_report(
        rec, None, probes=probes,
        judgments=extra_judgments if extra_judgments is not None else held_judgments,
        seed=cfg.seed)
    if probes is not None:
        metrics["explanation_accuracy"] = metrics["faithfulness"]["explanation_accuracy"]
    popularity = np.bincount(train_rows["item_idx"], weights=train_rows["label"] * train_rows["weight"],
                             minlength=catalog.n_items)
    manifest = {
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": data,
        "training": {**cfg.to_json(), "fit": asdict(fit_report), "train_queries": len(train_q),
                     "held_out_queries": len(held_q), "train_rows": len(train_rows)},
        "metrics": metrics,
    }
    folder = save_version(rec, out_dir, manifest, popularity=popularity)
    return TrainResult(folder, metrics, rec.manifest)


def _read_extra(inputs: TrainInputs, catalog: Catalog):
    if not inputs.judgments:
        return None
    df, _ = read_judgments(inputs.judgments, set(catalog.item_ids), encoding=inputs.encoding)
    return group_judgments(df, {i: n for n, i in enumerate(catalog.item_ids)}, source=str(inputs.judgments))
