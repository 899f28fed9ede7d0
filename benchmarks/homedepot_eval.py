"""The model on a real catalogue: Home Depot search relevance, held-out search terms, vs BM25.

Data: ``../shared/data/homedepot`` (never copied into the project): ``items.csv`` (item_id,
title: 54,667 products, titles only) and ``interactions.csv`` (query,item_id,label: 58,875 human
ratings, label = mean rating - 1, 0 irrelevant .. 2 exact, over about 9,400 search terms).

What it does, in one run:

1. builds the catalogue with the product's own `Catalog.build` (facet values read out of the
   titles by the lexicon; ``--no-lexicon`` turns that off for a comparison);
2. splits the *search terms* (seeded): 80% train, 20% evaluation, so no evaluation term is ever
   seen in training (``--fraction`` keeps a share of the terms for a quick run);
3. trains with the product's pipeline, ``training.fit.train_recommender(catalog, rows,
   TrainConfig())``, and times it;
4. ranks the *whole* catalogue for every evaluation term and reports NDCG@10 with gain = label
   (plus Recall@10 and MRR) for the model, BM25 over the same item text, popularity, click
   association and random (``training.evaluate.evaluate_all``).

The target (PRODUCT.md section 6): model NDCG@10 >= BM25's on held-out terms, training <= 10 min.

Usage::

    .venv/bin/python benchmarks/homedepot_eval.py [--fraction 0.2] [--seed 0] [--json]
        [--data ../shared/data/homedepot] [--epochs N] [--no-lexicon] [--out report.json]
        [--save ARTIFACTS_DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recsys.catalog import Catalog  # noqa: E402
from recsys.facets import FACETS  # noqa: E402
from recsys.io.readers import read_interactions, read_items  # noqa: E402
from recsys.lexicon import LexiconConfig  # noqa: E402
from training.evaluate import evaluate_all, judgments_from_rows, make_baselines  # noqa: E402
from training.fit import TrainConfig, train_recommender  # noqa: E402
from training.groups import split_queries  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "homedepot"
TARGET_SECONDS = 600.0


def load(data: Path, lexicon: bool) -> tuple[Catalog, pd.DataFrame, dict]:
    t0 = time.perf_counter()
    items, _ = read_items(data / "items.csv")
    inter, report = read_interactions(data / "interactions.csv", set(items["item_id"]))
    catalog = Catalog.build(items, lexicon=LexiconConfig(enabled=lexicon))
    rows = pd.DataFrame({
        "query": inter["query"].to_numpy(),
        "item_idx": inter["item_id"].map(catalog.idx).to_numpy(),
        "label": inter["label"].to_numpy(dtype=np.float32),
        "weight": inter["weight"].to_numpy(dtype=np.float32),
    })
    coverage = {f: round(float((catalog.item_attrs[f].getnnz(axis=1) > 0).mean()), 4) for f in FACETS}
    materials = sum(1 for a in catalog.vocab["other"] if a.key == "material")
    info = {"items": catalog.n_items, "rows": len(rows), "terms": int(rows["query"].nunique()),
            "dropped_duplicates": report.dropped_duplicates,
            "facet_coverage": coverage, "vocab": {f: len(catalog.vocab[f]) for f in FACETS},
            "material_values": materials, "load_seconds": round(time.perf_counter() - t0, 1)}
    return catalog, rows, info


def split(rows: pd.DataFrame, fraction: float, eval_fraction: float, seed: int
          ) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    terms = np.array(sorted(rows["query"].unique()))
    if fraction < 1.0:
        keep = set(rng.choice(terms, size=max(10, round(len(terms) * fraction)), replace=False))
        rows = rows[rows["query"].isin(keep)]
    _, held = split_queries(rows["query"], eval_fraction, rng)
    train = rows[~rows["query"].isin(held)].reset_index(drop=True)
    held_rows = rows[rows["query"].isin(held)].reset_index(drop=True)
    return train, held_rows


def run(args: argparse.Namespace) -> dict:
    catalog, rows, info = load(args.data, not args.no_lexicon)
    train_rows, eval_rows = split(rows, args.fraction, args.eval_fraction, args.seed)
    cfg = TrainConfig(seed=args.seed, **({"epochs": args.epochs} if args.epochs else {}))
    last = [0.0]

    def on_step(step: int, total: int, loss: float) -> None:
        now = time.perf_counter()
        if args.progress and (now - last[0] > 15 or step == total):
            last[0] = now
            print(f"  step {step}/{total} loss {loss:.3f} ({now - t0:.0f}s)", file=sys.stderr)

    t0 = time.perf_counter()
    rec, fit = train_recommender(catalog, train_rows, cfg, on_step)
    train_seconds = time.perf_counter() - t0
    judgments = judgments_from_rows(eval_rows)
    t1 = time.perf_counter()
    baselines = make_baselines(rec, train_rows, args.seed)
    metrics = evaluate_all(rec, judgments, baselines, k=10)
    report = {
        "data": str(args.data), "commit": _commit(), "lexicon": not args.no_lexicon,
        "seed": args.seed, "fraction": args.fraction, "eval_fraction": args.eval_fraction,
        "catalog": info,
        "split": {"train_terms": int(train_rows["query"].nunique()), "train_rows": len(train_rows),
                  "eval_terms": int(eval_rows["query"].nunique()), "eval_rows": len(eval_rows),
                  "eval_terms_with_a_relevant_item": len(judgments)},
        "train_seconds": round(train_seconds, 1),
        "eval_seconds": round(time.perf_counter() - t1, 1),
        "fit": {"best_epoch": fit.best_epoch, "train_loss": [round(x, 4) for x in fit.train_loss],
                "validation_loss": [round(x, 4) for x in fit.validation_loss]},
        "config": cfg.to_json(),
        "metrics": metrics,
        "target": {"model_ndcg_ge_bm25": metrics["model"]["ndcg@10"] >= metrics["bm25"]["ndcg@10"],
                   "train_within_10_minutes": train_seconds <= TARGET_SECONDS},
    }
    if args.save:  # a model version to inspect: recsys explain "QUERY" ITEM --model DIR
        from recsys.artifact import save_version

        popularity = np.bincount(train_rows["item_idx"], weights=train_rows["label"], minlength=catalog.n_items)
        folder = save_version(rec, args.save, {"benchmark": "homedepot_eval", "metrics": metrics},
                              popularity=popularity)
        report["saved"] = str(folder)
    return report


def table(report: dict) -> str:
    m = report["metrics"]
    lines = [f"{'ranker':<12} {'NDCG@10':>8} {'Recall@10':>10} {'MRR':>7}   (eval terms: "
             f"{m['model']['queries']}, full catalogue of {report['catalog']['items']:,} items)"]
    for name, r in ((n, r) for n, r in m.items() if "ndcg@10" in r):
        lines.append(f"{name:<12} {r['ndcg@10']:>8.4f} {r['recall@10']:>10.4f} {r['mrr']:>7.4f}")
    s, t = report["split"], report["target"]
    lines.append(
        f"train: {s['train_terms']:,} terms / {s['train_rows']:,} rows in {report['train_seconds']:.0f}s "
        f"(best epoch {report['fit']['best_epoch']}); lexicon {'on' if report['lexicon'] else 'off'}; "
        f"facet coverage {report['catalog']['facet_coverage']}")
    lines.append(f"target: model >= BM25 {'yes' if t['model_ndcg_ge_bm25'] else 'NO'}, "
                 f"training <= 10 min {'yes' if t['train_within_10_minutes'] else 'NO'}")
    return "\n".join(lines)


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") or None
    except (OSError, subprocess.SubprocessError):
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with items.csv, interactions.csv")
    p.add_argument("--fraction", type=float, default=1.0, help="share of the search terms to use")
    p.add_argument("--eval-fraction", type=float, default=0.2, help="share of the terms held out")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, help="at most this many (default: TrainConfig's)")
    p.add_argument("--no-lexicon", action="store_true", help="no facet values read out of titles")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--out", type=Path, help="also write the JSON report here")
    p.add_argument("--progress", action="store_true", help="training progress on stderr")
    p.add_argument("--save", type=Path, help="also save the model as a version in this artifacts folder")
    args = p.parse_args(argv)
    if not (args.data / "items.csv").is_file():
        print(f"no Home Depot data at {args.data} (see ../shared/data/README.md)", file=sys.stderr)
        return 2
    if not 0 < args.fraction <= 1 or not 0 < args.eval_fraction < 1:
        p.error("--fraction must be in (0, 1] and --eval-fraction in (0, 1)")
    report = run(args)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
