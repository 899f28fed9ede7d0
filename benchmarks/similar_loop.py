"""Like this item, measured: the model's similar items against attribute overlap and co-clicks,
for simulated shoppers with lasting preferences (issue 32, point 4).

    .venv/bin/python benchmarks/similar_loop.py [--items 3000] [--shoppers 200] [--seeds 0,1,2,3,4]

1. The shop and the shoppers are `shopper_loop`'s: the generator's catalogue and search log, a
   model trained on the log, shoppers with one lasting preference (a colour, a style or a price
   band) and its click model (closed_loop's, the preference moving the attraction).
2. **Opening an item**: a shopper searches (a query as often as the log has it, answered by the
   model) and opens the first item they click; a search without a click is followed by another.
   Each shopper opens `--opens` items.
3. **Like this item**, 10 results, the opened item never among them:
   (a) `Recommender.similar` (what GET /items/{id}/similar answers, kept to the item's kind: the
       generator's `category` column), and (a') the same over every item (`?same=none`);
   (b) attribute overlap: the Jaccard index of the two items' catalogue attributes (every facet's,
       the ones `similar` reads: category, colour, style, material, brand, quality, price and
       rating bands), ties by popularity (clicks in the log), then catalogue order;
   (c) co-clicks: the items clicked in the most of the log's searches that clicked the opened item
       (ties as (b)), backfilled by (b) when fewer than 10 were ever clicked with it;
   (d) overlap in the category: (b) with the opened item's category ahead of every other (what
       a shop's "related products" usually is), measured because the grade asks for the category.
4. **Grade** of a result for the shopper and the opened item, from the generator's own values
   (items.csv, the query's words through `word_index`), never from a model:
   0 when it is not of the opened item's category: a product page's "like this" of a dress is
   dresses, and a shirt is no answer however many attributes it shares. Otherwise 1, plus 1 when
   it has the values the shopper searched for and found in the opened item besides the category
   (the search's intent, as `grade_from_matches` counts it; with none, the opened item's colour
   or one of its styles), plus 1 when it has the shopper's lasting preference (0-3). So the grade
   rewards what the shopper came for (the kind, what they asked of it, their own taste) and no
   attribute merely because the opened item has it: brand, material or price band of the opened
   item count only when the query named them.
5. Judged NDCG@10 per shopper (the mean over their opened items; the ideal over every graded
   item of the catalogue) and CTR of the same click model on each answer (the attraction from
   the matched share of the search's intent, moved by the preference).

Each seed prints the means with 95% intervals (normal over shoppers; Wilson for CTR), the paired
differences of (a) against (b), (c) and (d) and of (a') against (d) and (a), the share of the results
of the opened item's category, and (`--json`) how often co-clicks filled all 10 places alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from closed_loop import Shoppers, session_numbers  # noqa: E402
from shopper_loop import (  # noqa: E402
    K,
    Preference,
    _ci,
    _mean_ci,
    _rate,
    draw_preferences,
    react,
    shop_arguments,
    trained_shop,
)

from recsys.catalog import Catalog  # noqa: E402
from recsys.metrics import ndcg_at_k  # noqa: E402
from recsys.recommender import Recommender  # noqa: E402

ARMS = ("similar", "similar_every_kind", "overlap", "coclick", "category_overlap")
NAMES = {"similar": "similar", "similar_every_kind": "similar over every kind", "overlap": "attribute overlap",
         "coclick": "co-clicks", "category_overlap": "overlap in the category"}
PAIRS = (("similar", "overlap"), ("similar", "coclick"), ("similar", "category_overlap"),
         ("similar_every_kind", "category_overlap"),
         ("similar", "similar_every_kind"))  # paired differences of NDCG@10, each first - second
MAX_SEARCHES = 20  # searches a shopper makes for one item to open before giving it up


def attribute_matrix(catalog: Catalog) -> sp.csr_matrix:
    """(n_items, A) 0/1: every facet's attributes side by side (A: all facets' attributes)."""
    return sp.hstack([catalog.item_attrs[f] for f in catalog.facets], format="csr").astype(np.float32)


def attribute_overlap(attrs: sp.csr_matrix, item_idx: int, popularity: np.ndarray, k: int,
                      first: np.ndarray | None = None) -> np.ndarray:
    """The `k` items of the highest Jaccard index with item `item_idx`'s attributes, never the
    item itself; ties by `popularity` (n_items,), then the lower index. `first` (n_items,) bool:
    items ranked ahead of every other (the opened item's category), by the same order."""
    shared = np.asarray((attrs @ attrs[item_idx].T).todense()).ravel()  # (n_items,)
    sizes = attrs.getnnz(axis=1)  # (n_items,)
    jaccard = shared / np.maximum(sizes + sizes[item_idx] - shared, 1)  # in [0, 1]
    return _ranked(jaccard if first is None else jaccard + first, popularity, item_idx, k)


def clicked_together(log: pd.DataFrame, n_items: int) -> sp.csc_matrix:
    """(n_searches, n_items) 0/1: which items each search of the log clicked. `log` has the
    columns `search` (int), `item_idx` (int) and `label` (> 0: clicked or bought)."""
    clicked = log[log["label"] > 0]
    searches = pd.factorize(clicked["search"])[0]
    ones = np.ones(len(clicked), dtype=np.float32)
    m = sp.csc_matrix((ones, (searches, clicked["item_idx"].to_numpy())),
                      shape=(int(searches.max(initial=-1)) + 1, n_items))
    m.sum_duplicates()
    m.data[:] = 1.0  # an item clicked twice in one search is one co-click
    return m


def co_clicks(clicks: sp.csc_matrix, attrs: sp.csr_matrix, item_idx: int, popularity: np.ndarray,
              k: int) -> np.ndarray:
    """The `k` items clicked in the most searches that clicked item `item_idx` (ties as
    `attribute_overlap`), then `attribute_overlap`'s best of the rest; never the item itself."""
    together = co_click_counts(clicks, item_idx)
    top = _ranked(together, popularity, item_idx, min(k, int(np.count_nonzero(together))))
    if len(top) == k:
        return top
    taken = set(top.tolist())
    rest = [i for i in attribute_overlap(attrs, item_idx, popularity, k + len(top)) if i not in taken]
    return np.concatenate([top, np.array(rest[: k - len(top)], dtype=np.int64)])


def co_click_counts(clicks: sp.csc_matrix, item_idx: int) -> np.ndarray:
    """(n_items,) in how many searches each item was clicked with item `item_idx` (0 for itself)."""
    searches = clicks[:, item_idx].indices  # the searches that clicked it
    together = np.asarray(clicks[searches].sum(axis=0)).ravel()
    together[item_idx] = 0
    return together


def _ranked(scores: np.ndarray, popularity: np.ndarray, item_idx: int, k: int) -> np.ndarray:
    """The `k` best by (score, popularity, lower index), never `item_idx`."""
    order = np.lexsort((np.arange(len(scores)), -popularity, -scores))
    return order[order != item_idx][:k].astype(np.int64)


class Judge:
    """The grades of the module's docstring (step 4) from the generator's item values."""

    def __init__(self, shoppers: Shoppers):
        self.values = shoppers.values  # facet -> per item the list of its lower-cased values
        self.shoppers = shoppers
        self._has: dict[tuple[str, str], np.ndarray] = {}

    def has(self, facet: str, value: str) -> np.ndarray:
        """(n_items,) bool: the items of that value."""
        if (facet, value) not in self._has:
            self._has[facet, value] = np.array([value in vs for vs in self.values[facet]], dtype=bool)
        return self._has[facet, value]

    def same_category(self, opened: int) -> np.ndarray:
        """(n_items,) bool: the items of `opened`'s category (itself too)."""
        return np.logical_or.reduce([self.has("category", c) for c in self.values["category"][opened]])

    def grades(self, query: str, opened: int, preference: np.ndarray) -> np.ndarray:
        """(n_items,) 0-3: each item's grade as like `opened` for the shopper who searched `query`."""
        same = self.same_category(opened)
        found = [(f, v) for f, v in self.shoppers.intent(query)
                 if f != "category" and v.lower() in self.values[f][opened]]
        if found:
            asked = np.logical_and.reduce([self.has(f, v.lower()) for f, v in found])
        else:
            asked = np.logical_or.reduce([self.has(f, v) for f in ("color", "style") for v in self.values[f][opened]])
        grade = same * (1 + asked.astype(int) + preference.astype(int))
        grade[opened] = 0
        return grade


def open_item(rng: np.random.Generator, rec: Recommender, shoppers: Shoppers, pref: Preference
              ) -> tuple[str, int] | None:
    """(query, item index) a shopper opens: the first click of a search (step 2)."""
    for _ in range(MAX_SEARCHES):
        query = str(rng.choice(shoppers.queries, p=shoppers.p))
        idx = rec.top_indices(query, K)
        click = react(rng, shoppers.share(query)[idx], pref.has[idx], shoppers.bonus[idx])[0]
        if click.any():
            return query, int(idx[np.argmax(click)])
    return None


def log_popularity(data: Path, rec: Recommender) -> tuple[pd.DataFrame, np.ndarray]:
    """The search log (`search`, `item_idx`, `label`) and each item's clicks in it."""
    log = pd.read_csv(data / "interactions.csv", dtype=str, keep_default_na=False)
    out = pd.DataFrame({"search": session_numbers(log).to_numpy(),
                        "item_idx": [rec.catalog.idx(i) for i in log["item_id"]],
                        "label": pd.to_numeric(log["label"]).to_numpy()})
    clicks = np.bincount(out.loc[out["label"] > 0, "item_idx"], minlength=rec.catalog.n_items)
    return out, clicks.astype(float)


def run_seed(folder: Path, n_items: int, n_shoppers: int, n_opens: int, epochs: int, seed: int) -> dict:
    data, rec = trained_shop(folder, n_items, epochs, seed)
    shoppers = Shoppers(data)
    judge = Judge(shoppers)
    log, popularity = log_popularity(data, rec)
    attrs, clicks = attribute_matrix(rec.catalog), clicked_together(log, rec.catalog.n_items)
    rng = np.random.default_rng(seed)
    ndcg: dict[str, list[float]] = {a: [] for a in ARMS}
    clicked, shown, in_category = dict.fromkeys(ARMS, 0), dict.fromkeys(ARMS, 0), dict.fromkeys(ARMS, 0)
    coclick_full = opened_n = 0
    for pref in draw_preferences(rec, n_shoppers, rng):
        scores: dict[str, list[float]] = {a: [] for a in ARMS}
        for _ in range(n_opens):
            found = open_item(rng, rec, shoppers, pref)
            if found is None:
                continue
            query, opened = found
            grades = judge.grades(query, opened, pref.has)
            relevance = {int(i): float(g) for i, g in enumerate(grades) if g}
            answers = {
                "similar": _similar(rec, opened),
                "similar_every_kind": _similar(rec, opened, same=()),
                "overlap": attribute_overlap(attrs, opened, popularity, K),
                "coclick": co_clicks(clicks, attrs, opened, popularity, K),
                "category_overlap": attribute_overlap(attrs, opened, popularity, K, judge.same_category(opened)),
            }
            coclick_full += int(np.count_nonzero(co_click_counts(clicks, opened)) >= K)
            opened_n += 1
            for arm, idx in answers.items():
                scores[arm].append(ndcg_at_k(idx, relevance, K))
                clicked[arm] += int(react(rng, shoppers.share(query)[idx], pref.has[idx], shoppers.bonus[idx])[0].sum())
                shown[arm] += len(idx)
                in_category[arm] += int(np.count_nonzero(grades[idx]))  # graded > 0: of its category
        if scores["similar"]:
            for arm in ARMS:
                ndcg[arm].append(float(np.mean(scores[arm])))
    return {"seed": seed, "items": n_items, "shoppers": len(ndcg["similar"]), "opened": opened_n,
            "ndcg": {a: _mean_ci(v) for a, v in ndcg.items()},
            "difference": {f"{a}-{b}": _mean_ci(np.array(ndcg[a]) - np.array(ndcg[b])) for a, b in PAIRS},
            "ctr": {a: _rate(clicked[a], shown[a]) for a in ARMS},
            "in_category": {a: round(in_category[a] / max(shown[a], 1), 3) for a in ARMS},
            "coclick_filled": round(coclick_full / max(opened_n, 1), 3)}


def _similar(rec: Recommender, opened: int, same: tuple[str, ...] | None = None) -> np.ndarray:
    """(K,) the model's items like `opened`, sharing its values of `same` (None: its kind, as
    GET /items/{id}/similar answers; (): over every item, `?same=none`)."""
    _, result = rec.similar(rec.catalog.item_ids[opened], k=K, explain=False, same=same)
    return np.array([rec.catalog.idx(r.item_id) for r in result.items], dtype=np.int64)


def table(rows: list[dict]) -> str:
    """Two tables: NDCG@10 with the paired differences; CTR with the share of results of the
    opened item's category."""
    diffs = [f"{NAMES[a]} - {NAMES[b]}" for a, b in PAIRS]
    ndcg = _table(["NDCG@10 " + NAMES[ARMS[0]], *(NAMES[a] for a in ARMS[1:]), *diffs],
                  [[_ci(r["ndcg"][a]) for a in ARMS] + [_ci(r["difference"][f"{a}-{b}"]) for a, b in PAIRS]
                   for r in rows], rows)
    free = ("similar", "similar_every_kind", "overlap", "coclick")  # the arms not held to the category by the benchmark
    ctr = _table(["CTR " + NAMES[ARMS[0]], *(NAMES[a] for a in ARMS[1:]),
                  *(f"of the category: {NAMES[a]}" for a in free)],
                 [[_ci(r["ctr"][a]) for a in ARMS] + [f"{r['in_category'][a]:.0%}" for a in free] for r in rows], rows)
    return ndcg + "\n\n" + ctr


def _table(head: list[str], cells: list[list[str]], rows: list[dict]) -> str:
    lines = ["| seed | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    return "\n".join(lines + [f"| {r['seed']} | " + " | ".join(c) + " |" for r, c in zip(rows, cells)])


def main() -> None:
    p = shop_arguments(__doc__, "similar_loop")
    p.add_argument("--opens", type=int, default=3, help="items each shopper opens")
    args = p.parse_args()
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        row = run_seed(args.out / f"seed{seed}", args.items, args.shoppers, args.opens, args.epochs, seed)
        rows.append(row)
        print(json.dumps(row) if args.json else f"seed {seed}: {row['opened']} items opened, co-clicks "
                                                f"filled 10 places alone for {row['coclick_filled']:.0%}",
              flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
