"""`recsys bench`: the production scorer against the reference attention and two lexical engines,
on one catalogue and one query set, side by side in one process.

The catalogue is a generated one (`--items N`, trained one epoch on its sessions, timed on its
queries) or a real one (`--catalog items.csv`): trained one epoch on `--interactions` and timed on
their search terms, else the untrained start timed on known-item queries drawn from its items'
texts. Either way the same code times the same engines and prints the same table.

Latencies are for a top-10 answer to one query at a time. The production engines run the whole
query set in turn, each starting from empty per-word caches (running them query by query would
let the first warm the caches of the next); compare the ratios, not the absolute figures.
A shared machine's speed drifts by 2x over seconds (the same engine's p50 measured 0.35-0.75 ms
in twelve runs back to back), so engines measured one after another, seconds apart, gain or lose
half of their ratio by chance. So the lexical engines answer each query right after the
production engine under test (they share no cache with it), and a ratio is the production
engine's p50 over tantivy's from the same pass, the median over `rounds` rounds of all of it;
an engine's figures in the table pool its latencies of every pass.
"model" is `Recommender.rank`: item ids and scores, as the tantivy engine returns doc ids.
The reference is `FacetScorer.forward` over every item in blocks, the computation training runs,
with no shortcut; it is slow, so it runs on as many queries as fit its time budget (reported).
Agreement@10 compares its top 10 with the production top 10.
"""

from __future__ import annotations

import gc
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import torch

from recsys.baselines import BM25Ranker
from recsys.catalog import Catalog
from recsys.errors import InputError, MissingExtraError
from recsys.io.schema import Schema
from recsys.known_item import NOISE, TopicSampler
from recsys.recommender import Recommender, top_k
from recsys.synthetic import generate
from recsys.tokenize import match_keys
from training.fit import TrainConfig, fit_model
from training.groups import InteractionCounts, make_groups
from training.length_unit import describe, with_length_unit
from training.start import build_featurizer, new_model, untrained_model
from training.train import TrainInputs, load_training_data, read_catalog

K = 10
REFERENCE_BLOCK = 8192  # items per call of the reference forward


@dataclass
class Engine:
    name: str
    search: Callable[[str], object]  # query -> its top 10 (timed; what it returns is not read)
    build_s: float
    note: str = ""
    latencies: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        lat = np.asarray(self.latencies) * 1e3
        out: dict[str, Any] = {"p50_ms": _r(np.percentile(lat, 50)), "p99_ms": _r(np.percentile(lat, 99)),
               "qps": _r(1e3 / lat.mean()), "build_s": _r(self.build_s), "queries": len(lat)}
        if self.note:
            out["note"] = self.note
        return out


def _r(x: float) -> float:
    return float(f"{x:.4g}")


ROUNDS = 5  # passes of every production engine (with the lexical ones) over the query set


@dataclass
class BenchData:
    """What one bench runs on: a catalogue, the interactions its model trains on (none: the
    untrained start) and the queries timed."""

    catalogue: str  # which one, as the report names it
    catalog: Catalog
    rows: pd.DataFrame  # query, item_idx, label, weight, count
    queries: list[str]
    query_source: str


def run_bench(n_items: int = 100_000, n_queries: int = 200, seed: int = 0, sessions: int | None = None,
              reference_budget_s: float = 30.0, log: Callable[[str], None] | None = None,
              rounds: int | None = None, items_csv: Path | None = None,
              interactions_csv: Path | None = None) -> dict:
    """Runs the whole benchmark and returns its figures (see `recsys bench --help`); `rounds`
    None: `ROUNDS`. `items_csv`: a catalogue to bench on instead of a generated one of `n_items`
    (with `interactions_csv`: trained one epoch on them, their search terms the queries)."""
    _import_tantivy()  # a missing extra is said before minutes of generating and training
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    if items_csv is not None:
        data = catalogue_data(items_csv, interactions_csv, n_queries, seed, log)
    else:
        data = synthetic_data(n_items, n_queries, seed, sessions, log)
    rec, training, model_build = _recommender(data, seed, log)
    catalog, queries = data.catalog, data.queries

    index = rec.index
    engines = [
        Engine("model", lambda q: rec.rank(q, k=K), model_build,
               "Recommender.rank(k=10): the production scorer, item ids and scores"),
        Engine("recommend", lambda q: rec.recommend(q, k=K, explain=False), model_build,
               "Recommender.recommend(k=10, explain=False): the same with titles and attribute labels"),
        Engine("index", lambda q: index.top_k(index.query_state(q), None, None, K)[0], model_build,
               "ScoringIndex.query_state + top_k: the scoring alone, no result objects"),
        Engine("index_cold", lambda q: _cold(index, q), model_build,
               "the same with its per-word caches emptied before every query"),
    ]
    engines += _lexical_engines(catalog.texts, log)

    # each production engine over the whole query set from empty per-word caches, one after
    # another (query by query they would warm the shared index's caches for each other); the
    # lexical engines, which share nothing with them, answer each query right after it, so that
    # a ratio compares latencies taken at the same moments (the module's docstring)
    production, lexical = engines[:4], engines[4:]
    round_ratios: list[dict[str, float]] = []
    for _ in range(max(1, ROUNDS if rounds is None else rounds)):
        ratios: dict[str, float] = {}
        for e in production:
            index.clear_caches()
            for q in queries[:5]:  # warm-up: JIT compilation, first-call allocations
                for engine in (e, *lexical):
                    engine.search(q)
            index.clear_caches()
            timed: dict[str, list[float]] = {engine.name: [] for engine in (e, *lexical)}
            gc.collect()
            gc.disable()
            try:
                for q in queries:
                    for engine in (e, *lexical):
                        t0 = time.perf_counter()
                        engine.search(q)
                        timed[engine.name].append(time.perf_counter() - t0)
            finally:
                gc.enable()
            for engine in (e, *lexical):
                engine.latencies += timed[engine.name]
            ratios[e.name] = float(np.percentile(timed[e.name], 50) / np.percentile(timed["tantivy"], 50))
        round_ratios.append(ratios)

    ref, agree, max_diff = _reference(rec, queries, reference_budget_s, log)
    result: dict[str, Any] = {"catalogue": data.catalogue, "items": catalog.n_items,
                              "queries": len(queries), "query_source": data.query_source}
    result.update({e.name: e.summary() for e in engines})
    result["reference"] = ref.summary()
    result["agree@10"] = _r(agree)
    result["max_abs_score_diff"] = float(f"{max_diff:.3g}")
    result["bytes_per_item"] = round(rec.index.nbytes() / max(catalog.n_items, 1))
    result["training"] = training
    def over_tantivy(name: str) -> list[float]:  # per round
        return [_r(r[name]) for r in round_ratios]

    result["rounds"] = len(round_ratios)
    result["ratios"] = {"reference_p50_over_model": _r(result["reference"]["p50_ms"] / result["model"]["p50_ms"]),
                        **{f"{name}_p50_over_tantivy": _r(float(np.median(over_tantivy(name))))
                           for name in ("model", "recommend", "index")},
                        "model_p50_over_tantivy_per_round": over_tantivy("model")}
    return result


HTTP_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "http_bench.py"
HTTP_WORKERS = (1, 2)


def run_http(rounds: int = 3, seconds: float = 6.0, log: Callable[[str], None] | None = None) -> dict:
    """POST /recommend (k 10) with and without explanations against GET /health, served by
    `recsys serve --workers 1`, then 2, on the default synthetic catalogue: what
    benchmarks/http_bench.py --ratios measures (its progress goes to stderr), its medians over
    `rounds` rounds of `seconds` a phase. wrk loads the server when installed, else Python
    clients."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    if not HTTP_BENCH.is_file():
        raise InputError(f"recsys bench --http runs {HTTP_BENCH}, which is not there: run it from a "
                         "checkout of the project (pip install -e .)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "http.json"
        cmd = [sys.executable, str(HTTP_BENCH), "--ratios", "--workers", ",".join(map(str, HTTP_WORKERS)),
               "--rounds", str(rounds), "--seconds", f"{seconds:g}", "--json", str(out),
               *(["--wrk"] if shutil.which("wrk") else [])]
        log("HTTP: " + " ".join(cmd[1:]))
        done = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr, check=False)
        if done.returncode != 0 or not out.is_file():
            raise RuntimeError(f"benchmarks/http_bench.py failed (exit code {done.returncode}); its output is above")
        figures: dict = json.loads(out.read_text())
    return figures


def synthetic_data(n_items: int, n_queries: int, seed: int, sessions: int | None,
                   log: Callable[[str], None]) -> BenchData:
    """`recsys generate`'s catalogue of `n_items` and its sessions; the queries: its held-out
    judged ones first, then the training ones."""
    sessions = sessions if sessions is not None else min(4000, max(300, n_items // 2))
    with tempfile.TemporaryDirectory(prefix="recsys-bench-") as tmp:
        t0 = time.perf_counter()
        generate(tmp, n_items=n_items, n_queries=sessions, seed=seed)
        log(f"generated {n_items} items, {sessions} sessions in {time.perf_counter() - t0:.1f}s")
        t0 = time.perf_counter()
        catalog, rows, _ = load_training_data(TrainInputs(Path(tmp) / "items.csv", Path(tmp) / "interactions.csv"))
        judged = pd.read_csv(Path(tmp) / "judgments.csv", dtype=str, keep_default_na=False)["query"].tolist()
        log(f"read the catalogue in {time.perf_counter() - t0:.1f}s")
    queries = _repeated(judged + rows["query"].tolist(), n_queries, "the generated data")
    return BenchData(f"synthetic (recsys generate, seed {seed})", catalog, rows, queries,
                     "the generator's judged queries, then its training queries")


def catalogue_data(items_csv: Path, interactions_csv: Path | None, n_queries: int, seed: int,
                   log: Callable[[str], None]) -> BenchData:
    """A catalogue of the CSV contract. With interactions: the model trains on them and their
    distinct search terms are the queries, in file order; without: the untrained start, and
    known-item queries drawn from the items' own texts (`recsys.known_item`)."""
    t0 = time.perf_counter()
    if interactions_csv is not None:
        catalog, rows, _ = load_training_data(TrainInputs(items_csv, interactions_csv))
        queries = _repeated(rows["query"].tolist(), n_queries, str(interactions_csv))
        source = f"the search terms of {interactions_csv}"
    else:
        catalog, _, _ = read_catalog(items_csv, Schema())
        rows = InteractionCounts().rows()
        topics = TopicSampler(catalog.texts).sample(np.random.default_rng(seed), n_queries, NOISE)
        queries = _repeated([q for q, _ in topics], n_queries, f"{items_csv} (no item has 3 content words)")
        source = "known-item queries drawn from the items' texts"
    log(f"read {catalog.n_items} items from {items_csv} in {time.perf_counter() - t0:.1f}s; {len(queries)} queries")
    return BenchData(str(items_csv), catalog, rows, queries, source)


def _repeated(queries: list[str], n: int, where: str) -> list[str]:
    """The first `n` distinct non-blank queries, in turn again if there are fewer."""
    distinct = [q for q in dict.fromkeys(queries) if q.strip()]
    if not distinct:
        raise InputError(f"{where} has no query to time")
    return [distinct[i % len(distinct)] for i in range(n)]


def _recommender(data: BenchData, seed: int, log: Callable[[str], None]) -> tuple[Recommender, dict, float]:
    """The model of `data`: one epoch of fit_model on its interactions, or the untrained start
    without any; returns it, what its training cost and the seconds its scoring index took."""
    cfg, length_choice = with_length_unit(data.catalog, TrainConfig(epochs=1, seed=seed))  # as `recsys train`
    log(describe(length_choice.to_json()))
    if data.rows.empty:
        model, featurizer = untrained_model(data.catalog, data.rows, cfg)
        training: dict[str, Any] = {"interactions": 0, "threads": torch.get_num_threads()}
        log("no interactions: the untrained start")
    else:
        featurizer = build_featurizer(data.catalog, data.rows, cfg)
        model = new_model(featurizer, seed)
        groups = make_groups(data.rows, data.catalog.n_items)
        t0 = time.perf_counter()
        fit_model(model, featurizer, groups, cfg)
        fit_s = time.perf_counter() - t0
        n_rows = int(data.rows["count"].sum())  # rows of the log (`rows` keeps its distinct triples)
        training = {"interactions": n_rows, "examples": len(groups.positive), "epoch_s": _r(fit_s),
                    "interactions_per_s": _r(n_rows / fit_s), "threads": torch.get_num_threads()}
        log(f"trained one epoch in {fit_s:.1f}s: {training['interactions_per_s']:.0f} interactions/s")
    training["length_unit"] = length_choice.to_json()
    t0 = time.perf_counter()
    rec = Recommender(model, featurizer)
    model_build = time.perf_counter() - t0
    log(f"built the scoring index in {model_build:.2f}s")
    return rec, training, model_build


def _cold(index, q: str) -> np.ndarray:
    index.clear_caches()
    return index.top_k(index.query_state(q), None, None, K)[0]


def _item_indices(rec: Recommender, result) -> np.ndarray:
    return np.array([rec.catalog.idx(it.item_id) for it in result.items], dtype=np.int64)


# ---- lexical engines -----------------------------------------------------------------------------


def _lexical_engines(texts: list[str], log) -> list[Engine]:
    engines = []
    t0 = time.perf_counter()
    ranker = BM25Ranker().fit(texts)
    built = time.perf_counter() - t0
    everything = np.ones(len(texts), dtype=bool)
    engines.append(Engine("bm25s", lambda q: top_k(ranker.score(q), everything, K), built,
                          "recsys.baselines.BM25Ranker: bm25s numpy backend, all scores then top-10"))
    log(f"bm25s (numpy) index built in {built:.1f}s")

    numba_engine = _bm25s_numba(texts)
    if numba_engine is not None:
        engines.append(numba_engine)
        log(f"bm25s (numba) index built in {numba_engine.build_s:.1f}s")
    else:
        log("bm25s numba backend unavailable (numba not installed): skipped")

    engines.append(_tantivy(texts))
    log(f"tantivy index built in {engines[-1].build_s:.1f}s")
    return engines


def _bm25s_numba(texts: list[str]) -> Engine | None:
    try:
        import numba  # noqa: F401
    except ImportError:
        return None
    import bm25s

    t0 = time.perf_counter()
    corpus = [match_keys(text) for text in texts]
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene", backend="numba")
    retriever.index(corpus, show_progress=False)
    vocab = retriever.vocab_dict
    built = time.perf_counter() - t0
    k = min(K, len(texts))

    def search(q: str) -> np.ndarray:
        tokens = [t for t in match_keys(q) if t in vocab]
        if not tokens:
            return np.zeros(0, dtype=np.int64)
        docs, _ = retriever.retrieve([tokens], k=k, show_progress=False, n_threads=1)
        return docs[0]

    return Engine("bm25s_numba", search, built, "bm25s numba backend, retrieve(k=10), 1 thread")


_NOT_WORD = re.compile(r"[^\w\s]+")


def _import_tantivy() -> ModuleType:
    """tantivy, a bench-only dependency (the `bench` extra): the service never needs it."""
    try:
        import tantivy
    except ImportError:
        raise MissingExtraError("recsys bench needs tantivy, which is not installed: "
                                "pip install -e '.[bench]'") from None
    return tantivy


def _tantivy(texts: list[str]) -> Engine:
    tantivy = _import_tantivy()
    t0 = time.perf_counter()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    sb.add_integer_field("idx", stored=True, indexed=False)
    index = tantivy.Index(sb.build())
    writer = index.writer(heap_size=256_000_000, num_threads=1)
    for i, text in enumerate(texts):
        writer.add_document(tantivy.Document(body=text, idx=i))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    built = time.perf_counter() - t0
    one_segment = searcher.num_segments == 1

    def search(q: str) -> np.ndarray:
        text = _NOT_WORD.sub(" ", q).strip()
        if not text:
            return np.zeros(0, dtype=np.int64)
        hits = searcher.search(index.parse_query(text, ["body"]), K).hits
        if one_segment:  # doc ids are insertion order
            return np.array([addr.doc for _, addr in hits], dtype=np.int64)
        return np.array([searcher.doc(addr)["idx"][0] for _, addr in hits], dtype=np.int64)

    return Engine("tantivy", search, built, "tantivy en_stem, OR of the query words, top-10")


# ---- the reference ---------------------------------------------------------------------------------


def reference_scores(rec: Recommender, query: str, block: int = REFERENCE_BLOCK) -> np.ndarray:
    """(n_items,) scores from `FacetScorer.forward` over every item, in blocks: no shortcut."""
    feat, n = rec.featurizer, rec.catalog.n_items
    enc = feat.encode_queries([query])
    out = np.empty(n, dtype=np.float32)
    with torch.no_grad():
        for lo in range(0, n, block):
            items = np.arange(lo, min(n, lo + block))[None, :]
            attrs, evidence = feat.item_batch(items, enc)
            scores = rec.model(enc.bucket, enc.grams, enc.mask, enc.specificity, attrs, evidence)["scores"]
            out[lo : lo + items.shape[1]] = scores[0].numpy()
    return out


def _reference(rec: Recommender, queries: list[str], budget_s: float, log) -> tuple[Engine, float, float]:
    n = rec.catalog.n_items
    everything = np.ones(n, dtype=bool)
    engine = Engine("reference", lambda q: top_k(reference_scores(rec, q), everything, K), 0.0,
                    f"FacetScorer.forward over all items in blocks of {REFERENCE_BLOCK}, 1 torch thread")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    agreements, max_diff = [], 0.0
    started = time.perf_counter()
    try:
        for i, q in enumerate(dict.fromkeys(queries)):
            if i >= 3 and time.perf_counter() - started > budget_s:
                break
            t0 = time.perf_counter()
            ref = reference_scores(rec, q)
            ref_top = top_k(ref, everything, K)
            engine.latencies.append(time.perf_counter() - t0)
            prod_top = _item_indices(rec, rec.recommend(q, k=K, explain=False))
            agreements.append(len(set(ref_top.tolist()) & set(prod_top.tolist())) / max(len(ref_top), 1))
            max_diff = max(max_diff, float(np.abs(rec.scores(q) - ref).max()))
    finally:
        torch.set_num_threads(threads)
    log(f"reference on {len(engine.latencies)} queries in {time.perf_counter() - started:.1f}s")
    return engine, float(np.mean(agreements)), max_diff


# ---- report ----------------------------------------------------------------------------------------


def format_report(result: dict) -> str:
    if "items" not in result:  # --http-only
        return format_http(result["http"])
    lines = [f"catalogue: {result['catalogue']}, {result['items']} items; queries: {result['query_source']}",
             f"{result['items']} items, {result['queries']} queries, top-10, one query at a time, "
             f"each production engine from empty per-word caches with the lexical ones answering each "
             f"query right after it, {result['rounds']} rounds (ratios: the median over the rounds)",
             f"{'engine':<12} {'p50 ms':>9} {'p99 ms':>9} {'q/s':>9} {'build s':>8}  queries"]
    for name in ("model", "recommend", "index", "index_cold", "reference", "bm25s", "bm25s_numba", "tantivy"):
        if name in result:
            r = result[name]
            lines.append(f"{name:<12} {r['p50_ms']:>9.4g} {r['p99_ms']:>9.4g} {r['qps']:>9.4g} "
                         f"{r['build_s']:>8.3g}  {r['queries']}  {r.get('note', '')}")
    t = result["training"]
    lines += [
        f"agreement@10 with the reference: {result['agree@10']:.3f}  "
        f"(max |score difference| {result['max_abs_score_diff']:.2g})",
        f"serving index: {result['bytes_per_item']} bytes per item",
        f"reference p50 / model p50: {result['ratios']['reference_p50_over_model']:.4g}x;  "
        f"model p50 / tantivy p50: {result['ratios']['model_p50_over_tantivy']:.3g};  "
        f"recommend p50 / tantivy p50: {result['ratios']['recommend_p50_over_tantivy']:.3g};  "
        f"index p50 / tantivy p50: {result['ratios']['index_p50_over_tantivy']:.3g}  (model / tantivy per "
        f"round: {', '.join(f'{x:.3g}' for x in result['ratios']['model_p50_over_tantivy_per_round'])})",
        (f"training: {t['interactions_per_s']:.4g} interactions/s ({t['interactions']} interactions, "
         f"one epoch in {t['epoch_s']:.3g}s, {t['threads']} torch threads)" if t["interactions"]
         else "training: none (no interactions), the untrained start"),
    ]
    if "http" in result:
        lines += ["", format_http(result["http"])]
    return "\n".join(lines)


def format_http(http: dict) -> str:
    """`run_http`'s figures: requests per second of each route and worker count."""
    lines = [f"HTTP: the default synthetic catalogue ({http['items']} items), k {http['k']}, {http['client']}, "
             f"{http['seconds']:g} s a phase, medians of {http['rounds']} rounds; load average "
             f"{http['load_start'].split(' (')[0]} at the start, {http['load_end'].split(' (')[0]} at the end",
             f"{'--workers':<10} {'route':<32} {'req/s':>8} {'of /health':>11} {'server CPU a request':>21}"]
    for n, phases in http["workers"].items():
        for phase, r in phases.items():
            name = {"/health": "GET /health", "/recommend explain false": "POST /recommend, explain false",
                    "/recommend explain true": "POST /recommend, explain true"}.get(phase, phase)
            of = f"{r['of_health']:.2f}" if phase != "/health" else ""
            lines.append(f"{n:<10} {name:<32} {r['rps']:>8.1f} {of:>11} {r['cpu_ms']:>18.3f} ms")
    return "\n".join(lines)
