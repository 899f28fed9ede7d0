"""The start's offset on attributes no evidence links to a query word (`ModelOptions.
unmatched_offset`, `formula.unlinked`): subtracted after the cap, in the reference, and carried
by the flat tables the index reads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recsys.formula import ASSOC, EXACT, N_KINDS, NEAR, unlinked
from recsys.model import FacetHead
from recsys.model_config import ModelConfig, ModelOptions

from .test_index import QUERIES, _index, _items, reference


def test_the_offset_lowers_only_the_logits_of_unlinked_attributes():
    cfg = ModelConfig(vocab_sizes={"color": 4}, unmatched_offset=0.0)
    head = FacetHead(cfg)
    evidence = torch.zeros(2, 4, N_KINDS)  # (T, V): word 0 matches attribute 0 exactly, word 1
    evidence[0, 0, EXACT] = 1.0  # is associated with attribute 1 and near attribute 2
    evidence[1, 1, ASSOC], evidence[1, 2, NEAR] = 0.4, 0.8
    dot, idf, bias = torch.zeros(2, 4), torch.rand(4), torch.full((4,), -8.0)
    with torch.no_grad():
        before = head.match_logits(dot, evidence, idf, bias)
        cfg.unmatched_offset = 8.0
        after = head.match_logits(dot, evidence, idf, bias)
    away = unlinked(evidence[..., EXACT], evidence[..., ASSOC], evidence[..., NEAR])
    assert away.tolist() == [[False, True, True, True], [True, False, False, True]]
    np.testing.assert_allclose((before - after).numpy(), 8.0 * away.numpy())
    # the cap held -8 at -7: the offset takes an unlinked attribute to -15, e^-8 of its leak
    assert float(before[0, 1]) == pytest.approx(12 * np.tanh(-8 / 12))
    assert head.logit_tables(torch.zeros(4, cfg.d_k), idf, bias).unmatched_offset == 8.0


def test_the_start_has_the_offset_and_saved_versions_keep_none():
    # on by default: the untrained start leaks nothing onto attributes no word names, as BM25
    # counts nothing for them (recsys/model_config.py says what it was measured on)
    assert ModelOptions().unmatched_offset > 0.0
    saved = ModelConfig(vocab_sizes={"color": 4}).to_json()
    del saved["unmatched_offset"]
    assert ModelConfig.from_json(saved).unmatched_offset == 0.0


def test_the_index_scores_the_offset_as_the_reference_does(tmp_path):
    index = _index(tmp_path, _items(copies=1))
    index.model.cfg.unmatched_offset = 8.0
    from recsys.index.scoring import ScoringIndex
    index = ScoringIndex(index.model, index.featurizer)
    for query in QUERIES:
        want, _ = reference(index, query)
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(index.score(index.query_state(query)), want, atol=2e-6 * scale, rtol=0)


def test_the_compiled_offset_changes_the_same_cells_by_the_same_floats(tmp_path):
    from recsys.kernels import compiled
    kernels = compiled()
    if kernels is None:
        pytest.skip("numba cannot compile here: the numpy path alone serves")
    index = _index(tmp_path, _items(copies=1))
    index.model.cfg.unmatched_offset = 8.0
    from recsys.index.scoring import ScoringIndex
    tables = ScoringIndex(index.model, index.featurizer).queries
    rng = np.random.default_rng(0)
    t_count, v_total = 3, int(tables.vocab_offsets[-1])
    rows = np.zeros((t_count, 1 + N_KINDS, v_total + len(tables.facets)), dtype=np.float32)
    evidence_cols = []
    for t in range(t_count):  # each word evidence of one kind or another at a few attributes
        cols = np.sort(rng.choice(v_total, size=4, replace=False)).astype(np.int64)
        for a, kind in zip(cols, (ASSOC, NEAR, EXACT, ASSOC)):
            rows[t, 1 + kind, a] = rng.uniform(0.1, 1.0)
        rows[t, 1 + ASSOC, cols[-1]] = -0.5  # contradicted: no link
        evidence_cols.append(cols)
    exact = rows[:, 1 + EXACT, :v_total].copy()
    capped = rng.normal(size=(t_count, v_total + len(tables.facets))).astype(np.float32)
    want, got = capped.copy(), capped.copy()
    tables._subtract_offsets(want, exact, rows, evidence_cols)
    kernels.offset_unlinked(got, exact, rows, tables._unmatched, np.concatenate(evidence_cols))
    np.testing.assert_array_equal(got, want)
    assert (got != capped).sum() == t_count * (v_total - 3)  # three linked cells per word kept
