"""The learning curve: the model against BM25 and against its own untrained start, as a shop's
logged search terms grow from none to all of them.

For each catalogue (default: Home Depot and CrowdFlower from ``../shared/data``, never copied into
the project) the *search terms* are split once (seeded): 20% are held out for evaluation, and the
training terms are taken in one seeded order, so that each point's terms contain the previous
point's. At every point (0 = untrained, 30, 100, 300, 1000, all training terms) one run:

1. builds the featurizer from those terms' interactions (its click-association evidence comes
   from them) and takes the untrained model (the lexical start, in the item-length unit
   ``recsys train`` chooses for the catalogue, ``training.length_unit``: chosen once per
   catalogue, since it reads the items alone), then trains it with the product's own pipeline
   (``training.fit.train_recommender``);
2. ranks the *whole* catalogue for every held-out term with the trained model, the untrained
   start and BM25 (``recsys.baselines.BM25Ranker``: bm25s, Snowball stems, English stop words,
   over the same item text) and reports NDCG@10 with gain = label.

It prints a table and writes a plot (``--plot``, default ``docs/learning_curve.png``).

The project's generators (``synthetic``, ``furniture``, ``electronics``: a spec-list catalogue
with crowd-rated searches) are written to a temporary folder when ``--data`` has no catalogue of
that name (``--generator-seed``, ``--generator-items``).

Usage::

    .venv/bin/python benchmarks/learning_curve.py [--datasets homedepot crowdflower]
        [--counts 0 30 100 300 1000 all] [--seed 0] [--json] [--out report.json] [--plot PNG]
        [--data ROOT] [--generator-seed 0] [--generator-items N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recsys.catalog import Catalog  # noqa: E402
from recsys.io.readers import read_interactions, read_items  # noqa: E402
from recsys.metrics import evaluate_rankings  # noqa: E402
from training.evaluate import judgments_from_rows, make_baselines, model_rankings  # noqa: E402
from training.fit import TrainConfig, train_recommender  # noqa: E402
from training.groups import split_queries  # noqa: E402
from training.length_unit import describe, with_length_unit  # noqa: E402
from training.start import untrained_recommender  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from generated import GENERATED, generated  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_COUNTS = ("0", "30", "100", "300", "1000", "all")


def load(folder: Path) -> tuple[Catalog, pd.DataFrame]:
    items, _ = read_items(folder / "items.csv")
    inter, _ = read_interactions(folder / "interactions.csv", set(items["item_id"]))
    catalog = Catalog.build(items)
    rows = pd.DataFrame({
        "query": inter["query"].to_numpy(),
        "item_idx": inter["item_id"].map(catalog.idx).to_numpy(),
        "label": inter["label"].to_numpy(dtype=np.float32),
        "weight": inter["weight"].to_numpy(dtype=np.float32),
    })
    return catalog, rows


def split(rows: pd.DataFrame, seed: int, eval_fraction: float = 0.2
          ) -> tuple[list[str], pd.DataFrame, pd.DataFrame]:
    """Training terms in a seeded order, the training rows and the held-out rows."""
    rng = np.random.default_rng(seed)
    _, held = split_queries(rows["query"], eval_fraction, rng)
    train = rows[~rows["query"].isin(held)].reset_index(drop=True)
    order = list(rng.permutation(np.array(sorted(train["query"].unique()))))
    return order, train, rows[rows["query"].isin(held)].reset_index(drop=True)


def ndcg(rankings: dict, judgments: dict) -> float:
    return round(evaluate_rankings(rankings, judgments, 10)["ndcg@10"], 4)


def curve(name: str, folder: Path, counts: list[str], seed: int) -> dict:
    t0 = time.perf_counter()
    catalog, rows = load(folder)
    order, train, held = split(rows, seed)
    judgments = judgments_from_rows(held)
    queries = list(judgments)
    points = []
    bm25 = None
    chosen, choice = with_length_unit(catalog, TrainConfig(seed=seed))  # as `recsys train` chooses
    print(f"  {name}: {describe(choice.to_json())}", file=sys.stderr, flush=True)
    cfg = replace(chosen, length_unit_topics=0)  # the unit given: each fit would choose it again
    for c in counts:
        if c != "all" and int(c) > len(order):
            continue
        n = len(order) if c == "all" else int(c)
        if points and points[-1]["train_terms"] == n:
            continue
        subset = train[train["query"].isin(set(order[:n]))].reset_index(drop=True)
        start = untrained_recommender(catalog, subset, cfg)
        if bm25 is None:
            bm25 = make_baselines(start, None, seed)["bm25"]
            bm25_ndcg = ndcg({q: bm25.top_k(q, 10) for q in queries}, judgments)
        t1 = time.perf_counter()
        if n == 0:
            trained, seconds, report = start, 0.0, None
        else:
            trained, report = train_recommender(catalog, subset, cfg)
            seconds = time.perf_counter() - t1
        point = {
            "train_terms": n, "train_rows": len(subset),
            "model": ndcg(model_rankings(trained, queries), judgments),
            "untrained": ndcg(model_rankings(start, queries), judgments),
            "bm25": bm25_ndcg, "train_seconds": round(seconds, 1),
            "alpha": getattr(report, "alpha", 0.0),
            "validation_ndcg": getattr(report, "validation_ndcg", {}),
        }
        points.append(point)
        print(f"  {name} {n:>5} terms: model {point['model']:.4f} untrained {point['untrained']:.4f} "
              f"bm25 {bm25_ndcg:.4f} ({seconds:.0f}s)", file=sys.stderr, flush=True)
    return {"dataset": name, "items": catalog.n_items, "eval_terms": len(queries),
            "all_train_terms": len(order), "points": points,
            "seconds": round(time.perf_counter() - t0, 1)}


def table(results: list[dict]) -> str:
    lines = [f"{'catalogue':<12} {'terms':>6} {'model':>7} {'untrained':>9} {'BM25':>7} "
             f"{'model/BM25':>10} {'alpha':>6} {'train s':>8}"]
    for r in results:
        for p in r["points"]:
            ratio = p["model"] / p["bm25"] if p["bm25"] else float("nan")
            lines.append(f"{r['dataset']:<12} {p['train_terms']:>6} {p['model']:>7.4f} "
                         f"{p['untrained']:>9.4f} {p['bm25']:>7.4f} {ratio:>10.3f} "
                         f"{p['alpha']:>6.2f} {p['train_seconds']:>8.1f}")
        lines.append(f"{'':<12} ({r['items']:,} items, {r['eval_terms']} held-out terms, "
                     f"{r['seconds']:.0f} s in all)")
    return "\n".join(lines)


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), squeeze=False)
    for ax, r in zip(axes[0], results):
        x = [max(p["train_terms"], 1) for p in r["points"]]
        for key, style in (("model", "o-"), ("untrained", "s--"), ("bm25", "k:")):
            ax.plot(x, [p[key] for p in r["points"]], style, label=key)
        ax.set_xscale("log")
        ax.set_xlabel("training search terms (0 plotted at 1)")
        ax.set_ylabel("NDCG@10 on held-out terms")
        ax.set_title(f"{r['dataset']} ({r['items']:,} items)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding the catalogues")
    p.add_argument("--datasets", nargs="+", default=["homedepot", "crowdflower"])
    p.add_argument("--counts", nargs="+", default=list(DEFAULT_COUNTS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--generator-seed", type=int, default=0,
                   help=f"seed of a generated catalogue ({', '.join(GENERATED)}) not found under --data")
    p.add_argument("--generator-items", type=int, help="its items (default: the generator's size here)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", type=Path, help="also write the JSON report here")
    p.add_argument("--plot", type=Path, default=ROOT / "docs" / "learning_curve.png")
    p.add_argument("--no-plot", action="store_true")
    args = p.parse_args(argv)
    results = []
    for name in args.datasets:
        folder = args.data / name
        if not (folder / "items.csv").is_file() and name in GENERATED:
            folder = generated(name, args.generator_seed, args.generator_items)
        if not (folder / "items.csv").is_file():
            print(f"no catalogue at {folder} (see ../shared/data/README.md)", file=sys.stderr)
            return 2
        results.append(curve(name, folder, args.counts, args.seed))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if not args.no_plot:
        plot(results, args.plot)
    print(json.dumps(results) if args.json else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
