"""The synonyms a trained model uses, and whether the held-aside queries confirm them: part of
every training report (`metrics.synonyms`, the manifest's too).

A learned synonym is a (word, value) pair with click-association evidence whose word is not one
of the value's words ("navy" and `color:blue`). Per head, the strongest ones as served (the
association value after training), with their support in distinct training searches; each is
confirmed when the held-aside queries (which the evidence tables never saw) that have the word
chose items with the value more often than chance (their association lift is above 0). A
few held-aside searches cannot show more than that: a lower bound over them would call most
synonyms unconfirmed for want of searches, not for what the searches chose.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recsys.encoding import Featurizer
from recsys.evidence import build_association, catalog_word_keys, query_word_matrix

SYNONYMS_LISTED = 10  # per head, the strongest ones


def learned_synonyms(featurizer: Featurizer, held_aside: pd.DataFrame, top: int = SYNONYMS_LISTED) -> dict:
    """{"heads": {facet: [{"word", "attribute", "evidence", "searches", "confirmed"}]}, "listed",
    "tested", "confirmed"}: `tested` counts the listed ones some held-aside query has the word
    of (rows: query, item_idx, label, weight; empty: none tested)."""
    ev, words, cat = featurizer.evidence, featurizer.words, featurizer.catalog
    mass = (held_aside["label"] * held_aside["weight"]).to_numpy(dtype=np.float32)
    check = build_association(cat, words, held_aside["query"].tolist(), held_aside["item_idx"].to_numpy(), mass)
    positive = held_aside.loc[mass > 0, "query"].unique().tolist()
    asked = set(np.flatnonzero(query_word_matrix(positive, words, catalog_word_keys(cat)).sum(axis=0)).tolist())
    heads: dict[str, list[dict]] = {}
    for f in cat.facets:
        table = ev.assoc[f].tocoo()
        if table.nnz == 0:
            heads[f] = []
            continue
        synonym = np.asarray(ev.exact[f][table.row, table.col]).ravel() == 0
        seen: set[tuple[int, tuple]] = set()
        rows = []
        for i in np.argsort(-table.data, kind="stable"):
            w, a = int(table.row[i]), int(table.col[i])
            if not synonym[i] or (w, cat.vocab[f][a].base) in seen:  # one per value, not per variant
                continue
            seen.add((w, cat.vocab[f][a].base))
            support = int(ev.support[f][w, a]) if ev.support is not None else None
            confirmed = bool(check.lift[f][w, a] > 0) if w in asked else None
            rows.append({"word": words.keys[w], "attribute": cat.vocab[f][a].label,
                         "evidence": round(float(table.data[i]), 3), "searches": support, "confirmed": confirmed})
            if len(rows) == top:
                break
        heads[f] = rows
    listed = [r for rows in heads.values() for r in rows]
    return {"heads": heads, "listed": len(listed), "tested": sum(r["confirmed"] is not None for r in listed),
            "confirmed": sum(r["confirmed"] is True for r in listed)}
