"""One configuration: each training and model default is defined once (training/config.py,
recsys/model_config.py), and everything that trains starts from it."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import asdict, fields
from pathlib import Path

from api.config import Settings
from cli.main import _parser
from recsys.model_config import ModelConfig, ModelOptions
from training.config import TrainConfig

ROOT = Path(__file__).resolve().parents[2]

# a manifest's `config` as the releases before the split wrote it (vocab_sizes first)
OLD_CONFIG = {"vocab_sizes": {"quality": 8, "color": 13, "style": 9, "other": 59},
              "facets": ["quality", "color", "style", "other"], "dim": 16, "d_k": 8,
              "word_buckets": 131072, "ngram_buckets": 131072, "logit_cap": 12.0,
              "words_per_attribute": 4, "min_items_per_attribute": 3, "bm25_k1": 0.5,
              "init_exact": 8.0, "init_assoc": 8.0, "init_near": 7.0, "init_rare": 0.0,
              "init_match_bias": -8.0, "init_length": 0.75, "init_specific": 0.0,
              "token_no_match": False}


def test_an_old_manifests_config_loads_as_the_options_it_was_trained_with():
    cfg = ModelConfig.from_json(OLD_CONFIG)
    # the default options, except what later releases changed: descriptions were at par then,
    # each head's length was its own attribute count, a word of a phrase counted by its share,
    # unlinked attributes kept their capped logit, every near spelling of a word counted, a
    # title word's IDF counted its one-word term's items alone and a said word's click
    # association counted whole
    then = ModelOptions(description_weight=1.0, length_per_item=False, partial_worth=False, partial_value=False,
                        unmatched_offset=0.0, near_known_ratio=0.0, word_df=False, said_assoc_share=1.0)
    assert cfg == ModelConfig.for_catalog(then, OLD_CONFIG["vocab_sizes"])
    assert cfg.facets == ("quality", "color", "style", "other")
    # the same flat form
    assert cfg.to_json() == {**OLD_CONFIG, "description_weight": 1.0, "length_per_item": False, "partial_worth": False,
                             "partial_value": False, "unmatched_offset": 0.0, "length_unit": "attributes",
                             "near_known_ratio": 0.0, "word_df": False, "said_assoc_share": 1.0}
    assert not cfg.value_shares


def test_a_version_with_partial_worths_keeps_them():
    """Versions saved with `partial_worth` before `partial_value` existed stored worths in their
    exact tables: they are read as worths (evidence below 1), not as value shares."""
    saved = {**OLD_CONFIG, "partial_worth": True}
    cfg = ModelConfig.from_json(saved)
    assert cfg.partial_worth and not cfg.partial_value and not cfg.value_shares
    assert ModelOptions().value_shares and not ModelOptions(partial_worth=False).value_shares


def test_the_model_config_is_the_training_runs_options_plus_the_catalogues_sizes():
    options = ModelOptions(dim=24, d_k=4, token_no_match=True)
    cfg = ModelConfig.for_catalog(options, {"quality": 1, "color": 2, "style": 3, "other": 4})
    assert {f.name: getattr(cfg, f.name) for f in fields(ModelOptions)} == asdict(options)
    assert cfg.vocab_sizes == {"quality": 1, "color": 2, "style": 3, "other": 4}
    assert asdict(TrainConfig())["model"] == asdict(ModelOptions())  # recorded in the manifest


def test_every_trainer_starts_from_train_configs_defaults(monkeypatch):
    args = _parser().parse_args(["train", "--items", "i.csv", "--interactions", "x.csv"])
    assert (args.epochs, args.seed) == (TrainConfig.epochs, TrainConfig.seed)
    # the service holds no training default of its own: unset means TrainConfig's
    monkeypatch.delenv("RECSYS_TRAIN_EPOCHS", raising=False)
    monkeypatch.delenv("RECSYS_TRAIN_THREADS", raising=False)
    settings = Settings()
    assert settings.train_epochs is None and settings.train_threads is None
    assert TrainConfig().overriding(epochs=None, seed=None, threads=None) == TrainConfig()
    assert TrainConfig().overriding(epochs=3, threads=None) == TrainConfig(epochs=3)


def test_the_training_defaults_load_without_torch():
    """`recsys --help` shows them: importing them must not cost torch's import."""
    code = "import sys, cli.main; assert 'torch' not in sys.modules, 'torch imported'"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
