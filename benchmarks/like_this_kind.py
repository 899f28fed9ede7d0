"""Like this item on a catalogue whose kind lives only in its titles: how often the results are
the opened item's kind.

Home Depot's and CrowdFlower's items are titles alone, so like-this has no kind column to keep
to (`recsys.similar.kind_filter`) and used to rank every item; it now keeps to the kind the
item's title names (`recsys.similar.TitleKinds`). Neither catalogue says its items' kinds, so
this measures on one that does, with those columns taken away: fashion without `articleType`,
`subCategory` and `masterCategory` (its titles: "Turtle Check Men Navy Blue Shirt"). For a
sample of items, the untrained start (as `recsys train` serves a catalogue with no searches)
answers `Recommender.similar` (k 10) ranked over every item (`same=()`) and as served (the
title's kind), and the share of the 10 results whose hidden `articleType` is the opened item's is
averaged, with a 95% interval over items; then with `articleType` kept under a name no list knows
(`Warengruppe`: served, the column whose values hold the titles' kinds,
`recsys.similar.inferred_kind_key`), and with the columns kept as named (the ceiling). p50 of the
call, same run.

    .venv/bin/python benchmarks/like_this_kind.py [--data ../shared/data] [--seeds 0 1 2] [--sample 300]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from known_item import DEFAULT_DATA, EMPTY_INTERACTIONS, PATH_LEVELS, _fashion  # noqa: E402

from recsys.catalog import Catalog  # noqa: E402
from recsys.io.schema import Schema  # noqa: E402
from recsys.recommender import Recommender  # noqa: E402
from training.fit import TrainConfig  # noqa: E402
from training.start import untrained_recommender  # noqa: E402


def _start(items, schema: Schema) -> Recommender:
    catalog = Catalog.build(items, schema.columns, lexicon=schema.lexicon, facets=schema.facets)
    return untrained_recommender(catalog, EMPTY_INTERACTIONS, TrainConfig(seed=0, length_unit_topics=0))


def _share(rec: Recommender, truth: dict[str, str], sample: np.ndarray, same) -> tuple[float, float, float]:
    """(mean share of the kind, its 95% half-interval, p50 ms) over the sampled items."""
    shares, times = [], []
    for i in sample.tolist():
        item = rec.catalog.item_ids[i]
        t0 = time.perf_counter()
        _, result = rec.similar(item, k=10, same=same, explain=False)
        times.append(time.perf_counter() - t0)
        shares.append(np.mean([truth[r.item_id] == truth[item] for r in result.items]))
    return float(np.mean(shares)), float(1.96 * np.std(shares) / np.sqrt(len(shares))), float(np.median(times) * 1e3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sample", type=int, default=300)
    args = parser.parse_args(argv)
    items, schema = _fashion(args.data)
    truth = dict(zip(items["item_id"], items["articleType"], strict=True))
    hidden = Schema(columns={k: v for k, v in schema.columns.items() if k.lower() not in PATH_LEVELS},
                    missing=schema.missing, lexicon=schema.lexicon)
    titles_only = _start(items.drop(columns=[c for c in items.columns if c.lower() in PATH_LEVELS]), hidden)
    # the kind column under a name no list knows (a German shop's `Warengruppe`)
    renamed = items.drop(columns=[c for c in items.columns if c.lower() in PATH_LEVELS and c != "articleType"])
    other_name = _start(renamed.rename(columns={"articleType": "Warengruppe"}),
                        Schema(columns={**hidden.columns, "Warengruppe": "other"}, missing=schema.missing,
                               lexicon=schema.lexicon))
    with_columns = _start(items, schema)
    print("| seed | every item | the title's kind (served) | the kind column named Warengruppe (served) "
          "| the kind column as named (served) |")
    print("|---|---|---|---|---|")
    for seed in args.seeds:
        sample = np.random.default_rng(seed).choice(titles_only.catalog.n_items, args.sample, replace=False)
        cells = [_share(titles_only, truth, sample, ()), _share(titles_only, truth, sample, None),
                 _share(other_name, truth, sample, None), _share(with_columns, truth, sample, None)]
        print(f"| {seed} | " + " | ".join(f"{m:.3f} ± {h:.3f} ({ms:.2f} ms)" for m, h, ms in cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
