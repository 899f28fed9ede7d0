"""`recsys evaluate`: a saved version on a catalogue and judgments, next to the baselines."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from recsys.artifact import load_version
from recsys.errors import DataError
from recsys.io.headers import PROBES, check_rename, map_header
from recsys.io.readers import read_items, read_judgments
from recsys.io.schema import Schema
from recsys.io.text import fingerprint
from recsys.metrics import group_judgments
from recsys.reindex import with_catalog

from .evaluate import evaluate_all, explanation_accuracy, make_baselines


def evaluate_version(model: Path, items: Path, judgments: Path, probes: Path | None = None,
                     schema: Path | None = None, encoding: str | None = None,
                     on_bad_lines: str = "error") -> dict:
    rec = load_version(model)
    trained_on = rec.manifest.get("data", {}).get("items", {}).get("fingerprint")
    chosen = Schema.load(schema) if schema else Schema.from_json(rec.manifest.get("data", {}).get("schema"))
    if fingerprint(items) != trained_on:
        df, _ = read_items(items, encoding=encoding, on_bad_lines=on_bad_lines, schema=chosen)
        rec = with_catalog(rec, df, chosen)
    jdf, _ = read_judgments(judgments, set(rec.catalog.item_ids), encoding=encoding,
                            rename=chosen.rename, aliases=rec.catalog.aliases)
    index = {item_id: i for i, item_id in enumerate(rec.catalog.item_ids)}
    graded = group_judgments(jdf, index, source=str(judgments))
    report = evaluate_all(rec, graded, make_baselines(rec, None))
    if probes:
        report["explanation_accuracy"] = explanation_accuracy(rec, read_probes(probes, chosen.rename))
    report["model_version"] = rec.version
    return report


def read_probes(path: Path, rename: Mapping[str, str] | None = None) -> pd.DataFrame:
    """probes.csv (query, word, facet, value: which query word names which facet value), checked:
    a DataError naming the file and what is missing, never a KeyError from deep inside. Its
    header is mapped as every file's is (`recsys.io.headers`: a schema's `rename`, then common
    names)."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise DataError(str(path), "no such file") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise DataError(str(path), f"not a readable CSV file: {str(exc).splitlines()[0][:200]}") from None
    header = map_header(str(path), 1, [str(c) for c in df.columns], PROBES,
                        check_rename(dict(rename), "rename") if rename else None)
    return df.rename(columns=header.renamed)
