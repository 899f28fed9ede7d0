"""An experiment detects a worse model: simulated shoppers split between A, the trained model, and
B, a deliberately degraded copy of it, on a live `recsys serve`.

    .venv/bin/python benchmarks/experiment_loop.py [--items 3000] [--events 20000] [--seeds 0]

1. `recsys.synthetic.generate` writes a catalogue and its search log; A is trained on the whole
   log (the model `recsys train` makes).
2. B = `degraded_copy(A)`: a real, loadable version folder whose `color`, `style` and `quality`
   heads' values are all ~0 (`--degrade heads`; the ranking keeps only the `other` head and
   the prior), or whose every head attends uniformly (`--degrade uniform`: the query no longer
   matters). It is a test helper, not something the product offers.
3. `recsys serve` runs A; `POST /admin/experiments` starts {A, B} at 50/50.
4. The closed loop's shoppers (`closed_loop.Shoppers`: the generator's ground truth, clicks under
   the position-based examination model) query with a `user_id` each, so the service splits
   them by its hash, and post their events with the same user_id.
5. `GET /admin/experiments/NAME` reports per arm CTR, cart and purchase rates with 95% intervals
   and B - A with its interval and significance; `POST .../end` with the better arm activates it.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import torch

from api.abtest import assign_arm, compare_rates, wilson
from recsys.artifact import load_version, read_manifest, save_version
from recsys.synthetic import generate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from closed_loop import ADMIN_TOKEN, K, Shoppers, bench_parser, for_each_seed, serving, shop

DEGRADED_HEADS = ("color", "style", "quality")
VALUE_OFF = -30.0  # softplus(-30) = 9e-14: an attribute's value, and its head's output, ~0
UNIFORM_OFF = -30.0  # sigmoid(-30) ~ 0: BM25's length term b, so the no-match slot counts once


def degraded_copy(version_dir: Path, artifacts: Path, mode: str = "heads") -> Path:
    """A new version in `artifacts` (not made current): `version_dir`'s catalogue and weights,
    degraded. "heads": the DEGRADED_HEADS' values ~0, so those heads add nothing. "uniform":
    every logit of every head 0 (no query projection, evidence, biases or length term), so each
    head spreads its attention evenly over the item's attributes and the no-match slot."""
    rec = load_version(version_dir)
    model = rec.model
    with torch.no_grad():
        for facet in (DEGRADED_HEADS if mode == "heads" else rec.facets):
            head = model.head(facet)
            if mode == "heads":
                head.value.weight.zero_()
                head.value.bias.fill_(VALUE_OFF)
                continue
            for p in (head.q_proj.weight, head.evidence_weight, head.rare_weight, head.match_bias,
                      head.source_bias.weight, head.no_match.weight, head.no_match.bias,
                      head.specific_weight):
                p.zero_()
            head.length_weight.fill_(UNIFORM_OFF)
    manifest = {k: v for k, v in read_manifest(version_dir).items() if k != "version"}
    manifest["degraded"] = {"of": version_dir.name, "mode": mode,
                            "heads": list(DEGRADED_HEADS if mode == "heads" else rec.facets)}
    return save_version(rec, artifacts, manifest, popularity=rec.popularity, make_current=False)


def train_full(data: Path, artifacts: Path, seed: int) -> Path:
    from training.fit import TrainConfig
    from training.train import TrainInputs, train

    inputs = TrainInputs(items=data / "items.csv", interactions=data / "interactions.csv",
                         judgments=data / "judgments.csv")
    return train(inputs, artifacts, TrainConfig(seed=seed)).version_dir


def admin(base: str) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=60,
                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


def live_everywhere(base: str, query: str, live: Callable[[dict], bool], what: str,
                    in_a_row: int = 40, max_seconds: float = 120.0) -> int:
    """Wait until `in_a_row` answers in a row are `live`. `recsys serve` runs several workers:
    the one that took an experiment's start or end acts at once, the others at their next poll
    of the store (RECSYS_WATCH_INTERVAL_S) and once they have loaded the arms; until then their
    answers come from the active version (or the arms) although the report attributes the users'
    events to their arms. Each probe is a new connection (a kept-alive one stays with one
    worker), so 40 in a row miss a lagging worker with odds 2^-40 at two workers. They post no
    events; returns how many were sent."""
    deadline, seen, sent = time.monotonic() + max_seconds, 0, 0
    while seen < in_a_row:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not served by every worker after {max_seconds:.0f} s")
        answer = httpx.post(f"{base}/recommend", timeout=30, headers={"Connection": "close"},
                            json={"query": query, "k": 1, "explain": False,
                                  "user_id": f"probe-{seen}"}).json()
        sent += 1
        seen = seen + 1 if live(answer) else 0
        if not seen:
            time.sleep(0.2)
    return sent


def run_experiment(folder: Path, n_items: int, n_queries: int, n_events: int, seed: int,
                   mode: str = "heads", n_users: int = 2000, name: str = "degraded-b") -> dict:
    """The whole experiment in `folder`; returns the report, what the shoppers saw and the end."""
    t0 = time.monotonic()
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data" / "shop"
    generate(data, n_items=n_items, n_queries=n_queries, seed=seed)
    artifacts = folder / "artifacts"
    a = train_full(data, artifacts, seed)
    b = degraded_copy(a, artifacts, mode)
    shoppers = Shoppers(data)
    rng = np.random.default_rng(seed)
    with serving(artifacts, data.parent, folder) as base, admin(base) as http:
        r = http.post("/admin/experiments", json={"name": name, "arms": {"A": a.name, "B": b.name},
                                                  "traffic": {"A": 0.5, "B": 0.5}})
        if r.status_code != 201:
            raise RuntimeError(f"POST /admin/experiments answered {r.status_code}: {r.text[:500]}")
        probes = live_everywhere(base, str(shoppers.queries[0]),
                                 lambda x: (x.get("experiment") or {}).get("name") == name,
                                 f"experiment {name}")
        traffic = shop(base, shoppers, n_events, rng, n_users=n_users)
        report = http.get(f"/admin/experiments/{name}").json()
        metrics = httpx.get(f"{base}/metrics").text
        ctr = {arm["arm"]: arm["ctr"]["rate"] for arm in report["arms"]}
        winner = max(ctr, key=lambda k: ctr[k])
        ended = http.post(f"/admin/experiments/{name}/end", json={"winner": winner})
        if ended.status_code != 200:
            raise RuntimeError(f"ending answered {ended.status_code}: {ended.text[:500]}")
        live_everywhere(base, str(shoppers.queries[0]), lambda x: x.get("experiment") is None,
                        f"the end of {name}")
        after = httpx.post(f"{base}/recommend", json={"query": str(shoppers.queries[0]),
                                                      "user_id": "U-00001", "explain": False}).json()
    return {"seed": seed, "items": n_items, "mode": mode, "a": a.name, "b": b.name,
            "report": report, "probes": probes, "traffic": {"answers": traffic.answers, "by_type": traffic.by_type,
                                          "arm_answers": traffic.arm_answers,
                                          "arm_users": {k: len(v) for k, v in traffic.arm_users.items()}},
            "metrics": [line for line in metrics.splitlines() if line.startswith("recsys_experiment")],
            "winner": winner, "end": ended.json(), "after_end": {"model_version": after["model_version"],
                                                                "experiment": after["experiment"]},
            "seconds": round(time.monotonic() - t0, 1)}


def aa_false_positives(version_dir: Path, data: Path, n_experiments: int, n_answers: int,
                       n_users: int, seed: int) -> dict:
    """A/A experiments, in process (the split and the statistics, not the serving): both arms
    answer with the same version, so every "significant" CTR difference is a false positive
    (5% expected at alpha 0.05). Each experiment has its own name (a new split of the users)
    and `n_answers` answers of the loop's shoppers."""
    rec, shoppers = load_version(version_dir), Shoppers(data)
    rng = np.random.default_rng(seed)
    shown: dict[str, list[str]] = {}  # one version: a query's answer is always the same
    split = [("A", 0.5), ("B", 0.5)]
    significant, zs = 0, []
    for e in range(n_experiments):
        counts = {arm: Counter() for arm, _ in split}
        for _ in range(n_answers):
            query = str(rng.choice(shoppers.queries, p=shoppers.p))
            if query not in shown:
                shown[query] = [it.item_id for it in rec.recommend(query, k=K, explain=False).items]
            arm = assign_arm(f"aa-{seed}-{e}", f"U-{int(rng.integers(n_users)):05d}", split)
            counts[arm].update(kind for kind, _ in shoppers.react(rng, query, shown[query]))
        d = compare_rates(wilson(counts["A"]["click"], counts["A"]["impression"]),
                          wilson(counts["B"]["click"], counts["B"]["impression"]))
        significant += d.significant
        zs.append(d.z)
    return {"experiments": n_experiments, "answers": n_answers,
            "false_positive_rate": significant / n_experiments, "z_sd": float(np.std(zs))}


def table(rows: list[dict]) -> str:
    head = ("| seed | B | events | A: impressions, CTR (95% CI) | B: impressions, CTR (95% CI) | "
            "B - A (95% CI) | p | significant |\n|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        arms = {arm["arm"]: arm for arm in r["report"]["arms"]}
        ctr = next(c for c in r["report"]["comparisons"] if c["metric"] == "ctr")

        def cell(arm: dict) -> str:
            lo, hi = arm["ctr"]["ci95"]
            return f"{arm['impressions']:,}, {arm['ctr']['rate']:.4f} ({lo:.4f}-{hi:.4f})"

        lines.append(f"| {r['seed']} | {r['mode']} | {sum(r['traffic']['by_type'].values()):,} | "
                     f"{cell(arms['A'])} | {cell(arms['B'])} | {ctr['difference']:+.4f} "
                     f"({ctr['ci95'][0]:+.4f} to {ctr['ci95'][1]:+.4f}) | {ctr['p_value']:.1e} | "
                     f"{'yes' if ctr['significant'] else 'no'} |")
    return head + "\n".join(lines)


def main() -> None:
    p = bench_parser(__doc__, "experiment_loop", "events of the experiment")
    p.add_argument("--users", type=int, default=2000, help="distinct simulated shoppers")
    p.add_argument("--degrade", choices=("heads", "uniform"), default="heads")
    p.add_argument("--aa", type=int, default=0, metavar="N",
                   help="instead: N A/A experiments in process (--events / 10 answers each), "
                        "the share the test calls significant")
    args = p.parse_args()
    if args.aa:
        for seed in (int(x) for x in args.seeds.split(",")):
            data = args.out / f"aa{seed}" / "shop"
            generate(data, n_items=args.items, n_queries=args.queries, seed=seed)
            a = train_full(data, data.parent / "artifacts", seed)
            print(json.dumps({"seed": seed, **aa_false_positives(
                a, data, args.aa, args.events // K, args.users, seed)}), flush=True)
        return
    rows = for_each_seed(args, lambda folder, seed: run_experiment(
        folder, args.items, args.queries, args.events, seed, args.degrade, args.users),
        lambda row: f"{row['report']['summary']} ({row['seconds']} s)")
    print(table(rows))

if __name__ == "__main__":
    main()
