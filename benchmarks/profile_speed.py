"""What a shopper's profile costs a recommendation (issue 32, point 5): `Recommender.recommend`
(k=10, explanations on, as POST /recommend answers) with a profile of 4 history words against
without, side by side on the same queries, warm; and what building a profile costs (done once per
shopper per RECSYS_PROFILE_TTL_S, not per request).

    .venv/bin/python benchmarks/profile_speed.py [--items 100000] [--queries 200] [--rounds 3]

The catalogue is the generator's, the model its untrained start (the same arrays and scoring path
as a trained one, as benchmarks/scale_bench.py). Each profile is built from 30 simulated searches
of a shopper (10 impressions, 2 clicks each) over random items.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recsys.catalog import Catalog  # noqa: E402
from recsys.profile import HistoryEvent, Profile, build_profile  # noqa: E402
from recsys.recommender import Recommender  # noqa: E402
from recsys.synthetic import generate  # noqa: E402
from training.fit import TrainConfig  # noqa: E402
from training.start import untrained_recommender  # noqa: E402

NO_EVENTS = pd.DataFrame({"query": pd.Series([], dtype=object), "item_idx": pd.Series([], dtype=np.int64),
                          "label": pd.Series([], dtype=np.float32), "weight": pd.Series([], dtype=np.float32)})


def shopper_profile(rec: Recommender, rng: np.random.Generator, searches: int = 30) -> Profile:
    events = []
    for s in range(searches):
        shown = rng.choice(rec.catalog.n_items, size=10, replace=False)
        events += [HistoryEvent(int(i), "impression", float(s), "q", f"r{s}", r + 1) for r, i in enumerate(shown)]
        events += [HistoryEvent(int(i), "click", float(s), "q", f"r{s}", 1) for i in shown[:2]]
    return build_profile(rec.catalog, events, rec.featurizer.attribute_df, rec.matched_attributes)


def timed_ms(rec: Recommender, query: str, history: list[str]) -> float:
    """One POST /recommend's work, in milliseconds."""
    t0 = time.perf_counter()
    rec.recommend(query, k=10, history=history)
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cache", type=Path, default=ROOT / "data" / "generated" / "profile_speed")
    args = p.parse_args()
    data = args.cache / f"shop{args.items}"
    if not (data / "items.csv").is_file():
        generate(data, n_items=args.items, n_queries=max(args.queries * 2, 400), seed=0)
    items = pd.read_csv(data / "items.csv", dtype=str, keep_default_na=False)
    rec = untrained_recommender(Catalog.build(items), NO_EVENTS, TrainConfig(seed=0))
    queries = list(pd.read_csv(data / "judgments.csv", dtype=str, keep_default_na=False)["query"].unique())
    queries = queries[:args.queries] + [""] * max(1, args.queries // 10)  # and some home pages
    rng = np.random.default_rng(0)
    build_ms = []
    for _ in range(20):
        t0 = time.perf_counter()
        shopper_profile(rec, rng)
        build_ms.append((time.perf_counter() - t0) * 1000)
    profiles = [shopper_profile(rec, rng).words for _ in range(len(queries))]
    for q, words in zip(queries, profiles):  # warm: every word's rows in the caches
        rec.recommend(q, k=10, history=words)
        rec.recommend(q, k=10)
    plain: list[float] = []
    personal: list[float] = []
    for _ in range(args.rounds):
        for q, words in zip(queries, profiles):  # side by side: the same moment of a shared machine
            plain.append(timed_ms(rec, q, []))
            personal.append(timed_ms(rec, q, words))
    typed = np.array([bool(q) for q in queries] * args.rounds)
    print(f"{args.items:,} items, {len(queries)} queries x {args.rounds} rounds (explanations on, k=10)")
    print("| queries | p50 ms without a profile | with a profile | ratio | p99 without | with | ratio |\n"
          "|---|---|---|---|---|---|---|")
    for name, rows in (("all", typed | True), ("typed", typed), ("empty (home page)", ~typed)):
        a, b = np.array(plain)[rows], np.array(personal)[rows]
        p50, p99 = (np.median(a), np.median(b)), (np.percentile(a, 99), np.percentile(b, 99))
        print(f"| {name} | {p50[0]:.2f} | {p50[1]:.2f} | {p50[1] / p50[0]:.2f}x | {p99[0]:.2f} | {p99[1]:.2f} | "
              f"{p99[1] / p99[0]:.2f}x |")
    print(f"building a profile (30 searches, 360 events): p50 {statistics.median(build_ms):.1f} ms")


if __name__ == "__main__":
    main()
