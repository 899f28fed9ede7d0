"""Training on logs of growing length in bounded memory: `recsys train`'s whole run (read the log a
chunk at a time, train, evaluate, write) on interactions files of several lengths with the same
distinct queries (benchmarks/big_log.py), each in a fresh process whose peak RSS is reported.
With `--whole`, also the peak of reading the first log whole (`recsys.io.readers.read_interactions`,
how training read it before), for comparison.

    .venv/bin/recsys generate --out /tmp/syn
    .venv/bin/python benchmarks/big_log.py --data /tmp/syn --rows 1000000 --out /tmp/syn/interactions_1m.csv
    .venv/bin/python benchmarks/big_log.py --data /tmp/syn --rows 10000000 --out /tmp/syn/interactions_10m.csv
    .venv/bin/python benchmarks/log_bench.py --data /tmp/syn --logs interactions_1m.csv,interactions_10m.csv --whole
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def train_one(data: Path, log: Path, out: Path) -> dict:
    """In this process: `recsys train`'s run; the time to the first step is reading + building."""
    from training.config import TrainConfig
    from training.train import TrainInputs, train

    t0 = time.perf_counter()
    first: list[float] = []

    def on_step(step: int, total: int, loss: float) -> None:
        if not first:
            first.append(time.perf_counter() - t0)

    result = train(TrainInputs(data / "items.csv", log, judgments=data / "judgments.csv"), out, TrainConfig(),
                   on_step)
    manifest = json.loads((result.version_dir / "manifest.json").read_text())
    return {"log": log.name, "rows": manifest["data"]["interactions"]["rows"],
            "train_rows": manifest["training"]["train_rows"],
            "seconds": round(time.perf_counter() - t0, 1), "to_first_step_s": round(first[0], 1),
            "fit_s": round(manifest["training"]["fit"]["fit_seconds"], 1),
            "peak_rss_mb": round(_peak_mb()),
            "judged_ndcg@10": round(result.metrics["judgments"]["model"]["ndcg@10"], 4)}


def read_whole(data: Path, log: Path) -> dict:
    from recsys.io.readers import read_interactions, read_items

    items, _ = read_items(data / "items.csv")
    before = _peak_mb()
    t0 = time.perf_counter()
    frame, _ = read_interactions(log, set(items["item_id"]))
    return {"log": log.name, "rows": len(frame), "read_whole_s": round(time.perf_counter() - t0, 1),
            "peak_rss_mb": round(_peak_mb()), "peak_before_reading_mb": round(before)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="a `recsys generate` folder")
    p.add_argument("--logs", required=True, help="interactions files in --data, comma-separated")
    p.add_argument("--whole", action="store_true", help="also read the first log whole")
    p.add_argument("--one", choices=("train", "whole"), help=argparse.SUPPRESS)  # a child process
    args = p.parse_args()
    logs = [args.data / name for name in args.logs.split(",")]
    if args.one == "train":
        with tempfile.TemporaryDirectory(prefix="recsys-log-bench-") as tmp:
            print(json.dumps(train_one(args.data, logs[0], Path(tmp))))
        return
    if args.one == "whole":
        print(json.dumps(read_whole(args.data, logs[0])))
        return
    jobs = [("train", log) for log in logs] + ([("whole", logs[0])] if args.whole else [])
    for mode, log in jobs:
        load = [round(x, 2) for x in os.getloadavg()]
        done = subprocess.run([sys.executable, __file__, "--data", str(args.data), "--logs", log.name,
                               "--one", mode], capture_output=True, text=True, check=True)
        print(json.dumps({"mode": mode, **json.loads(done.stdout.strip().splitlines()[-1]),
                          "load_before": load}), flush=True)


if __name__ == "__main__":
    main()
