"""Broken model versions (tests/api/corrupt_versions.py) are refused, each with an error naming
its file, by every way in: `load_version` and the command line's --model, admin activation and
the `current` pointer watcher of a real server process, which stays up serving its model.

Among them, what only a check of what a version does finds (issue 27): damaged bytes (the
checksums), finite but absurd weights (scoring a few queries), and files outside the version
folder (symlinks, a manifest listing /etc/passwd); and the manifest's provenance paths, never
opened."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from cli.main import main
from recsys.artifact import ITEMS_FILE, load_version, served_catalogue, set_current
from recsys.errors import ArtifactError, DataError
from recsys.io.text import fingerprint

from api_support import ADMIN_TOKEN, make_artifacts, make_settings
from api_support import wait_ready as wait_app_ready
from corrupt_versions import CORRUPTIONS, make_corrupt
from test_server import running, stop, wait_ready

NAMES = sorted(CORRUPTIONS)
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


# why the corruptions of issue 27 are refused: none of them was, before
WHY = {
    "every weight 3e38": "items score NaN or infinity",
    "1000 flipped bytes in the weights": "differs from the checksum its manifest recorded",
    "a letter of the catalogue changed": "differs from the checksum its manifest recorded",
    "a checksum missing": "lists no checksum of words.json",
    "manifest a symlink to outside": "outside the version folder",
    "weights a symlink to outside": "outside the version folder",
    "items copy a symlink to /etc/passwd": "outside the version folder",
    "checksum of /etc/passwd listed": "'/etc/passwd': only files of the version folder",
    "checksum of a file above listed": "'../outside.json': only files of the version folder",
}


def test_the_corpus_is_big_enough():
    assert len(CORRUPTIONS) >= 20
    assert set(WHY) <= set(CORRUPTIONS)


@pytest.fixture(scope="module")
def corpus(v1, module_tmp) -> dict[str, Path]:
    root = module_tmp / "corrupt"
    root.mkdir()
    return {name: make_corrupt(v1, root, name) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_load_version_refuses_it_naming_the_file(corpus, name):
    folder = corpus[name]
    with pytest.raises(ArtifactError) as err:
        load_version(folder)
    file = CORRUPTIONS[name][1]
    assert f"{folder.name}/{file}:" in err.value.public, err.value.public
    assert str(folder.parent) not in err.value.public  # the public message has no server path
    assert not (folder.parent / "PICKLE-WAS-EXECUTED").exists()
    if name in WHY:
        assert WHY[name] in err.value.public, err.value.public
        assert "re-train it or activate another version" in err.value.public


@pytest.mark.parametrize("name", NAMES)
def test_the_command_line_refuses_it_in_one_line(corpus, name, capsys):
    assert main(["recommend", "dress", "--model", str(corpus[name])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    assert CORRUPTIONS[name][1] in err and "internal error" not in err, err
    if name in WHY:
        assert WHY[name] in err


@pytest.mark.parametrize("name", ["column index past the vocabulary", "a pickle instead of weights",
                                  "manifest a list"])
def test_the_command_line_process_survives_it(corpus, name):
    """In a process of its own: an out-of-range index once was a segmentation fault."""
    r = subprocess.run([sys.executable, "-m", "cli.main", "recommend", "dress", "--model",
                        str(corpus[name])], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and CORRUPTIONS[name][1] in r.stderr


def test_a_good_copy_still_loads(v1, tmp_path):
    assert load_version(make_artifacts(tmp_path / "a", v1)).version == v1.name


def test_every_file_has_a_checksum_and_the_items_file_is_kept(v1):
    manifest = json.loads((v1 / "manifest.json").read_text())
    files = sorted(p.name for p in v1.iterdir() if p.name != "manifest.json")
    assert sorted(manifest["files"]) == files and ITEMS_FILE in files
    assert all(manifest["files"][f] == fingerprint(v1 / f) for f in files)
    assert manifest["data"]["items"]["fingerprint"] == manifest["files"][ITEMS_FILE]


def _edit_manifest(folder: Path, edit) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_a_version_saved_without_checksums_loads_with_one_warning(v1, tmp_path, caplog):
    folder = tmp_path / v1.name
    shutil.copytree(v1, folder)
    _edit_manifest(folder, lambda m: m.pop("files"))
    with caplog.at_level(logging.WARNING, logger="recsys.artifact"):
        for _ in range(2):
            assert load_version(folder).version == v1.name
    warned = [r for r in caplog.records if "no checksums" in r.getMessage()]
    assert len(warned) == 1 and v1.name in warned[0].getMessage()


def _passwd_as_items_file(folder: Path, keep_copy: bool) -> None:
    """The manifest says training read /etc/passwd; without `keep_copy`, a version of an older
    release (no items copy, no checksums) whose fingerprint fits /etc/passwd, as a forger
    would make it."""
    def edit(m: dict) -> None:
        m["data"]["items"]["file"] = "/etc/passwd"
        if not keep_copy:
            m["data"]["items"]["fingerprint"] = fingerprint("/etc/passwd")
            m.pop("files")
    if not keep_copy:
        (folder / ITEMS_FILE).unlink()
    _edit_manifest(folder, edit)


def test_the_items_file_a_manifest_names_is_never_opened(v1, tmp_path):
    """`data.items.file` is provenance: a catalogue change or a retrain from events reads the
    copy in the version folder, or nothing. Before, /etc/passwd was parsed as the catalogue."""
    kept, old = tmp_path / "kept" / v1.name, tmp_path / "old" / v1.name
    for folder, keep in ((kept, True), (old, False)):
        shutil.copytree(v1, folder)
        _passwd_as_items_file(folder, keep)
    path, _ = served_catalogue(kept)
    assert path == (kept / ITEMS_FILE).resolve()
    assert path.read_bytes() == (v1 / ITEMS_FILE).read_bytes()
    with pytest.raises(DataError, match="not kept in its folder") as err:
        served_catalogue(old)
    assert "passwd" not in str(err.value)


def test_a_catalogue_change_does_not_parse_the_items_file_the_manifest_names(v1, data_dir, tmp_path):
    """The issue's finding through PUT /admin/items: a 409 saying the version keeps no items
    file (before: a 409 from parsing /etc/passwd as items), the served version kept."""
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    _passwd_as_items_file(artifacts / v1.name, keep_copy=False)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN)
    with TestClient(create_app(settings)) as client:
        assert wait_app_ready(client)["model_version"] == v1.name
        r = client.put("/admin/items", json={"items": [{"item_id": "X-1", "title": "Red Dress"}]},
                       headers=AUTH)
        assert r.status_code == 409, r.text
        assert "not kept in its folder" in r.json()["detail"] and "passwd" not in r.text
        assert client.get("/ready").json()["model_version"] == v1.name


@pytest.fixture(scope="module")
def server(v1, corpus, data_dir, module_tmp):
    """A real `recsys serve` on an artifacts folder of v1 and every broken version."""
    tmp = module_tmp / "server"
    tmp.mkdir()
    artifacts = make_artifacts(tmp / "artifacts", v1, *corpus.values())
    set_current(artifacts, v1.name)
    log = tmp / "server.log"
    env = {"RECSYS_ARTIFACTS_DIR": str(artifacts), "RECSYS_DATA_DIR": str(data_dir),
           "RECSYS_ADMIN_TOKEN": ADMIN_TOKEN, "RECSYS_WATCH_INTERVAL_S": "0.1"}
    with running([], env, log) as (base, proc):
        wait_ready(base, proc, log, timeout=120)
        with httpx.Client(base_url=base, timeout=30) as http:
            yield http, proc, artifacts, log
        stop(proc, log)


def _still_serving(http, proc, v1) -> None:
    assert proc.poll() is None, "the server died"
    assert http.get("/ready").json()["model_version"] == v1.name
    r = http.post("/recommend", json={"query": "red dress", "k": 3})
    assert r.status_code == 200 and r.json()["model_version"] == v1.name


def test_activation_refuses_each_with_409_naming_the_file(server, corpus, v1):
    http, proc, artifacts, _ = server
    for name in NAMES:
        r = http.post(f"/admin/versions/{corpus[name].name}/activate?force=true", headers=AUTH)
        assert r.status_code == 409, (name, r.status_code, r.text)
        detail = r.json()["detail"]
        assert f"{corpus[name].name}/{CORRUPTIONS[name][1]}:" in detail, (name, detail)
        assert str(artifacts) not in detail and f"still serving {v1.name}" in detail
        _still_serving(http, proc, v1)
    listed = {v["version"]: v for v in http.get("/admin/versions", headers=AUTH).json()["versions"]}
    assert listed[v1.name]["ok"] and listed[v1.name]["serving"]
    for name in NAMES:
        entry = listed[corpus[name].name]
        assert not entry["ok"] and CORRUPTIONS[name][1] in entry["problem"], (name, entry)


def test_the_pointer_watcher_refuses_each(server, corpus, v1):
    http, proc, artifacts, log = server
    for name in NAMES:
        set_current(artifacts, corpus[name].name)
        deadline = time.monotonic() + 10
        while True:
            ready = http.get("/ready").json()
            if ready["detail"] and corpus[name].name in ready["detail"]:
                break
            assert time.monotonic() < deadline, (name, ready)
            time.sleep(0.05)
        assert ready["status"] == "ready" and CORRUPTIONS[name][1] in ready["detail"], (name, ready)
        _still_serving(http, proc, v1)
    set_current(artifacts, v1.name)
    assert "Traceback" not in log.read_text()
