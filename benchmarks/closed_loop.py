"""The closed loop: simulated shoppers query a live `recsys serve`, their events retrain it.

    .venv/bin/python benchmarks/closed_loop.py [--items 3000] [--events 20000] [--seed 0]

1. `recsys.synthetic.generate` writes a catalogue, a search log, held-out judgments.
2. **The served start is deliberately weak**: a version trained on the generator's first
   `--start-sessions` search sessions only (40 by default). Fewer than 50 training queries are
   not fitted (training/train.py), so it serves the lexical start (BM25 inside the heads) plus
   the click association of those few sessions: realistic for a shop that has just switched
   the recommender on, and it knows no synonym ("crimson" for red) yet.
3. `recsys serve` runs as a real process on 127.0.0.1, with its own SQLite store.
4. Simulated shoppers (`Shoppers`) draw a query from the generator's training queries (as often
   as the search log has it), POST /recommend (k=10), and send what they do with the answer to
   POST /events, joined by its `request_id`: an impression for every item shown, then clicks
   under a **position-based examination model**, P(examine rank r) = 1 / r ** ETA (ETA 1), times
   an attraction that rises with the item's true utility for the query's intent (the
   generator's ground truth: `word_index` reads the intent off the query, `true_utility` and
   `grade_from_matches` score the item), a miss rate and noise clicks; a clicked item that
   matches the whole intent goes to the cart with P_CART, a carted one is bought with P_BUY.
5. After `--events` events, an admin retrain from events (`{"source": "events"}`, evaluated
   on the generator's judgments) makes a new version; the safe-activation rule decides whether
   it is served.
6. Both versions are evaluated on the judgments (judged NDCG@10, the queries no shopper typed):
   the table shows the served start against the retrain.

`run_loop` is also what tests/system/test_closed_loop.py runs, on a small catalogue.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.live_server, the server helpers the tests use too

from recsys.synthetic import (  # noqa: E402
    FACET_WEIGHTS,
    generate,
    grade_from_matches,
    true_utility,
    word_index,
)
from tests.live_server import RECSYS, clean_env, free_port, stop, wait_ready  # noqa: E402
from training.evaluate_version import evaluate_version  # noqa: E402

EVENTS_TOKEN = "closed-loop-events"
ADMIN_TOKEN = "closed-loop-admin"

ETA = 1.0  # examination: P(examine rank r) = 1 / r ** ETA
ATTRACT_SLOPE = 7.0  # attraction logit = ATTRACT_SLOPE * (matched share - 0.8) + 2 * rating bonus
P_MISS = 0.10  # an examined, attractive item is still not clicked
P_NOISE_CLICK = 0.02  # an examined item clicked whatever it is
P_CART = 0.30  # a clicked item matching the whole intent goes to the cart
P_BUY = 0.50  # a carted item is bought
K = 10
BATCH = 500  # events per POST /events


class Shoppers:
    """Queries as often as the generator's search log has them, and the ground truth of every
    item for each query's intent (which words name which facet value: `word_index`)."""

    def __init__(self, data: Path):
        items = pd.read_csv(data / "items.csv", dtype=str, keep_default_na=False)
        log = pd.read_csv(data / "interactions.csv", dtype=str, keep_default_na=False)
        counts = log.drop_duplicates(["query", "timestamp"])["query"].value_counts()
        self.queries = counts.index.to_numpy(dtype=object)
        self.p = counts.to_numpy(dtype=float) / counts.sum()
        self.row = {item_id: i for i, item_id in enumerate(items["item_id"])}
        self.n_items = len(items)
        # the true utility's rating bonus: what an item is worth beyond the intent it matches
        self.bonus = true_utility(0.0, pd.to_numeric(items["rating"]).to_numpy(dtype=float))
        self.values = {f: items[f].str.lower().str.split("|") for f in FACET_WEIGHTS}
        self.words = word_index()
        self._share: dict[str, np.ndarray] = {}

    def intent(self, query: str) -> list[tuple[str, str]]:
        """(intent facet, canonical value) named by the query's words."""
        return [self.words[w] for w in query.lower().split() if w in self.words]

    def share(self, query: str) -> np.ndarray:
        """Per catalogue item, the matched share of the query's intent (weighted as in
        `true_utility`): 1 = every value the shopper asked for."""
        if query not in self._share:
            intent = self.intent(query)
            weight = np.zeros(self.n_items)
            for facet, value in intent:
                wanted = value.lower()
                has = np.array([wanted in vs for vs in self.values[facet]], dtype=bool)
                weight += FACET_WEIGHTS[facet] * has
            self._share[query] = weight / (sum(FACET_WEIGHTS[f] for f, _ in intent) or 1.0)
        return self._share[query]

    def grade(self, query: str, item_id: str) -> int:
        """The judgment grade the generator gives the item for the query (3 = the whole intent)."""
        return int(grade_from_matches(self.share(query)[self.row[item_id]], 1.0))

    def react(self, rng: np.random.Generator, query: str, shown: list[str]) -> list[tuple[str, int]]:
        """(type, 1-based position) of what a shopper does with a ranked answer, impressions first."""
        rows = np.array([self.row[i] for i in shown], dtype=int)
        share = self.share(query)[rows]
        rank = np.arange(1, len(rows) + 1)
        n = len(rows)
        attract = 1.0 / (1.0 + np.exp(-(ATTRACT_SLOPE * (share - 0.8) + 2.0 * self.bonus[rows])))
        examine = rng.random(n) < (1.0 / rank) ** ETA
        click = examine & (((rng.random(n) < attract) & (rng.random(n) >= P_MISS))
                           | (rng.random(n) < P_NOISE_CLICK))
        cart = click & (share >= 1.0 - 1e-9) & (rng.random(n) < P_CART)
        buy = cart & (rng.random(n) < P_BUY)
        out = [("impression", int(r)) for r in rank]
        for kind, mask in (("click", click), ("cart", cart), ("purchase", buy)):
            out += [(kind, int(r)) for r in rank[mask]]
        return out


# ---- the served start ---------------------------------------------------------------------------


def session_numbers(log: pd.DataFrame) -> pd.Series:
    """Per row of the search log, its session's number from 1 (a session: consecutive rows of one
    query and user)."""
    new = (log["query"] != log["query"].shift()) | (log["user_id"] != log["user_id"].shift())
    return new.cumsum()


def first_sessions(data: Path, n: int) -> pd.DataFrame:
    """The search log's first `n` sessions (`session_numbers`)."""
    log = pd.read_csv(data / "interactions.csv", dtype=str, keep_default_na=False)
    return log[session_numbers(log) <= n]


def train_start(data: Path, artifacts: Path, sessions: int, seed: int) -> Path:
    """The deliberately weak served version: trained on `sessions` search sessions only."""
    from training.fit import TrainConfig
    from training.train import TrainInputs, train

    few = data / f"first_{sessions}_sessions.csv"
    first_sessions(data, sessions).to_csv(few, index=False)
    inputs = TrainInputs(items=data / "items.csv", interactions=few, judgments=data / "judgments.csv")
    return train(inputs, artifacts, TrainConfig(seed=seed)).version_dir


# ---- the live server ------------------------------------------------------------------------------


@contextlib.contextmanager
def serving(artifacts: Path, data_dir: Path, folder: Path, timeout: float = 180.0,
            store: Path | None = None, workers: int | None = None) -> Iterator[str]:
    """`recsys serve` on a free port of 127.0.0.1 with its own SQLite store in `folder` (or the
    SQLite file `store`, to share one between processes); its base URL once ready. Stopped
    (SIGTERM, then SIGKILL) at the end. `workers`: its `--workers` (default: one per core)."""
    port = free_port()
    env = clean_env(RECSYS_DATABASE_URL=f"sqlite:///{store or folder / 'store.db'}",
                    RECSYS_DATA_DIR=str(data_dir), RECSYS_EVENTS_TOKEN=EVENTS_TOKEN,
                    RECSYS_ADMIN_TOKEN=ADMIN_TOKEN, RECSYS_WATCH_INTERVAL_S="1",
                    RECSYS_LOG_LEVEL="warning")
    log_path = folder / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([RECSYS, "serve", "--host", "127.0.0.1", "--port", str(port),
                                 "--model", str(artifacts),
                                 *(["--workers", str(workers)] if workers else [])],
                                env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc, log_path, timeout, interval=0.2)
        yield base
    finally:
        stop(proc, timeout=30)


# ---- traffic --------------------------------------------------------------------------------------


@dataclass
class Traffic:
    """What the shoppers did with one version's answers."""

    answers: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    versions: set[str] = field(default_factory=set)
    # experiment arm -> its answers and the set of users it answered (what the answers said)
    arm_answers: dict[str, int] = field(default_factory=dict)
    arm_users: dict[str, set[str]] = field(default_factory=dict)

    @property
    def events(self) -> int:
        return sum(self.by_type.values())

    @property
    def ctr(self) -> float:
        """Clicks per impression."""
        return self.by_type.get("click", 0) / max(self.by_type.get("impression", 0), 1)


def shop(base: str, shoppers: Shoppers, n_events: int, rng: np.random.Generator,
         n_users: int = 500, max_seconds: float = 1800.0) -> Traffic:
    """Shoppers query /recommend (each with a user_id, which picks a running experiment's arm)
    and post their events until `n_events` are stored (the last answer's events all go in, so
    a few more may be)."""
    traffic = Traffic()
    pending: list[dict] = []
    deadline = time.monotonic() + max_seconds
    with httpx.Client(base_url=base, timeout=30) as http:
        auth = {"Authorization": f"Bearer {EVENTS_TOKEN}"}
        while traffic.events + len(pending) < n_events and time.monotonic() < deadline:
            query = str(rng.choice(shoppers.queries, p=shoppers.p))
            user = f"U-{int(rng.integers(n_users)):05d}"
            r = http.post("/recommend", json={"query": query, "k": K, "explain": False,
                                              "user_id": user})
            r.raise_for_status()
            answer = r.json()
            traffic.answers += 1
            traffic.versions.add(answer["model_version"])
            if answer.get("experiment"):
                arm = answer["experiment"]["arm"]
                traffic.arm_answers[arm] = traffic.arm_answers.get(arm, 0) + 1
                traffic.arm_users.setdefault(arm, set()).add(user)
            shown = [it["item_id"] for it in answer["items"]]
            for kind, position in shoppers.react(rng, query, shown):
                pending.append({"type": kind, "request_id": answer["request_id"], "query": query,
                                "item_id": shown[position - 1], "position": position, "user_id": user})
            if len(pending) >= BATCH or traffic.events + len(pending) >= n_events:
                _post(http, pending, auth, traffic)
                pending = []
        if pending:
            _post(http, pending, auth, traffic)
    return traffic


def _post(http: httpx.Client, events: list[dict], auth: dict, traffic: Traffic) -> None:
    r = http.post("/events", json={"events": events}, headers=auth)
    if r.status_code != 202:
        raise RuntimeError(f"POST /events answered {r.status_code}: {r.text[:500]}")
    for e in events:
        traffic.by_type[e["type"]] = traffic.by_type.get(e["type"], 0) + 1


def retrain_from_events(base: str, judgments: str, seed: int, max_seconds: float = 1800.0) -> dict:
    """POST /admin/train {"source": "events"} and wait for the job; its final state."""
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(base_url=base, timeout=30, headers=admin) as http:
        r = http.post("/admin/train", json={"source": "events", "judgments": judgments, "seed": seed})
        if r.status_code != 202:
            raise RuntimeError(f"POST /admin/train answered {r.status_code}: {r.text[:500]}")
        job_id = r.json()["id"]
        deadline = time.monotonic() + max_seconds
        while time.monotonic() < deadline:
            job = http.get(f"/admin/jobs/{job_id}").json()
            if job["status"] in ("succeeded", "failed", "cancelled"):
                return dict(job)
            time.sleep(0.5)
    raise RuntimeError(f"retrain job {job_id} not finished after {max_seconds:.0f} s")


def wait_serving(base: str, version: str, max_seconds: float = 60.0) -> bool:
    """Whether /model names `version` within `max_seconds` (the server follows `current`)."""
    deadline = time.monotonic() + max_seconds
    while time.monotonic() < deadline:
        if httpx.get(f"{base}/model", timeout=10).json().get("version") == version:
            return True
        time.sleep(0.5)
    return False


# ---- the loop ---------------------------------------------------------------------------------------


def judged(version_dir: Path, data: Path) -> dict[str, float]:
    """Judged NDCG@10 of a version and of BM25 on the generator's held-out judgments."""
    report = evaluate_version(version_dir, data / "items.csv", data / "judgments.csv")
    return {"model": float(report["model"]["ndcg@10"]), "bm25": float(report["bm25"]["ndcg@10"])}


def run_loop(folder: Path, n_items: int, n_queries: int, n_events: int, seed: int,
             start_sessions: int = 40, after_events: int = 0) -> dict:
    """The whole loop in `folder`; returns its figures (see `table`)."""
    t0 = time.monotonic()
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data" / "shop"
    generate(data, n_items=n_items, n_queries=n_queries, seed=seed)
    artifacts = folder / "artifacts"
    start = train_start(data, artifacts, start_sessions, seed)
    shoppers = Shoppers(data)
    rng = np.random.default_rng(seed)
    with serving(artifacts, data.parent, folder) as base:
        before = shop(base, shoppers, n_events, rng)
        t_traffic = time.monotonic()
        job = retrain_from_events(base, "shop/judgments.csv", seed)
        if job["status"] != "succeeded":
            raise RuntimeError(f"the retrain from events {job['status']}: {job.get('error')}")
        t_retrain = time.monotonic()
        served_new = job["activated"] and wait_serving(base, job["version"])
        after = shop(base, shoppers, after_events, rng) if after_events and served_new else None
    new = artifacts / job["version"]
    return {"seed": seed, "items": n_items, "start_sessions": start_sessions,
            "events": before.events, "answers": before.answers, "by_type": before.by_type,
            "served": start.name, "served_versions": sorted(before.versions),
            "retrained": new.name, "activated": bool(job["activated"]), "decision": job["decision"],
            "ndcg_served": judged(start, data)["model"], **_prefixed(judged(new, data), "ndcg_retrained_"),
            "ctr_served": before.ctr, "ctr_retrained": after.ctr if after else None,
            "events_after": after.events if after else 0,
            "seconds": {"traffic": round(t_traffic - t0, 1), "retrain": round(t_retrain - t_traffic, 1),
                        "total": round(time.monotonic() - t0, 1)}}


def _prefixed(d: dict[str, float], prefix: str) -> dict[str, float]:
    return {f"{prefix}{k}": v for k, v in d.items()}


def table(rows: list[dict]) -> str:
    head = ("| seed | items | events (impr / click / cart / purchase) | served start NDCG@10 | "
            "retrained NDCG@10 | BM25 | activated | CTR served -> retrained |\n"
            "|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        t = r["by_type"]
        counts = " / ".join(f"{t.get(k, 0):,}" for k in ("impression", "click", "cart", "purchase"))
        ctr = (f"{r['ctr_served']:.3f} -> {r['ctr_retrained']:.3f}" if r["ctr_retrained"] is not None
               else f"{r['ctr_served']:.3f}")
        lines.append(f"| {r['seed']} | {r['items']:,} | {r['events']:,} ({counts}) | {r['ndcg_served']:.3f} | "
                     f"**{r['ndcg_retrained_model']:.3f}** | {r['ndcg_retrained_bm25']:.3f} | "
                     f"{'yes' if r['activated'] else 'no'} | {ctr} |")
    return head + "\n".join(lines)


def bench_parser(doc: str | None, out: str, events_help: str) -> argparse.ArgumentParser:
    """The options of this benchmark and its siblings (benchmarks/experiment_loop.py)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=3000)
    p.add_argument("--queries", type=int, default=4000, help="the generator's search sessions")
    p.add_argument("--events", type=int, default=20_000, help=events_help)
    p.add_argument("--seeds", default="0", help="comma-separated; one run per seed")
    p.add_argument("--out", type=Path, default=ROOT / "data" / "generated" / out)
    p.add_argument("--json", action="store_true", help="also print each run's figures as JSON")
    return p


def for_each_seed(args: argparse.Namespace, run: Callable[[Path, int], dict],
                  say: Callable[[dict], str]) -> list[dict]:
    """`run(fresh folder, seed)` for every seed of `--seeds`, printing `say(row)` (and the row
    with --json) as each one ends."""
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        folder = args.out / f"seed{seed}"
        shutil.rmtree(folder, ignore_errors=True)
        row = run(folder, seed)
        rows.append(row)
        if args.json:
            print(json.dumps(row))
        print(f"seed {seed}: {say(row)}", flush=True)
    return rows


def main() -> None:
    p = bench_parser(__doc__, "closed_loop", "events the served start collects")
    p.add_argument("--after", type=int, default=5_000,
                   help="events then collected by the retrained version (its CTR); 0: none")
    p.add_argument("--start-sessions", type=int, default=40,
                   help="search sessions the served start is trained on")
    args = p.parse_args()
    rows = for_each_seed(args, lambda folder, seed: run_loop(
        folder, args.items, args.queries, args.events, seed, start_sessions=args.start_sessions,
        after_events=args.after), lambda row: f"{row['decision']} ({row['seconds']})")
    print(table(rows))


if __name__ == "__main__":
    main()
