"""What one training run does: `TrainConfig`, the training options and the model's, each
default defined here once. The command line's `--epochs`, the service's first model and its
training jobs start from these; a version's manifest records the run's (`training`).

Torch-free, so that `recsys --help` shows the defaults without loading torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from recsys.model_config import ModelOptions

# Training moves the model off its lexical start (BM25 in the heads, plus the association
# evidence of the logged queries) by a share alpha of the way to the fitted weights, chosen
# among these on the held-aside queries' NDCG@10 (ties go to the smaller step). With too few
# queries to hold any aside (training.fit.MIN_QUERIES_FOR_VALIDATION), nothing can show that a
# step helps, and the start is served (alpha 0): measured on Home Depot and CrowdFlower, a blind
# step of n / (n + 100) toward weights fitted on 30 queries lost up to 0.01 NDCG@10.
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass
class TrainConfig:
    # at most: training stops when the validation loss stops falling. Two: the synthetic and
    # furniture generators' best validation loss came at epoch 3 and 2 (of 8 allowed), and with
    # 2 (the learning rate's warm-up a twentieth of them) their judged NDCG@10 is 0.977 -> 0.988
    # and 0.961 -> 0.956, explanation accuracy 0.981 -> 0.987 and 0.951 -> 0.947; Home Depot's
    # held-aside loss kept falling for 6 epochs (11 minutes) while no share of the way to the
    # fitted weights ranked its held-aside terms better than the start
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
    # evidence for (no exact, association or near match; `fit.stray_attention`). Without it the
    # fit spreads weights of 0.04-0.18 over whatever an item has, and heads no query word names
    # add score; measured with 0 / 0.5 / 1 (judged NDCG@10, explanation accuracy, unnamed heads'
    # share of the named ones' score): synthetic 0.972 / 0.977 / 0.981, 0.984 / 0.981 / 0.980,
    # 0.109 / 0.071 / 0.058; furniture 0.941 / 0.960 / 0.955, 0.933 / 0.954 / 0.948,
    # 0.100 / 0.071 / 0.060
    leak_penalty: float = 0.5
    # one thread: the small per-step tensors gain little from a second one, lose a lot when the
    # other core is busy (10x measured), and one thread makes training bit-for-bit repeatable
    threads: int = 1
    # shares of the model's `init_assoc` tried as the lexical start's click-association weight on
    # the held-aside queries (`fit.start_assoc_ndcg`); the first is the model's default
    start_assoc_shares: tuple[float, ...] = (1.0, 0.5, 0.25)
    # shares of the way from the lexical start to the fitted weights tried on held-aside queries
    alphas: tuple[float, ...] = ALPHAS
    # How the held-aside queries choose among those (`fit.choose_served`): by NDCG at this depth;
    # a weaker start must beat the default one by `start_assoc_z`, and then a step toward the
    # fitted weights must beat the start chosen by `selection_z` standard errors of the per-query
    # differences. At depth 10 a click log whose chosen items are a few of many equally
    # relevant ones hardly sees a step: the furniture generator's 335 held-aside queries put
    # shares 0.75 and 1 within 0.0008 (judged NDCG 0.948 against 0.961, explanation accuracy
    # 0.79 against 0.95); at depth 100 share 1 is 3.0 standard errors above the start (seed 1:
    # share 0.75, 2.3). On Home Depot, 10 or 30 held-aside queries (100 or 300 training terms)
    # chose steps of 0.3-0.9 standard errors that cost 0.008-0.035 on the held-out terms, and
    # share 1 loses 0.12 with all terms; a weaker start is one scalar of the lexical model and
    # loses at most 0.005 there, while with all terms it gains 0.007 at 1.2 standard errors.
    # Of the steps that beat the start, the fullest one within `selection_z` standard errors of
    # the best is served (`choose_served`'s prefer_later): its explanations are the fit's own.
    selection_depth: int = 100
    selection_z: float = 2.0
    start_assoc_z: float = 1.0
    # The fitted weights themselves (share 1) are one alternative named before the held-aside
    # queries are looked at, not the best of several blends: they are served when they beat
    # the start by `fitted_z` standard errors, whatever the blends do. Synthetic data seeds 1
    # and 2: share 1 at 1.51 and 1.22 standard errors, not served under `selection_z`, is judged
    # NDCG@10 0.9903 -> 0.9935 and 0.9845 -> 0.9937, explanation accuracy 0.917 -> 0.984 and
    # 0.929 -> 0.996 against the start. Home Depot and CrowdFlower, seeds 0-4, 100 and all
    # training terms: share 1 is below the start on every one (z -0.3 to -10.3).
    fitted_z: float = 1.0
    # the model's options; the catalogue adds its facets' vocabulary sizes (build_featurizer)
    model: ModelOptions = field(default_factory=ModelOptions)

    def to_json(self) -> dict:
        return asdict(self)

    def overriding(self, **options: Any) -> TrainConfig:
        """This config with the options that are given (not None) replaced: where a caller's
        setting may be left unset (a job's epochs, RECSYS_TRAIN_EPOCHS), unset means ours."""
        return replace(self, **{k: v for k, v in options.items() if v is not None})
