"""Catalogue-only check of a real catalogue: import it with a schema, report what happened.

The fashion catalogue (``../shared/data/fashion/styles.csv``, Myntra via Kaggle) has no queries
or labels, so there is nothing to train or evaluate on; what can be checked is the import: the
rename of its columns to the contract, the lines it cannot read (22 lines with unquoted commas in
``productDisplayName``: an error by default, skipped and listed with ``--on-bad-lines skip``), and
how many items end up with a value in each facet, from the columns and from the titles.

Usage::

    .venv/bin/python benchmarks/fashion_import.py --on-bad-lines skip [--json]
        [--items ../shared/data/fashion/styles.csv] [--schema data/fashion_schema.toml]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recsys.catalog import Catalog  # noqa: E402
from recsys.errors import RecsysError  # noqa: E402
from recsys.facets import FACETS  # noqa: E402
from recsys.io.readers import read_items  # noqa: E402
from recsys.io.schema import Schema  # noqa: E402

DEFAULT_ITEMS = ROOT.parent / "shared" / "data" / "fashion" / "styles.csv"
DEFAULT_SCHEMA = ROOT / "data" / "fashion_schema.toml"


def import_report(items_path: Path, schema_path: Path | None, on_bad_lines: str = "error",
                  top: int = 8) -> dict:
    """Reads and builds the catalogue; raises DataError like `recsys train` would."""
    t0 = time.perf_counter()
    schema = Schema.load(schema_path) if schema_path else Schema()
    items, report = read_items(items_path, on_bad_lines=on_bad_lines, schema=schema)
    catalog = Catalog.build(items, schema.columns, lexicon=schema.lexicon)
    facets = {}
    for f in FACETS:
        m = catalog.item_attrs[f].tocsc()
        per_attr = np.diff(m.indptr)  # items holding each attribute
        values = Counter()
        for a, count in enumerate(per_attr):
            values[catalog.vocab[f][a].label] += int(count)
        text_cols = [a for a, attr in enumerate(catalog.vocab[f])
                     if f != "other" and attr.key in ("title", "description")]
        from_text = Counter({catalog.vocab[f][a].value: int(per_attr[a]) for a in text_cols})
        from_text_items = int((m[:, text_cols].getnnz(axis=1) > 0).sum()) if text_cols else 0
        has = m.getnnz(axis=1) > 0
        facets[f] = {"items_with_a_value": int(has.sum()), "coverage": round(float(has.mean()), 4),
                     "distinct_values": len(catalog.vocab[f]),
                     "items_with_a_value_from_text": from_text_items,
                     "top_values": values.most_common(top),
                     "from_text": from_text.most_common(top)}
    extracted_other = Counter(a.key for a in catalog.vocab["other"] if a.key not in
                              {c.lower() for c in items.columns} and a.key != "title")
    kinds = {}
    for key in extracted_other:
        cols = [j for j, a in enumerate(catalog.vocab["other"]) if a.key == key]
        kinds[key] = int((catalog.item_attrs["other"][:, cols].getnnz(axis=1) > 0).sum())
    return {
        "file": str(items_path), "schema": str(schema_path) if schema_path else None,
        "rows": report.rows, "items": catalog.n_items, "skipped_lines": report.skipped_lines,
        "warnings": report.warnings, "facets": facets,
        "items_with_a_value_of_kind_from_text": kinds,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def render(r: dict) -> str:
    lines = [f"{r['file']}: {r['items']:,} items imported"]
    skipped = r["skipped_lines"]
    if skipped:
        lines.append(f"skipped {len(skipped)} lines with the wrong number of fields: "
                     + ", ".join(map(str, skipped)))
    for w in r["warnings"]:
        if not w.startswith("skipped"):
            lines.append(f"note: {w}")
    lines.append(f"{'facet':<8} {'items':>8} {'coverage':>9} {'values':>7} {'from text':>10}  top values")
    for f, d in r["facets"].items():
        top = ", ".join(f"{v} {c:,}" for v, c in d["top_values"][:5])
        lines.append(f"{f:<8} {d['items_with_a_value']:>8,} {d['coverage']:>9.1%} {d['distinct_values']:>7,} "
                     f"{d['items_with_a_value_from_text']:>10,}  {top}")
        if d["from_text"]:
            lines.append(f"{'':<8} from titles: " + ", ".join(f"{v} {c:,}" for v, c in d["from_text"]))
    for key, count in r["items_with_a_value_of_kind_from_text"].items():
        lines.append(f"other:   {count:,} items got {key}:<value> from their titles")
    lines.append(f"({r['seconds']:.1f}s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=Path, default=DEFAULT_ITEMS)
    p.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA)
    p.add_argument("--on-bad-lines", choices=("error", "skip"), default="error")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        report = import_report(args.items, args.schema, args.on_bad_lines)
    except RecsysError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
