"""`recsys serve` builds the default synthetic model only where the artifacts folder has none: a
folder whose versions were trained and kept, none served (a shop's first version below BM25 in
its own report), is never handed the synthetic catalogue in their place."""

from __future__ import annotations

import shutil

import pytest

from api.config import Settings
from cli import serve
from recsys.artifact import resolve_version_dir
from recsys.errors import ArtifactError


def test_kept_versions_none_served_are_not_replaced_by_the_default(planted_artifacts, tmp_path, monkeypatch):
    folder = resolve_version_dir(planted_artifacts[0])
    artifacts = tmp_path / "art"
    shutil.copytree(folder, artifacts / folder.name)  # no `current`
    built: list[object] = []
    monkeypatch.setattr(serve, "build_default_model", built.append)
    settings = Settings(artifacts_dir=artifacts, data_dir=tmp_path / "data", default_data_dir=tmp_path / "default")
    with pytest.raises(ArtifactError, match=f"newest {folder.name}"):
        serve.ensure_a_model(settings)
    assert built == []
    shutil.rmtree(artifacts / folder.name)  # an empty folder: the default is built
    serve.ensure_a_model(settings)
    assert built == [settings]
