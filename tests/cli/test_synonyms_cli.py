"""The synonyms file on the command line: `recsys train --synonyms` evaluates with it and says
which rules the catalogue cannot use; `recsys recommend` and `recsys explain` rank and explain
with it; a bad line stops with the file, the line and the fix."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from tests.training.test_shop_export import PRODUCTS, SEARCHES


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("synonyms-cli")
    (folder / "products.csv").write_text(PRODUCTS)
    (folder / "searches.csv").write_text(SEARCHES)
    (folder / "synonyms.txt").write_text("# the shop's\nboot, booties\nmarine => navy\ndivan, ottoman\n")
    return folder


def test_train_reads_the_file_and_reports_what_it_cannot_use(trained, capsys):
    code = main(["train", "--items", str(trained / "products.csv"), "--interactions", str(trained / "searches.csv"),
                 "--out", str(trained / "art"), "--epochs", "1", "--synonyms", str(trained / "synonyms.txt"),
                 "--activate", "--json"])
    err = capsys.readouterr().err
    assert code == 0, err
    unusable = [line for line in err.splitlines() if "synonym" in line]
    assert len(unusable) == 1 and "'divan'" in unusable[0] and "neither side occurs in any item" in unusable[0]
    version = next(p for p in (trained / "art").iterdir() if p.name.startswith("v"))
    data = json.loads((version / "manifest.json").read_text())["data"]
    assert data["synonyms"]["rules"] == 3 and len(data["synonyms"]["unusable"]) == 1


def test_recommend_and_explain_with_the_file(trained, capsys):
    model = ["--model", str(trained / "art")]
    assert main(["recommend", "marine", *model, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["unmatched_tokens"] == ["marine"]
    assert main(["recommend", "marine", *model, "--json", "--synonyms", str(trained / "synonyms.txt")]) == 0
    answer = json.loads(capsys.readouterr().out)
    top = answer["items"][0]
    assert top["item_id"] == "SKU-1002" and answer["unmatched_tokens"] == []  # the navy shirt
    assert [s["note"] for s in top["explanation"]["synonyms"]] == ["marine -> color:navy (synonym rule 'marine')"]
    assert main(["explain", "marine", "SKU-1002", *model, "--synonyms", str(trained / "synonyms.txt")]) == 0
    assert "synonym rule 'marine'" in capsys.readouterr().out


def test_a_bad_line_names_the_file_and_the_line(trained, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("boot, booties\nlinen shirt, tee\n")
    assert main(["recommend", "boot", "--model", str(trained / "art"), "--synonyms", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: line 2: 'linen shirt' is 2 words" in err
