"""One process against N: `recsys train --nproc N` on the same data, alternated, each run in its own
process tree. Reports judged NDCG@10, the fit's interactions per second (the manifest's
`training.fit`: rows of the log the training groups came from x epochs run / seconds of the epochs,
validation checks included) and the wall time of the whole command, with the load average before
each run (the machine may be shared).

    .venv/bin/recsys generate --out /tmp/syn
    .venv/bin/python benchmarks/distributed_bench.py --data /tmp/syn --nproc 1,2 --runs 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECSYS = Path(sys.executable).with_name("recsys")


def run_once(data: Path, nproc: int, out: Path) -> dict:
    load = os.getloadavg()
    t0 = time.perf_counter()
    done = subprocess.run([str(RECSYS), "train", "--nproc", str(nproc), "--items", str(data / "items.csv"),
                           "--interactions", str(data / "interactions.csv"),
                           "--judgments", str(data / "judgments.csv"), "--out", str(out), "--json"],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    result = json.loads(done.stdout)
    fit = json.loads((Path(result["path"]) / "manifest.json").read_text())["training"]["fit"]
    return {"nproc": nproc, "judged_ndcg@10": round(result["metrics"]["judgments"]["model"]["ndcg@10"], 4),
            "interactions_per_s": round(fit["interactions_per_second"]), "fit_s": round(fit["fit_seconds"], 1),
            "epochs_run": fit["epochs_run"], "alpha": fit["alpha"], "wall_s": round(wall, 1),
            "load_before": [round(x, 2) for x in load]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="a `recsys generate` folder")
    p.add_argument("--nproc", default="1,2", help="process counts to compare (default: %(default)s)")
    p.add_argument("--runs", type=int, default=2, help="rounds, each runs every count once")
    args = p.parse_args()
    counts = [int(n) for n in args.nproc.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="recsys-dist-bench-") as tmp:
        for r in range(args.runs):
            for n in counts:
                row = run_once(args.data, n, Path(tmp) / f"{r}-{n}")
                print(json.dumps(row), flush=True)
                rows.append(row)
    for n in counts:
        mine = [r for r in rows if r["nproc"] == n]
        rate = sorted(r["interactions_per_s"] for r in mine)
        print(f"nproc {n}: judged NDCG@10 {[r['judged_ndcg@10'] for r in mine]}, interactions/s {rate}, "
              f"wall {[r['wall_s'] for r in mine]} s")
    if 1 in counts:
        base = sorted(r["interactions_per_s"] for r in rows if r["nproc"] == 1)
        for n in counts:
            if n != 1:
                other = sorted(r["interactions_per_s"] for r in rows if r["nproc"] == n)
                print(f"ratio {n}/1 (median interactions/s): {other[len(other) // 2] / base[len(base) // 2]:.2f}")


if __name__ == "__main__":
    main()
