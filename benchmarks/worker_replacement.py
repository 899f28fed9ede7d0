"""How soon a SIGKILLed worker of `recsys serve --workers 2` is replaced, and what its clients see.

    .venv/bin/python benchmarks/worker_replacement.py [--model ARTIFACTS] [--spares 0,1] [--kills 3]

For each `--spares` value (RECSYS_SPARE_WORKERS) a server is started on 127.0.0.1, and `--kills`
times one of its workers is SIGKILLed while 3 clients hold an idle kept-alive connection to it
(`tests.live_server.kill_a_worker`) and 3 more have a request in flight on one (sent to the
stopped worker just before it is killed): it prints the seconds from the kill until a new worker
answered /ready, what the dead worker's clients got and how long that took, and the machine's
load average (on a shared machine, the other jobs' CPU time is missing from the server's).
Between kills it waits for the spare to be loaded again. Without `--model`, a small synthetic
catalogue is generated and trained (1 epoch) into a temporary folder first.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.live_server: the server helpers the tests use too

from tests.live_server import RECSYS, clean_env, free_port, kill_a_worker, stop, wait_ready  # noqa: E402


def small_model(folder: Path) -> Path:
    data, artifacts = folder / "data", folder / "artifacts"
    subprocess.run([RECSYS, "generate", "--out", str(data), "--items", "400", "--queries", "600"],
                   check=True, capture_output=True)
    subprocess.run([RECSYS, "train", "--items", str(data / "items.csv"), "--interactions",
                    str(data / "interactions.csv"), "--out", str(artifacts), "--epochs", "1"],
                   check=True, capture_output=True)
    return artifacts


def spares_loaded(log: Path) -> int:
    return log.read_text(errors="replace").count('"msg": "spare worker loaded"')


def run(artifacts: Path, spares: int, kills: int, folder: Path) -> list[dict]:
    port, log = free_port(), folder / f"server-{spares}.log"
    env = clean_env(RECSYS_SPARE_WORKERS=str(spares), RECSYS_ARTIFACTS_DIR=str(artifacts),
                    RECSYS_DATA_DIR=str(folder / "data"),
                    RECSYS_DATABASE_URL=f"sqlite:///{folder / f'store-{spares}.db'}")
    with open(log, "wb") as fh:
        proc = subprocess.Popen([RECSYS, "serve", "--workers", "2", "--host", "127.0.0.1",
                                 "--port", str(port), "--model", str(artifacts)],
                                env=env, stdout=fh, stderr=subprocess.STDOUT)
    base, out = f"http://127.0.0.1:{port}", []
    try:
        wait_ready(base, proc, log, timeout=300)
        for n in range(kills):
            deadline = time.monotonic() + 300
            while spares and spares_loaded(log) < n + 1 and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(2)  # the previous replacement's new process settles
            result = {"spares": spares, "kill": n + 1, **kill_a_worker(base, workers=2),
                      "load_average": [round(x, 2) for x in os.getloadavg()]}
            print(json.dumps(result), flush=True)
            out.append(result)
            # without a spare, the replacement that answered may still be the only new one
            time.sleep(1)
    finally:
        stop(proc)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="an artifacts folder (default: train a small one)")
    parser.add_argument("--spares", default="0,1", help="RECSYS_SPARE_WORKERS values, comma-separated")
    parser.add_argument("--kills", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="worker-replacement-") as tmp:
        folder = Path(tmp)
        artifacts = args.model or small_model(folder)
        results = [r for s in args.spares.split(",") for r in run(artifacts, int(s), args.kills, folder)]
    for spares in sorted({r["spares"] for r in results}):
        mine = [r for r in results if r["spares"] == spares]
        failed = [s for r in mine for s in r["in_flight_s"]]
        print(f"spares={spares}: replaced after {[r['replaced_s'] for r in mine]} s; requests in "
              f"flight on the dead worker's connections got "
              f"{sorted({o for r in mine for o in r['in_flight']})} within "
              f"{max(failed, default=None)} s of the kill; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
