"""HTTP benchmark of POST /recommend against a real `recsys serve` on 127.0.0.1.

    .venv/bin/python benchmarks/http_bench.py [--items 3000] [--seconds 10] [--concurrency 1,4]
    .venv/bin/python benchmarks/http_bench.py --items 100000 --wrk [--seconds 15]

The first run generates the default synthetic catalogue (N items) and trains it, through the
same bootstrap path as a fresh `recsys serve`, into a cache folder that later runs reuse (about
40 s at 100,000 items). Each phase sends k=10 requests with explanations for a fixed time and
prints p50/p99 latency and requests per second: from N Python client threads (httpx, one
connection each), or with `--wrk` from wrk (`wrk -t2 -c16 --latency -s
benchmarks/wrk_recommend.lua`, one phase per `--concurrency` value, default 16). Client and
server share the machine, so on 2 cores the client's own CPU time is part of what is measured.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=3000)
    p.add_argument("--queries", type=int, default=4000)
    p.add_argument("--seconds", type=float, default=10.0, help="duration of each phase")
    p.add_argument("--concurrency", help="client threads (wrk: connections) per phase, comma-separated "
                   "(default: 1,4; with --wrk 16)")
    p.add_argument("--wrk", action="store_true",
                   help="load with wrk and benchmarks/wrk_recommend.lua (k=10, explanations) instead of Python threads")
    p.add_argument("--wrk-threads", type=int, default=2)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--no-explain", action="store_true")
    p.add_argument("--torch-threads", type=int,
                   help="RECSYS_TORCH_THREADS of the server (default: its setting)")
    p.add_argument("--cache", type=Path, default=ROOT / "data" / "generated" / "http_bench")
    args = p.parse_args()

    cache = args.cache / f"{args.items}x{args.queries}"
    port = _free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RECSYS_")},
           "RECSYS_ARTIFACTS_DIR": str(cache / "artifacts"), "RECSYS_DEFAULT_DATA_DIR": str(cache / "data"),
           "RECSYS_DEFAULT_ITEMS": str(args.items), "RECSYS_DEFAULT_QUERIES": str(args.queries),
           "RECSYS_PORT": str(port), "RECSYS_LOG_LEVEL": "warning"}
    if args.torch_threads is not None:
        env["RECSYS_TORCH_THREADS"] = str(args.torch_threads)
    recsys = shutil.which("recsys", path=str(Path(sys.executable).parent)) or "recsys"
    cache.mkdir(parents=True, exist_ok=True)
    log = open(cache / "server.log", "wb")  # noqa: SIM115 - the server's, open while it runs
    if not (cache / "artifacts" / "current").is_file():
        print(f"first run: the server generates and trains the model, see {cache / 'server.log'}")
    server = subprocess.Popen([recsys, "serve", "--host", "127.0.0.1"], env=env, stdout=log, stderr=log,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        version = _wait_ready(base, server, timeout=1800)
        queries = _queries(cache / "data" / "interactions.csv")
        body = {"k": args.k, "explain": not args.no_explain}
        _phase(base, queries, body, threads=2, seconds=1.0)  # warm-up
        if args.wrk:
            print(f"server {base} (one process), model {version}, {args.items} items, "
                  f"wrk_recommend.lua (k=10, explain=true), torch threads={args.torch_threads or 'setting'}")
            for n in (int(c) for c in (args.concurrency or "16").split(",")):
                _wrk(base, n, args.wrk_threads, args.seconds)
            return
        print(f"server {base}, model {version}, {args.items} items, {len(queries)} distinct queries, "
              f"k={args.k}, explain={not args.no_explain}, torch threads={args.torch_threads or 'setting'}")
        for n in (int(c) for c in (args.concurrency or "1,4").split(",")):
            lat, errors, elapsed = _phase(base, queries, body, threads=n, seconds=args.seconds)
            _report(n, lat, errors, elapsed)
    finally:
        _stop(server)
        log.close()


def _stop(server: subprocess.Popen) -> None:
    """SIGTERM the server's process group (it and any training job it started), then SIGKILL
    after 20 s."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _wrk(base: str, connections: int, threads: int, seconds: float) -> None:
    wrk = shutil.which("wrk")
    if wrk is None:
        sys.exit("wrk is not installed (apt-get install wrk)")
    cmd = [wrk, f"-t{min(threads, connections)}", f"-c{connections}", f"-d{seconds:g}s", "--latency",
           "-s", str(ROOT / "benchmarks" / "wrk_recommend.lua"), base]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = re.search(r"Requests/sec:\s*([\d.]+)", out)
    pct = dict(re.findall(r"^\s*(50|75|90|99)%\s+(\S+)", out, re.M))
    errors = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    socket_errors = re.search(r"Socket errors:.*", out)
    print(f"{connections:>2} connections: {float(rps.group(1)) if rps else float('nan'):7.1f} req/s | "
          f"p50 {pct.get('50', '?')}  p90 {pct.get('90', '?')}  p99 {pct.get('99', '?')} | "
          f"non-2xx {errors.group(1) if errors else 0}"
          + (f" | {socket_errors.group(0)}" if socket_errors else ""))
    print("   $ " + " ".join(cmd).replace(str(ROOT) + "/", ""))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(base: str, server: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"the server exited with code {server.returncode}")
        try:
            r = httpx.get(f"{base}/ready", timeout=1)
            if r.status_code == 200:
                return r.json()["model_version"]
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    sys.exit(f"the server was not ready after {timeout}s")


def _queries(interactions: Path) -> list[str]:
    with open(interactions, encoding="utf-8") as fh:
        queries = sorted({row["query"] for row in csv.DictReader(fh)})
    random.Random(0).shuffle(queries)
    return queries


def _phase(base: str, queries: list[str], body: dict, threads: int, seconds: float):
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start_gate = threading.Barrier(threads + 1)
    deadline: list[float] = []

    def client(n: int) -> None:
        mine, bad = [], []
        with httpx.Client(base_url=base, timeout=30) as http:
            http.get("/health")  # open the connection before the clock starts
            start_gate.wait()
            i = n
            while time.perf_counter() < deadline[0]:
                q = queries[i % len(queries)]
                i += threads
                t0 = time.perf_counter()
                r = http.post("/recommend", json={"query": q, **body})
                dt = time.perf_counter() - t0
                if r.status_code == 200:
                    mine.append(dt)
                else:
                    bad.append(f"{r.status_code}: {r.text[:200]}")
        with lock:
            latencies.extend(mine)
            errors.extend(bad)

    workers = [threading.Thread(target=client, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    deadline.append(time.perf_counter() + seconds)
    t0 = time.perf_counter()
    start_gate.wait()
    for w in workers:
        w.join()
    return latencies, errors, time.perf_counter() - t0


def _report(threads: int, lat: list[float], errors: list[str], elapsed: float) -> None:
    if not lat:
        print(f"{threads} client(s): no successful request; errors: {errors[:3]}")
        return
    ms = sorted(x * 1000 for x in lat)
    pct = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]  # noqa: E731
    print(f"{threads:>2} client(s): {len(ms):>6} requests in {elapsed:5.1f}s = "
          f"{len(ms) / elapsed:7.1f} req/s | "
          f"p50 {pct(0.50):6.2f} ms  p90 {pct(0.90):6.2f} ms  p99 {pct(0.99):6.2f} ms  "
          f"mean {statistics.fmean(ms):6.2f} ms | errors {len(errors)}")
    for e in errors[:3]:
        print("   ", e)


if __name__ == "__main__":
    main()
