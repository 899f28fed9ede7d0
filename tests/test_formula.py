"""`FacetHead.logit_tables` (the flat tables the numpy and compiled paths read) gives the logits
`FacetHead.match_logits` and `queries` give, on random weights: the formula's one fold."""

from __future__ import annotations

import numpy as np
import torch

from recsys.formula import ASSOC, EVIDENCE_KINDS, EXACT, N_KINDS, NEAR, covered
from recsys.model import FacetHead, soft_cap
from recsys.model_config import ModelConfig


def test_logit_tables_fold_the_heads_formula():
    torch.manual_seed(0)
    head = FacetHead(ModelConfig(vocab_sizes={"color": 5}))
    with torch.no_grad():
        for p in head.parameters():
            p.add_(torch.randn_like(p))  # every weight, rare_weight and the evidence weights included
    v, t, d = 5, 3, head.q_proj.weight.shape[1]
    keys, idf, bias = torch.randn(v, head.k_proj.out_features), torch.rand(v), torch.randn(v)
    tok, spec = torch.randn(t, d), torch.rand(t)
    evidence = torch.rand(t, v, N_KINDS)
    with torch.no_grad():
        q, no_match = head.queries(tok, spec)  # (T, K), (T,)
        want = head.match_logits(q @ keys.T, evidence, idf, bias).numpy()  # (T, V)
    tables = head.logit_tables(keys, idf, bias)
    assert tables.weights.shape == (N_KINDS, v) and tables.dot.shape == (d, v)
    raw = tok.double().numpy() @ tables.dot + tables.bias  # (T, V)
    for k in range(N_KINDS):
        raw = raw + evidence[..., k].numpy() * tables.weights[k]
    got = soft_cap(torch.from_numpy(raw), head.cap).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    nm = tok.double().numpy() @ tables.no_match + tables.no_match_bias + tables.specific_weight * spec.numpy()
    np.testing.assert_allclose(soft_cap(torch.from_numpy(nm), head.cap).numpy(), no_match.numpy(), atol=1e-5)


def test_evidence_kinds_are_named_once():
    assert (EVIDENCE_KINDS[EXACT], EVIDENCE_KINDS[ASSOC], EVIDENCE_KINDS[NEAR]) == ("exact", "assoc", "near")
    # "dining" has one of the two words of "dining chair" and of "dining table"; "chair" the other
    exact = np.array([[1.0, 1.0], [1.0, 0.0]], dtype=np.float32)  # (T words, M attributes)
    np.testing.assert_array_equal(covered(exact, np.array([2.0, 2.0], dtype=np.float32)),
                                  [[1.0, 0.5], [1.0, 0.0]])
