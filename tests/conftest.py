"""Shared fixtures: a tiny planted catalogue and one model trained on it, built once."""

from __future__ import annotations

import pytest

from recsys.artifact import load_version
from training.fit import TrainConfig
from training.train import TrainInputs, train

from .planted import write_planted

FAST = TrainConfig(epochs=4, seed=0)


@pytest.fixture(scope="session")
def planted_paths(tmp_path_factory):
    return write_planted(tmp_path_factory.mktemp("planted"))


@pytest.fixture(scope="session")
def planted_artifacts(planted_paths, tmp_path_factory):
    out = tmp_path_factory.mktemp("artifacts")
    result = train(TrainInputs(planted_paths["items"], planted_paths["interactions"],
                               judgments=planted_paths["judgments"]), out, FAST)
    return out, result


@pytest.fixture(scope="session")
def planted_model(planted_artifacts):
    return load_version(planted_artifacts[0])
