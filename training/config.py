"""What one training run does: `TrainConfig`, the training options and the model's, each
default defined here once. The command line's `--epochs`, the service's first model and its
training jobs start from these; a version's manifest records the run's (`training`).

Torch-free, so that `recsys --help` shows the defaults without loading torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from recsys.model_config import ModelOptions

# Training moves the model off its lexical start by a share alpha of the way to the fitted
# weights, chosen among these on the held-aside queries (ties go to the smaller step); with none
# held aside the start is served (alpha 0). The measurements behind every default here: the
# model page, docs/model.md, "Why the training defaults are what they are".
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass
class TrainConfig:
    # at most: training stops when the validation loss stops falling (two: the generators' best
    # came at epoch 2-3, and more did not help Home Depot)
    epochs: int = 2
    patience: float = 1.0  # epochs without a better validation loss before stopping
    validations_per_epoch: int = 2
    validation_fraction: float = 0.1
    batch_size: int = 128
    lr: float = 0.02
    # shown-but-not-chosen items are weak negatives in position-biased logs (often never looked
    # at); random negatives drawn by popularity keep popularity from passing for relevance
    n_shown_negatives: int = 0
    n_random_negatives: int = 24
    held_out_fraction: float = 0.1
    seed: int = 0
    popular_fraction: float = 1.0  # share of random negatives drawn as often as items are chosen
    weight_decay: float = 0.0
    word_dropout: float = 0.2  # share of query words trained as if never seen
    pair_decay: float = 0.01  # weight decay of the learned association pairs
    # cost, added to the ranking loss, of the attention a word puts on attributes it has no
    # evidence for (`fit.stray_attention`): without it heads no query word names add score
    leak_penalty: float = 0.5
    # one thread: the small per-step tensors gain little from a second one, lose a lot when the
    # other core is busy, and one thread makes training bit-for-bit repeatable
    threads: int = 1
    # shares of the model's `init_assoc` tried as the lexical start's click-association weight on
    # the held-aside queries (`fit.start_assoc_ndcg`); the first is the model's default
    start_assoc_shares: tuple[float, ...] = (1.0, 0.5, 0.25)
    # shares of the way from the lexical start to the fitted weights tried on held-aside queries
    alphas: tuple[float, ...] = ALPHAS
    # How the held-aside queries choose among those (`fit.choose_served`): by NDCG at this depth
    # (at 10, a click log hardly sees a step); a weaker start must beat the default one by
    # `start_assoc_z` (raised for the several weaker weights tried, `fit.bonferroni_z`: 1.41 for
    # two), and a step toward the fitted weights must beat the start chosen by
    # `selection_z` standard errors of the per-query differences. Of the steps that beat the
    # start, the fullest one within `selection_z` of the best is served: its explanations are the
    # fit's own.
    selection_depth: int = 100
    selection_z: float = 2.0
    start_assoc_z: float = 1.0
    # The fitted weights themselves (share 1) are one alternative named before the held-aside
    # queries are looked at, not the best of several blends: they are served when they beat
    # the start by `fitted_z` standard errors, whatever the blends do
    fitted_z: float = 1.0
    # One split's held-aside queries are a few hundred draws at most. When they leave the fitted
    # weights ahead of the start but within `recheck_band` standard errors of `fitted_z`, that
    # bar is judged on these many more held-aside splits as well (each of the same size, other
    # queries, fitted on its own: a fit each), pooled with the first (`fit.choose_step`)
    recheck_splits: int = 2
    recheck_band: float = 1.0
    # An item's length in the start (`ModelOptions.length_unit`) is chosen per catalogue on this
    # many known-item topics drawn from its own texts (training/length_unit.py): a few hundred
    # measure a unit's MRR to about +-0.02 and cost seconds on Home Depot; 0 keeps
    # `model.length_unit` as given. Words are kept only when their tie-aware MRR beats
    # attributes' by `length_unit_z` standard errors of the per-topic differences AND by
    # `length_unit_margin` of it (relative): words split the index's groups finer (on the
    # generated 100k catalogue 1.5x the query time), so a gain within noise or smaller than
    # that is a tie, and ties go to attributes
    length_unit_topics: int = 300
    length_unit_z: float = 2.0
    length_unit_margin: float = 0.01
    # ... except where at least this share of the items hold a spec list (`Catalog.spec_items`):
    # there ties go to words, and attributes must win by the same margins
    # (training/length_unit.py says why)
    length_unit_spec_share: float = 0.5
    # the model's options; the catalogue adds its facets' vocabulary sizes (build_featurizer)
    model: ModelOptions = field(default_factory=ModelOptions)

    def to_json(self) -> dict:
        return asdict(self)

    def overriding(self, **options: Any) -> TrainConfig:
        """This config with the options that are given (not None) replaced: where a caller's
        setting may be left unset (a job's epochs, RECSYS_TRAIN_EPOCHS), unset means ours."""
        return replace(self, **{k: v for k, v in options.items() if v is not None})
