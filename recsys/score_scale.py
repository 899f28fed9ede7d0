"""How far apart a catalogue's scores are: the scale a merchandising rule's amount is read on.

A boost or a bury adds its amount to an item's score (`recsys.rules`), and scores have no unit a
merchandiser knows: on one shop's catalogue its top ten ran 0.3-0.7, and a boost of +0.30 (the
docs' examples said 0.5 and 1.5) put items that matched only "new" above the AirPods asked for
(a probe, 7 December 2026). So the rules' answers carry this scale: over the catalogue's
commonest title words as searches, how far the 1st result scores above the 10th (the lower
median: one real search's gap), and so how far neighbours are apart on average.
"""

from __future__ import annotations

import statistics
import weakref
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .recommender import Recommender
from .tokenize import STOPWORDS, words

SCALE_SEARCHES = 40  # the commonest title words asked
SCALE_TITLES = 2000  # titles they are counted on, spread over the catalogue
SCALE_RANKS = 10

_scales: weakref.WeakKeyDictionary[Recommender, ScoreScale] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class ScoreScale:
    searches: list[str]  # the words asked, the commonest first
    first_to_tenth: float  # the lower median over them of score(1st) - score(10th)

    @property
    def neighbours(self) -> float:
        """The average gap of two neighbours of those ten (many tie: their median is often 0)."""
        return self.first_to_tenth / (SCALE_RANKS - 1)

    @property
    def note(self) -> str:
        return (f"over {len(self.searches)} of the catalogue's commonest title words as searches, the 1st "
                f"result scores {self.first_to_tenth:.2f} above the {SCALE_RANKS}th (median), neighbours "
                f"{self.neighbours:.2f} apart on average: a boost of {self.first_to_tenth:.2f} lifts a "
                f"{SCALE_RANKS}th result to about the top, one of {self.neighbours:.2f} about one place")


def score_scale(rec: Recommender) -> ScoreScale:
    """`rec`'s scale, found once per model (about 40 top-10 rankings)."""
    kept = _scales.get(rec)
    if kept is None:
        kept = _scales[rec] = _measure(rec)
    return kept


def _measure(rec: Recommender) -> ScoreScale:
    titles = rec.catalog.titles
    sample = np.unique(np.linspace(0, len(titles) - 1, min(SCALE_TITLES, len(titles))).astype(np.int64)) \
        if titles else np.zeros(0, dtype=np.int64)
    said = Counter(w for i in sample.tolist() for w in set(words(titles[i]))
                   if w not in STOPWORDS and len(w) >= 3 and not w[0].isdigit())
    searches = [w for w, _ in sorted(said.items(), key=lambda wc: (-wc[1], wc[0]))[:SCALE_SEARCHES]]
    spans = []
    for word in searches:
        scores = rec.rank(word, k=SCALE_RANKS).scores
        if len(scores) == SCALE_RANKS:
            spans.append(scores[0] - scores[-1])
    return ScoreScale(searches, float(statistics.median_low(spans)) if spans else 0.0)
