"""How faithful the per-head explanations are to the scorer: measured after every training run.

Four checks, each read off the same exact computation the ranking uses (recsys/index/scoring.py):

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

Three more, on the same top-k items (ERASER: DeYoung et al., 2020):

(e) **comprehensiveness and sufficiency** per head over >= 2 of the item's attributes: rank them
    by attention (summed over the query tokens); erase the top 1 and the top m, with
    m = min(number of query words, attributes - 1) (a query word names at most one attribute of a
    facet, so a query's words point at up to that many; one attribute is always left out).
    Comprehensiveness = the head's contribution minus its contribution without them (higher:
    the attended attributes carry the score); sufficiency = the contribution minus the
    contribution with only them kept (near 0 or below: they suffice). Next to each, the same
    for as many attributes drawn at random. Erasing removes attributes from the item's list, as
    `HeadAttention.without` does for one: their terms leave the sums and the no-match slot's
    multiplicity falls with the count (`FacetScorer.forward` on the shortened list gives the
    same, tests/training/test_faithfulness_eraser.py). The item prior, which attention does not explain,
    is held fixed, as in /explain's erasure; the other heads do not change.
(f) **Kendall's tau** (tau-b) between the head's attention over the item's attributes and their
    leave-one-out importance (the contribution's drop when that attribute alone is removed),
    per (query, item, head) with >= 2 attributes; NaN (constant attention or drops) skipped
    and counted.
(g) **what unnamed heads add**: for each probe query's top-k items, the mean contribution of a
    head that none of the query's probe words names, against that of a named head, and their
    ratio (contributions are >= 0, so these are mean absolute contributions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from recsys.explain import HeadAttention, head_attention
from recsys.index.scoring import ScoringIndex
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
    worth = att.worth  # (T, M)
    out_t = (a * worth).sum(1, keepdims=True)  # (T, 1)
    return (a * (worth - out_t)).sum(0)


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
    worth = att.worth  # (T, M)
    a = (e * worth).sum(1)  # (T,)
    log_term = np.log1p(b / n)  # (T,)
    per_token = (e / b[:, None]) * (worth * log_term[:, None]
                                    - (a / b * (log_term - b / (n + b)))[:, None])
    return per_token.sum(0)


def slot_curve(index: ScoringIndex, facet: str, item_idx: int) -> Callable[[np.ndarray], np.ndarray]:
    """The no-match slot's multiplicity of one item in `facet` as a function of how much of its
    length is erased with its attributes (`AttributeSets.slot_after`)."""
    return partial(index.sets.slot_after, facet, item_idx)


def outputs_with(att: HeadAttention, slots: Callable[[np.ndarray], np.ndarray], keep: np.ndarray) -> np.ndarray:
    """(S,) the head output if only the attributes where keep[s] (S, M) bool is true stayed on
    the item: `HeadAttention.without` for any subsets. Erased attributes leave the sums and take
    their lengths off the item's (`HeadAttention.lengths`), and the slot counts slots(the length
    erased) times (`slot_curve`)."""
    e_slot = att.weights[:, -1] * att.den / slots(np.zeros(1))  # (T,) per unit multiplicity
    kept = keep.astype(np.float64)  # (S, M)
    num = (att.exps * att.worth) @ kept.T  # (T, S)
    lengths = np.ones(len(att.labels)) if att.lengths is None else att.lengths  # (M,)
    den = att.exps @ kept.T + e_slot[:, None] * slots((1.0 - kept) @ lengths)[None, :]  # (T, S)
    return (num / den).sum(0)


ERASER_SETS = ("top_1", "top_m", "random_1", "random_m")


def eraser_case(att: HeadAttention, slots: Callable[[np.ndarray], np.ndarray], m: int,
                rng: np.random.Generator) -> np.ndarray:
    """(4, 2) comprehensiveness and sufficiency, one row per ERASER_SETS: the top 1 and top m
    attributes by attention (summed over the tokens), then as many drawn at random (the
    random 1 among the random m)."""
    n = len(att.labels)
    order = np.argsort(-att.weights[:, :-1].sum(0), kind="stable")
    shuffled = rng.permutation(n)
    erased = np.zeros((4, n), dtype=bool)
    for row, chosen in enumerate((order[:1], order[:m], shuffled[:1], shuffled[:m])):
        erased[row, chosen] = True
    outs = att.output - outputs_with(att, slots, np.concatenate([~erased, erased]))  # (8,)
    return np.stack([outs[:4], outs[4:]], 1)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b of two short vectors (ties counted as scipy.stats.kendalltau does, which
    the tests check it against; this costs ~10 us, scipy's call ~300 us); NaN when either is
    constant."""
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    den = np.sqrt(float(np.count_nonzero(dx)) * float(np.count_nonzero(dy)))
    return float((dx * dy).sum() / den) if den else float("nan")


def attention_loo_tau(att: HeadAttention, drops: np.ndarray) -> float:
    """Kendall's tau-b between the attention on each attribute (summed over the tokens) and
    its leave-one-out drop (`erasure_drops`); NaN when either is constant."""
    return kendall_tau_b(att.weights[:, :-1].sum(0), drops)


# ---- whole-catalogue head outputs under uniform attention ------------------------------------

def uniform_head_outputs(rec: Recommender, n_tokens: int) -> np.ndarray:
    """(n_items, H) head outputs when every token spreads its attention uniformly over the item's
    attributes of that facet and the no-match slot (which counts as its multiplicity s(M), as
    with all logits equal): T * sum_m v_m / (M + s(M))."""
    out = np.zeros((rec.catalog.n_items, len(rec.facets)), dtype=np.float64)
    for h, f in enumerate(rec.facets):
        t = rec.index.tables[f]
        sums = t.sets @ t.values.astype(np.float64)  # (U,)
        counts = np.diff(t.sets.indptr)  # (U,)
        slots = rec.index.slot_multiplicity(f, rec.index.sets.set_length(f))  # (U,)
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
    """The faithfulness checks (a)-(g) as one JSON-able dict.

    queries: the queries whose top-k items (b), (d), (e) and (f) look at; None = the queries of
    the judgments and probes. probes: DataFrame or CSV path (query, word, facet, value) for (a)
    and (g).
    judgments: DataFrame/CSV (query, item_id, grade) or {query: {item_idx: grade}} for (c).
    Parts without their input are None. (b), (d), (e), (f) look at a seeded sample of at most
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
    report["unnamed_heads"] = (
        unnamed_head_share(rec, probes_df, k) if probes_df is not None and len(probes_df) else None
    )
    return report


def unnamed_head_share(rec: Recommender, probes: pd.DataFrame, k: int = 10) -> dict:
    """(g): over each probe query's top-k items, the mean contribution of a head that no probe
    word of the query names (its probes' facets) against that of a named head, overall and per
    head. Probe facets the model has no head for name nothing."""
    sums = {f: np.zeros(4) for f in rec.facets}  # unnamed total, unnamed cases, named total, named cases
    n_queries = n_items = 0
    for query, group in probes.groupby("query", sort=False):
        state = rec.index.query_state(str(query))
        if not state.tokens:
            continue
        ranked, _ = rec.index.top_k(state, None, None, k)
        outs = np.abs(rec.index.head_outputs(state)[ranked].astype(np.float64))  # (k, H)
        named = set(group["facet"].astype(str))
        for h, f in enumerate(rec.facets):
            at = 2 if f in named else 0
            sums[f][at:at + 2] += (outs[:, h].sum(), len(ranked))
        n_queries += 1
        n_items += len(ranked)
    total: np.ndarray = sum(sums.values(), np.zeros(4))
    return {**_named_means(total), "queries": n_queries, "items": n_items,
            "heads": {f: _named_means(v) for f, v in sums.items()}}


def _named_means(v: np.ndarray) -> dict:
    unnamed = float(v[0] / v[1]) if v[1] else None
    named = float(v[2] / v[3]) if v[3] else None
    return {"mean_unnamed": unnamed, "unnamed_cases": int(v[1]),
            "mean_named": named, "named_cases": int(v[3]),
            "ratio": unnamed / named if unnamed is not None and named else None}


def _per_item_checks(rec: Recommender, queries: list[str], k: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    eraser_rng = np.random.default_rng([seed, 5])  # its own draws: (b)'s stay as they were
    everything = np.ones(rec.catalog.n_items, dtype=bool)
    erasure = {f: [0, 0] for f in rec.facets}  # hits, cases
    gxi = {f: [0, 0] for f in rec.facets}
    ig = {f: [0, 0] for f in rec.facets}
    clear = [0, 0]  # cases where the top attribute has >= 2x the attention of the runner-up
    drop_top, drop_random, ig_gap = [], [], 0.0
    # (contribution, m, (4, 2) eraser_case) per case
    eraser: dict[str, list[tuple[float, int, np.ndarray]]] = {f: [] for f in rec.facets}
    taus: dict[str, list[float]] = {f: [] for f in rec.facets}  # Kendall's tau per case, NaN included
    for query in queries:
        state = rec.index.query_state(query)
        if not state.tokens:
            continue
        scores = rec.index.prior + rec.index.head_outputs(state).sum(1)
        for item in top_k(scores, everything, k):
            for f in rec.facets:
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
                m = min(len(state.tokens), n - 1)
                slots = slot_curve(rec.index, f, att.item_idx)
                eraser[f].append((att.output, m, eraser_case(att, slots, m, eraser_rng)))
                taus[f].append(attention_loo_tau(att, drops))
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
        "eraser": {**_eraser_means([c for cases in eraser.values() for c in cases]),
                   "heads": {f: _eraser_means(cases) for f, cases in eraser.items()}},
        "attention_vs_leave_one_out": {**_tau_means([t for ts in taus.values() for t in ts]),
                                       "heads": {f: _tau_means(t) for f, t in taus.items()}},
    }


def _eraser_means(cases: list) -> dict:
    """Means over (query, item, head) cases of `eraser_case`, with the mean contribution and m."""
    out: dict = {"cases": len(cases)}
    if not cases:
        return {**out, "mean_contribution": None, "mean_m": None, **{name: None for name in ERASER_SETS}}
    means = np.mean([c[2] for c in cases], axis=0)  # (4, 2)
    out["mean_contribution"] = float(np.mean([c[0] for c in cases]))
    out["mean_m"] = float(np.mean([c[1] for c in cases]))
    for name, (comp, suff) in zip(ERASER_SETS, means.tolist()):
        out[name] = {"comprehensiveness": comp, "sufficiency": suff}
    return out


def _tau_means(taus: list[float]) -> dict:
    t = np.asarray(taus, dtype=np.float64)
    ok = t[~np.isnan(t)]
    return {"kendall_tau": float(ok.mean()) if len(ok) else None, "cases": len(ok),
            "skipped_nan": len(t) - len(ok)}


def _uniform_attention(rec: Recommender, judged: Mapping[str, Mapping[int, float]], k: int) -> dict:
    """NDCG@k of the model and with each head's attention made uniform (one head at a time)."""
    everything = np.ones(rec.catalog.n_items, dtype=bool)
    model_rank: dict[str, np.ndarray] = {}
    per_head: dict[str, dict[str, np.ndarray]] = {f: {} for f in rec.facets}
    all_uniform = {}
    # per token count: (n, H) uniform head outputs and the scores with every head uniform
    uniform_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for query in judged:
        state = rec.index.query_state(query)
        outs = rec.index.head_outputs(state).astype(np.float64)  # (n, H)
        scores = rec.index.prior + outs.sum(1)  # (n,)
        model_rank[query] = top_k(scores, everything, k)
        n_tok = len(state.tokens)
        if n_tok not in uniform_cache:
            uni = uniform_head_outputs(rec, n_tok)
            uniform_cache[n_tok] = uni, rec.index.prior + uni.sum(1)
        uni, uni_scores = uniform_cache[n_tok]
        for h, f in enumerate(rec.facets):  # one head's outputs swapped for the uniform ones
            per_head[f][query] = top_k(scores + (uni[:, h] - outs[:, h]), everything, k)
        all_uniform[query] = top_k(uni_scores, everything, k)
    key = f"ndcg@{k}"
    base = evaluate_rankings(model_rank, judged, k)[key]
    heads = {}
    for f in rec.facets:
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
    es = report.get("eraser")  # absent from the reports of versions trained before it
    if es and es["cases"]:
        t1, tm, r1, rm = (es[name] for name in ERASER_SETS)
        lines.append(f"ERASER comprehensiveness top-1 {t1['comprehensiveness']:.3f} vs random "
                     f"{r1['comprehensiveness']:.3f}, top-m {tm['comprehensiveness']:.3f} vs "
                     f"{rm['comprehensiveness']:.3f}  ({es['cases']} cases, mean m {es['mean_m']:.2f})")
        lines.append(f"ERASER sufficiency     top-1 {t1['sufficiency']:.3f} vs random "
                     f"{r1['sufficiency']:.3f}, top-m {tm['sufficiency']:.3f} vs {rm['sufficiency']:.3f}"
                     f"  (mean contribution {es['mean_contribution']:.3f})")
    tau = report.get("attention_vs_leave_one_out")
    if tau and tau["cases"]:
        lines.append(f"attention vs leave-one-out  Kendall's tau {tau['kendall_tau']:.3f}  "
                     f"({tau['cases']} cases, {tau['skipped_nan']} NaN skipped)")
    un = report.get("unnamed_heads")
    if un and un["ratio"] is not None:
        lines.append(f"unnamed heads          mean contribution {un['mean_unnamed']:.3f} vs named "
                     f"{un['mean_named']:.3f}  (ratio {un['ratio']:.3f})")
    uni = report.get("uniform_attention")
    if uni:
        key = f"ndcg@{report['k']}"
        drops = "  ".join(f"{f} {v['ndcg_drop']:+.3f}" for f, v in uni["heads"].items())
        lines.append(f"uniform attention      NDCG@{report['k']} {uni[key]:.3f}; lost per head: {drops}")
    return "\n".join(lines)
