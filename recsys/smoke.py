"""A loaded version is scored before it is served: a few queries made of its catalogue's own
words must give finite scores and exactly additive explanations.

The file checks (`recsys.artifact`) prove a version's shapes, types, ranges and checksums, not
what its weights do: weights that are all 3e38 are finite, pass them, and score every item NaN.
Scoring a handful of queries is what finds them, for a few milliseconds of a load.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from .explain import HeadDetail, additivity_gap
from .recommender import Recommender

N_TITLE_QUERIES = 3  # items spread over the catalogue whose titles are queried
TITLE_WORDS = 4  # words of each title in its query: a query a shopper could type
TOP_K = 3  # items whose explanations are checked per query


def smoke_queries(rec: Recommender) -> list[str]:
    """Deterministic queries from the catalogue: the first words of the titles of its first,
    middle and last items, and one attribute value of every facet together."""
    cat = rec.catalog
    n = cat.n_items
    picks = sorted({round(i * (n - 1) / max(N_TITLE_QUERIES - 1, 1)) for i in range(N_TITLE_QUERIES)})
    queries = [" ".join(cat.titles[i].split()[:TITLE_WORDS]) for i in picks]
    queries.append(" ".join(cat.vocab[f][0].value for f in rec.facets if cat.vocab[f]))
    return [q for q in dict.fromkeys(queries) if q.strip()]


def smoke_problem(rec: Recommender) -> str | None:
    """What is wrong with what `rec` answers to `smoke_queries`, in one line; None when every
    score of the catalogue is finite and the top items' explanations add up to their scores."""
    for query in smoke_queries(rec):
        try:
            problem = _query_problem(rec, query)
        except (ValueError, FloatingPointError, OverflowError, ZeroDivisionError) as exc:
            # numbers a scorer cannot handle: the weights, not the query (made of its own words)
            problem = f"scoring it raised {type(exc).__name__}: {str(exc)[:120]}"
        if problem:
            return f"query {query!r}: {problem}"
    return None


def _query_problem(rec: Recommender, query: str) -> str | None:
    scores = rec.scores(query)
    bad = np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        return (f"{len(bad)} of {len(scores)} items score NaN or infinity (item "
                f"{rec.catalog.item_ids[int(bad[0])]!r}: {float(scores[bad[0]])})")
    for item in rec.recommend(query, k=TOP_K).items:
        e = item.explanation
        assert e is not None  # recommend explains by default
        parts = [("prior", e.prior), *((f"head {h.head}", h.contribution) for h in e.heads)]
        name, value = next(((n, v) for n, v in parts if not math.isfinite(v)), ("", 0.0))
        if name:
            return f"item {item.item_id!r}: its {name} is {value}"
        gap = additivity_gap(item.score, e)
        if gap is not None:
            return (f"item {item.item_id!r}: its score {item.score!r} is not its prior plus its "
                    f"heads' contributions (off by {gap:.3g})")
    top = rec.recommend(query, k=1, explain=False).items
    if top:
        detail = rec.explain(query, top[0].item_id)
        values = [detail.score, detail.prior, *_detail_numbers(detail.heads)]
        if not all(math.isfinite(v) for v in values):
            return f"item {top[0].item_id!r}: its attention or erasure holds NaN or infinity"
    return None


def _detail_numbers(heads: Iterable[HeadDetail]) -> Iterable[float]:
    for h in heads:
        yield h.contribution
        for row in h.attention:
            yield from row
        for er in h.erasure:
            yield er.score_change
