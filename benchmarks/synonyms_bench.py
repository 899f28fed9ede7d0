"""What a shop's synonyms cost a query (issue 31, point 2: a query without any synonym must cost
what it costs without synonyms), in process, on `recsys bench`'s synthetic catalogue and model.

    .venv/bin/python benchmarks/synonyms_bench.py [--items 100000] [--queries 200] [--rounds 3] [--synonyms 1000]

Three books, each asked every query in a pass of its own, the passes interleaved and their
order rotated round by round (so the three share the machine's state), `Recommender.rank(k=10)`
timed: none; `--synonyms` rules whose words no query has (what most queries of a shop meet); and
one rule per word of the queries (every word has a synonym: the most a query can pay). Warm: the
per-word caches hold the book's words (an untimed pass of the book first: they are bounded, and a
book with every word's synonyms keys its words apart); cold: emptied before each query, as
`recsys bench`'s index_cold. Prints each book's p50 and p99 over the rounds and its ratio to no
book; the load average at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cli.bench import _recommender, synthetic_data  # noqa: E402
from recsys.synonyms import Synonym, SynonymBook  # noqa: E402
from recsys.tokenize import words  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--synonyms", type=int, default=1000, help="rules of the book no query uses")
    args = p.parse_args()
    print(f"load average at the start: {os.getloadavg()}")
    data = synthetic_data(args.items, args.queries, 0, None, lambda m: print(m, file=sys.stderr))
    rec, _, _ = _recommender(data, 0, lambda m: print(m, file=sys.stderr))
    queries = data.queries
    said = sorted({w for q in queries for w in words(q)})
    catalogue = sorted(rec.featurizer.catalog_keys())
    unused = SynonymBook([Synonym(f"u{n}", (f"zqx{n}",), (catalogue[n % len(catalogue)],))
                          for n in range(args.synonyms)])
    every = SynonymBook([Synonym(w, (w,), (catalogue[n % len(catalogue)],)) for n, w in enumerate(said)])
    books = {"none": None, f"{args.synonyms} unused": unused, f"every word ({len(said)})": every}
    print(f"{args.items} items, {len(queries)} queries x {args.rounds} rounds, Recommender.rank(k=10)")
    print(f"{'book':<22} {'caches':<6} {'p50 ms':>8} {'p99 ms':>8} {'p50 / none':>11}")
    for cold in (False, True):
        times = _timed(rec, queries, books, args.rounds, cold)
        base = float(np.median(times["none"]))
        for name, t in times.items():
            p50, p99 = float(np.median(t)), float(np.percentile(t, 99))
            print(f"{name:<22} {'cold' if cold else 'warm':<6} {p50 * 1e3:8.4f} {p99 * 1e3:8.3f} {p50 / base:11.3f}")
    print(f"load average at the end: {os.getloadavg()}")


def _timed(rec, queries: list[str], books: dict, rounds: int, cold: bool) -> dict[str, list[float]]:
    """Per book, the seconds of each `rank`: warm, after an untimed pass of every query with the
    same book; cold, the caches emptied before each query."""
    names = list(books)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds * len(names)):  # each book a pass of every query, the order rotated
        name = names[(r + r // len(names)) % len(names)]
        rec.use_synonyms(books[name])
        if not cold:  # the caches hold a bounded number of words: this book's, not the last one's
            for q in queries:
                rec.rank(q, k=10)
        for q in queries:
            if cold:
                rec.index.clear_caches()
            start = time.perf_counter()
            rec.rank(q, k=10)
            times[name].append(time.perf_counter() - start)
    return times


if __name__ == "__main__":
    main()
