"""How faithful the per-head explanations are to the scorer: measured after every training run.

Four checks, each read off the same exact computation the ranking uses (recsys/index.py):

(a) **explanation accuracy** on probes: the generator knows which query word names which facet
    value; the share of cases where that facet's head puts the word's top weight on that value
    (`training.evaluate.explanation_accuracy`).
(b) **erasure agreement**: for each query's top-k items and each head over >= 2 of the item's
    attributes, removing the attribute with the most attention (summed over the query tokens)
    lowers the head's contribution more than removing a random other attribute. Share of cases.
(c) **against uniform attention** (Wiegreffe & Pinter, 2019): NDCG@10 on the judgments when one
    head's attention over each item's attributes (+ the no-match slot) is replaced by uniform
    weights, next to the model's own NDCG@10. A head whose attention matters loses NDCG.
(d) **agreement with gradient attributions**: per head and item, the attribution of the head's
    contribution to each attribute's presence p_m (the item has p = 1): gradient x input and
    integrated gradients from p = 0 (no attribute) to p = 1. Share of cases where the attribute
    with the top attention also has the top attribution.

With p_m scaling an attribute's exp-logit, one head's output for one item is
    out(p) = sum_t (sum_m p_m e_tm v_m) / (e_t,none + sum_m p_m e_tm)
so the gradient at p = 1 is  d out / d p_m = sum_t a_tm (v_m - out_t)  (a = attention, out_t the
token's output); integrated gradients integrate it along p = alpha * 1 and add up to out(1)
(completeness). Both are closed forms here, checked against autograd in the tests.
(Captum is not needed: the attribution target is a closed-form function of p.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from recsys.explain import HeadAttention, head_attention
from recsys.facets import FACETS
from recsys.metrics import evaluate_rankings, group_judgments
from recsys.recommender import Recommender, top_k

from .evaluate import explanation_accuracy



# ---- per item and head ----------------------------------------------------------------------

def top_attended(att: HeadAttention) -> int:
    """The attribute (index into att.labels) with the most attention summed over the tokens."""
    return int(np.argmax(att.weights[:, :-1].sum(0)))


def erasure_drops(att: HeadAttention) -> np.ndarray:
    """(M,) how much the head output falls when each attribute is removed (exact)."""
    out = att.output
    return np.array([out - att.without(m) for m in range(len(att.labels))])


def gradient_x_input(att: HeadAttention) -> np.ndarray:
    """(M,) d out / d p_m at p = 1 (times the input, 1): sum_t a_tm (v_m - out_t)."""
    a = att.weights[:, :-1]  # (T, M)
    out_t = (a * att.values).sum(1, keepdims=True)  # (T, 1)
    return (a * (att.values[None, :] - out_t)).sum(0)


def integrated_gradients(att: HeadAttention) -> np.ndarray:
    """(M,) integrated gradients of the head output w.r.t. attribute presence, baseline p = 0,
    in closed form. Per token, along p = alpha: out_t = alpha A / (n + alpha B) with
    A = sum_m e_m v_m, B = sum_m e_m, n = e^{no-match}; integrating the gradient over alpha gives
    IG_m = sum_t e_tm / B [v_m L - (A / B)(L - B / (n + B))],  L = ln(1 + B / n),
    which adds up over m to out (completeness)."""
    e = att.exps  # (T, M)
    if e.size == 0:
        return np.zeros(len(att.labels))
    b = e.sum(1)  # (T,)
    n = att.den - b  # (T,)
    a = (e * att.values).sum(1)  # (T,)
    log_term = np.log1p(b / n)  # (T,)
    per_token = (e / b[:, None]) * (att.values[None, :] * log_term[:, None]
                                    - (a / b * (log_term - b / (n + b)))[:, None])
    return per_token.sum(0)


# ---- whole-catalogue head outputs under uniform attention ------------------------------------

def uniform_head_outputs(rec: Recommender, n_tokens: int) -> np.ndarray:
    """(n_items, H) head outputs when every token spreads its attention uniformly over the item's
    attributes of that facet and the no-match slot (which counts as its multiplicity s(M), as
    with all logits equal): T * sum_m v_m / (M + s(M))."""
    out = np.zeros((rec.catalog.n_items, len(FACETS)), dtype=np.float64)
    for h, f in enumerate(FACETS):
        t = rec.index.tables[f]
        sums = t.sets @ t.values.astype(np.float64)  # (U,)
        counts = np.diff(t.sets.indptr)  # (U,)
        slots = rec.index.slot_multiplicity(f, counts)  # (U,)
        out[:, h] = (n_tokens * sums / (counts + slots))[t.item_set]
    return out


# ---- the report ------------------------------------------------------------------------------

def faithfulness_report(
    rec: Recommender,
    queries: Iterable[str] | None,
    probes: pd.DataFrame | str | Path | None = None,
    judgments: pd.DataFrame | Mapping[str, Mapping[int, float]] | str | Path | None = None,
    k: int = 10,
    seed: int = 0,
    max_queries: int | None = 2000,
) -> dict:
    """The four faithfulness checks as one JSON-able dict.

    queries: the queries whose top-k items (b) and (d) look at; None = the queries of the
    judgments and probes. probes: DataFrame or CSV path (query, word, facet, value) for (a).
    judgments: DataFrame/CSV (query, item_id, grade) or {query: {item_idx: grade}} for (c).
    Parts without their input are None. (b) and (d) look at a seeded sample of at most
    `max_queries` queries (None = all), which bounds their cost on a large search log.
    """
    probes_df = _read_probes(probes)
    judged = _read_judgments(rec, judgments)
    if queries is None:
        queries = list(judged or {}) + (probes_df["query"].astype(str).tolist() if probes_df is not None else [])
    queries = [q for q in dict.fromkeys(str(q) for q in queries) if q.strip()]
    if max_queries is not None and len(queries) > max_queries:
        keep = np.sort(np.random.default_rng(seed).choice(len(queries), max_queries, replace=False))
        queries = [queries[i] for i in keep]
    report: dict = {"k": k, "queries": len(queries)}
    report["explanation_accuracy"] = (
        explanation_accuracy(rec, probes_df, k) if probes_df is not None and len(probes_df) else None
    )
    report.update(_per_item_checks(rec, queries, k, seed))
    report["uniform_attention"] = _uniform_attention(rec, judged, k) if judged else None
    return report


def _per_item_checks(rec: Recommender, queries: list[str], k: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    everything = np.ones(rec.catalog.n_items, dtype=bool)
    erasure = {f: [0, 0] for f in FACETS}  # hits, cases
    gxi = {f: [0, 0] for f in FACETS}
    ig = {f: [0, 0] for f in FACETS}
    clear = [0, 0]  # cases where the top attribute has >= 2x the attention of the runner-up
    drop_top, drop_random, ig_gap = [], [], 0.0
    for query in queries:
        state = rec.index.query_state(query)
        if not state.tokens:
            continue
        scores = rec.index.prior + rec.index.head_outputs(state).sum(1)
        for item in top_k(scores, everything, k):
            for f in FACETS:
                att = head_attention(rec.index, state, int(item), f)
                n = len(att.labels)
                if n < 2:
                    continue
                top = top_attended(att)
                drops = erasure_drops(att)
                other = int(rng.choice([m for m in range(n) if m != top]))
                agrees = int(drops[top] > drops[other])
                erasure[f][0] += agrees
                erasure[f][1] += 1
                mass = np.sort(att.weights[:, :-1].sum(0))
                if mass[-1] >= 2 * mass[-2]:
                    clear[0] += agrees
                    clear[1] += 1
                drop_top.append(drops[top])
                drop_random.append(drops[other])
                g = gradient_x_input(att)
                gxi[f][0] += int(int(np.argmax(g)) == top)
                gxi[f][1] += 1
                a = integrated_gradients(att)
                ig[f][0] += int(int(np.argmax(a)) == top)
                ig[f][1] += 1
                ig_gap = max(ig_gap, abs(float(a.sum()) - att.output))
    return {
        "erasure_agreement": {
            **_shares(erasure),
            "mean_drop_top": float(np.mean(drop_top)) if drop_top else 0.0,
            "mean_drop_random": float(np.mean(drop_random)) if drop_random else 0.0,
            "clear_cases": {"agreement": clear[0] / clear[1] if clear[1] else None, "cases": clear[1]},
        },
        "gradient_agreement": {
            "gradient_x_input": _shares(gxi),
            "integrated_gradients": {**_shares(ig), "max_completeness_gap": ig_gap},
        },
    }


def _uniform_attention(rec: Recommender, judged: Mapping[str, Mapping[int, float]], k: int) -> dict:
    """NDCG@k of the model and with each head's attention made uniform (one head at a time)."""
    everything = np.ones(rec.catalog.n_items, dtype=bool)
    model_rank, per_head = {}, {f: {} for f in FACETS}
    all_uniform = {}
    uniform_cache: dict[int, np.ndarray] = {}
    for query in judged:
        state = rec.index.query_state(query)
        outs = rec.index.head_outputs(state).astype(np.float64)  # (n, H)
        model_rank[query] = top_k(rec.index.prior + outs.sum(1), everything, k)
        n_tok = len(state.tokens)
        if n_tok not in uniform_cache:
            uniform_cache[n_tok] = uniform_head_outputs(rec, n_tok)
        uni = uniform_cache[n_tok]
        for h, f in enumerate(FACETS):
            mod = outs.copy()
            mod[:, h] = uni[:, h]
            per_head[f][query] = top_k(rec.index.prior + mod.sum(1), everything, k)
        all_uniform[query] = top_k(rec.index.prior + uni.sum(1), everything, k)
    key = f"ndcg@{k}"
    base = evaluate_rankings(model_rank, judged, k)[key]
    heads = {}
    for f in FACETS:
        ndcg = evaluate_rankings(per_head[f], judged, k)[key]
        heads[f] = {key: ndcg, "ndcg_drop": base - ndcg}
    every = evaluate_rankings(all_uniform, judged, k)[key]
    return {key: base, "heads": heads, "all_heads": {key: every, "ndcg_drop": base - every},
            "queries": sum(1 for rel in judged.values() if any(g > 0 for g in rel.values()))}


def _shares(counts: Mapping[str, list[int]]) -> dict:
    hits, cases = sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values())
    return {
        "agreement": hits / cases if cases else 0.0,
        "cases": cases,
        "heads": {f: {"agreement": c[0] / c[1] if c[1] else None, "cases": c[1]}
                  for f, c in counts.items()},
    }


def _read_probes(probes) -> pd.DataFrame | None:
    if probes is None:
        return None
    if isinstance(probes, (str, Path)):
        return pd.read_csv(probes, dtype=str, keep_default_na=False)
    return probes


def _read_judgments(rec: Recommender, judgments) -> dict[str, dict[int, float]] | None:
    if judgments is None:
        return None
    if isinstance(judgments, (str, Path)):
        judgments = pd.read_csv(judgments, dtype={"query": str, "item_id": str}, keep_default_na=False)
    if isinstance(judgments, pd.DataFrame):
        index = {item_id: n for n, item_id in enumerate(rec.catalog.item_ids)}
        source = "judgments"
        return group_judgments(judgments.astype({"item_id": str}), index, source=source)
    return {q: dict(rel) for q, rel in judgments.items()}


def format_report(report: Mapping) -> str:
    """A few lines for a terminal."""
    lines = []
    acc = report.get("explanation_accuracy")
    if acc:
        lines.append(f"explanation accuracy   {acc['accuracy']:.3f}  ({acc['cases']} cases)")
    er = report["erasure_agreement"]
    lines.append(f"erasure agreement      {er['agreement']:.3f}  ({er['cases']} cases; mean drop "
                 f"top {er['mean_drop_top']:.3f} vs random {er['mean_drop_random']:.3f})")
    ga = report["gradient_agreement"]
    lines.append(f"gradient agreement     x-input {ga['gradient_x_input']['agreement']:.3f}  "
                 f"integrated {ga['integrated_gradients']['agreement']:.3f}")
    uni = report.get("uniform_attention")
    if uni:
        key = f"ndcg@{report['k']}"
        drops = "  ".join(f"{f} {v['ndcg_drop']:+.3f}" for f, v in uni["heads"].items())
        lines.append(f"uniform attention      NDCG@{report['k']} {uni[key]:.3f}; lost per head: {drops}")
    return "\n".join(lines)
