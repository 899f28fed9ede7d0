"""A load generator for tests/api/test_no_request_holds_up_another.py, run as its own process
(so that its threads do not compete for the test's GIL): `python load_client.py BASE SECONDS
THREADS` posts long words and ordinary queries to /recommend, /explain and /compare and prints
one JSON line: statuses and the slowest answer per kind."""

from __future__ import annotations

import json
import random
import string
import sys
import threading
import time

import httpx


def main(base: str, seconds: float, threads: int) -> None:
    stats: dict[str, list] = {}
    lock = threading.Lock()
    item_ids = httpx.post(f"{base}/recommend", json={"query": "dress", "k": 20}).json()["items"]
    item_ids = [i["item_id"] for i in item_ids]

    def word(n: int, rng: random.Random) -> str:
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        end = time.monotonic() + seconds
        with httpx.Client(base_url=base, timeout=60) as http:
            while time.monotonic() < end:
                kind = rng.choice(["long512", "word64", "many_words", "explain64", "compare64", "plain"])
                if kind == "long512":
                    path, body = "/recommend", {"query": word(512, rng)}
                elif kind == "word64":
                    path, body = "/recommend", {"query": f"red {word(64, rng)} dress", "k": 100}
                elif kind == "many_words":
                    path, body = "/recommend", {"query": " ".join(word(12, rng) for _ in range(32))}
                elif kind == "explain64":
                    path, body = "/explain", {"query": f"{word(64, rng)} {word(40, rng)}",
                                              "item_id": rng.choice(item_ids)}
                elif kind == "compare64":
                    path, body = "/compare", {"query": word(64, rng), "item_a": item_ids[0],
                                              "item_b": rng.choice(item_ids)}
                else:
                    path, body = "/recommend", {"query": "red casual cotton dress"}
                start = time.perf_counter()
                r = http.post(path, json=body)
                took = time.perf_counter() - start
                with lock:
                    entry = stats.setdefault(kind, [0, 0.0, {}])
                    entry[0] += 1
                    entry[1] = max(entry[1], took)
                    entry[2][r.status_code] = entry[2].get(r.status_code, 0) + 1

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    print(json.dumps({k: {"requests": n, "slowest_s": round(s, 4), "statuses": st}
                      for k, (n, s, st) in stats.items()}))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]))
