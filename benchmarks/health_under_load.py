"""GET /health's latency while clients overload the scorer, against the same server idle.

Issue 12's first finding: one 512-letter word took 6 s on the event loop and /health waited
meanwhile. This starts `recsys serve` of a small model on 127.0.0.1, samples /health every 10 ms
idle, then again while a load process (tests/api/load_client.py: long words, 32-word queries,
explanations, comparisons, as fast as it can) runs, and prints the median and maximum of both
and their ratios (loaded / idle). The goal it watches: a median under 50 ms loaded, never near a
second (tests/api/test_no_request_holds_up_another.py checks the answers, not their times).

    python benchmarks/health_under_load.py --seconds 4 --threads 6
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.live_server: the server helpers the tests use too

from benchmarks.worker_replacement import small_model  # noqa: E402
from tests.live_server import RECSYS, clean_env, free_port, stop, wait_ready  # noqa: E402

LOAD_CLIENT = ROOT / "tests" / "api" / "load_client.py"


def sample_health(http: httpx.Client, seconds: float) -> list[float]:
    """/health's latencies, one request every ~10 ms besides its own time, for `seconds`."""
    latencies, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.perf_counter()
        http.get("/health").raise_for_status()
        latencies.append(time.perf_counter() - start)
        time.sleep(0.01)
    return sorted(latencies)


def summary(latencies: list[float]) -> dict:
    return {"p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
            "max_ms": round(1000 * latencies[-1], 2), "samples": len(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="load time (default: 4)")
    parser.add_argument("--threads", type=int, default=6, help="load threads (default: 6)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="health-bench-") as tmp:
        folder = Path(tmp)
        artifacts, port, log = small_model(folder), free_port(), folder / "server.log"
        env = clean_env(RECSYS_ARTIFACTS_DIR=str(artifacts), RECSYS_DATA_DIR=str(folder / "data"),
                        RECSYS_DATABASE_URL=f"sqlite:///{folder / 'store.db'}")
        with open(log, "wb") as fh:
            proc = subprocess.Popen([RECSYS, "serve", "--workers", "1", "--host", "127.0.0.1",
                                     "--port", str(port), "--model", str(artifacts)],
                                    env=env, stdout=fh, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_ready(base, proc, log, timeout=300)
            with httpx.Client(base_url=base, timeout=30) as http:
                idle = sample_health(http, args.seconds - 1.0)
                load = subprocess.Popen([sys.executable, str(LOAD_CLIENT), base, str(args.seconds),
                                         str(args.threads)], stdout=subprocess.PIPE, text=True)
                time.sleep(0.5)  # the load is under way
                loaded = sample_health(http, args.seconds - 1.0)
                out, _ = load.communicate(timeout=120)
        finally:
            stop(proc)
    a, b = summary(idle), summary(loaded)
    print(json.dumps({"idle": a, "loaded": b, "load": json.loads(out)}))
    print(f"/health p50 {b['p50_ms']} ms loaded, {a['p50_ms']} ms idle (ratio "
          f"{b['p50_ms'] / a['p50_ms']:.1f}); max {b['max_ms']} ms loaded, {a['max_ms']} ms idle")


if __name__ == "__main__":
    main()
