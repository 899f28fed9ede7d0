"""Server CPU a request of the app itself, in one process, without sockets: `GET /health`, then
`POST /recommend` (k 10) without and with explanations, each request handed to the ASGI app as
uvicorn would hand it (no HTTP parsing, no client on the same cores). What it leaves out (h11,
the socket writes) costs /health and /recommend about alike, so this is the figure a change to
the app's own path moves, with less of the shared machine's noise than `http_bench.py --ratios`.

    .venv/bin/python benchmarks/asgi_cost.py [--requests 2000] [--rounds 4] [--baseline ../base]

Serves the model `benchmarks/http_bench.py` trained into its cache (the default 3k-item synthetic
catalogue; run that once first). `--baseline DIR`: another checkout of the project, run in a
process of its own with this environment, the two taking turns round by round; the table gives
the median of the rounds and this checkout's over the baseline's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "data" / "generated" / "http_bench" / "3000x4000"
# wrk_recommend.lua's queries
QUERIES = ["red casual dress", "crimson cotton shirt", "premium leather boots", "navy formal jacket",
           "cheap sneakers", "blue denim jeans", "ivory silk scarf", "black wool coat"]
PHASES = ("/health", "/recommend explain false", "/recommend explain true")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=2000, help="requests of each phase")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--baseline", type=Path, help="another checkout, measured in turns with this one")
    p.add_argument("--one-round", action="store_true", help=argparse.SUPPRESS)  # a child process
    args = p.parse_args()
    if args.one_round:
        print(json.dumps(asyncio.run(_round(args.requests))))
        return
    if not (CACHE / "artifacts" / "current").exists():
        sys.exit(f"no model in {CACHE}: run benchmarks/http_bench.py once (it trains one)")
    checkouts = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    print(f"load average at the start: {_load()}")
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in checkouts}
    for r in range(args.rounds):
        for c, path in checkouts.items():
            runs[c].append(_child(path, args.requests))
            print(f"round {r + 1}, {c}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in runs[c][-1].items()))
    print(f"\nCPU ms a request, median of {args.rounds} rounds (/health's over it)"
          + (", then this / baseline" if args.baseline else "") + ":")
    med = {c: {k: statistics.median(run[k] for run in runs[c]) for k in PHASES} for c in checkouts}
    for k in PHASES:
        cells = [f"{c} {med[c][k]:.3f}" + (f" ({med[c]['/health'] / med[c][k]:.2f})" if k != "/health" else "")
                 for c in checkouts]
        if args.baseline:
            cells.append(f"{med['this'][k] / med['baseline'][k]:.2f}x")
        print(f"   {k:<26} " + " | ".join(cells))
    print(f"load average at the end: {_load()}")


def _child(checkout: Path, requests: int) -> dict[str, float]:
    """One round in a fresh process importing `checkout`'s packages (ahead of the editable install)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run([sys.executable, __file__, "--one-round", "--requests", str(requests)], env=env,
                         cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


async def _round(requests: int) -> dict[str, float]:
    store = Path(tempfile.mkdtemp()) / "store.db"
    shutil.copy(CACHE / "store.db", store)
    os.environ.update(RECSYS_ARTIFACTS_DIR=str(CACHE / "artifacts"), RECSYS_DATABASE_URL=f"sqlite:///{store}",
                      RECSYS_DEFAULT_DATA_DIR=str(CACHE / "data"), RECSYS_LOG_LEVEL="warning")
    from api.logs import configure_logging
    from api.main import create_app

    configure_logging("warning")  # as http_bench.py serves it
    app = create_app()
    lifespan: asyncio.Queue = asyncio.Queue()
    await lifespan.put({"type": "lifespan.startup"})
    started: asyncio.Queue = asyncio.Queue()
    task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                                   lifespan.get, started.put))
    await started.get()
    while app.state.versions.current is None:  # loaded in a thread
        await asyncio.sleep(0.05)
    bodies = {e: [json.dumps({"query": q, "k": 10, "explain": e}).encode() for q in QUERIES] for e in (False, True)}
    for body in [*bodies[False], *bodies[True]] * 20:  # every word in the caches
        await _call(app, "POST", "/recommend", body)
    result = {}
    for phase in PHASES:
        explain = phase.endswith("true")
        start = time.process_time()
        for i in range(requests):
            if phase == "/health":
                await _call(app, "GET", "/health")
            else:
                await _call(app, "POST", "/recommend", bodies[explain][i % len(QUERIES)])
        result[phase] = (time.process_time() - start) * 1000 / requests
    await lifespan.put({"type": "lifespan.shutdown"})
    await task
    return result


async def _call(app, method: str, path: str, body: bytes = b"") -> None:
    """One request as uvicorn hands it to the app; a status other than 200 stops the bench."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"bench"), (b"content-type", b"application/json"),
                         (b"content-length", str(len(body)).encode())],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "state": {}}
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    status: list[int] = []

    async def receive() -> dict:
        return messages.pop() if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(scope, receive, send)
    if status != [200]:
        raise SystemExit(f"{method} {path} {body[:80]!r}: status {status}")


def _load() -> str:
    with open("/proc/loadavg", encoding="ascii") as fh:
        return " ".join(fh.read().split()[:3]) + f" (1, 5, 15 min; {os.cpu_count()} cores)"


if __name__ == "__main__":
    main()
