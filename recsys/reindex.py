"""Serve a trained model over another catalogue, without retraining.

Attributes the model has seen keep their learned vectors and priors; new attributes and new items
are scored from their words (hashed embeddings, exact-match evidence), so adding items needs no
training run.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch

from .catalog import Catalog
from .encoding import Featurizer
from .errors import InputError
from .evidence import Evidence, build_exact, catalog_word_keys, phrases
from .facets import FACETS
from .io.schema import Schema
from .model import FacetScorer
from .model_config import ModelConfig
from .recommender import Recommender
from .words import WordTable


def with_catalog(rec: Recommender, items: pd.DataFrame, schema: Schema | None = None,
                 aliases: Mapping[str, str] | None = None) -> Recommender:
    """`schema`: how the new catalogue's columns and titles map to facets (default: the rule).
    The catalogue keeps `rec`'s aliases of the items still here, and takes `aliases` (a
    variant's id -> its item_id) over them."""
    schema = schema or Schema(added_facets=rec.facets[len(FACETS):])
    if schema.facets != rec.facets:
        raise InputError(f"the schema gives the facets {', '.join(schema.facets)}, the model has the "
                         f"heads {', '.join(rec.facets)}: use the schema it was trained with")
    old = rec.catalog
    new = Catalog.build(items, schema.columns, buckets=old.buckets, lexicon=schema.lexicon,
                        facets=rec.facets)
    new.keep_aliases({**old.aliases, **(aliases or {})})  # of the items here
    old_words = rec.featurizer.words
    added = sorted(catalog_word_keys(new) - set(old_words.keys))
    words = WordTable(old_words.keys + added, old_words.query_words)  # old ids stay valid
    mapping = {f: _attribute_map(old, new, f) for f in rec.facets}  # new idx -> old idx or -1
    assoc = {f: _remap_assoc(rec.featurizer.evidence.assoc[f], mapping[f], len(words)) for f in rec.facets}
    cfg = ModelConfig.from_json({**rec.model.cfg.to_json(),
                                 "vocab_sizes": {f: len(new.vocab[f]) for f in rec.facets}})
    ev = rec.featurizer.evidence
    confident, support = ({f: _remap_assoc(tables[f], mapping[f], len(words)) for f in rec.facets}
                          if tables is not None else None for tables in (ev.confident, ev.support))
    exact = build_exact(new, words, cfg)
    evidence = Evidence(exact=exact, assoc=assoc, partial=cfg.partial_worth, confident=confident, support=support,
                        phrase=phrases(new, exact, cfg))
    featurizer = Featurizer(new, words, evidence, cfg)
    # every weight is copied below: drawing the random start only to overwrite it was most of
    # the CPU of building the model (as when a version loads, `artifact._load_model`)
    model = FacetScorer(cfg, *featurizer.attribute_buffers(), initialise=False)
    state = {k: v for k, v in rec.model.state_dict().items() if not k.startswith("attr_")}
    for f in rec.facets:
        for name in (f"attr_emb.{f}.weight", f"prior.{f}.weight"):
            state[name] = _remap_rows(rec.model.state_dict()[name], mapping[f])
    loaded = model.load_state_dict(state, strict=False)
    # only the catalogue's attribute buffers come from the new featurizer; a weight left out
    # would be uninitialised memory
    left = set(loaded.missing_keys) - {name for name, _ in model.named_buffers()}
    if left or loaded.unexpected_keys:
        raise RuntimeError(f"reindexing left weights {sorted(left)} unset and "
                           f"{sorted(loaded.unexpected_keys)} unused: the model's layout changed")
    out = Recommender(model.eval(), featurizer, version=rec.version, manifest=rec.manifest)
    if rec.popularity is not None:
        idx = np.array([old.idx(i) if old.has(i) else -1 for i in new.item_ids])
        out.popularity = np.where(idx >= 0, rec.popularity[np.maximum(idx, 0)], 0.0)
    return out


def _attribute_map(old: Catalog, new: Catalog, facet: str) -> np.ndarray:
    """New attribute idx -> the old one, or -1: the same attribute, else one of its base said as
    often or less (`Attribute.base`: what its clicks and vector were learned for)."""
    index = {a: i for i, a in enumerate(old.vocab[facet])}
    by_base: dict[tuple[str, str, str], int] = {}
    for i, a in enumerate(old.vocab[facet]):
        by_base.setdefault(a.base, i)
    return np.array([index.get(a, by_base.get(a.base, -1)) for a in new.vocab[facet]], dtype=np.int64)


def _remap_rows(weight: torch.Tensor, mapping: np.ndarray) -> torch.Tensor:
    out = weight.new_zeros((len(mapping), weight.shape[1]))
    known = torch.from_numpy(mapping >= 0)
    out[known] = weight[torch.from_numpy(mapping[mapping >= 0])]
    return out


def _remap_assoc(m: sp.csr_matrix, mapping: np.ndarray, n_words: int) -> sp.csr_matrix:
    keep = np.flatnonzero(mapping >= 0)
    # scipy-stubs: csr_matrix's (rows, cols) shape form with a dtype, and lil_matrix's sparse
    # right-hand side of a slice assignment, are missing from the overloads
    cols = (m[:, mapping[keep]] if len(keep)
            else sp.csr_matrix((m.shape[0], 0), dtype=np.float32))  # type: ignore[arg-type]
    out = sp.lil_matrix((n_words, len(mapping)), dtype=np.float32)
    out[: m.shape[0], keep] = cols  # type: ignore[assignment]
    result = out.tocsr()
    result.sort_indices()
    return result
