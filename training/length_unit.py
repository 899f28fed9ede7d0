"""Which unit an item's length counts in the start of a catalogue (`ModelOptions.length_unit`),
chosen on the catalogue's own known-item topics.

BM25 counts an item's words; the start counts its distinct attributes unless told otherwise.
Neither ranks every catalogue better: words do where items differ in how much text each
attribute holds (spec lists, long titles), attributes where a long repetitive description would
cost an item its colour and type matches (the generators) or a long informative one its
relevance (CrowdFlower's judged searches). So `recsys train` ranks a few hundred known-item
topics drawn from the catalogue's texts (`recsys.known_item`, a fixed seed) with both units'
untrained starts, side by side, and moves off the catalogue's default unit only when the other
wins clearly (`TrainConfig.length_unit_z` and `length_unit_margin`). The default is attributes
(their index is the faster one), words where most items hold a spec list
(`TrainConfig.length_unit_spec_share`): there an item's attribute count counts its spec pairs,
whatever their values say, and known-item topics cannot see what that costs the searches a shop
logs (on the electronics generator, every item graded, the start in words was 1.04-1.06 of BM25's
NDCG@10 against 1.02-1.04 in attributes; its known items 1.022 against 1.010). The trained model
keeps the chosen unit.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from recsys.catalog import Catalog
from recsys.encoding import Featurizer
from recsys.known_item import NOISE, TopicSampler, tie_aware_rr
from recsys.recommender import Recommender

from .config import TrainConfig
from .groups import InteractionCounts
from .start import build_featurizer, start_model

# the topics' seed: fixed, so that the choice is the catalogue's and not the run's, and apart
# from the seeds benchmarks/known_item.py measures with (0-4)
TOPIC_SEED = 20_261_204


@dataclass
class LengthChoice:
    unit: str  # the unit chosen
    # tie-aware known-item MRR of the untrained start in each unit ({} when not compared)
    mrr: dict[str, float]
    topics: int
    gain_z: float  # words' gain over attributes in standard errors of the per-topic differences
    seconds: float
    rule: str  # why: "compared", "given" (no topics asked for), "no topics" (no item had 3 words)
    # the unit kept unless the other wins clearly: words where most items hold a spec list
    default: str = "attributes"

    def to_json(self) -> dict:
        return asdict(self)


def describe(choice: dict) -> str:
    """The one line `recsys train` prints: the unit chosen and the figures it was chosen on."""
    unit = choice["unit"]
    default = (f"; {choice['default']} unless the other wins clearly: most items hold a spec list"
               if choice.get("default") == "words" else "")
    if choice["rule"] != "compared":
        why = "as configured" if choice["rule"] == "given" else "no item has three words to draw a topic from"
        return f"item lengths in {unit} ({why}{default})"
    mrr = choice["mrr"]
    other = "attributes" if unit == "words" else "words"
    return (f"item lengths in {unit}: the start's known-item MRR {mrr[unit]:.4f} in {unit} against "
            f"{mrr[other]:.4f} in {other} ({choice['topics']} topics from the catalogue, "
            f"{choice['gain_z']:+.1f} standard errors for words, {choice['seconds']:.1f} s{default})")


def choose_length_unit(catalog: Catalog, cfg: TrainConfig) -> LengthChoice:
    """The unit the start of `catalog` should count lengths in (see the module's docstring)."""
    t0 = time.perf_counter()
    specs = catalog.spec_items > 0 and catalog.spec_items >= cfg.length_unit_spec_share * catalog.n_items
    default = "words" if specs else "attributes"
    if cfg.length_unit_topics <= 0:
        return LengthChoice(cfg.model.length_unit, {}, 0, 0.0, 0.0, "given")
    topics = TopicSampler(catalog.texts).sample(np.random.default_rng(TOPIC_SEED), cfg.length_unit_topics, NOISE)
    if not topics:
        return LengthChoice(default, {}, 0, 0.0, time.perf_counter() - t0, "no topics", default)
    rr = {unit: np.array([tie_aware_rr(np.asarray(rec.scores(q), dtype=np.float64), item) for q, item in topics])
          for unit, rec in _starts(catalog, cfg).items()}
    gain = rr["words"] - rr["attributes"]
    se = float(gain.std(ddof=1) / np.sqrt(len(gain))) if len(gain) > 1 else 0.0
    z = float(gain.mean() / se) if se > 0 else 0.0
    mrr = {unit: float(r.mean()) for unit, r in rr.items()}
    other = "attributes" if default == "words" else "words"
    other_z = z if other == "words" else -z
    clear = other_z > cfg.length_unit_z and mrr[other] > mrr[default] * (1.0 + cfg.length_unit_margin)
    return LengthChoice(other if clear else default, mrr, len(topics), z, time.perf_counter() - t0,
                        "compared", default)


def with_length_unit(catalog: Catalog, cfg: TrainConfig) -> tuple[TrainConfig, LengthChoice]:
    """`cfg` with the model's length unit chosen for `catalog`, and the choice."""
    choice = choose_length_unit(catalog, cfg)
    return replace(cfg, model=replace(cfg.model, length_unit=choice.unit)), choice


def _starts(catalog: Catalog, cfg: TrainConfig) -> dict[str, Recommender]:
    """The untrained start in each unit, on the catalogue's text alone (no interactions): one
    word table and evidence, two configs."""
    base = build_featurizer(catalog, InteractionCounts().rows(), cfg)
    out = {}
    for unit in ("attributes", "words"):
        featurizer = Featurizer(catalog, base.words, base.evidence, replace(base.cfg, length_unit=unit))
        out[unit] = Recommender(start_model(featurizer, cfg.seed), featurizer)
    return out
