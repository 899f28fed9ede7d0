"""What merchandising rules cost `POST /recommend` (issue 31's acceptance: p50 with 100 active
rules within 1.2x of without, on 100k items), against real `recsys serve` processes on 127.0.0.1.

    .venv/bin/python benchmarks/rules_bench.py [--items 100000] [--rules 100] [--rounds 3] [--queries 200]
        [--scoped] [--facet-counts] [--fresh] [--baseline ../other-worktree]

The model is `benchmarks/http_bench.py`'s (the same cache folder: the first run generates the
default synthetic catalogue of N items and trains it). Two servers of one worker each serve it,
each on a store of its own: one without rules, one with `--rules` rules in their window (a
mix a shop could have: boosts and buries on brand and colour values and on single items, hides
and pins of single items; a third of them for any query, a third scoped to a word of the
searches asked, a third to one exact search; `--scoped`: none for any query). Each search is
asked of each server in turn, the order rotated search by search, so all share the machine's state;
a first round warms both. Prints the client's p50 / p99 and the server's own `took_ms` p50 of
each, how many rules acted on a search's results on average, and the ratios. The load average
is printed at the start and the end. `--baseline DIR`: two more servers of the code in DIR
(the same model, the same rules), asked in the same turns, and its table printed after.
`--facet-counts`: the server with rules is also asked for every facet key's counts (the
acceptance's "with 100 active rules and facet counts"); the other one for neither.
`--fresh`: every round asks searches none asked before (the warm-up round its own), so each
listing's counts and each search's ranking are computed, not read from what was kept; without
it the same searches come back every round, as a shop's popular searches do.

What a request pays for rules: their boosts and buries are a per-item offset of the index's
scores, which its pruned top-k bounds per table entry (`Recommender._top_with_rules`), built
once per rule set; hides and pins are exclusions.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.facet_bench import with_without_table  # noqa: E402
from benchmarks.http_bench import ADMIN_TOKEN, _load_average, _queries, _server, trained_cache  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--rules", type=int, default=100)
    p.add_argument("--queries", type=int, default=200, help="distinct searches asked per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scoped", action="store_true",
                   help="every rule scoped to a query word or an exact query (none for any query)")
    p.add_argument("--facet-counts", action="store_true",
                   help="the server with rules also counts every facet key of each search")
    p.add_argument("--fresh", action="store_true",
                   help="each round asks searches not asked before (needs (rounds + 1) x queries searches)")
    p.add_argument("--cache", type=Path, default=ROOT / "data" / "generated" / "http_bench")
    p.add_argument("--baseline", type=Path, default=None,
                   help="a checkout of other code (a git worktree) whose two servers are asked too, "
                        "in the same rounds: its ratio printed beside this one's")
    args = p.parse_args()
    print(f"load average at the start: {_load_average()}")
    cache, server_args, first = trained_cache(args.cache, args.items)
    logged = _queries(cache / "data" / "interactions.csv")
    per_round = [logged[(r if args.fresh else 0) * args.queries:][: args.queries]
                 for r in range(args.rounds + 1)]
    if any(len(q) < args.queries for q in per_round):
        sys.exit(f"--fresh needs {(args.rounds + 1) * args.queries} distinct searches; the log has {len(logged)}")
    queries = per_round[0]
    checkouts = {"this": ROOT, **({"baseline": args.baseline} if args.baseline else {})}
    servers = [(name, ruled) for name in checkouts for ruled in (False, True)]
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        bases = {(name, ruled): stack.enter_context(_server(
                     cache, server_args, workers=1, checkout=checkouts[name],
                     store=Path(tmp) / f"store-{name}-{ruled}.db"))
                 for name, ruled in servers}
        http = stack.enter_context(httpx.Client(timeout=60))
        asked = list(dict.fromkeys(q for r in per_round[1:] for q in r))  # the measured rounds' searches
        rules = _rules(http, bases["this", True], asked, args.rules, random.Random(args.seed), args.scoped)
        for name in checkouts:
            r = http.post(f"{bases[name, True]}/admin/rules", json={"rules": rules},
                          headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
            r.raise_for_status()
        body = {"k": args.k, "explain": True}
        extra = {"facet_counts": True} if args.facet_counts else {}
        times: dict[tuple[str, bool], list[float]] = {s: [] for s in servers}
        took: dict[tuple[str, bool], list[float]] = {s: [] for s in servers}
        applied: list[int] = []
        for rnd in range(args.rounds + 1):  # round 0 warms the caches
            for n, q in enumerate(per_round[rnd]):
                # each search of every server in turn, the order rotated: all share the machine
                for server in servers[n % len(servers):] + servers[: n % len(servers)]:
                    start = time.perf_counter()
                    r = http.post(f"{bases[server]}/recommend",
                                  json={**body, **(extra if server[1] else {}), "query": q})
                    elapsed = (time.perf_counter() - start) * 1000
                    if r.status_code != 200:
                        sys.exit(f"{server} answered {q!r} (round {rnd}, search {n}) with {r.status_code} "
                                 f"in {elapsed:.0f} ms: {r.text[:300]}")
                    if rnd:
                        times[server].append(elapsed)
                        took[server].append(r.json()["took_ms"])
                    if rnd == 1 and server == ("this", True):
                        applied.append(len({x["name"] for it in r.json()["items"]
                                            for x in it["explanation"]["rules"]}))
    print(f"\n{args.items} items, model {first}, k={args.k} with explanations, "
          f"{len(queries)} {'new ' if args.fresh else ''}searches x {args.rounds} rounds, {len(rules)} rules"
          f"{' scoped' if args.scoped else ''}{' and facet counts' if args.facet_counts else ''} "
          f"({sum(applied) / len(applied):.1f} of them acting on a search's top {args.k} on average)")
    label = f"with {len(rules)} rules" + (" + counts" if args.facet_counts else "")
    for name in checkouts:
        print(f"\n{name} ({checkouts[name]}):")
        with_without_table(label, {on: times[name, on] for on in (False, True)},
                           {on: took[name, on] for on in (False, True)})


def _rules(http: httpx.Client, base: str, queries: list[str], n: int, rng: random.Random,
           scoped: bool) -> list[dict]:
    """`n` rules over the catalogue's brands and colours, its items and its searches."""
    r = http.post(f"{base}/recommend", json={"query": "", "k": 100, "explain": False,
                                             "facet_counts": True})
    r.raise_for_status()
    answer = r.json()
    values = [f"{f['key']}:{v['value']}" for f in answer["facet_counts"]["facets"]
              if f["key"] in ("brand", "color") for v in f["values"]]
    items = [it["item_id"] for it in answer["items"]]
    words = sorted({w for q in queries for w in q.split()})
    out: list[dict] = []
    for i in range(n):
        kind = ("boost", "bury", "boost", "bury", "hide", "pin")[i % 6]
        rule: dict = {"name": f"r{i}", "kind": kind}
        if kind in ("boost", "bury"):
            rule["amount"] = round(rng.uniform(0.1, 2.0), 2)
            if i % 4 == 0:
                rule["item_id"] = rng.choice(items)
            else:
                rule["attribute"] = rng.choice(values)
        elif kind == "pin":
            rule |= {"item_id": rng.choice(items), "position": rng.randint(1, 20)}
        else:
            rule["item_id"] = rng.choice(items)
        scope = i % 2 + 1 if scoped else i % 3  # a third each: any query, a word, an exact search
        if scope == 1:
            rule |= {"match": "contains", "query": rng.choice(words)}
        elif scope == 2:
            rule |= {"match": "exact", "query": rng.choice(queries)}
        out.append(rule)
    return out


if __name__ == "__main__":
    main()
