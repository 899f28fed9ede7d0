"""HTTP benchmark of POST /recommend against a real `recsys serve` on 127.0.0.1.

    .venv/bin/python benchmarks/http_bench.py [--items 3000] [--seconds 10] [--concurrency 1,4]
    .venv/bin/python benchmarks/http_bench.py --items 100000 --wrk [--seconds 15]
    .venv/bin/python benchmarks/http_bench.py --items 100000 --wrk --workers 1,2 --activate

The first run generates the default synthetic catalogue (N items) and trains it, through the
same bootstrap path as a fresh `recsys serve`, into a cache folder that later runs reuse (about
40 s at 100,000 items). Each phase sends k=10 requests with explanations for a fixed time and
prints p50/p99 latency and requests per second: from N Python client threads (httpx, one
connection each), or with `--wrk` from wrk (`wrk -t2 -c16 --latency -s
benchmarks/wrk_recommend.lua`, one phase per `--concurrency` value, default 16). Client and
server share the machine, so on 2 cores the client's own CPU time is part of what is measured.

`--workers 1,2` runs the same phases against `recsys serve --workers 1`, then `--workers 2`, in
one run, and prints them side by side with the ratio of requests per second to the first.

`--ratios` measures what a client gets against the framework's own pace instead: `GET /health`,
then `POST /recommend` (k=10) without and with explanations, one phase each, for every
`--workers` value, and prints each route's requests per second and its ratio to /health's
(median over `--rounds` rounds; wrk's /recommend runs six queries in turn). `--baseline DIR`
serves another checkout of the project (e.g. `git worktree add --detach ../base main`) side by
side with this one on the same model, the two servers' phases taking turns, and adds the ratio of
this checkout's requests per second to the baseline's:

    .venv/bin/python benchmarks/http_bench.py --ratios --wrk --workers 1,2 --baseline ../base

`--activate` then serves the last `--workers` value once more and, while Python clients load it
(kept-alive connections, plus one client opening a new connection per request so that every
worker is asked), activates another version through POST /admin/versions/V/activate on one
worker. It reports failed requests, answers whose version is neither or whose body and
X-Model-Version header disagree, old answers after a worker's first new one, and per worker
(X-Worker-PID) the seconds from the activation call until it answered with the new version. The
other version is trained once into the cache (`recsys train --seed 1 --epochs 1`); every server
of the run starts on the first version.

The machine's load average (`uptime`) is printed at the start and the end: on a shared machine
the other jobs' CPU time is missing from the server's.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.live_server: the server helpers the tests use too

from recsys.artifact import list_versions, set_current  # noqa: E402
from tests.live_server import (  # noqa: E402
    RECSYS,
    Load,
    ServerError,
    clean_env,
    free_port,
    stop,
    switch_of,
    wait_ready,
)

ADMIN_TOKEN = "http-bench-admin"


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
    p.add_argument("--workers", default="1",
                   help="`recsys serve --workers` values, comma-separated, measured one after another")
    p.add_argument("--activate", action="store_true",
                   help="then an activation of another version under load, with the last --workers")
    p.add_argument("--activate-clients", type=int, default=4,
                   help="kept-alive client threads during the activation (plus one on new connections)")
    p.add_argument("--ratios", action="store_true",
                   help="/health, then /recommend without and with explanations, as ratios of /health")
    p.add_argument("--baseline", type=Path,
                   help="with --ratios: another checkout served side by side (phases taking turns)")
    p.add_argument("--rounds", type=int, default=3, help="with --ratios: rounds of the three phases")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--no-explain", action="store_true")
    p.add_argument("--torch-threads", type=int,
                   help="RECSYS_TORCH_THREADS of the server (default: its setting)")
    p.add_argument("--cache", type=Path, default=ROOT / "data" / "generated" / "http_bench")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="with --ratios: the medians also as JSON in FILE (what `recsys bench --http` reads)")
    args = p.parse_args()
    if args.wrk and shutil.which("wrk") is None:  # Debian's, as root (else the Python clients)
        subprocess.run(["bash", str(ROOT / "scripts" / "apt_install.sh"), "http_bench", "wrk"], check=False)
        if shutil.which("wrk") is None:
            sys.exit("wrk is not installed and could not be (apt-get install wrk); "
                     "without --wrk, Python clients load the server")
    workers = [int(w) for w in args.workers.split(",")]
    levels = [int(c) for c in (args.concurrency or ("16" if args.wrk else "1,4")).split(",")]
    cache = args.cache / f"{args.items}x{args.queries}"
    cache.mkdir(parents=True, exist_ok=True)
    body = {"k": args.k, "explain": not args.no_explain}
    print(f"load average at the start: {_load_average()}")

    first = _first_version(cache)
    if first is None:  # the bootstrap path of a fresh `recsys serve` builds it
        print(f"first run: the server generates and trains the model, see {cache / 'server.log'}")
        with _server(cache, args, workers=1):
            pass
        first = _first_version(cache)
        assert first is not None
    queries = _queries(cache / "data" / "interactions.csv")

    if args.ratios:
        load_start = _load_average()
        figures = _ratios(cache, args, workers, first, queries, levels[0])
        load_end = _load_average()
        print(f"\nload average at the end: {load_end}")
        if args.json:
            args.json.write_text(json.dumps({
                "items": args.items, "k": args.k, "client": f"wrk -t{args.wrk_threads} -c{levels[0]}" if args.wrk
                else f"{levels[0]} Python client threads", "seconds": args.seconds, "rounds": args.rounds,
                "load_start": load_start, "load_end": load_end, "workers": figures}))
        return
    table: dict[int, dict[int, dict]] = {}
    for n in workers:
        set_current(cache / "artifacts", first)
        with _server(cache, args, workers=n) as base:
            _phase(base, queries, body, threads=2, seconds=1.0)  # warm-up
            print(f"\nserver {base}: recsys serve --workers {n}, model {first}, {args.items} items, "
                  f"k={args.k}, explain={not args.no_explain}, "
                  f"torch threads={args.torch_threads or 'setting'}")
            table[n] = {}
            for c in levels:
                if args.wrk:
                    table[n][c] = _wrk(base, c, args.wrk_threads, args.seconds)
                else:
                    lat, errors, elapsed = _phase(base, queries, body, threads=c, seconds=args.seconds)
                    table[n][c] = _report(c, lat, errors, elapsed)
    if len(workers) > 1:
        _side_by_side(table, workers, levels, "connections" if args.wrk else "client threads")
    if args.activate:
        _activation(cache, args, workers[-1], first, queries, body)
    print(f"\nload average at the end: {_load_average()}")


# ---- the server --------------------------------------------------------------------------------


@contextmanager
def _server(cache: Path, args, workers: int, checkout: Path = ROOT, store: Path | None = None) -> Iterator[str]:
    """`recsys serve --workers N` over the cache's artifacts on a free port, until the block ends;
    the code of `checkout` (this one's environment: the same dependencies); the store is the
    cache's, or the SQLite file `store`."""
    port = free_port()
    env = clean_env(RECSYS_ARTIFACTS_DIR=str(cache / "artifacts"),
                    RECSYS_DEFAULT_DATA_DIR=str(cache / "data"),
                    RECSYS_DEFAULT_ITEMS=str(args.items), RECSYS_DEFAULT_QUERIES=str(args.queries),
                    RECSYS_DATABASE_URL=f"sqlite:///{store or cache / 'store.db'}",
                    RECSYS_ADMIN_TOKEN=ADMIN_TOKEN, RECSYS_PORT=str(port),
                    RECSYS_LOG_LEVEL="warning")
    if args.torch_threads is not None:
        env["RECSYS_TORCH_THREADS"] = str(args.torch_threads)
    log_path = cache / "server.log"
    if checkout != ROOT:  # its packages ahead of this checkout's editable install
        env["PYTHONPATH"] = str(checkout.resolve())
        log_path = cache / "server-baseline.log"
    with open(log_path, "ab") as log:
        server = subprocess.Popen([RECSYS, "serve", "--host", "127.0.0.1", "--workers", str(workers)],
                                  env=env, stdout=log, stderr=log, start_new_session=True,
                                  cwd=checkout)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server, log_path, timeout=1800, interval=0.25)
        _SESSIONS[base] = server.pid  # the session of the server and every worker it starts
        yield base
    except ServerError as exc:
        sys.exit(str(exc))
    finally:
        stop(server, timeout=20, group=True)  # the server and any training job it started


def trained_cache(root: Path, items: int) -> tuple[Path, argparse.Namespace, str]:
    """(the cache folder of `items` items under `root`, the arguments `_server` reads, the version
    the bootstrap trained, made current): the first run generates the catalogue and trains it."""
    cache = root / f"{items}x4000"
    cache.mkdir(parents=True, exist_ok=True)
    # what _server reads: the catalogue it generates, the server's torch threads
    server_args = argparse.Namespace(items=items, queries=4000, torch_threads=None)
    first = _first_version(cache)
    if first is None:
        print(f"first run: the server generates and trains the model, see {cache / 'server.log'}")
        with _server(cache, server_args, workers=1):
            pass
        first = _first_version(cache)
        assert first is not None
    set_current(cache / "artifacts", first)
    return cache, server_args, first


def _first_version(cache: Path) -> str | None:
    """The oldest version of the cache: the one the bootstrap trained."""
    names = sorted(v["version"] for v in list_versions(cache / "artifacts") if v["ok"])
    return names[0] if names else None


def _other_version(cache: Path, first: str) -> str:
    """A second version of the same catalogue (trained once, then kept in the cache)."""
    others = sorted(v["version"] for v in list_versions(cache / "artifacts")
                    if v["ok"] and v["version"] != first)
    if others:
        return others[-1]
    print("training a second version to activate (recsys train --seed 1 --epochs 1)")
    data = cache / "data"
    subprocess.run([RECSYS, "train", "--items", str(data / "items.csv"), "--interactions",
                    str(data / "interactions.csv"), "--out", str(cache / "artifacts"), "--seed", "1",
                    "--epochs", "1"], check=True, stdout=subprocess.DEVNULL,
                   env=clean_env())
    set_current(cache / "artifacts", first)
    return _other_version(cache, first)


# ---- requests per second against /health's ----------------------------------------------------

PHASES = (("/health", None), ("/recommend explain false", False), ("/recommend explain true", True))
_SESSIONS: dict[str, int] = {}  # server URL -> its session id (`_server`)


def _ratios(cache: Path, args, workers: list[int], first: str, queries: list[str], level: int) -> dict:
    """Each `--workers` value: the three PHASES on this checkout's server (and the baseline's,
    taking turns), `--rounds` times; the median requests per second and their ratios, and the
    server's CPU time per request (its processes' user + system time over the phase: what the
    other jobs of a shared machine do not change much). Returns this checkout's medians:
    {workers: {phase: {"rps", "of_health", "cpu_ms"}}}."""
    checkouts = {"this": ROOT, **({"baseline": args.baseline} if args.baseline else {})}
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for n in workers:
        set_current(cache / "artifacts", first)
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {(c, p): [] for c in checkouts for p, _ in PHASES}
        with ExitStack() as stack:
            bases = {c: stack.enter_context(_server(cache, args, n, checkout=path))
                     for c, path in checkouts.items()}
            print(f"\nrecsys serve --workers {n}, model {first}, {args.items} items, k={args.k}; "
                  + ", ".join(f"{c}: {path} at {bases[c]}" for c, path in checkouts.items()))
            for base in bases.values():  # warm-up: every query's words in the caches
                _phase(base, queries[:50], {"k": args.k, "explain": True}, threads=2, seconds=1.0)
            for r in range(args.rounds):
                for c, base in bases.items():
                    for phase, explain in PHASES:
                        print(f"round {r + 1}, {c}, {phase}: ", end="")
                        runs[c, phase].append(_rate(base, phase, explain, queries, args, level))
        figures[str(n)] = _ratio_table(runs, checkouts, n)
    return figures


def _rate(base: str, phase: str, explain: bool | None, queries: list[str], args,
          level: int) -> tuple[float, float]:
    """(requests per second, server CPU ms per request) of one phase (wrk, or `level` Python
    client threads)."""
    path, cpu = phase.split()[0], _server_cpu_s(base)
    if args.wrk:
        result = _wrk(base, level, args.wrk_threads, args.seconds, path=path, explain=explain)
    else:
        body = None if explain is None else {"k": args.k, "explain": explain}
        lat, errors, elapsed = _phase(base, queries, body, threads=level, seconds=args.seconds, path=path)
        result = _report(level, lat, errors, elapsed)
    cpu_ms = (_server_cpu_s(base) - cpu) * 1000 / max(result["requests"], 1)
    print(f"   server CPU {cpu_ms:.3f} ms a request")
    return float(result["rps"]), cpu_ms


def _server_cpu_s(base: str) -> float:
    """User + system CPU seconds of the server's processes so far (those of its session)."""
    total, tick = 0, os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[3]) == _SESSIONS[base]:  # session; utime and stime are fields 11 and 12
            total += int(fields[11]) + int(fields[12])
    return total / tick


def _ratio_table(runs: dict[tuple[str, str], list[tuple[float, float]]], checkouts: dict[str, Path],
                 n: int) -> dict[str, dict[str, float]]:
    print(f"\n--workers {n}, medians over {len(next(iter(runs.values())))} rounds: req/s (ratio to "
          "/health's of the same server) and server CPU ms a request"
          + (", then this / baseline" if len(checkouts) > 1 else "") + ":")
    rps = {key: statistics.median(r for r, _ in v) for key, v in runs.items()}
    cpu = {key: statistics.median(c for _, c in v) for key, v in runs.items()}
    for phase, _ in PHASES:
        cells = []
        for c in checkouts:
            r = rps[c, phase]
            ratio = f" ({r / rps[c, '/health']:.2f})" if phase != "/health" else ""
            cells.append(f"{c} {r:7.1f}{ratio}, {cpu[c, phase]:.3f} ms")
        if len(checkouts) > 1:
            cells.append(f"req/s {rps['this', phase] / rps['baseline', phase]:.2f}x, "
                         f"CPU {cpu['this', phase] / cpu['baseline', phase]:.2f}x")
        print(f"   {phase:<26} " + " | ".join(cells))
    health = rps["this", "/health"]
    return {phase: {"rps": round(rps["this", phase], 1), "of_health": round(rps["this", phase] / health, 3),
                    "cpu_ms": round(cpu["this", phase], 4)} for phase, _ in PHASES}


# ---- an activation under load ------------------------------------------------------------------


def _activation(cache: Path, args, workers: int, first: str, queries: list[str], body: dict) -> None:
    other = _other_version(cache, first)
    set_current(cache / "artifacts", first)
    with _server(cache, args, workers=workers) as base:
        print(f"\nactivation under load: recsys serve --workers {workers}, {first} -> {other}, "
              f"{args.activate_clients} kept-alive clients + 1 on new connections")
        seconds = max(6.0, args.seconds)
        load = Load(base, queries, body, threads=args.activate_clients, max_requests=10**6,
                    max_seconds=seconds).start()
        probe = Load(base, queries, body, threads=1, max_requests=10**6, max_seconds=seconds,
                     fresh_connections=True).start()
        time.sleep(seconds / 3)
        activated = time.monotonic()
        r = httpx.post(f"{base}/admin/versions/{other}/activate", params={"force": "true"},
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60)
        took = time.monotonic() - activated
        time.sleep(max(0.0, seconds * 2 / 3 - took))  # the answers after it show each worker's switch
        answers = load.stop() + probe.stop()
    if r.status_code != 200:
        print(f"   the activation failed: {r.status_code} {r.text[:300]}")
        return
    s = switch_of(answers, first, other, activated)
    print(f"   {len(answers)} answers; failed {len(s.failed)}, neither version or body != header "
          f"{len(s.mixed)}, old after new {len(s.back)}")
    for e in (s.failed + s.mixed + s.back)[:3]:
        print(f"   {e}")
    print(f"   the activation call (worker {r.headers.get('x-worker-pid')}) took {took:.2f} s")
    for worker, t in s.switched_s.items():
        mine = [a for a in answers if a.worker == worker and a.status == 200]
        after = [a for a in mine if a.started >= activated]
        last = max((a.started for a in after), default=activated) - activated
        seen = (f"({len(mine)} answers, {len(after)} asked after the call, the last "
                f"{last:.2f} s after it)")
        print(f"   worker {worker}: new version from {t:.2f} s after the call {seen}" if t is not None
              else f"   worker {worker}: never answered the new version {seen}")
    total = s.all_switched_s
    print(f"   every worker ({len(s.switched_s)}) on the new version "
          + (f"{total:.2f} s after the activation call" if total is not None else "never"))


# ---- load ----------------------------------------------------------------------------------------


def _load_average() -> str:
    with open("/proc/loadavg", encoding="ascii") as fh:
        return " ".join(fh.read().split()[:3]) + f" (1, 5, 15 min; {os.cpu_count()} cores)"


def _wrk(base: str, connections: int, threads: int, seconds: float, path: str = "/recommend",
         explain: bool | None = True) -> dict:
    """wrk on /recommend (wrk_recommend.lua; EXPLAIN says whether with explanations) or on `path`."""
    wrk = shutil.which("wrk") or "wrk"
    cmd = [wrk, f"-t{min(threads, connections)}", f"-c{connections}", f"-d{seconds:g}s", "--latency"]
    if path == "/recommend":
        cmd += ["-s", str(ROOT / "benchmarks" / "wrk_recommend.lua"), base]
    else:
        cmd += [base + path]
    env = {**os.environ, "EXPLAIN": "false" if explain is False else "true"}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, env=env).stdout
    rps = re.search(r"Requests/sec:\s*([\d.]+)", out)
    pct = dict(re.findall(r"^\s*(50|75|90|99)%\s+(\S+)", out, re.M))
    errors = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    socket_errors = re.search(r"Socket errors:.*", out)
    done = re.search(r"(\d+) requests in", out)
    result = {"rps": float(rps.group(1)) if rps else float("nan"), "p50": pct.get("50", "?"),
              "requests": int(done.group(1)) if done else 0,
              "p99": pct.get("99", "?"), "errors": int(errors.group(1)) if errors else 0}
    print(f"{connections:>2} connections: {result['rps']:7.1f} req/s | "
          f"p50 {pct.get('50', '?')}  p90 {pct.get('90', '?')}  p99 {pct.get('99', '?')} | "
          f"non-2xx {result['errors']}"
          + (f" | {socket_errors.group(0)}" if socket_errors else ""))
    print("   $ " + ("EXPLAIN=false " if explain is False and path == "/recommend" else "")
          + " ".join(cmd).replace(str(ROOT) + "/", ""))
    return result


def _queries(interactions: Path) -> list[str]:
    with open(interactions, encoding="utf-8") as fh:
        queries = sorted({row["query"] for row in csv.DictReader(fh)})
    random.Random(0).shuffle(queries)
    return queries


def _phase(base: str, queries: list[str], body: dict | None, threads: int, seconds: float,
           path: str = "/recommend"):
    """`threads` clients, each on one connection, for `seconds`: POST `path` with `body` and
    each query in turn, or GET `path` when `body` is None."""
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
                r = (http.get(path) if body is None else
                     http.post(path, json={"query": q, **body}))
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


def _report(threads: int, lat: list[float], errors: list[str], elapsed: float) -> dict:
    if not lat:
        print(f"{threads} client(s): no successful request; errors: {errors[:3]}")
        return {"rps": float("nan"), "p50": "?", "p99": "?", "errors": len(errors), "requests": 0}
    ms = sorted(x * 1000 for x in lat)
    pct = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]  # noqa: E731
    print(f"{threads:>2} client(s): {len(ms):>6} requests in {elapsed:5.1f}s = "
          f"{len(ms) / elapsed:7.1f} req/s | "
          f"p50 {pct(0.50):6.2f} ms  p90 {pct(0.90):6.2f} ms  p99 {pct(0.99):6.2f} ms  "
          f"mean {statistics.fmean(ms):6.2f} ms | errors {len(errors)}")
    for e in errors[:3]:
        print("   ", e)
    return {"rps": len(ms) / elapsed, "requests": len(ms), "p50": f"{pct(0.50):.2f}ms", "p99": f"{pct(0.99):.2f}ms",
            "errors": len(errors)}


def _side_by_side(table: dict[int, dict[int, dict]], workers: list[int], levels: list[int],
                  unit: str) -> None:
    base = workers[0]
    print(f"\nside by side (ratio: req/s against --workers {base}):")
    for c in levels:
        cells = []
        for n in workers:
            r = table[n][c]
            ratio = r["rps"] / table[base][c]["rps"] if table[base][c]["rps"] else float("nan")
            cells.append(f"--workers {n}: {r['rps']:7.1f} req/s, p50 {r['p50']}, p99 {r['p99']}, "
                         f"errors {r['errors']}" + (f", ratio {ratio:.2f}x" if n != base else ""))
        print(f"{c:>3} {unit}: " + " | ".join(cells))


if __name__ == "__main__":
    main()
