"""Known-item queries drawn from a catalogue's own texts: what a shopper could type to find one
item, for catalogues without logged searches (benchmarks/known_item.py, `recsys bench --catalog`).

Sampled in the manner of Azzopardi, de Rijke and Balog ("Building simulated queries for
known-item topics", SIGIR 2007): an item among those with at least three distinct content words;
a length of 1 + Poisson(1.2), at most 5 and at most the item's distinct words; each word, with
probability 1 - noise, drawn without replacement from the item's own words with probability
proportional to its IDF, else a noise word drawn from the whole catalogue's word occurrences.
"""

from __future__ import annotations

import numpy as np

from recsys.tokenize import STOPWORDS, words

NOISE = 0.2  # share of query words drawn from the whole catalogue rather than the item's own
DEPTH = 100  # ranks past this count as a miss
TIE_TOLERANCE = 1e-4  # relative: scores closer than this share their ranks in the tie-aware MRR


class TopicSampler:
    """Known-item topics over the item texts BM25 sees (`Catalog.texts`)."""

    def __init__(self, texts: list[str]):
        self.doc_words = [sorted({w for w in words(t) if w not in STOPWORDS}) for t in texts]
        df: dict[str, int] = {}
        occurrences: list[str] = []
        for t, doc in zip(texts, self.doc_words):
            for w in doc:
                df[w] = df.get(w, 0) + 1
            occurrences.extend(w for w in words(t) if w not in STOPWORDS)
        n = len(texts)
        self.idf = {w: float(np.log(1.0 + (n - d + 0.5) / (d + 0.5))) for w, d in df.items()}
        self.occurrences = occurrences
        self.eligible = np.flatnonzero([len(d) >= 3 for d in self.doc_words])

    def sample(self, rng: np.random.Generator, n: int, noise: float) -> list[tuple[str, int]]:
        """Up to `n` (query, item index) pairs, each item drawn once."""
        topics = []
        for item in rng.choice(self.eligible, size=min(n, len(self.eligible)), replace=False):
            doc = self.doc_words[int(item)]
            length = int(min(1 + rng.poisson(1.2), 5, len(doc)))
            weights = np.array([self.idf[w] for w in doc])
            own = list(rng.choice(doc, size=length, replace=False, p=weights / weights.sum()))
            query = [str(self.occurrences[rng.integers(len(self.occurrences))])
                     if rng.random() < noise else str(w) for w in own]
            topics.append((" ".join(query), int(item)))
        return topics


def tie_aware_rr(scores: np.ndarray, item: int) -> float:
    """The reciprocal rank of `item` averaged over every order of the items tied with it
    (McSherry and Najork, "Computing information retrieval performance measures efficiently in
    the presence of tied scores", ECIR 2008): what a system earns for its scores, not for how its
    top-k breaks ties. Ties are scores within TIE_TOLERANCE of the item's, relative; ranks past
    DEPTH count 0, and so does an item that scores 0 (matched nothing)."""
    s = float(scores[item])
    if s <= 0:
        return 0.0
    margin = TIE_TOLERANCE * abs(s)
    above = int(np.count_nonzero(scores > s + margin))
    tied = int(np.count_nonzero(np.abs(scores - s) <= margin))
    ranks = np.arange(above + 1, above + tied + 1)
    return float((1.0 / ranks[ranks <= DEPTH]).sum() / tied)
