"""Training end to end on the planted catalogue: quality, determinism, artifacts, atomic writes."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
import torch

from recsys import artifact
from recsys.artifact import current_version, list_versions, load_version
from recsys.model_config import ModelOptions
from recsys.reindex import with_catalog
from training.evaluate_version import evaluate_version
from training.fit import TrainConfig
from training.train import TrainInputs, train

from ..conftest import FAST


def test_model_beats_bm25_on_planted_synonyms(planted_artifacts):
    _, result = planted_artifacts
    report = result.metrics["judgments"]
    assert report["model"]["ndcg@10"] >= 0.9
    assert report["model"]["ndcg@10"] >= report["bm25"]["ndcg@10"] + 0.3
    assert set(report) >= {"model", "bm25", "popularity", "random"}
    assert set(report["model"]) == {"ndcg@10", "recall@10", "mrr", "queries"}


def test_manifest_records_data_and_metrics(planted_artifacts, planted_paths):
    out, result = planted_artifacts
    manifest = json.loads((result.version_dir / "manifest.json").read_text())
    assert manifest["version"] == result.version_dir.name == current_version(out)
    assert manifest["data"]["items"]["fingerprint"].startswith("sha256:")
    assert manifest["facets"] == ["quality", "color", "style", "other"]
    # a tenth of the distinct queries with a click is held out, and each is evaluated
    clicked = pd.read_csv(planted_paths["interactions"]).query("label > 0")["query"].nunique()
    held_out = manifest["training"]["held_out_queries"]
    assert held_out == round(0.1 * clicked) and manifest["metrics"]["held_out"]["model"]["queries"] == held_out
    # the run's training options, the model's among them, and the model built from those
    assert manifest["training"]["epochs"] == FAST.epochs
    assert manifest["training"]["model"] == asdict(ModelOptions())
    assert {k: manifest["config"][k] for k in manifest["training"]["model"]} == asdict(ModelOptions())


def test_saved_version_reloads_to_the_same_scores(planted_artifacts, planted_model):
    again = load_version(planted_artifacts[1].version_dir)
    for q in ("scarlet gown", "cobalt tee formal"):
        np.testing.assert_allclose(again.scores(q), planted_model.scores(q), atol=1e-6)


def test_training_is_deterministic_under_a_seed(planted_paths, tmp_path):
    inputs = TrainInputs(planted_paths["items"], planted_paths["interactions"])
    cfg = TrainConfig(epochs=1, seed=3)
    a = train(inputs, tmp_path / "a", cfg).version_dir
    b = train(inputs, tmp_path / "b", cfg).version_dir
    wa = artifact.load_tensors(str(a / "model.safetensors"))
    wb = artifact.load_tensors(str(b / "model.safetensors"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_failed_write_leaves_no_version_and_keeps_current(planted_paths, tmp_path, monkeypatch):
    inputs = TrainInputs(planted_paths["items"], planted_paths["interactions"])
    first = train(inputs, tmp_path, TrainConfig(epochs=1)).version_dir

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(artifact, "save_arrays", broken)
    with pytest.raises(OSError):
        train(inputs, tmp_path, TrainConfig(epochs=1))
    assert [v["version"] for v in list_versions(tmp_path)] == [first.name]
    assert current_version(tmp_path) == first.name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".v")]  # no temp folder left


def test_new_items_are_scored_without_retraining(planted_model, planted_paths, tmp_path):
    items = pd.read_csv(planted_paths["items"], dtype=str)
    new = pd.DataFrame([{"item_id": "NEW-1", "title": "Zeta dress", "color": "red", "style": "casual",
                         "quality": "standard", "category": "dress", "price": "20.00"}])
    rec = with_catalog(planted_model, pd.concat([items, new], ignore_index=True).fillna(""))
    top = [i.item_id for i in rec.recommend("scarlet gown", k=5).items]
    assert "NEW-1" in top


def test_evaluate_reports_model_and_baselines(planted_artifacts, planted_paths):
    report = evaluate_version(planted_artifacts[0], planted_paths["items"], planted_paths["judgments"])
    assert report["model"]["ndcg@10"] >= 0.9
    assert {"bm25", "popularity", "random"} <= set(report)


def test_served_model_has_no_own_attribute_vectors(planted_model):
    """They absorb memorisation during the fit and are dropped before the model is saved."""
    for emb in planted_model.model.attr_emb.values():
        assert torch.count_nonzero(emb.weight) == 0
