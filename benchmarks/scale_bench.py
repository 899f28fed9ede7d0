"""What one catalogue shard costs at N items (docs/scaling.md): `Catalog.build` (time, peak RSS)
and the serving index (`ScoringIndex`, through `Recommender.rank(k=10)`: time per query, p50 and
p99, warm and with the per-word caches emptied before every query; its bytes; the process's peak
RSS). Each step runs in a fresh process; the synthetic catalogue is generated once into --cache.
The index is the lexical start with the association evidence of the generated log (the untrained
model: the same arrays and the same scoring path as a trained one).

    .venv/bin/python benchmarks/scale_bench.py --items 1000000 --cache /tmp/scale
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def catalog_step(data: Path) -> dict:
    from recsys.catalog import Catalog
    from recsys.io.readers import read_items

    t0 = time.perf_counter()
    items, _ = read_items(data / "items.csv")
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    catalog = Catalog.build(items)
    return {"items": catalog.n_items, "read_items_s": round(read_s, 1),
            "catalog_build_s": round(time.perf_counter() - t0, 1), "peak_rss_mb": round(_peak_mb())}


def index_step(data: Path, n_queries: int) -> dict:
    import pandas as pd

    from training.config import TrainConfig
    from training.start import untrained_recommender
    from training.train import TrainInputs, load_training_data

    catalog, rows, _ = load_training_data(TrainInputs(data / "items.csv", data / "interactions.csv"))
    before = _peak_mb()
    t0 = time.perf_counter()
    rec = untrained_recommender(catalog, rows, TrainConfig())
    build_s = time.perf_counter() - t0
    judged = pd.read_csv(data / "judgments.csv", dtype=str, keep_default_na=False)["query"].tolist()
    distinct = [q for q in dict.fromkeys(judged + rows["query"].tolist()) if q.strip()]
    queries = [distinct[i % len(distinct)] for i in range(n_queries)]
    out: dict = {"items": catalog.n_items, "index_build_s": round(build_s, 1),
                 "index_mb": round(rec.index.nbytes() / 2**20, 1),
                 "index_bytes_per_item": round(rec.index.nbytes() / catalog.n_items, 1)}
    for name, cold in (("warm", False), ("cold", True)):
        rec.index.clear_caches()
        for q in queries[:5]:  # JIT compilation, first-call allocations
            rec.rank(q, k=10)
        times = []
        gc.disable()
        try:
            for q in queries:
                if cold:
                    rec.index.clear_caches()
                t0 = time.perf_counter()
                rec.rank(q, k=10)
                times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
        ms = np.array(times) * 1000
        out[f"{name}_p50_ms"] = round(float(np.percentile(ms, 50)), 3)
        out[f"{name}_p99_ms"] = round(float(np.percentile(ms, 99)), 3)
    out["peak_rss_mb"] = round(_peak_mb())
    out["peak_before_index_mb"] = round(before)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, required=True)
    p.add_argument("--cache", type=Path, required=True, help="where the generated catalogues are kept")
    p.add_argument("--sessions", type=int, default=2000, help="training sessions of the generated log")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--steps", default="catalog,index")
    p.add_argument("--one", choices=("catalog", "index"), help=argparse.SUPPRESS)  # a child process
    args = p.parse_args()
    data = args.cache / f"items_{args.items}"
    if args.one == "catalog":
        print(json.dumps(catalog_step(data)))
        return
    if args.one == "index":
        print(json.dumps(index_step(data, args.queries)))
        return
    if not (data / "judgments.csv").exists():
        t0 = time.perf_counter()
        subprocess.run([str(Path(sys.executable).with_name("recsys")), "generate", "--out", str(data),
                        "--items", str(args.items), "--queries", str(args.sessions)],
                       check=True, stdout=subprocess.DEVNULL)
        print(json.dumps({"generated": args.items, "seconds": round(time.perf_counter() - t0, 1)}), flush=True)
    for step in args.steps.split(","):
        load = [round(x, 2) for x in os.getloadavg()]
        done = subprocess.run([sys.executable, __file__, "--items", str(args.items), "--cache", str(args.cache),
                               "--queries", str(args.queries), "--one", step],
                              capture_output=True, text=True, check=True)
        print(json.dumps({"step": step, **json.loads(done.stdout.strip().splitlines()[-1]),
                          "load_before": load}), flush=True)


if __name__ == "__main__":
    main()
