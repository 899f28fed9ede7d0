"""Ingestion benchmark: POST /events against a real `recsys serve` on 127.0.0.1.

    .venv/bin/python benchmarks/ingest_bench.py --model artifacts [--events 20000] [--batch 100]
        [--clients 2] [--store sqlite|postgresql]

Serves the model folder given (an artifacts folder or a version) with a fresh store: a SQLite
file in a temporary folder, or a throwaway PostgreSQL server (scripts/postgres.sh start). Each
client thread posts batches of impressions and clicks of catalogue items until `--events` are
acknowledged in all; prints events per second and the p50/p99 latency of one batch. Every 202
means the batch was committed (SQLite: WAL with synchronous=FULL; PostgreSQL: fsync on).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
RECSYS = shutil.which("recsys", path=str(Path(sys.executable).parent)) or "recsys"
TOKEN = "ingest-bench"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--events", type=int, default=20_000)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--clients", type=int, default=2)
    p.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="ingest-bench-") as tmp:
        pg_dir = None
        if args.store == "postgresql":
            out = subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "start"],
                                 check=True, capture_output=True, text=True).stdout.split()
            url, pg_dir = out[0], out[1]
        else:
            url = f"sqlite:///{Path(tmp) / 'store.db'}"
        try:
            print(json.dumps(run(args, url, Path(tmp))))
        finally:
            if pg_dir:
                subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "stop", pg_dir], check=False)


def run(args, url: str, tmp: Path) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RECSYS_")},
           "RECSYS_EVENTS_TOKEN": TOKEN, "RECSYS_DATABASE_URL": url, "RECSYS_DATA_DIR": str(tmp),
           "RECSYS_WATCH_INTERVAL_S": "0"}
    log = open(tmp / "server.log", "wb")  # noqa: SIM115 - open for the server's lifetime
    proc = subprocess.Popen([RECSYS, "serve", "--host", "127.0.0.1", "--port", str(port), "--model",
                             str(args.model)], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        items = wait_items(base, proc)
        latencies: list[float] = []
        per_client = -(-args.events // (args.batch * args.clients))
        start = time.perf_counter()
        threads = [threading.Thread(target=client, args=(base, n, per_client, args.batch, items, latencies))
                   for n in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
    sent = per_client * args.batch * args.clients
    q = statistics.quantiles(latencies, n=100)
    return {"store": url.split(":")[0], "events": sent, "batch": args.batch, "clients": args.clients,
            "seconds": round(seconds, 2), "events_per_s": round(sent / seconds),
            "batch_p50_ms": round(q[49] * 1000, 1), "batch_p99_ms": round(q[98] * 1000, 1)}


def wait_items(base: str, proc: subprocess.Popen) -> list[str]:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the server exited; see its log")
        try:
            r = httpx.post(f"{base}/recommend", json={"query": "dress", "k": 50, "explain": False}, timeout=2)
            if r.status_code == 200:
                return [i["item_id"] for i in r.json()["items"]]
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("the server was not ready in 300 s")


def client(base: str, n: int, batches: int, size: int, items: list[str], latencies: list[float]) -> None:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as c:
        for b in range(batches):
            events = [{"event_id": f"c{n}-{b}-{i}", "type": "click" if i % 10 == 0 else "impression",
                       "request_id": f"c{n}-{b}", "query": "dress", "item_id": items[i % len(items)],
                       "position": i % 10 + 1, "user_id": f"u{n}"} for i in range(size)]
            t = time.perf_counter()
            r = c.post("/events", json={"events": events})
            latencies.append(time.perf_counter() - t)
            if r.status_code != 202:
                raise SystemExit(f"{r.status_code}: {r.text[:300]}")


if __name__ == "__main__":
    main()
