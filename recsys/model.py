"""The facet attention scorer: one attention head per facet, plus an item prior.

Letter legend for shapes: B batch of queries, I items per query, T query tokens, M attributes of
one facet per item (padded), J near words per token, V attributes in a facet's vocabulary, G character n-gram slots,
W words per attribute value, D embedding size, K key size (d_k), H heads (= facets).

Per head, each query token is a query; each of the item's attributes of that facet is a key, plus a
"no match" slot whose logit depends on the token (and, through its multiplicity, on how many
attributes of the facet the item has). The logits add lexical evidence (exact match, near
spelling, click association) to the scaled dot product, and are soft-capped so that scoring needs
no max-shift. Values are positive (softplus) and depend on the attribute only, times the share a
word of a longer value is worth of it (`formula.value_share`); the no-match slot is worth 0. The
head's output is the sum over tokens of the attention-weighted values, and the score
is prior + sum of head outputs: every score splits exactly into per-head contributions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .formula import (
    ASSOC,
    EXACT,
    N_KINDS,
    NEAR,
    LogitTables,
    logit_evidence,
    quantized_length,
    unlinked,
    value_share,
)
from .model_config import ModelConfig


class HeadTables(NamedTuple):
    """One facet's item-side tables, each (V, ...) over its attribute vocabulary."""

    keys: torch.Tensor  # (V, K)
    values: torch.Tensor  # (V,) > 0
    prior: torch.Tensor  # (V,)
    bias: torch.Tensor  # (V,) logit offset: match bias + the attribute source's offset


def soft_cap(x: torch.Tensor, cap: float) -> torch.Tensor:
    return cap * torch.tanh(x / cap)


class FacetHead(nn.Module):
    """One head: how a query token scores one facet's attributes."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cap, self.scale = cfg.logit_cap, 1.0 / math.sqrt(cfg.d_k)
        self.cfg = cfg  # `unmatched_offset` is read from it: the fit and the blends change it
        self.q_proj = nn.Linear(cfg.dim, cfg.d_k, bias=False)
        self.k_proj = nn.Linear(cfg.dim, cfg.d_k, bias=False)
        self.no_match = nn.Linear(cfg.dim, 1)
        self.no_match.weight.requires_grad_(cfg.token_no_match)
        self.value = nn.Linear(cfg.dim, 1)
        # one weight per evidence kind, in `formula.EVIDENCE_KINDS` order
        self.evidence_weight = nn.Parameter(torch.tensor([cfg.init_exact, cfg.init_assoc, cfg.init_near]))
        # an exact match on a rare attribute is stronger evidence: a word no training query had
        # can still outweigh "no match" when it names something few items have
        self.rare_weight = nn.Parameter(torch.tensor(cfg.init_rare))
        # the cancelling exact-match and slot offsets put a full exact match log(k1) below the slot
        self.match_bias = nn.Parameter(torch.tensor(cfg.init_match_bias))
        # a logit offset per attribute source (title, description, a column), read from the
        # key's word vector: a description word can learn to count less than a title word
        self.source_bias = nn.Linear(cfg.dim, 1, bias=False)
        self.length_weight = nn.Parameter(torch.logit(torch.tensor(cfg.init_length)))  # b = sigmoid
        self.specific_weight = nn.Parameter(torch.tensor(cfg.init_specific))
        for lin in (self.q_proj, self.k_proj):
            nn.init.normal_(lin.weight, std=0.02)
        nn.init.zeros_(self.no_match.weight)
        nn.init.constant_(self.no_match.bias, cfg.init_exact + cfg.init_match_bias + math.log(cfg.bm25_k1))
        nn.init.zeros_(self.value.weight)
        nn.init.constant_(self.value.bias, math.log(math.e - 1.0))  # softplus(b) = 1
        nn.init.zeros_(self.source_bias.weight)

    def keys_values(self, attr_emb: torch.Tensor, bm25_idf: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """attr_emb (V, D), bm25_idf (V,) -> keys (V, K), values (V,) > 0: the attribute's BM25
        IDF times a learned factor that starts at 1."""
        values = bm25_idf * F.softplus(self.value(attr_emb).squeeze(-1))  # (V,)
        return self.k_proj(attr_emb), values

    def attribute_bias(self, key_emb: torch.Tensor) -> torch.Tensor:
        """key_emb (V, D) the word vector of each attribute's key -> (V,) its logit offset."""
        offset: torch.Tensor = self.match_bias + self.source_bias(key_emb).squeeze(-1)
        return offset

    def queries(self, tok_emb: torch.Tensor, specificity: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """tok_emb (..., T, D), specificity (..., T) -> queries (..., T, K), capped no-match
        logits (..., T)."""
        pre = self.no_match(tok_emb).squeeze(-1) + self.specific_weight * specificity  # (..., T)
        no_match = soft_cap(pre, self.cap)
        return self.q_proj(tok_emb), no_match

    def length_b(self) -> torch.Tensor:
        return torch.sigmoid(self.length_weight)

    def slot_log_count(self, length: torch.Tensor, mean_length: torch.Tensor) -> torch.Tensor:
        """length (...) of the item (`FacetScorer.slot_lengths`),
        mean_length () over the catalogue -> the no-match slot's log multiplicity (...), added to
        its logit: BM25's length normalisation log(1 - b + b * length / mean)."""
        b = self.length_b()
        return torch.log(1.0 - b + b * length.to(torch.float32) / mean_length)

    def match_logits(self, dot: torch.Tensor, evidence: torch.Tensor, idf: torch.Tensor,
                     bias: torch.Tensor) -> torch.Tensor:
        """dot (...) = q.k, evidence (..., N_KINDS) by `formula.EVIDENCE_KINDS`, idf (...) scaled
        IDF of the attribute, bias (...) its `attribute_bias` -> capped logits (...)."""
        w = self.evidence_weight
        exact = logit_evidence(evidence[..., EXACT], self.cfg.value_shares)
        raw = dot * self.scale + bias + exact * idf * self.rare_weight
        for j in range(N_KINDS):
            raw = raw + (exact if j == EXACT else evidence[..., j]) * w[j]
        capped = soft_cap(raw, self.cap)
        if self.cfg.unmatched_offset:
            away = unlinked(evidence[..., EXACT], evidence[..., ASSOC], evidence[..., NEAR])
            capped = capped - self.cfg.unmatched_offset * away.to(capped.dtype)
        return capped

    def logit_tables(self, keys: torch.Tensor, idf: torch.Tensor, bias: torch.Tensor) -> LogitTables:
        """keys (V, K), idf (V,), bias (V,) of the facet's attributes -> the head's formula as the
        fast paths read it (`formula.LogitTables`): the same logits as `match_logits` and
        `queries`, folded so that a query word needs one product per head."""
        with torch.no_grad():
            wq = self.q_proj.weight.double().numpy()  # (K, D)
            dot = (wq.T @ keys.double().numpy().T) * self.scale  # (D, V)
            weights = np.empty((N_KINDS, len(idf)), dtype=np.float32)  # (N_KINDS, V)
            weights[:] = self.evidence_weight.numpy()[:, None]
            # exact evidence on a rare attribute counts more: its weight per attribute
            weights[EXACT] = weights[EXACT] + float(self.rare_weight) * idf.numpy()
            return LogitTables(dot, self.no_match.weight.double().numpy()[0], float(self.no_match.bias),
                               float(self.specific_weight), weights, bias.numpy().astype(np.float32),
                               float(self.cfg.unmatched_offset))


class FacetScorer(nn.Module):
    """All heads and the prior. `forward` is the reference computation on padded item lists."""

    def __init__(self, cfg: ModelConfig, attr_words: dict[str, torch.Tensor],
                 attr_key_bucket: dict[str, torch.Tensor], attr_learnable: dict[str, torch.Tensor],
                 attr_idf: dict[str, torch.Tensor], attr_bm25_idf: dict[str, torch.Tensor],
                 attr_mean_count: dict[str, torch.Tensor], attr_source_offset: dict[str, torch.Tensor],
                 attr_length: dict[str, torch.Tensor], *, initialise: bool = True):
        """`initialise=False`: the tables are left uninitialised (torch.empty), for a model
        whose weights are all loaded next. Drawing the hashed tables' random start, only to
        overwrite it, was half the CPU of loading a version (and of a catalogue change)."""
        super().__init__()
        self.cfg = cfg

        def table(rows: int, width: int, **kw: Any) -> nn.Embedding:
            if initialise:
                return nn.Embedding(rows, width, **kw)
            return nn.Embedding(rows, width, _weight=torch.empty(rows, width), **kw)

        # sparse gradients: a step touches a few hundred of the hashed rows, not all of them
        self.word_emb = table(cfg.word_buckets, cfg.dim, sparse=True)
        self.ngram_emb = table(cfg.ngram_buckets, cfg.dim, padding_idx=0, sparse=True)
        # the draws in this order, so that a seed's random start stays what it was
        if initialise:
            nn.init.normal_(self.word_emb.weight, std=0.1)
            nn.init.normal_(self.ngram_emb.weight, std=0.1)
            with torch.no_grad():
                self.ngram_emb.weight[0].zero_()
        self.attr_emb = nn.ModuleDict({f: table(cfg.vocab_sizes[f], cfg.dim) for f in cfg.facets})
        self.prior = nn.ModuleDict({f: table(cfg.vocab_sizes[f], 1) for f in cfg.facets})
        for f in cfg.facets if initialise else ():
            nn.init.normal_(self._attr_emb(f).weight, std=0.01)
            nn.init.zeros_(self._prior(f).weight)
        self.heads = nn.ModuleDict({f: FacetHead(cfg) for f in cfg.facets})
        for f in cfg.facets:
            self.register_buffer(f"attr_words_{f}", attr_words[f])  # (V, W) word buckets, -1 pad
            self.register_buffer(f"attr_key_{f}", attr_key_bucket[f])  # (V,) bucket of the key
            # (V, 1) 1 where the attribute is common enough to learn a vector and a prior of its
            # own; rare ones (a model number, a one-off title word) would only memorise items
            self.register_buffer(f"attr_learnable_{f}", attr_learnable[f])
            self.register_buffer(f"attr_idf_{f}", attr_idf[f])  # (V,) IDF scaled to [0, 1]
            # (V,) BM25's IDF in units of twice its mean over the catalogue's attribute occurrences
            self.register_buffer(f"attr_bm25_idf_{f}", attr_bm25_idf[f])
            # () mean length of this facet per item, BM25's avgdl
            self.register_buffer(f"attr_mean_count_{f}", attr_mean_count[f])
            # (V,) the start's logit offset of the attribute: the log of its field-weighted term
            # frequency (`Featurizer.attribute_tf`), derived from the config and the catalogue,
            # not saved
            self.register_buffer(f"attr_source_offset_{f}", attr_source_offset[f], persistent=False)
            # (V,) float64 what the attribute adds to an item's length (`Featurizer.
            # attribute_lengths`: 1, or its words in `ModelConfig.length_unit` "words"), derived
            # like the offset
            self.register_buffer(f"attr_length_{f}", attr_length[f], persistent=False)

    def head(self, facet: str) -> FacetHead:
        """The facet's head (`heads[facet]`, typed)."""
        head: FacetHead = self.heads[facet]  # type: ignore[assignment]  # ModuleDict items are typed Module
        return head

    def _attr_emb(self, facet: str) -> nn.Embedding:
        emb: nn.Embedding = self.attr_emb[facet]  # type: ignore[assignment]  # as in `head`
        return emb

    def _prior(self, facet: str) -> nn.Embedding:
        emb: nn.Embedding = self.prior[facet]  # type: ignore[assignment]  # as in `head`
        return emb

    # ---- embeddings ---------------------------------------------------------------------------

    def embed_tokens(self, bucket: torch.Tensor, grams: torch.Tensor) -> torch.Tensor:
        """bucket (...), grams (..., G) -> (..., D): the word plus the mean of its n-grams."""
        gram_vecs = self.ngram_emb(grams)  # (..., G, D)
        n = (grams > 0).sum(-1, keepdim=True).clamp(min=1)  # (..., 1)
        vecs: torch.Tensor = self.word_emb(bucket) + gram_vecs.sum(-2) / n
        return vecs

    def attribute_word_vectors(self, facets: Sequence[str] | None = None
                               ) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """Per facet (default: every head's): the word vectors of each attribute's value words
        (V, W, D) and of its key (V, D), read from the word table in one lookup. Each lookup of
        a sparse table leaves its own sparse gradient, and summing a dozen of them (three per
        facet) took a fifth of a training step on Home Depot."""
        facets = self.cfg.facets if facets is None else facets
        words = {f: getattr(self, f"attr_words_{f}") for f in facets}  # (V, W) each
        keys = {f: getattr(self, f"attr_key_{f}") for f in facets}  # (V,) each
        index = [x for f in facets for x in (words[f].clamp(min=0).reshape(-1), keys[f])]
        parts = torch.split(self.word_emb(torch.cat(index)), [x.numel() for x in index])
        return {f: (parts[2 * n].reshape(*words[f].shape, self.cfg.dim), parts[2 * n + 1])
                for n, f in enumerate(facets)}

    def attribute_embeddings(self, facet: str, word_vectors: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """(V, D): the attribute's own vector, its key's and the mean of its words' vectors
        (`word_vectors`: the facet's from `attribute_word_vectors`)."""
        word_vecs, key_vec = word_vectors
        mask = (getattr(self, f"attr_words_{facet}") >= 0).unsqueeze(-1)  # (V, W, 1)
        mean_words = (word_vecs * mask).sum(1) / mask.sum(1).clamp(min=1)  # (V, D)
        own = self._attr_emb(facet).weight * getattr(self, f"attr_learnable_{facet}")  # (V, D)
        vecs: torch.Tensor = own + mean_words + key_vec
        return vecs

    def head_tables(self, facet: str, word_vectors: tuple[torch.Tensor, torch.Tensor] | None = None
                    ) -> HeadTables:
        """Per-facet item-side tables: keys (V, K), values (V,), prior (V,) and logit offset
        (V,) per attribute (`word_vectors`: the facet's from `attribute_word_vectors`, else read
        here)."""
        if word_vectors is None:
            word_vectors = self.attribute_word_vectors([facet])[facet]
        head = self.head(facet)
        keys, values = head.keys_values(self.attribute_embeddings(facet, word_vectors),
                                        getattr(self, f"attr_bm25_idf_{facet}"))
        prior = self._prior(facet).weight * getattr(self, f"attr_learnable_{facet}")  # (V, 1)
        bias = head.attribute_bias(word_vectors[1]) + getattr(self, f"attr_source_offset_{facet}")  # (V,)
        return HeadTables(keys, values, prior.squeeze(-1), bias)

    def facet_length(self, facet: str, attrs: torch.Tensor) -> torch.Tensor:
        """attrs (..., M) attribute idx of `facet`, -1 padding -> (...) float64 the item's length
        there: the sum of its attributes' lengths (`Featurizer.item_lengths`)."""
        lengths = getattr(self, f"attr_length_{facet}")  # (V,)
        if not len(lengths):
            return torch.zeros(attrs.shape[:-1], dtype=torch.float64)
        return torch.where(attrs >= 0, lengths[attrs.clamp(min=0)], 0.0).sum(-1)

    def slot_lengths(self, item_attrs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """facet -> (B, I) the length each head's no-match slot is normalised by: the item's
        whole length, rounded (`formula.quantized_length`), in every head
        (`ModelConfig.length_per_item`), else each head's own length."""
        if not self.cfg.length_per_item:
            return {f: self.facet_length(f, a) for f, a in item_attrs.items()}
        total = sum(self.facet_length(f, a) for f, a in item_attrs.items())
        rounded = torch.from_numpy(quantized_length(np.asarray(total)))  # (B, I)
        return {f: rounded for f in item_attrs}

    def slot_log_count(self, facet: str, length: torch.Tensor) -> torch.Tensor:
        """length (...) -> (...) the no-match slot's log multiplicity in `facet`."""
        return self.head(facet).slot_log_count(length, getattr(self, f"attr_mean_count_{facet}"))

    # ---- reference computation ----------------------------------------------------------------

    def forward(
        self,
        tok_bucket: torch.Tensor,  # (B, T)
        tok_grams: torch.Tensor,  # (B, T, G)
        tok_mask: torch.Tensor,  # (B, T) bool
        tok_specificity: torch.Tensor,  # (B, T) `EncodedQueries.specificity`
        item_attrs: dict[str, torch.Tensor],  # facet -> (B, I, M) attribute idx, -1 = padding
        evidence: dict[str, torch.Tensor],  # facet -> (B, I, T, M, N_KINDS), `formula.EVIDENCE_KINDS` order
        head_weights: torch.Tensor | None = None,  # (H,)
        return_attention: bool = False,
    ) -> dict[str, Any]:
        """Scores (B, I), contributions (B, I, H), prior (B, I); attention per facet on request
        (a dict: facet -> (B, I, T, M + 1))."""
        tok = self.embed_tokens(tok_bucket, tok_grams)  # (B, T, D)
        contributions: list[torch.Tensor] = []
        attention: dict[str, torch.Tensor] = {}
        prior: torch.Tensor | float = 0.0
        word_vectors = self.attribute_word_vectors()  # one lookup for every facet's attributes
        slot_lengths = self.slot_lengths(item_attrs)  # facet -> (B, I)
        for h, f in enumerate(self.cfg.facets):
            keys, values, attr_prior, bias = self.head_tables(f, word_vectors[f])
            attrs = item_attrs[f]  # (B, I, M)
            present = attrs >= 0  # (B, I, M)
            if keys.shape[0] == 0:  # a facet the catalogue has no attributes for
                keys, values = keys.new_zeros(1, keys.shape[1]), values.new_zeros(1)
                attr_prior, bias = attr_prior.new_zeros(1), bias.new_zeros(1)
            safe = attrs.clamp(min=0)
            idf = getattr(self, f"attr_idf_{f}")
            idf = idf[safe] if len(idf) else torch.zeros(safe.shape)  # (B, I, M)
            out, att = self._head(f, tok, tok_mask, tok_specificity, keys[safe], values[safe], idf,
                                  bias[safe], present, slot_lengths[f], evidence[f])
            if head_weights is not None:
                out = out * head_weights[h]
            contributions.append(out)
            attention[f] = att
            n_attr = present.sum(-1).clamp(min=1)  # (B, I)
            prior = prior + (attr_prior[safe] * present).sum(-1) / n_attr  # (B, I)
        contrib = torch.stack(contributions, dim=-1)  # (B, I, H)
        result: dict[str, Any] = {"scores": prior + contrib.sum(-1), "contributions": contrib, "prior": prior}
        if return_attention:
            result["attention"] = attention
        return result

    def _head(self, facet: str, tok: torch.Tensor, tok_mask: torch.Tensor, specificity: torch.Tensor,
              keys: torch.Tensor, values: torch.Tensor, idf: torch.Tensor, bias: torch.Tensor,
              present: torch.Tensor, length: torch.Tensor, evidence: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """One head over padded items (`length` (B, I) each one's in this facet): output (B, I)
        and attention (B, I, T, M + 1)."""
        head = self.head(facet)
        q, no_match = head.queries(tok, specificity)  # (B, T, K), (B, T)
        dot = torch.einsum("btk,bimk->bitm", q, keys)  # (B, I, T, M)
        logits = head.match_logits(dot, evidence, idf.unsqueeze(2), bias.unsqueeze(2))  # (B, I, T, M)
        logits = logits.masked_fill(~present.unsqueeze(2), float("-inf"))
        extra = self.slot_log_count(facet, length)  # (B, I)
        slot = (no_match[:, None, :] + extra[:, :, None]).unsqueeze(-1)  # (B, I, T, 1)
        att = torch.softmax(torch.cat([logits, slot], dim=-1), dim=-1)  # (B, I, T, M + 1)
        worth = values.unsqueeze(2)  # (B, I, 1, M)
        if self.cfg.value_shares:  # a word of a longer value is worth its share of it
            worth = worth * value_share(evidence[..., EXACT])  # (B, I, T, M)
        per_token = (att[..., :-1] * worth).sum(-1)  # (B, I, T)
        out = (per_token * tok_mask.unsqueeze(1)).sum(-1)  # (B, I)
        return out, att
