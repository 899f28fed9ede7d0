"""A large interactions.csv from a `recsys generate` folder: its rows first (so that every
(query, item, label) of the source is in the log, whatever its length), then rows drawn from them
at random, each with its own user and a later timestamp, up to `--rows`. The number of distinct
queries, items and (query, item, label) triples is the source's at any length: only the counts
grow. Written a chunk at a time (bounded memory).

    .venv/bin/recsys generate --out /tmp/syn
    .venv/bin/python benchmarks/big_log.py --data /tmp/syn --rows 10000000 --out /tmp/syn/interactions_10m.csv
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

CHUNK = 500_000


def write_log(source: Path, rows: int, out: Path, seed: int = 0) -> dict:
    base = pd.read_csv(source, dtype=str, keep_default_na=False)[["query", "item_id", "label"]]
    if rows < len(base):
        raise SystemExit(f"--rows must be at least the source's {len(base):,} rows, got {rows:,}")
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2025-01-01T00:00:00")
    tmp = out.with_name(out.name + ".tmp")
    written = 0
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        while written < rows:
            n = min(CHUNK, rows - written)
            pick = np.arange(n) if written == 0 else rng.integers(0, len(base), n)
            pick = pick % len(base)
            chunk = base.iloc[pick].reset_index(drop=True)
            chunk["user_id"] = [f"U-{u:07d}" for u in rng.integers(0, 1_000_000, n)]
            seconds = written + np.arange(n)  # one event a second, in order
            chunk["timestamp"] = (start + pd.to_timedelta(seconds, unit="s")).strftime("%Y-%m-%dT%H:%M:%S")
            chunk.to_csv(f, header=written == 0, index=False)
            written += n
    os.replace(tmp, out)
    return {"rows": written, "bytes": out.stat().st_size, "distinct_queries": int(base["query"].nunique())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="a `recsys generate` folder")
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    t0 = time.perf_counter()
    summary = write_log(args.data / "interactions.csv", args.rows, args.out, args.seed)
    print({**summary, "seconds": round(time.perf_counter() - t0, 1)})


if __name__ == "__main__":
    main()
