"""`recsys train` decides on what is served when it finishes, not when it started: a server of
the same folder may have changed its catalogue meanwhile (a catalogue revision moves `current`),
and serving the new version then would undo those acknowledged changes, even with --activate."""

import json
import shutil

import pandas as pd
import pytest

import training.train
from cli.main import main
from recsys.artifact import current_version, set_current


@pytest.fixture
def shop(tmp_path):
    items = tmp_path / "items.csv"
    pd.DataFrame({"item_id": [f"p{n}" for n in range(30)],
                  "title": [f"{c} garden lamp {n}" for n, c in zip(range(30), ["red", "blue", "green"] * 10)]}
                 ).to_csv(items, index=False)
    art = tmp_path / "art"
    assert main(["train", "--items", str(items), "--epochs", "1", "--out", str(art), "--activate"]) == 0
    return items, art


def _revised_while_training(monkeypatch, art, catalogue="sha256:revised"):
    """Training that, before it returns, sees `current` moved to a copy of the served version
    whose catalogue is `catalogue`: what a server's PUT /admin/items does meanwhile."""
    real = training.train.train_replica
    served = current_version(art)

    def train_replica(*args, **kwargs):
        result = real(*args, **kwargs)
        shutil.copytree(art / served, art / "v-revised")
        path = art / "v-revised" / "manifest.json"
        manifest = json.loads(path.read_text())
        if catalogue is not None:
            manifest["data"]["items"]["fingerprint"] = catalogue
        path.write_text(json.dumps(manifest))
        set_current(art, "v-revised")
        return result

    monkeypatch.setattr(training.train, "train_replica", train_replica)
    return served


def test_activate_keeps_it_when_the_catalogue_changed_while_it_trained(shop, monkeypatch, capsys):
    items, art = shop
    served = _revised_while_training(monkeypatch, art)
    capsys.readouterr()
    assert main(["train", "--items", str(items), "--epochs", "1", "--out", str(art), "--activate", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not report["activated"]
    assert report["decision"].startswith(
        f"kept, not served: the served catalogue changed while it trained ({served} -> v-revised)")
    assert current_version(art) == "v-revised" and (art / report["version"]).is_dir()


def test_activate_serves_it_when_the_move_kept_the_catalogue(shop, monkeypatch, capsys):
    items, art = shop
    _revised_while_training(monkeypatch, art, catalogue=None)  # another version of the same catalogue
    capsys.readouterr()
    assert main(["train", "--items", str(items), "--epochs", "1", "--out", str(art), "--activate", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["activated"] and report["decision"] == "activated: forced"
    assert current_version(art) == report["version"]


def test_without_activate_it_is_compared_with_what_is_served_now(shop, monkeypatch, capsys):
    items, art = shop
    _revised_while_training(monkeypatch, art)
    capsys.readouterr()
    assert main(["train", "--items", str(items), "--epochs", "1", "--out", str(art), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not report["activated"] and "the served v-revised" in report["decision"]
    assert current_version(art) == "v-revised"
