"""`FacetHead.logit_tables` (the flat tables the numpy and compiled paths read) gives the logits
`FacetHead.match_logits` and `queries` give, on random weights: the formula's one fold."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recsys.formula import (
    ASSOC,
    EVIDENCE_KINDS,
    EXACT,
    MIN_PARTIAL_WORTH,
    N_KINDS,
    NEAR,
    covered,
    is_phrase,
    partial_worth,
)
from recsys.model import FacetHead, soft_cap
from recsys.model_config import ModelConfig


@pytest.mark.parametrize("partial_value", [True, False])
def test_logit_tables_fold_the_heads_formula(partial_value):
    torch.manual_seed(0)
    head = FacetHead(ModelConfig(vocab_sizes={"color": 5}, partial_value=partial_value))
    with torch.no_grad():
        for p in head.parameters():
            p.add_(torch.randn_like(p))  # every weight, rare_weight and the evidence weights included
    v, t, d = 5, 3, head.q_proj.weight.shape[1]
    keys, idf, bias = torch.randn(v, head.k_proj.out_features), torch.rand(v), torch.randn(v)
    tok, spec = torch.randn(t, d), torch.rand(t)
    evidence = torch.rand(t, v, N_KINDS)
    evidence[..., EXACT] *= (torch.rand(t, v) < 0.7).float()  # the word is none of some attributes' words
    with torch.no_grad():
        q, no_match = head.queries(tok, spec)  # (T, K), (T,)
        want = head.match_logits(q @ keys.T, evidence, idf, bias).numpy()  # (T, V)
    tables = head.logit_tables(keys, idf, bias)
    assert tables.weights.shape == (N_KINDS, v) and tables.dot.shape == (d, v)
    raw = tok.double().numpy() @ tables.dot + tables.bias  # (T, V)
    for k in range(N_KINDS):
        read = evidence[..., k].numpy()
        if k == EXACT and partial_value:  # stored as value shares: a word of the attribute's is a full match
            read = (read > 0).astype(np.float32)
        raw = raw + read * tables.weights[k]
    got = soft_cap(torch.from_numpy(raw), head.cap).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    nm = tok.double().numpy() @ tables.no_match + tables.no_match_bias + tables.specific_weight * spec.numpy()
    np.testing.assert_allclose(soft_cap(torch.from_numpy(nm), head.cap).numpy(), no_match.numpy(), atol=1e-5)


def test_evidence_kinds_are_named_once():
    assert (EVIDENCE_KINDS[EXACT], EVIDENCE_KINDS[ASSOC], EVIDENCE_KINDS[NEAR]) == ("exact", "assoc", "near")
    # "dining" has one of the two words of "dining chair" and of "dining table"; "chair" the other
    exact = np.array([[1.0, 1.0], [1.0, 0.0]], dtype=np.float32)  # (T words, M attributes)
    two = np.array([2.0, 2.0], dtype=np.float32)
    np.testing.assert_array_equal(covered(exact, two, partial=False), [[1.0, 0.5], [1.0, 0.0]])
    # stored as partial worths: the whole "dining chair" is 1 for both words, "dining" of
    # "dining table" keeps its worth
    worths = np.array([[0.9, 0.7], [0.6, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(covered(worths, two, partial=True),
                                  np.array([[1.0, 0.7], [1.0, 0.0]], dtype=np.float32))


def test_a_word_of_a_phrase_is_worth_its_own_idf():
    # a word only the phrase has is a full match; a word other items say too is worth its own
    # IDF: at the average length the phrase's IDF times the match's saturation is the word's IDF
    # times a full match's
    k1, weight = 0.5, 8.0
    word_idf, phrase_idf = np.array([3.0, 1.5, 0.6, 1e-9]), np.full(4, 3.0)
    worth = partial_worth(word_idf, phrase_idf, weight, k1)
    logit = (worth[:3] - 1.0) * weight  # the start's logit relative to a full match
    saturation = np.exp(logit) / (np.exp(logit) + k1)
    np.testing.assert_allclose(phrase_idf[:3] * saturation, word_idf[:3] / (1.0 + k1), rtol=1e-5)
    assert worth[0] == 1.0 and worth[3] == MIN_PARTIAL_WORTH
    assert (worth > 0).all()  # a stored value still says the word is one of the attribute's


@pytest.mark.parametrize("value, n_words, phrase", [
    ("navy blue", 2, True), ("hdmi cables", 2, True), ("4k (2160p)", 3, True), ("black/white", 2, True),
    ("red", 1, True), ("4k", 2, False), ("usb-c", 2, False), ("2160p", 2, False), ("5.3k", 2, False),
    ("rechargeable_battery", 2, False), ("wi-fi_built-in", 4, False), ("_battery", 1, True),
])
def test_a_value_written_as_one_word_is_no_phrase(value, n_words, phrase):
    assert is_phrase(value, n_words) is phrase
    # covered whole, a phrase's words are full matches; a word's parts keep their stored shares
    shares = np.array([[0.4], [0.7]], dtype=np.float32)
    flag = np.array([1.0 if phrase else 0.0], dtype=np.float32)
    want = [[1.0], [1.0]] if phrase else shares
    np.testing.assert_array_equal(covered(shares, np.array([2.0], dtype=np.float32), True, flag), want)
