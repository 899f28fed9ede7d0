"""Builds a recommender from a catalogue and training interactions, and fits its weights."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch

from recsys.catalog import Catalog
from recsys.encoding import EncodedQueries, Featurizer
from recsys.evidence import Evidence, build_association, build_exact, catalog_word_keys
from recsys.model import FacetScorer, ModelConfig
from recsys.recommender import Recommender
from recsys.words import WordTable, query_tokens

from .examples import TrainingGroups, make_groups, sample_negatives


@dataclass
class TrainConfig:
    epochs: int = 4
    batch_size: int = 128
    lr: float = 0.02
    n_shown_negatives: int = 12
    n_random_negatives: int = 12
    held_out_fraction: float = 0.1
    seed: int = 0
    dim: int = 32
    d_k: int = 16
    threads: int = 0  # 0 = torch's default

    def to_json(self) -> dict:
        return asdict(self)


def build_featurizer(catalog: Catalog, train_rows: pd.DataFrame, cfg: TrainConfig) -> Featurizer:
    """Word table, evidence tables and model config for this catalogue and training split."""
    query_keys = {t.key for q in train_rows["query"].unique() for t in query_tokens(q)}
    table = WordTable.from_keys(catalog_word_keys(catalog) | query_keys)
    mass = (train_rows["label"] * train_rows["weight"]).to_numpy(dtype=np.float32)
    evidence = Evidence(
        exact=build_exact(catalog, table),
        assoc=build_association(
            catalog, table, train_rows["query"].tolist(), train_rows["item_idx"].to_numpy(), mass
        ),
    )
    model_cfg = ModelConfig(
        vocab_sizes={f: len(v) for f, v in catalog.vocab.items()}, dim=cfg.dim, d_k=cfg.d_k
    )
    return Featurizer(catalog, table, evidence, model_cfg)


def new_model(featurizer: Featurizer, seed: int) -> FacetScorer:
    torch.manual_seed(seed)
    attr_words, attr_keys, learnable = featurizer.attribute_buffers()
    return FacetScorer(featurizer.cfg, attr_words, attr_keys, learnable)


def fit_model(
    model: FacetScorer,
    featurizer: Featurizer,
    groups: TrainingGroups,
    cfg: TrainConfig,
    on_step: Callable[[int, int, float], None] | None = None,
) -> list[float]:
    """Softmax ranking loss of each positive against lower-labelled shown items and random
    items. Returns the mean loss per epoch. `on_step(step, total_steps, loss)` reports progress."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    sparse = [model.word_emb.weight, model.ngram_emb.weight]
    dense = [p for p in model.parameters() if all(p is not s for s in sparse)]
    opts = [torch.optim.Adam(dense, lr=cfg.lr), torch.optim.SparseAdam(sparse, lr=cfg.lr)]
    n_groups = len(groups.positive)
    steps_per_epoch = max(1, -(-n_groups // cfg.batch_size))
    total = steps_per_epoch * cfg.epochs
    schedules = [
        torch.optim.lr_scheduler.OneCycleLR(o, max_lr=cfg.lr, total_steps=total, pct_start=0.1)
        for o in opts
    ]
    enc_all = featurizer.encode_queries(groups.queries)
    losses, step = [], 0
    model.train()
    for _ in range(cfg.epochs):
        order = rng.permutation(n_groups)
        epoch_loss = 0.0
        for start in range(0, n_groups, cfg.batch_size):
            batch = order[start : start + cfg.batch_size]
            loss = _step(model, featurizer, groups, enc_all, batch, cfg, rng)
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(dense, 5.0)
            for o, sched in zip(opts, schedules):
                o.step()
                sched.step()
            step += 1
            loss_value = loss.item()
            epoch_loss += loss_value * len(batch)
            if on_step:
                on_step(step, total, loss_value)
        losses.append(epoch_loss / max(n_groups, 1))
    model.eval()
    return losses


def _step(model, featurizer, groups, enc_all, batch, cfg, rng) -> torch.Tensor:
    items, valid = sample_negatives(
        groups, batch, featurizer.catalog.n_items, cfg.n_shown_negatives, cfg.n_random_negatives, rng
    )
    q = groups.query_idx[batch]
    t_max = max(1, int(enc_all.mask[q].sum(1).max()))
    enc = _subset(enc_all, q, t_max)
    attrs, evidence = featurizer.item_batch(items, enc)
    out = model(enc.bucket, enc.grams, enc.mask, attrs, evidence)
    scores = out["scores"].masked_fill(~torch.from_numpy(valid), float("-inf"))  # (B, I)
    nll = -torch.log_softmax(scores, dim=1)[:, 0]  # (B,)
    w = torch.from_numpy(groups.weight[batch])
    return (nll * w).sum() / w.sum()


def _subset(enc: EncodedQueries, rows: np.ndarray, t_max: int) -> EncodedQueries:
    idx = torch.from_numpy(rows)
    return EncodedQueries(
        [enc.tokens[i] for i in rows],
        enc.bucket[idx, :t_max],
        enc.grams[idx, :t_max],
        enc.mask[idx, :t_max],
        enc.word_id[rows, :t_max],
    )


def train_recommender(catalog: Catalog, train_rows: pd.DataFrame, cfg: TrainConfig,
                      on_step: Callable[[int, int, float], None] | None = None
                      ) -> tuple[Recommender, list[float]]:
    """train_rows: query, item_idx, label, weight (the training split only)."""
    featurizer = build_featurizer(catalog, train_rows, cfg)
    model = new_model(featurizer, cfg.seed)
    groups = make_groups(train_rows)
    losses = fit_model(model, featurizer, groups, cfg, on_step)
    return Recommender(model, featurizer), losses
