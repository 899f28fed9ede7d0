"""A catalogue revision is served only as every process will serve it (issue 27, point 3): the
process that makes it loads it from its folder through `load_version` (checksums, smoke
scoring), not from the model it has in memory; and a process pinned to one version folder
(`recsys serve --model VERSION_DIR`) does not change what it serves.

Before: the revising process served the model it had just saved, from memory; a revision damaged
on its way to disk was served there while every other process refused it. A pinned process
revised its pinned version into the artifacts folder, moved `current` under the other processes,
and served the revision until its restart, which brought the pinned version back without the
acknowledged change."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from api.routes import admin_items
from cli.app import create_app
from recsys.artifact import current_version

from api_support import ADMIN_TOKEN, make_artifacts, make_settings, wait_ready

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
NEW = {"item_id": "CHECKED-1", "title": "Vantrell Linen Dress", "color": "red",
       "category": "dress"}


def _damage(folder: Path) -> None:
    """Flip 64 bytes in the middle of the weights, as a bad disk or a torn write would."""
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(b ^ 0xFF for b in data[middle:middle + 64])
    weights.write_bytes(bytes(data))


def test_a_revision_damaged_on_disk_is_refused_not_served(tmp_path, data_dir, v1, rec, monkeypatch):
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    saved = []

    def save_then_damage(*args, **kw):
        revised = admin_items_save(*args, **kw)
        _damage(artifacts / revised.version)
        saved.append(revised.version)
        return revised

    admin_items_save = admin_items.save_revision
    monkeypatch.setattr(admin_items, "save_revision", save_then_damage)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN)
    with TestClient(create_app(settings, recommender=rec)) as client:
        r = client.put("/admin/items", json={"items": [NEW]}, headers=AUTH)
        assert r.status_code == 409, r.text
        detail = r.json()["detail"]
        assert saved[0] in detail and "model.safetensors" in detail and "checksum" in detail, detail
        assert f"still serving {v1.name}" in detail, detail
        assert client.get("/ready").json()["model_version"] == v1.name
        assert client.get(f"/items/{NEW['item_id']}").status_code == 404
        assert current_version(artifacts) == v1.name
        monkeypatch.setattr(admin_items, "save_revision", admin_items_save)  # a sound write
        r = client.put("/admin/items", json={"items": [NEW]}, headers=AUTH)
        assert r.status_code == 200, r.text
        assert client.get(f"/items/{NEW['item_id']}").status_code == 200


def test_a_pinned_process_does_not_change_what_it_serves(tmp_path, data_dir, v1, v2, rec):
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    before = sorted(p.name for p in artifacts.iterdir())
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN)
    with TestClient(create_app(settings, model_path=artifacts / v1.name)) as client:
        wait_ready(client)
        answers = [client.put("/admin/items", json={"items": [NEW]}, headers=AUTH),
                   client.delete(f"/admin/items/{rec.catalog.item_ids[0]}", headers=AUTH),
                   client.post(f"/admin/versions/{v2.name}/activate?force=true", headers=AUTH)]
        for r in answers:
            assert r.status_code == 409, r.text
            assert f"serves {v1.name}, pinned by `recsys serve --model`" in r.json()["detail"], r.text
        assert client.get("/ready").json()["model_version"] == v1.name
        assert client.get(f"/items/{rec.catalog.item_ids[0]}").status_code == 200
    assert current_version(artifacts) == v1.name
    assert sorted(p.name for p in artifacts.iterdir()) == before
