"""Builds a recommender from a catalogue and training interactions, and fits its weights."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pandas as pd
import torch
from torch import nn

from recsys.catalog import Catalog
from recsys.encoding import EncodedQueries, Featurizer
from recsys.formula import ASSOC
from recsys.metrics import ndcg_at_k
from recsys.model import FacetScorer
from recsys.recommender import Recommender
from recsys.words import UNSEEN_WORD_BUCKET

from .config import TrainConfig
from .evaluate import judgments_from_rows, model_rankings
from .groups import TrainingGroups, make_groups, sample_negatives, split_queries
from .length_unit import with_length_unit
from .start import (
    build_featurizer,
    drop_attribute_vectors,
    new_model,
    untrained_model,
    untrained_recommender,
)
from .synonyms import learned_synonyms

if TYPE_CHECKING:  # torch.distributed is imported only by the processes torchrun starts
    from .distributed import Replicas

# fewer distinct queries with a positive than this: none is held aside, and the lexical start
# is served (see ALPHAS in training/config.py)
MIN_QUERIES_FOR_VALIDATION = 50


@dataclass
class FitReport:
    train_loss: list[float]
    validation_loss: list[float]
    best_epoch: float  # in epochs (1.5 = half-way through the second); 0 = the start kept
    # how far the served weights are from the lexical start toward the fitted ones (0..1), how
    # it was chosen, and NDCG at `TrainConfig.selection_depth` on the held-aside queries of each
    # share tried ({} without)
    alpha: float = 1.0
    alpha_rule: str = "none"
    validation_ndcg: dict[str, float] = field(default_factory=dict)
    # the epochs' wall time (validation checks included), epochs run, and the rows of the log
    # the training groups came from, per second of it (the distributed training's figure)
    fit_seconds: float = 0.0
    epochs_run: float = 0.0
    interactions_per_second: float = 0.0
    # the click-association weight of the start the served weights were blended from (the
    # model's default unless the held-aside queries chose a weaker one, `choose_served`), and
    # their NDCG (at the selection depth) of the start with each weight tried ({} without)
    start_assoc: float | None = None
    start_assoc_ndcg: dict[str, float] = field(default_factory=dict)
    # held-aside queries the served weights were chosen on: this split's, or with the other
    # splits' when this one left the fitted weights within noise of their bar (`choose_step`)
    chosen_on_queries: int = 0
    # the strongest click synonyms served, per head, and how many the held-aside queries confirm
    # (`training.synonyms.learned_synonyms`; {} without held-aside queries)
    synonyms: dict = field(default_factory=dict)
    # the unit item lengths count in and the figures it was chosen on (`training.length_unit`)
    length_unit: dict = field(default_factory=dict)


def fit_model(
    model: FacetScorer,
    featurizer: Featurizer,
    groups: TrainingGroups,
    cfg: TrainConfig,
    on_step: Callable[[int, int, float], None] | None = None,
    validation: TrainingGroups | None = None,
    validation_judgments: Mapping[str, Mapping[int, float]] | None = None,
    replicas: Replicas | None = None,
    more_splits: Callable[[tuple[str, float]], list[tuple[np.ndarray, np.ndarray]]] | None = None,
    per_query: dict[tuple[str, float], np.ndarray] | None = None,
) -> FitReport:
    """Softmax ranking loss of each positive against lower-labelled shown items and random
    items. With `validation` groups, stops when their loss no longer falls below the best so far,
    the untrained start's included (patience `cfg.patience` epochs), keeps the best weights, then
    serves what `validation_judgments` choose (`choose_served`): the start, a share of the way
    from it to them (`cfg.alphas`) or a start with less weight on clicks
    (`cfg.start_assoc_shares`); without held-aside queries, the start. `on_step(step, total, loss)` reports
    progress. `replicas` (training/distributed.py): this process is one of several, each
    computing its share of every batch; None: one process does it all. `more_splits(start)`:
    the start's and the fitted weights' NDCG per query on other held-aside splits, each fitted
    on its own (`choose_step`'s `more`; `start` the candidate the fitted weights face).
    `per_query`, when given, receives every candidate's NDCG per held-aside query."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    rng = np.random.default_rng(cfg.seed) if replicas is None else replicas.rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    # the association evidence is learned pair by pair, starting from its lift: the fit can then
    # explain a co-occurrence away ("carpet" clicked on oak items because shoppers asked for oak)
    pairs = {f: nn.Parameter(torch.from_numpy(featurizer.evidence.assoc[f].data.copy()))
             for f in featurizer.evidence.assoc}
    opts = _optimizers(model, pairs, cfg)
    steps_per_epoch = max(1, -(-len(groups.positive) // cfg.batch_size))
    total = steps_per_epoch * cfg.epochs
    warmup = max(1, total // 20)
    schedules = [torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / warmup)) for o in opts]
    enc_all = featurizer.encode_queries(groups.queries)
    enc_val = featurizer.encode_queries(validation.queries) if validation else None
    report = FitReport([], [], float(cfg.epochs))
    judged = {q: rel for q, rel in (validation_judgments or {}).items() if rel}
    start = _snapshot(model, pairs)
    # the start may be served with clicks weighed less than the fit starts from (see
    # start_assoc_ndcg), when the held-aside queries choose it over the default start and every
    # share of the way to the fitted weights; the fit itself starts from the model's default,
    # which keeps its length (fitting from a start that trusts clicks less took Home Depot 4
    # epochs, not 2)
    default_assoc = featurizer.cfg.init_assoc
    weaker_starts: dict[float, np.ndarray] = {}
    default_start: np.ndarray | None = None
    if validation is not None and judged:
        weaker_starts = start_assoc_ndcg(model, featurizer, judged, cfg)
        report.start_assoc_ndcg = {f"{w:g}": _mean(v) for w, v in weaker_starts.items()}
        # the default start is the blends' share 0: ranked once, here
        default_start = weaker_starts.pop(default_assoc, None)
    best, best_state, step, stop = float("inf"), None, 0, False
    if validation is not None:  # training must beat the lexical start, not merely improve on itself
        best = _validation_loss(model, featurizer, validation, enc_val, cfg, pairs, groups.popularity_cdf,
                                replicas)
        report.validation_loss.append(best)
        best_state, report.best_epoch = start, 0.0
    # the start's offset on unlinked attributes is the start's alone: fitted with it, a head
    # would get no gradient from the attention it leaks to them (`ModelOptions.unmatched_offset`)
    start_offset, model.cfg.unmatched_offset = model.cfg.unmatched_offset, 0.0
    # validation a few times per epoch: on small logs the best point is often inside epoch 1
    checks = max(1, min(cfg.validations_per_epoch, steps_per_epoch))
    check_at = {round(steps_per_epoch * (c + 1) / checks) for c in range(checks)}
    started = time.perf_counter()
    for epoch in range(cfg.epochs):
        model.train()
        epoch_loss = 0.0
        order = rng.permutation(len(groups.positive))
        batches = np.array_split(order if replicas is None else replicas.same_order(order), steps_per_epoch)
        for b, batch in enumerate(batches, 1):
            mine = batch if replicas is None else replicas.share(batch)
            loss = _step(model, featurizer, groups, enc_all, mine, cfg, rng, pairs,
                         _local_total if replicas is None else replicas.total)
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss.backward()
            # each process's loss is its share of the batch's: summed gradients are the batch's
            value = loss.item() if replicas is None else replicas.sum_gradients(model, pairs, loss)
            torch.nn.utils.clip_grad_norm_(opts[0].param_groups[0]["params"], 5.0)
            for o, sched in zip(opts, schedules):
                o.step()
                sched.step()
            step += 1
            epoch_loss += value * len(batch)
            if on_step:
                on_step(step, total, value)
            if validation is None or b not in check_at:
                continue
            v = _validation_loss(model, featurizer, validation, enc_val, cfg, pairs, groups.popularity_cdf,
                                 replicas)
            model.train()
            report.validation_loss.append(v)
            at = round(epoch + b / steps_per_epoch, 2)
            if v < best - 1e-4:
                best, report.best_epoch = v, at
                best_state = _snapshot(model, pairs)
            elif at - report.best_epoch >= cfg.patience:
                stop = True
                break
        report.train_loss.append(epoch_loss / max(sum(len(x) for x in batches[:b]), 1))
        if stop:
            if on_step:
                on_step(total, total, value)
            break
    report.fit_seconds, report.epochs_run = time.perf_counter() - started, step / steps_per_epoch
    if best_state is not None:
        _restore(model, pairs, best_state)
    fitted = _snapshot(model, pairs)
    chosen = default_assoc
    if validation is not None:
        assoc_z = bonferroni_z(cfg.start_assoc_z, len(weaker_starts))  # the bar for every weaker start
        report.alpha_rule = (f"validation: NDCG@{cfg.selection_depth}; a weaker start must beat the default by "
                             f"{assoc_z:.3g} standard errors, a step off the start by {cfg.selection_z:g}, "
                             f"the fitted weights by {cfg.fitted_z:g}")
        candidates: dict[tuple[str, float], np.ndarray] = {}
        for alpha in cfg.alphas:
            if alpha == 0.0 and default_start is not None:
                candidates[("alpha", alpha)] = default_start
            else:
                _blend(model, pairs, start, fitted, alpha, featurizer, start_offset)
                candidates[("alpha", alpha)] = held_aside_ndcg(Recommender(model, featurizer), judged,
                                                               cfg.selection_depth)
            report.validation_ndcg[f"{alpha:g}"] = _mean(candidates[("alpha", alpha)])
        options = dict(candidates)  # every candidate, in one order on every process
        if ("alpha", 0.0) in candidates:
            # first the start: a weaker association weight is one scalar of the lexical model, a
            # small bet (1 standard error); then a step toward the fitted weights, which can
            # lose far more (Home Depot at share 1: 0.29 against 0.41), must beat that start
            starts = {("alpha", 0.0): candidates[("alpha", 0.0)]}
            starts.update({("start", w): v for w, v in weaker_starts.items()})
            options.update(starts)
            start_key = choose_served(starts, ("alpha", 0.0), assoc_z)
            steps = {start_key: options[start_key]}
            steps.update({c: v for c, v in candidates.items() if c != ("alpha", 0.0)})
            more = (lambda: more_splits(start_key)) if more_splits is not None else None
            served, report.chosen_on_queries = choose_step(steps, start_key, ("alpha", 1.0), cfg.selection_z,
                                                        cfg.fitted_z, more, cfg.recheck_band)
            if report.chosen_on_queries > len(judged):
                report.alpha_rule += (f"; the fitted weights judged on {report.chosen_on_queries} queries of "
                                      f"{report.chosen_on_queries // max(len(judged), 1)} held-aside splits")
        else:  # the caller ruled the start out: the best of the shares asked for
            served = max(candidates, key=lambda c: _mean(candidates[c]))
        if per_query is not None:
            per_query.update(options)
        if replicas is not None:  # every process serves what the one that writes chose
            served = list(options)[int(replicas.same_value(list(options).index(served)))]
        kind, value = served
        if kind == "start":
            start, report.alpha, chosen = (_with_assoc_weight(start[0], model.heads, value), start[1]), 0.0, value
            report.alpha_rule += "; chosen: the start with less weight on clicks"
        else:
            report.alpha = value
    else:
        report.alpha_rule = "too few queries to check a step"
        report.alpha = 0.0
    report.start_assoc = chosen if validation is not None else None
    _blend(model, pairs, start, fitted, report.alpha, featurizer, start_offset)
    return report


def start_assoc_ndcg(model: FacetScorer, featurizer: Featurizer, judged: Mapping[str, Mapping[int, float]],
                     cfg: TrainConfig) -> dict[float, np.ndarray]:
    """Per click-association weight tried (a share, `cfg.start_assoc_shares`, of the model's
    `init_assoc`), the lexical start's NDCG on each held-aside query (`held_aside_ndcg`); the
    model is left as it was. How far clicks can be trusted against the words is the
    catalogue's: where shoppers' new searches seek items others did not choose (Home Depot),
    association as strong as an exact match pulls the ranking toward what was clicked before;
    where clicks carry the synonyms (the synthetic catalogues), it must stay strong."""
    with torch.no_grad():
        state = {k: v.clone() for k, v in model.state_dict().items()}
        drop_attribute_vectors(model)  # the start as it would be served
        model.eval()
        served = {k: v.clone() for k, v in model.state_dict().items()}
        out: dict[float, np.ndarray] = {}
        for share in cfg.start_assoc_shares:
            weight = share * featurizer.cfg.init_assoc
            model.load_state_dict(_with_assoc_weight(served, model.heads, weight))
            out[weight] = held_aside_ndcg(Recommender(model, featurizer), judged, cfg.selection_depth)
        model.load_state_dict(state)
    return out


def held_aside_ndcg(rec: Recommender, judged: Mapping[str, Mapping[int, float]], depth: int) -> np.ndarray:
    """(queries,) NDCG@depth of each judged query, in the order of `judged`."""
    ranked = model_rankings(rec, list(judged), depth)
    return np.array([ndcg_at_k(ranked[q], rel, depth) for q, rel in judged.items()], dtype=np.float64)


def _mean(per_query: np.ndarray) -> float:
    return round(float(per_query.mean()), 4) if len(per_query) else 0.0


def _with_assoc_weight(weights: dict[str, torch.Tensor], heads: Iterable[str], weight: float
                       ) -> dict[str, torch.Tensor]:
    """A copy of the model's `weights` (a state dict) with every head's association weight set
    to `weight`; the other tensors are shared, not copied."""
    out = dict(weights)
    for name in heads:
        key = f"heads.{name}.evidence_weight"
        out[key] = out[key].clone()
        out[key][ASSOC] = weight
    return out


K = TypeVar("K")


def choose_served(per_query: Mapping[K, np.ndarray], start: K, z: float, prefer_later: bool = False) -> K:
    """What the held-aside queries choose to serve, from candidates' NDCG per query (one array
    each, the queries in one order): the lexical `start`, unless another candidate's mean beats
    it by more than `z` standard errors of the paired per-query differences; of those, the
    highest mean, the earlier candidate on ties. A few dozen held-aside queries are noisy
    (on Home Depot, 10 and 30 of them chose steps that cost 0.008-0.009 on the 1,881 held-out
    ones), and a step off the start must show that it is not noise.

    `prefer_later` (the candidates in order of a growing step toward the fitted weights): of
    those that beat the start, the last one whose mean is not below the best one's by more than
    `z` standard errors of their paired differences. Equal within the queries' noise, the fitted
    weights are what the fit made the explanations for: on the furniture generator shares 0.75
    and 1 were 0.005 apart at depth 100, and share 0.75 was served with explanation accuracy
    0.818 against share 1's 0.953 (judged NDCG@10 0.938 against 0.955)."""
    base = per_query[start]
    best, best_mean = start, float(base.mean()) if len(base) else 0.0
    beating = []
    for key, scores in per_query.items():
        diff = scores - base
        if key == start or len(diff) < 2:
            continue
        gain, se = _paired_gain(scores, base)
        if gain > 0 and gain > z * se:
            beating.append(key)
            if float(scores.mean()) > best_mean + 1e-12:
                best, best_mean = key, float(scores.mean())
    if prefer_later and best != start:
        for key in reversed(beating[beating.index(best) + 1:]):
            gain, se = _paired_gain(per_query[key], per_query[best])
            if gain >= -z * se:
                return key
    return best


def choose_step(steps: Mapping[K, np.ndarray], start: K, fitted: K, z: float, fitted_z: float,
                more: Callable[[], list[tuple[np.ndarray, np.ndarray]]] | None = None,
                band: float = 1.0) -> tuple[K, int]:
    """Of the start and the steps toward the fitted weights (NDCG per held-aside query each, in
    order of a growing step; `fitted` the last), what `choose_served` with `prefer_later` serves
    at `z`; and when no step passes that, the fitted weights if they alone beat the start by
    `fitted_z` standard errors. They were named before the queries were looked at, while the
    best of several blends is the best of several draws of the queries' noise. Also returns how
    many held-aside queries the choice was made on.

    One split's queries are a few dozen to a few hundred draws: on the synthetic generator's
    seed 2, 141 of them put the fitted weights 1.22 standard errors above the start, and a start
    0.004 stronger on them (0.91) served the start, whose explanations are worse (accuracy 0.928
    against 0.996). So when the fitted weights are ahead of the start on this split but within
    `band` standard errors of their bar either way, `more()` gives the start's and the fitted
    weights' NDCG per query on other held-aside splits (each fitted on its own), and the bar is
    judged on all the splits' queries together. The fitted weights are still never served below
    the start on their own held-aside queries."""
    served = choose_served(steps, start, z, prefer_later=True)
    if served != start or fitted not in steps:
        return served, len(steps[start])
    base, mine = steps[start], steps[fitted]
    if len(base) < 2:
        return start, len(base)
    gain, se = _paired_gain(mine, base)
    if more is not None and gain > 0 and abs(gain - fitted_z * se) < band * se:
        splits = [(base, mine), *more()]
        base = np.concatenate([b for b, _ in splits])
        mine = np.concatenate([m for _, m in splits])
    pooled = choose_served({start: base, fitted: mine}, start, fitted_z)
    return (fitted if pooled == fitted and gain > 0 else start), len(base)


def bonferroni_z(z: float, alternatives: int) -> float:
    """The one-sided bar that keeps the chance that any of `alternatives` no better than the
    default passes it by noise at what `z` alone allows one: 1 standard error for one weaker
    click weight, 1.41 for the two tried by default. On the electronics generator (112 training
    searches, 11 held aside) 1 let a weaker weight through on 3 of 12 splits, and each lost on
    the held-out searches (0.003-0.032 NDCG@10)."""
    if alternatives <= 1:
        return z
    normal = NormalDist()
    return normal.inv_cdf(1.0 - (1.0 - normal.cdf(z)) / alternatives)


def _paired_gain(scores: np.ndarray, base: np.ndarray) -> tuple[float, float]:
    """The mean per-query difference of `scores` over `base` and its standard error."""
    diff = scores - base
    return float(diff.mean()), float(diff.std(ddof=1)) / np.sqrt(len(diff))


def _blend(model: FacetScorer, pairs: dict, start: tuple[dict, dict], fitted: tuple[dict, dict],
           alpha: float, featurizer: Featurizer, start_offset: float) -> None:
    """Weights `alpha` of the way from the start to the fitted ones, in the served form (own
    attribute vectors dropped, association values written to the evidence tables), and the
    offset on unlinked attributes the same share of the way from the start's to the fit's 0."""
    model.cfg.unmatched_offset = (1.0 - alpha) * start_offset
    blended = ({k: start[0][k] + alpha * (fitted[0][k] - start[0][k]) if fitted[0][k].is_floating_point()
                else fitted[0][k] for k in fitted[0]},
               {f: start[1][f] + alpha * (fitted[1][f] - start[1][f]) for f in fitted[1]})
    _restore(model, pairs, blended)
    drop_attribute_vectors(model)
    model.eval()
    for f, values in pairs.items():
        featurizer.evidence.assoc[f].data[:] = values.detach()[featurizer.assoc_ties(f)].numpy()


def _optimizers(model: FacetScorer, pairs: dict, cfg: TrainConfig) -> list:
    sparse = [model.word_emb.weight, model.ngram_emb.weight]
    dense = [p for p in model.parameters() if all(p is not s for s in sparse)]
    # fused: one kernel for all of a group's tensors (a step of the two took 12 ms on Home
    # Depot one tensor at a time, 2 ms fused)
    return [
        torch.optim.AdamW(dense, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=True),
        torch.optim.SparseAdam(sparse, lr=cfg.lr),
        torch.optim.AdamW(list(pairs.values()), lr=cfg.lr, weight_decay=cfg.pair_decay, fused=True),
    ]


def _snapshot(model: FacetScorer, pairs: dict) -> tuple[dict, dict]:
    return ({k: v.detach().clone() for k, v in model.state_dict().items()},
            {f: p.detach().clone() for f, p in pairs.items()})


def _restore(model: FacetScorer, pairs: dict, state: tuple[dict, dict]) -> None:
    model.load_state_dict(state[0])
    with torch.no_grad():
        for f, p in pairs.items():
            p.copy_(state[1][f])


def _validation_loss(model, featurizer, validation, enc_val, cfg, pairs, popularity_cdf,
                     replicas: Replicas | None = None) -> float:
    """Mean loss on held-aside queries, with the same negatives every epoch (with `replicas`,
    each process takes its share of them, and all get the same mean)."""
    rng = np.random.default_rng(cfg.seed + 1) if replicas is None else replicas.rng(cfg.seed + 1)
    val = TrainingGroups(**{**validation.__dict__, "popularity_cdf": popularity_cdf})
    model.eval()
    rows = np.arange(len(val.positive))
    if replicas is not None:
        rows = replicas.share(rows)
    total, n = 0.0, len(rows)
    with torch.no_grad():
        for batch in np.array_split(rows, max(1, -(-n // cfg.batch_size))):
            total += _step(model, featurizer, val, enc_val, batch, cfg, rng, pairs).item() * len(batch)
    if replicas is not None:
        total, n = replicas.sums(total, n)
    return total / max(n, 1)


def _local_total(t: torch.Tensor) -> torch.Tensor:
    """One process: the batch's sum is its own."""
    return t


def _step(model, featurizer, groups, enc_all, batch, cfg, rng, pairs,
          total: Callable[[torch.Tensor], torch.Tensor] = _local_total) -> torch.Tensor:
    """The loss of `batch`; `total` sums a quantity over the processes sharing a batch, so that
    each one's loss is its part of the whole batch's mean."""
    items, valid = sample_negatives(
        groups, batch, featurizer.catalog.n_items, cfg.n_shown_negatives, cfg.n_random_negatives, rng,
        groups.popularity_cdf, cfg.popular_fraction,
    )
    q = groups.query_idx[batch]
    t_max = max(1, int(enc_all.mask[q].sum(1).max()))
    enc = _subset(enc_all, q, t_max)
    if cfg.word_dropout > 0 and model.training:
        # words a shopper types that no training query had get the shared unseen-word vector at
        # serving time; dropping known words to it here teaches the heads to match those on
        # evidence alone (a rare exact title word must still win over "no match")
        drop = torch.from_numpy(rng.random(enc.bucket.shape) < cfg.word_dropout) & enc.mask
        enc.bucket[drop] = UNSEEN_WORD_BUCKET
    attrs, evidence = featurizer.item_batch(items, enc, pairs)
    leak = cfg.leak_penalty and model.training
    out = model(enc.bucket, enc.grams, enc.mask, enc.specificity, attrs, evidence, return_attention=leak)
    valid_t = torch.from_numpy(valid)
    scores = out["scores"].masked_fill(~valid_t, float("-inf"))  # (B, I)
    nll = -torch.log_softmax(scores, dim=1)[:, 0]  # (B,)
    w = torch.from_numpy(groups.weight[batch])
    loss = (nll * w).sum() / total(w.sum())
    if leak:
        cells = (valid_t[:, :, None] & enc.mask[:, None, :]).float()  # (B, I, T)
        stray = stray_attention(out["attention"], evidence)  # (B, I, T)
        loss = loss + cfg.leak_penalty * (stray * cells).sum() / total(cells.sum()).clamp(min=1)
    return loss


def stray_attention(attention: Mapping[str, torch.Tensor], evidence: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """attention {facet: (B, I, T, M + 1)}, evidence {facet: (B, I, T, M, kinds)} -> (B, I, T):
    the attention each word puts, summed over the heads, on attributes it has no exact,
    association or near match with (the no-match slot, last, is not stray)."""
    total = torch.zeros(())
    for f, att in attention.items():
        total = total + (att[..., :-1] * (evidence[f].sum(-1) <= 0)).sum(-1)
    return total


def _subset(enc: EncodedQueries, rows: np.ndarray, t_max: int) -> EncodedQueries:
    idx = torch.from_numpy(rows)
    return EncodedQueries(
        [enc.tokens[i] for i in rows],
        enc.bucket[idx, :t_max],
        enc.grams[idx, :t_max],
        enc.mask[idx, :t_max],
        enc.word_id[rows, :t_max],
        enc.near_id[rows, :t_max],
        enc.near_sim[rows, :t_max],
        enc.specificity[idx, :t_max],
    )


def other_splits(positives: pd.Series, first: set[str], count: int, rng: np.random.Generator) -> list[set[str]]:
    """Up to `count` more sets of held-aside queries, each as large as `first`, none sharing a
    query with it or with another; fewer when the queries run out (each split must leave most
    queries to fit on)."""
    rest = sorted(set(positives.unique()) - first)
    order = [rest[i] for i in rng.permutation(len(rest))]
    size = len(first)
    count = min(count, max(0, len(rest) // size - 1)) if size else 0
    return [set(order[k * size:(k + 1) * size]) for k in range(count)]


def start_and_fitted(catalog: Catalog, rows: pd.DataFrame, held: set[str], cfg: TrainConfig,
                     start: tuple[str, float], replicas: Replicas | None = None) -> tuple[np.ndarray, np.ndarray]:
    """With the queries `held` set aside from `rows` and a fit on the others, as
    `train_recommender` does with its own split: the NDCG per held-aside query of the start
    (`start`: ("alpha", 0.0) the default one, ("start", w) one with click weight w) and of the
    fitted weights (share 1), at the selection depth."""
    val_rows = rows[rows["query"].isin(held)]
    fit_rows = rows[~rows["query"].isin(held)]
    featurizer = build_featurizer(catalog, fit_rows, cfg)
    model = new_model(featurizer, cfg.seed)
    share = 1.0 if start[0] == "alpha" else start[1] / featurizer.cfg.init_assoc
    # only the two candidates compared; no split of its own
    one = replace(cfg, alphas=(0.0, 1.0), start_assoc_shares=(1.0,) if share == 1.0 else (1.0, share),
                  recheck_splits=0)
    found: dict[tuple[str, float], np.ndarray] = {}
    fit_model(model, featurizer, make_groups(fit_rows, catalog.n_items), one, None,
              make_groups(val_rows, catalog.n_items), judgments_from_rows(val_rows), replicas, per_query=found)
    return found[start], found[("alpha", 1.0)]


def train_recommender(catalog: Catalog, train_rows: pd.DataFrame, cfg: TrainConfig,
                      on_step: Callable[[int, int, float], None] | None = None,
                      replicas: Replicas | None = None) -> tuple[Recommender, FitReport]:
    """train_rows: query, item_idx, label, weight (the training split only). A share of its
    queries is set aside to decide when to stop and how far to move from the lexical start; the
    word table and evidence tables are built from the other queries alone, so that the held-aside
    queries are as new to the model as a shopper's will be."""
    cfg, length_choice = with_length_unit(catalog, cfg)  # the start's, kept by the fit
    rng = np.random.default_rng(cfg.seed + 2)
    positives = train_rows.loc[train_rows["label"] > 0, "query"]
    if positives.nunique() < MIN_QUERIES_FOR_VALIDATION:
        # nothing could show that a step helps, so none is taken: the lexical start is the model
        rule = "no positives" if positives.empty else "too few queries to check a step"
        return untrained_recommender(catalog, train_rows, cfg), FitReport([], [], 0.0, 0.0, rule,
                                                                          length_unit=length_choice.to_json())
    _, val_q = split_queries(positives, cfg.validation_fraction, rng)
    all_rows = train_rows
    val_rows = train_rows[train_rows["query"].isin(val_q)]
    validation, judged = make_groups(val_rows, catalog.n_items), judgments_from_rows(val_rows)
    train_rows = train_rows[~train_rows["query"].isin(val_q)]
    featurizer = build_featurizer(catalog, train_rows, cfg)
    model = new_model(featurizer, cfg.seed)
    groups = make_groups(train_rows, catalog.n_items)
    if replicas is not None:
        replicas.check_same(model, groups, validation)

    def more_splits(start: tuple[str, float]) -> list[tuple[np.ndarray, np.ndarray]]:
        others = other_splits(positives, val_q, cfg.recheck_splits, np.random.default_rng(cfg.seed + 3))
        return [start_and_fitted(catalog, all_rows, held, cfg, start, replicas) for held in others]

    report = fit_model(model, featurizer, groups, cfg, on_step, validation, judged, replicas,
                       more_splits if cfg.recheck_splits > 0 else None)
    report.synonyms = learned_synonyms(featurizer, val_rows)
    report.length_unit = length_choice.to_json()
    if replicas is not None:
        replicas.check_same(model, groups, validation, fitted=True)
    interactions = train_rows["count"].sum() if "count" in train_rows else len(train_rows)
    report.interactions_per_second = interactions * report.epochs_run / max(report.fit_seconds, 1e-9)
    if report.alpha == 0.0:
        return start_with_every_click(catalog, all_rows, cfg, report.start_assoc), report
    return Recommender(model, featurizer), report


def start_with_every_click(catalog: Catalog, rows: pd.DataFrame, cfg: TrainConfig,
                           assoc_weight: float | None) -> Recommender:
    """The lexical start with the evidence of all `rows`, the held-aside queries' clicks too, and
    the click weight the held-aside queries chose (`FitReport.start_assoc`; None: the default).
    Once they have chosen the start, they have done their job, and what their shoppers chose is
    evidence like any other: served without it, a start on a small log lacked a tenth of its
    click associations (on the electronics generator, 112 training searches, the served start
    ranked 12 held-out splits 0.004 below the same start with them)."""
    model, featurizer = untrained_model(catalog, rows, cfg)
    if assoc_weight is not None and assoc_weight != featurizer.cfg.init_assoc:
        with torch.no_grad():
            model.load_state_dict(_with_assoc_weight(model.state_dict(), model.heads, assoc_weight))
    return Recommender(model, featurizer)
