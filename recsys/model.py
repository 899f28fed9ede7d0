"""The facet attention scorer: one attention head per facet, plus an item prior.

Letter legend for shapes: B batch of queries, I items per query, T query tokens, M attributes of
one facet per item (padded), J near words per token, V attributes in a facet's vocabulary, G character n-gram slots,
W words per attribute value, D embedding size, K key size (d_k), H heads (= facets).

Per head, each query token is a query; each of the item's attributes of that facet is a key, plus a
"no match" slot whose logit depends on the token (and, through its multiplicity, on how many
attributes of the facet the item has). The logits add lexical evidence (exact match, near
spelling, click association) to the scaled dot product, and are soft-capped so that scoring needs
no max-shift. Values are positive (softplus) and depend on the attribute only; the no-match slot is
worth 0. The head's output is the sum over tokens of the attention-weighted values, and the score
is prior + sum of head outputs: every score splits exactly into per-head contributions.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .facets import FACETS

EVIDENCE_KINDS = ("exact", "assoc", "near")


@dataclass
class ModelConfig:
    vocab_sizes: dict[str, int]  # facet -> number of attributes
    facets: tuple[str, ...] = FACETS
    dim: int = 32
    d_k: int = 16
    word_buckets: int = 1 << 17
    ngram_buckets: int = 1 << 17
    logit_cap: float = 12.0
    words_per_attribute: int = 4
    min_items_per_attribute: int = 3
    init_exact: float = 4.0
    init_assoc: float = 1.0
    init_near: float = 3.0
    init_idf: float = 2.0
    init_rare: float = 4.0
    init_match_bias: float = -3.0
    # the no-match slot counts as (number of the item's attributes in the facet) ** length_weight
    # slots: without it every extra attribute takes a little attention off "no match", so long
    # titles collect credit for words they do not have (BM25's length normalisation, learned)
    init_length: float = 0.5
    # the no-match logit rises with how specific the query word is in this catalogue (the IDF of
    # what it matches exactly): an item without a specific word the shopper typed ("toro") gets
    # little from lookalike matches ("riding"); exact matches rise by as much (init_rare)
    init_specific: float = 4.0
    # a no-match logit per head that ignores the token: every word must earn a match with
    # evidence against the same bar, so a weak match cannot hide behind a tuned-up threshold
    token_no_match: bool = False
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        d["facets"] = list(self.facets)
        return d

    @classmethod
    def from_json(cls, d: dict) -> ModelConfig:
        d = dict(d)
        d["facets"] = tuple(d["facets"])
        return cls(**d)


def soft_cap(x: torch.Tensor, cap: float) -> torch.Tensor:
    return cap * torch.tanh(x / cap)


class FacetHead(nn.Module):
    """One head: how a query token scores one facet's attributes."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cap, self.scale = cfg.logit_cap, 1.0 / math.sqrt(cfg.d_k)
        self.q_proj = nn.Linear(cfg.dim, cfg.d_k, bias=False)
        self.k_proj = nn.Linear(cfg.dim, cfg.d_k, bias=False)
        self.no_match = nn.Linear(cfg.dim, 1)
        self.no_match.weight.requires_grad_(cfg.token_no_match)
        self.value = nn.Linear(cfg.dim, 1)
        self.evidence_weight = nn.Parameter(torch.tensor([cfg.init_exact, cfg.init_assoc, cfg.init_near]))
        # a match on a rare attribute is worth more, as in BM25: value grows with its IDF
        self.idf_weight = nn.Parameter(torch.tensor(cfg.init_idf))
        # and an exact match on a rare attribute is stronger evidence: a word no training query
        # had can still outweigh "no match" when it names something few items have
        self.rare_weight = nn.Parameter(torch.tensor(cfg.init_rare))
        self.match_bias = nn.Parameter(torch.tensor(cfg.init_match_bias))
        self.length_weight = nn.Parameter(torch.tensor(cfg.init_length))
        self.specific_weight = nn.Parameter(torch.tensor(cfg.init_specific))
        for lin in (self.q_proj, self.k_proj):
            nn.init.normal_(lin.weight, std=0.02)
        nn.init.zeros_(self.no_match.weight)
        nn.init.zeros_(self.no_match.bias)
        nn.init.zeros_(self.value.weight)
        nn.init.constant_(self.value.bias, math.log(math.e - 1.0))  # softplus(b) = 1

    def keys_values(self, attr_emb: torch.Tensor, idf: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """attr_emb (V, D), idf (V,) -> keys (V, K), values (V,) > 0."""
        values = F.softplus(self.value(attr_emb).squeeze(-1) + self.idf_weight * idf)  # (V,)
        return self.k_proj(attr_emb), values

    def queries(self, tok_emb: torch.Tensor, specificity: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """tok_emb (..., T, D), specificity (..., T) -> queries (..., T, K), capped no-match
        logits (..., T)."""
        pre = self.no_match(tok_emb).squeeze(-1) + self.specific_weight * specificity  # (..., T)
        no_match = soft_cap(pre, self.cap)
        return self.q_proj(tok_emb), no_match

    def slot_log_count(self, n_attributes: torch.Tensor) -> torch.Tensor:
        """n_attributes (...) of the item in this facet -> the no-match slot's log multiplicity
        (...), added to its logit: length_weight * log(max(n, 1))."""
        return self.length_weight * torch.log(n_attributes.clamp(min=1).to(torch.float32))

    def match_logits(self, dot: torch.Tensor, evidence: torch.Tensor, idf: torch.Tensor) -> torch.Tensor:
        """dot (...) = q.k, evidence (..., 3) exact, assoc, near, idf (...) of the attribute
        -> capped logits (...)."""
        w = self.evidence_weight
        raw = dot * self.scale + self.match_bias + evidence[..., 0] * idf * self.rare_weight
        for j in range(len(EVIDENCE_KINDS)):
            raw = raw + evidence[..., j] * w[j]
        return soft_cap(raw, self.cap)


class FacetScorer(nn.Module):
    """All heads and the prior. `forward` is the reference computation on padded item lists."""

    def __init__(self, cfg: ModelConfig, attr_words: dict[str, torch.Tensor],
                 attr_key_bucket: dict[str, torch.Tensor], attr_learnable: dict[str, torch.Tensor],
                 attr_idf: dict[str, torch.Tensor]):
        super().__init__()
        self.cfg = cfg
        # sparse gradients: a step touches a few hundred of the hashed rows, not all of them
        self.word_emb = nn.Embedding(cfg.word_buckets, cfg.dim, sparse=True)
        self.ngram_emb = nn.Embedding(cfg.ngram_buckets, cfg.dim, padding_idx=0, sparse=True)
        nn.init.normal_(self.word_emb.weight, std=0.1)
        nn.init.normal_(self.ngram_emb.weight, std=0.1)
        with torch.no_grad():
            self.ngram_emb.weight[0].zero_()
        self.attr_emb = nn.ModuleDict({f: nn.Embedding(cfg.vocab_sizes[f], cfg.dim) for f in cfg.facets})
        self.prior = nn.ModuleDict({f: nn.Embedding(cfg.vocab_sizes[f], 1) for f in cfg.facets})
        for f in cfg.facets:
            nn.init.normal_(self.attr_emb[f].weight, std=0.01)
            nn.init.zeros_(self.prior[f].weight)
        self.heads = nn.ModuleDict({f: FacetHead(cfg) for f in cfg.facets})
        for f in cfg.facets:
            self.register_buffer(f"attr_words_{f}", attr_words[f])  # (V, W) word buckets, -1 pad
            self.register_buffer(f"attr_key_{f}", attr_key_bucket[f])  # (V,) bucket of the key
            # (V, 1) 1 where the attribute is common enough to learn a vector and a prior of its
            # own; rare ones (a model number, a one-off title word) would only memorise items
            self.register_buffer(f"attr_learnable_{f}", attr_learnable[f])
            self.register_buffer(f"attr_idf_{f}", attr_idf[f])  # (V,) IDF scaled to [0, 1]

    # ---- embeddings ---------------------------------------------------------------------------

    def embed_tokens(self, bucket: torch.Tensor, grams: torch.Tensor) -> torch.Tensor:
        """bucket (...), grams (..., G) -> (..., D): the word plus the mean of its n-grams."""
        gram_vecs = self.ngram_emb(grams)  # (..., G, D)
        n = (grams > 0).sum(-1, keepdim=True).clamp(min=1)  # (..., 1)
        return self.word_emb(bucket) + gram_vecs.sum(-2) / n

    def attribute_embeddings(self, facet: str) -> torch.Tensor:
        """(V, D): the attribute's own vector, its key's and the mean of its words' vectors."""
        words = getattr(self, f"attr_words_{facet}")  # (V, W)
        mask = (words >= 0).unsqueeze(-1)  # (V, W, 1)
        word_vecs = self.word_emb(words.clamp(min=0)) * mask  # (V, W, D)
        mean_words = word_vecs.sum(1) / mask.sum(1).clamp(min=1)  # (V, D)
        key_vec = self.word_emb(getattr(self, f"attr_key_{facet}"))  # (V, D)
        own = self.attr_emb[facet].weight * getattr(self, f"attr_learnable_{facet}")  # (V, D)
        return own + mean_words + key_vec

    def head_tables(self, facet: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-facet item-side tables: keys (V, K), values (V,), prior per attribute (V,)."""
        idf = getattr(self, f"attr_idf_{facet}")
        keys, values = self.heads[facet].keys_values(self.attribute_embeddings(facet), idf)
        prior = self.prior[facet].weight * getattr(self, f"attr_learnable_{facet}")  # (V, 1)
        return keys, values, prior.squeeze(-1)

    # ---- reference computation ----------------------------------------------------------------

    def forward(
        self,
        tok_bucket: torch.Tensor,  # (B, T)
        tok_grams: torch.Tensor,  # (B, T, G)
        tok_mask: torch.Tensor,  # (B, T) bool
        tok_specificity: torch.Tensor,  # (B, T) `EncodedQueries.specificity`
        item_attrs: dict[str, torch.Tensor],  # facet -> (B, I, M) attribute idx, -1 = padding
        evidence: dict[str, torch.Tensor],  # facet -> (B, I, T, M, 2)
        head_weights: torch.Tensor | None = None,  # (H,)
        return_attention: bool = False,
    ) -> dict[str, torch.Tensor]:
        """Scores (B, I), contributions (B, I, H), prior (B, I); attention per facet on request."""
        tok = self.embed_tokens(tok_bucket, tok_grams)  # (B, T, D)
        contributions, attention = [], {}
        prior = 0.0
        for h, f in enumerate(self.cfg.facets):
            keys, values, attr_prior = self.head_tables(f)
            attrs = item_attrs[f]  # (B, I, M)
            present = attrs >= 0  # (B, I, M)
            if keys.shape[0] == 0:  # a facet the catalogue has no attributes for
                keys, values, attr_prior = keys.new_zeros(1, keys.shape[1]), values.new_zeros(1), attr_prior.new_zeros(1)
            safe = attrs.clamp(min=0)
            idf = getattr(self, f"attr_idf_{f}")
            idf = idf[safe] if len(idf) else torch.zeros(safe.shape)  # (B, I, M)
            out, att = self._head(f, tok, tok_mask, tok_specificity, keys[safe], values[safe], idf, present,
                                  evidence[f])
            if head_weights is not None:
                out = out * head_weights[h]
            contributions.append(out)
            attention[f] = att
            n_attr = present.sum(-1).clamp(min=1)  # (B, I)
            prior = prior + (attr_prior[safe] * present).sum(-1) / n_attr  # (B, I)
        contrib = torch.stack(contributions, dim=-1)  # (B, I, H)
        result = {"scores": prior + contrib.sum(-1), "contributions": contrib, "prior": prior}
        if return_attention:
            result["attention"] = attention
        return result

    def _head(self, facet, tok, tok_mask, specificity, keys, values, idf, present, evidence):
        """One head over padded items: output (B, I) and attention (B, I, T, M + 1)."""
        head = self.heads[facet]
        q, no_match = head.queries(tok, specificity)  # (B, T, K), (B, T)
        dot = torch.einsum("btk,bimk->bitm", q, keys)  # (B, I, T, M)
        logits = head.match_logits(dot, evidence, idf.unsqueeze(2))  # (B, I, T, M)
        logits = logits.masked_fill(~present.unsqueeze(2), float("-inf"))
        b, i, t, _ = logits.shape
        extra = head.slot_log_count(present.sum(-1))  # (B, I)
        slot = (no_match[:, None, :] + extra[:, :, None]).unsqueeze(-1)  # (B, I, T, 1)
        att = torch.softmax(torch.cat([logits, slot], dim=-1), dim=-1)  # (B, I, T, M + 1)
        per_token = (att[..., :-1] * values.unsqueeze(2)).sum(-1)  # (B, I, T)
        out = (per_token * tok_mask.unsqueeze(1)).sum(-1)  # (B, I)
        return out, att
