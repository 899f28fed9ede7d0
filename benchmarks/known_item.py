"""Known-item search on any catalogue, with no queries needed: the untrained start against BM25.

A catalogue without logged searches still says what a shopper could type to find one of its
items: a few of that item's own discriminative words, with some noise. Known-item topics are
sampled in the manner of Azzopardi, de Rijke and Balog ("Building simulated queries for
known-item topics", SIGIR 2007; `recsys.known_item.TopicSampler`):

1. an item is drawn uniformly among those with at least three distinct content words;
2. the query length is 1 + Poisson(1.2), at most 5 and at most the item's distinct words;
3. each query word is, with probability 1 - noise, drawn without replacement from the item's own
   words (the text BM25 sees: title, description and attribute values) with probability
   proportional to its IDF (the "discriminative" term model), else a noise word drawn from the
   whole catalogue's word occurrences (the "popular" model).

The start counts item lengths in the unit `recsys train` chooses for the catalogue
(training/length_unit.py, on topics of its own seed); ``start_other_unit`` is the same start in
the other unit, side by side (in attributes: the start before the choice existed).

Each system ranks the whole catalogue and the rank of the sampled item is read: MRR (over the
top 100, a miss counts 0) and success@10; for the start and the project's BM25 also a tie-aware
MRR (`tie_aware_rr`), since BM25 ties colour variants of one product exactly and breaks them by
catalogue order, which plain MRR rewards or punishes by luck. Systems, side by side on the same topics:
``start`` (the model as ``recsys train`` starts it: ``training.start.untrained_recommender`` with no
interactions), ``bm25`` (the project's baseline, ``recsys.baselines.BM25Ranker``: bm25s, Snowball
stems, the project's stop words) and ``bm25s_plain`` (bm25s with its own tokeniser and English stop
words, no stemming).

Catalogues: ``homedepot``, ``crowdflower`` and ``fashion`` from ``../shared/data`` (never copied
into the project), ``fashion_specs`` (the same catalogue with its facet columns moved into one
``attributes`` column of ``key:value|...`` pairs, the shape of a spec-list export),
``fashion_paths`` (its three category columns as one ``product_type`` path, "Apparel > Topwear >
Shirts", the shape of a Google Merchant feed), and both
generators (``synthetic``: ``recsys generate``; ``furniture``: ``benchmarks/furniture_data.py``;
``electronics``: ``benchmarks/electronics_data.py``, spec lists of ``key:value`` pairs).

Usage::

    .venv/bin/python benchmarks/known_item.py [--datasets ...] [--seeds 0 1 2 3 4]
        [--topics 200] [--noise 0.2] [--json] [--out report.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from generated import generated  # noqa: E402

from recsys.baselines import BM25Ranker  # noqa: E402
from recsys.catalog import Catalog  # noqa: E402
from recsys.io.readers import read_items  # noqa: E402
from recsys.io.schema import Schema  # noqa: E402
from recsys.known_item import DEPTH, NOISE, TopicSampler, tie_aware_rr  # noqa: E402
from training.fit import TrainConfig  # noqa: E402
from training.length_unit import describe, with_length_unit  # noqa: E402
from training.start import untrained_recommender  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
FASHION_SCHEMA = ROOT / "data" / "fashion_schema.toml"
DATASETS = ("homedepot", "crowdflower", "fashion", "fashion_specs", "fashion_paths", "synthetic", "furniture",
            "electronics")
EMPTY_INTERACTIONS = pd.DataFrame({"query": pd.Series([], dtype=object),
                                   "item_idx": pd.Series([], dtype=np.int64),
                                   "label": pd.Series([], dtype=np.float32),
                                   "weight": pd.Series([], dtype=np.float32)})


# ---- catalogues --------------------------------------------------------------------------------

def _shared(data: Path, name: str) -> tuple[pd.DataFrame, Schema]:
    items, _ = read_items(data / name / "items.csv")
    return items, Schema()


def _fashion(data: Path) -> tuple[pd.DataFrame, Schema]:
    schema = Schema.load(FASHION_SCHEMA)
    items, _ = read_items(data / "fashion" / "styles.csv", on_bad_lines="skip", schema=schema)
    return items, schema


def _fashion_specs(data: Path) -> tuple[pd.DataFrame, Schema]:
    """The fashion catalogue exported as a spec list: every facet column becomes a `key:value`
    pair of one `attributes` column, as many shops' exports give them."""
    items, schema = _fashion(data)
    keep = {"item_id", "title"}
    ignored = {k.lower() for k, v in schema.columns.items() if v == "ignore"}
    spec_columns = [c for c in items.columns if c not in keep and c.lower() not in ignored]
    pairs = [
        "|".join(f"{c}:{row[c]}" for c in spec_columns if str(row[c]).strip())
        for row in items[spec_columns].to_dict("records")
    ]
    out = items[["item_id", "title"]].copy()
    out["attributes"] = pairs
    columns = {k: v for k, v in schema.columns.items() if v != "ignore"}
    return out, Schema(columns=columns, missing=schema.missing, lexicon=schema.lexicon)


def _fashion_paths(data: Path) -> tuple[pd.DataFrame, Schema]:
    """The fashion catalogue with its three category columns as one category path, the shape of
    Google Merchant's `product_type` ("Apparel > Topwear > Shirts")."""
    items, schema = _fashion(data)
    levels = [c for c in items.columns if c.lower() in PATH_LEVELS]
    out = items.drop(columns=levels)
    out["product_type"] = [" > ".join(str(v).strip() for v in row if str(v).strip())
                           for row in items[levels].itertuples(index=False)]
    columns = {k: v for k, v in schema.columns.items() if k.lower() not in PATH_LEVELS}
    return out, Schema(columns=columns, missing=schema.missing, lexicon=schema.lexicon)


PATH_LEVELS = ("mastercategory", "subcategory", "articletype")


def _generated(kind: str) -> tuple[pd.DataFrame, Schema]:
    items, _ = read_items(generated(kind, seed=0, n_queries=20) / "items.csv")
    return items, Schema()


LOADERS: dict[str, Callable[[Path], tuple[pd.DataFrame, Schema]]] = {
    "homedepot": lambda data: _shared(data, "homedepot"),
    "crowdflower": lambda data: _shared(data, "crowdflower"),
    "fashion": _fashion,
    "fashion_specs": _fashion_specs,
    "fashion_paths": _fashion_paths,
    "synthetic": lambda data: _generated("synthetic"),
    "furniture": lambda data: _generated("furniture"),
    "electronics": lambda data: _generated("electronics"),
}


# ---- systems -----------------------------------------------------------------------------------

class _PlainBM25:
    """bm25s with its own tokeniser (English stop words, no stemming)."""

    def __init__(self, texts: list[str]):
        import bm25s

        self.bm25s = bm25s
        self.retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        self.retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False),
                             show_progress=False)
        self.n = len(texts)

    def rank(self, query: str) -> np.ndarray:
        tokens = self.bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.ids[0]:
            return np.arange(0)
        ids, _ = self.retriever.retrieve(tokens, k=min(DEPTH, self.n), show_progress=False)
        return np.asarray(ids[0])


def _rank_of(ranked: np.ndarray, item: int) -> int | None:
    hit = np.flatnonzero(np.asarray(ranked)[:DEPTH] == item)
    return int(hit[0]) + 1 if hit.size else None


def _scores(ranks: list[int | None]) -> dict[str, float]:
    rr = [1.0 / r if r else 0.0 for r in ranks]
    return {"mrr": float(np.mean(rr)), "success@10": float(np.mean([bool(r and r <= 10) for r in ranks]))}


def run_dataset(name: str, data: Path, seeds: list[int], n_topics: int, noise: float) -> dict:
    t0 = time.perf_counter()
    items, schema = LOADERS[name](data)
    catalog = Catalog.build(items, schema.columns, lexicon=schema.lexicon, facets=schema.facets)
    cfg, choice = with_length_unit(catalog, TrainConfig(seed=0))  # as `recsys train` chooses it
    print(f"  {name}: {describe(choice.to_json())}", file=sys.stderr, flush=True)
    start = untrained_recommender(catalog, EMPTY_INTERACTIONS, cfg)
    other_unit = "attributes" if choice.unit == "words" else "words"
    other = untrained_recommender(catalog, EMPTY_INTERACTIONS,
                                  replace(cfg, model=replace(cfg.model, length_unit=other_unit)))
    bm25 = BM25Ranker().fit(catalog.texts, None)
    plain = _PlainBM25(catalog.texts)
    systems: dict[str, Callable[[str], np.ndarray]] = {
        "start": lambda q: start.top_indices(q, DEPTH),
        "start_other_unit": lambda q: other.top_indices(q, DEPTH),
        "bm25": lambda q: bm25.top_k(q, DEPTH),
        "bm25s_plain": plain.rank,
    }
    sampler = TopicSampler(catalog.texts)
    per_seed = []
    # each topic's reciprocal rank, plain and tie-aware, of the start and BM25, every seed's
    # topics in turn: what the ratio's interval resamples
    rr: dict[str, list[float]] = {k: [] for k in ("start", "bm25", "start_tie_aware", "bm25_tie_aware")}
    for seed in seeds:
        topics = sampler.sample(np.random.default_rng(seed), n_topics, noise)
        ranks = {sys_name: [_rank_of(rank(q), item) for q, item in topics] for sys_name, rank in systems.items()}
        result = {sys_name: _scores(r) for sys_name, r in ranks.items()}
        for sys_name in ("start", "bm25"):
            rr[sys_name] += [1.0 / r if r else 0.0 for r in ranks[sys_name]]
        for sys_name, score in (("start", start.scores), ("start_other_unit", other.scores), ("bm25", bm25.score)):
            tie_aware = [tie_aware_rr(np.asarray(score(q), dtype=np.float64), item) for q, item in topics]
            result[sys_name]["tie_aware_mrr"] = float(np.mean(tie_aware))
            if sys_name != "start_other_unit":
                rr[f"{sys_name}_tie_aware"] += tie_aware
        per_seed.append({"seed": seed, "topics": len(topics), **result})
        print(f"  {name} seed {seed}: " + ", ".join(f"{s} {result[s]['mrr']:.4f}" for s in systems),
              file=sys.stderr, flush=True)
    mean = {s: {m: float(np.mean([r[s][m] for r in per_seed])) for m in per_seed[0][s]}
            for s in systems}
    intervals = {"mrr": ratio_interval(np.array(rr["start"]), np.array(rr["bm25"])),
                 "tie_aware_mrr": ratio_interval(np.array(rr["start_tie_aware"]), np.array(rr["bm25_tie_aware"]))}
    return {"dataset": name, "items": catalog.n_items, "length_unit": choice.to_json(), "per_seed": per_seed,
            "mean": mean, "start_over_bm25_95": intervals, "seconds": round(time.perf_counter() - t0, 1)}


def ratio_interval(a: np.ndarray, b: np.ndarray, resamples: int = 2000, seed: int = 0) -> list[float]:
    """The 95% paired bootstrap interval of mean(a) / mean(b), a and b one value a topic for
    the same topics (topics resampled with replacement, a fixed seed): whether a start / BM25
    ratio below 1 is below it or within what another draw of topics would give."""
    if len(a) == 0:
        return [float("nan"), float("nan")]
    idx = np.random.default_rng(seed).integers(0, len(a), size=(resamples, len(a)))  # (R, n)
    num, den = a[idx].mean(axis=1), b[idx].mean(axis=1)  # (R,)
    ratios = num[den > 0] / den[den > 0]
    lo, hi = np.percentile(ratios, [2.5, 97.5]) if len(ratios) else (float("nan"), float("nan"))
    return [round(float(lo), 4), round(float(hi), 4)]


def table(results: list[dict]) -> str:
    lines = [f"{'catalogue':<14} {'items':>7} {'unit':>10} {'start MRR':>9} {'BM25 MRR':>9} {'plain MRR':>9} "
             f"{'start/BM25':>10} {'other unit':>10} {'start s@10':>10} {'BM25 s@10':>9} "
             f"{'tie-aware start/BM25':>20} {'other unit':>10} {'start/BM25 95%':>16} {'tie-aware 95%':>16}"]
    for r in results:
        m = r["mean"]

        def ratio(system: str, metric: str = "mrr", m: dict = m) -> float:
            return m[system][metric] / m["bm25"][metric] if m["bm25"][metric] else float("nan")

        lines.append(f"{r['dataset']:<14} {r['items']:>7,} {r['length_unit']['unit']:>10} {m['start']['mrr']:>9.4f} "
                     f"{m['bm25']['mrr']:>9.4f} {m['bm25s_plain']['mrr']:>9.4f} {ratio('start'):>10.3f} "
                     f"{ratio('start_other_unit'):>10.3f} {m['start']['success@10']:>10.3f} "
                     f"{m['bm25']['success@10']:>9.3f} {ratio('start', 'tie_aware_mrr'):>20.3f} "
                     f"{ratio('start_other_unit', 'tie_aware_mrr'):>10.3f} "
                     f"{_interval(r['start_over_bm25_95']['mrr']):>16} "
                     f"{_interval(r['start_over_bm25_95']['tie_aware_mrr']):>16}")
    return "\n".join(lines)


def _interval(bounds: list[float]) -> str:
    return f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding the catalogues")
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--topics", type=int, default=200, help="known-item topics per seed")
    p.add_argument("--noise", type=float, default=NOISE, help="share of query words drawn from the catalogue")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", type=Path, help="also write the JSON report here")
    args = p.parse_args(argv)
    results = [run_dataset(name, args.data, args.seeds, args.topics, args.noise) for name in args.datasets]
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results) if args.json else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
