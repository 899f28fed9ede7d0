"""Suggestions (`GET /suggest`, `recsys.suggest.Suggester`): how long one completion takes.

A generated catalogue of `--items` items (`recsys generate`) with its logged searches (each
distinct query of its interactions, its clicks counted as shoppers), then `--prefixes` typed
prefixes: a catalogue term drawn by how many items say it, cut after 1 to all of its letters, and
one in ten given a typo of one edit (a letter dropped, doubled or two swapped). Prints p50 and p99
per kind (exact prefixes; typos, which take the slower path), the build time, and p50 against the
goal of issue 31 (well under 1 ms at p50 on 100k items).

Usage::

    .venv/bin/python benchmarks/suggest_bench.py [--items 100000] [--prefixes 5000] [--seed 0]
        [--folder ../shared/data/homedepot]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recsys.catalog import Catalog  # noqa: E402
from recsys.io.readers import read_items  # noqa: E402
from recsys.suggest import Suggester  # noqa: E402
from recsys.synthetic import generate  # noqa: E402

GOAL_MS = 1.0


def typo(word: str, rng: np.random.Generator) -> str:
    if len(word) < 3:
        return word
    i = int(rng.integers(len(word) - 1))
    kind = rng.integers(3)
    if kind == 0:
        return word[:i] + word[i + 1:]
    if kind == 1:
        return word[:i] + word[i] + word[i:]
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--prefixes", type=int, default=5000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--folder", type=Path, help="a catalogue's folder (items.csv, interactions.csv) "
                   "instead of a generated one, e.g. ../shared/data/homedepot")
    args = p.parse_args(argv)
    folder = args.folder or Path(tempfile.mkdtemp(prefix="suggest-bench-"))
    if args.folder is None:
        generate(folder, n_items=args.items, n_queries=max(4000, args.items // 10), seed=args.seed)
    items, _ = read_items(folder / "items.csv")
    catalog = Catalog.build(items)
    log = pd.read_csv(folder / "interactions.csv")
    label = "label" if "label" in log.columns else log.columns[2]
    sessions = log[log[label] > 0].groupby(log.columns[0]).size()  # each chosen item a shopper's search
    searches = {str(q): int(n) for q, n in sessions.items()}
    t0 = time.perf_counter()
    suggester = Suggester.from_catalog(catalog, searches)
    build_s = time.perf_counter() - t0

    rng = np.random.default_rng(args.seed)
    terms, counts = suggester.terms.keys, np.asarray(suggester.terms.counts, dtype=np.float64)
    picks = rng.choice(len(terms), size=args.prefixes, p=counts / counts.sum())
    timings: dict[str, list[float]] = {"exact": [], "typo": []}
    for pick in picks.tolist():
        term = terms[pick]
        prefix = term[: int(rng.integers(1, len(term) + 1))]
        kind = "typo" if rng.random() < 0.1 and len(prefix) >= 3 else "exact"
        typed = typo(prefix, rng) if kind == "typo" else prefix
        t = time.perf_counter()
        suggester.suggest(typed, 8)
        timings[kind].append((time.perf_counter() - t) * 1000)
    print(f"catalogue {catalog.n_items:,} items, {len(terms):,} terms, {len(suggester.searches.keys):,} "
          f"searches of 2+ shoppers; built in {build_s:.2f} s")
    print(f"{'prefixes':<10} {'n':>6} {'p50 ms':>8} {'p99 ms':>8}")
    for kind, ms in timings.items():
        if ms:
            print(f"{kind:<10} {len(ms):>6} {np.percentile(ms, 50):>8.3f} {np.percentile(ms, 99):>8.3f}")
    every = timings["exact"] + timings["typo"]
    print(f"all prefixes p50 / goal ({GOAL_MS:g} ms): {np.percentile(every, 50) / GOAL_MS:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
