"""The `recsys` command line: every subcommand, and bad input -> exact error, exit 2, no artifact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from recsys.errors import DataError
from recsys.io.readers import read_interactions, read_items
from recsys.io.schema import Schema
from tests import zygote

BAD = Path(__file__).parents[1] / "fixtures" / "bad"
GOOD = Path(__file__).parents[1] / "fixtures" / "good"
ITEM_IDS = {"A1", "A2", "A3"}


def recsys(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "RECSYS_ARTIFACTS_DIR": str(cwd / "artifacts") if cwd else "artifacts",
           "COLUMNS": "200"}
    # forked from a warm interpreter (tests/zygote.py): the imports of a fresh one are 3-4 s of CPU
    return zygote.run("cli.main", list(args), {**env, "PYTHONPATH": str(Path(__file__).parents[2])}, cwd=cwd)


def test_generate_writes_the_four_files(tmp_path):
    out = recsys("generate", "--out", str(tmp_path / "d"), "--items", "200", "--queries", "300")
    assert out.returncode == 0, out.stderr
    assert {p.name for p in (tmp_path / "d").iterdir()} >= {
        "items.csv", "interactions.csv", "judgments.csv", "probes.csv"}


def test_train_evaluate_recommend_explain(planted_paths, tmp_path):
    p = {k: str(v) for k, v in planted_paths.items()}
    out = recsys("train", "--items", p["items"], "--interactions", p["interactions"], "--epochs", "3",
                 "--out", str(tmp_path / "art"), "--json")
    assert out.returncode == 0, out.stderr
    trained = json.loads(out.stdout)
    # every clicked item of a held-out query is one of its four right items, which come first
    assert trained["metrics"]["held_out"]["model"]["recall@10"] == 1.0
    assert trained["metrics"] == json.loads((Path(trained["path"]) / "manifest.json").read_text())["metrics"]

    out = recsys("evaluate", "--model", str(tmp_path / "art"), "--items", p["items"],
                 "--judgments", p["judgments"], "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    for system in ("model", "bm25", "popularity", "random"):
        assert set(report[system]) >= {"ndcg@10", "recall@10", "mrr"}
    # every synonym pair ranks its four right items first; BM25 knows no synonym
    assert report["model"]["ndcg@10"] == 1.0 and report["bm25"]["ndcg@10"] < 0.5

    out = recsys("recommend", "scarlet gown", "--k", "3", "--model", str(tmp_path / "art"), "--json")
    ranked = json.loads(out.stdout)
    assert [i["rank"] for i in ranked["items"]] == [1, 2, 3]
    top = ranked["items"][0]
    assert top["attributes"]["color"] == ["red"]

    out = recsys("explain", "scarlet gown", top["item_id"], "--model", str(tmp_path / "art"), "--json")
    detail = json.loads(out.stdout)
    assert [h["head"] for h in detail["heads"]] == ["quality", "color", "style", "other"]

    # the readable renderings
    out = recsys("recommend", "scarlet gown", "--k", "3", "--model", str(tmp_path / "art"))
    assert out.returncode == 0 and top["item_id"] in out.stdout
    out = recsys("explain", "scarlet gown", top["item_id"], "--model", str(tmp_path / "art"))
    assert out.returncode == 0 and "color head" in out.stdout and "(no match)" in out.stdout


def test_recommend_without_a_model_says_how_to_get_one(tmp_path):
    out = recsys("recommend", "red", cwd=tmp_path)
    assert out.returncode == 2
    assert "no model here" in out.stderr and "recsys train" in out.stderr


def expected_message(path: Path) -> str:
    kind = path.name.split("_")[0]
    with pytest.raises(DataError) as caught:
        if kind == "items":
            read_items(path)
        elif kind == "interactions":
            read_interactions(path, ITEM_IDS, unknown_items="error")
        else:
            Schema.load(path)
    return str(caught.value)


BROKEN = sorted(p.name for p in BAD.iterdir() if not p.name.startswith("judgments"))


@pytest.mark.parametrize("name", BROKEN)
def test_bad_input_exits_2_with_the_exact_error_and_writes_nothing(name, tmp_path, capsys):
    """In-process (the same `main` the console script runs), so the corpus runs in seconds."""
    bad = BAD / name
    args = {"items": str(GOOD / "items.csv"), "interactions": str(GOOD / "interactions.csv")}
    kind = name.split("_")[0]
    extra = []
    if kind == "schema":
        extra = ["--schema", str(bad)]
    else:
        args[kind] = str(bad)
    art = tmp_path / "art"
    code = main(["train", "--items", args["items"], "--interactions", args["interactions"],
                 "--out", str(art), "--unknown-items", "error", *extra])
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    assert captured.err.strip() == f"error: {expected_message(bad)}"
    assert not art.exists() or not any(art.iterdir())


def test_the_console_script_reports_bad_input_too(tmp_path):
    bad = BAD / "items_duplicate_id.csv"
    out = recsys("train", "--items", str(bad), "--interactions", str(GOOD / "interactions.csv"),
                 "--out", str(tmp_path / "art"))
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: {expected_message(bad)}"
    assert not (tmp_path / "art").exists()


# ---- every failure is one line and exit code 2 ----------------------------------------------------


def _one_line_error(err: str) -> None:
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err


def test_probes_with_other_columns_are_one_line(planted_artifacts, planted_paths, tmp_path, capsys):
    probes = tmp_path / "probes.csv"
    probes.write_text("query,token,head\nred dress,red,color\n")
    code = main(["evaluate", "--model", str(planted_artifacts[0]), "--items", str(planted_paths["items"]),
                 "--judgments", str(planted_paths["judgments"]), "--probes", str(probes)])
    err = capsys.readouterr().err
    assert code == 2
    _one_line_error(err)
    assert "probes.csv" in err and "word" in err and "facet" in err


@pytest.mark.parametrize(("error", "expected"), [
    (RuntimeError("something\nunexpected"), "RuntimeError: something unexpected"),
    # a pipe of the command's own, not its output: an internal error, not a reader gone
    (BrokenPipeError(32, "Broken pipe"), "internal error: BrokenPipeError"),
])
def test_an_unexpected_error_is_one_line(planted_artifacts, monkeypatch, capsys, error, expected):
    import recsys.artifact

    def broken(path):
        raise error

    monkeypatch.setattr(recsys.artifact, "load_version", broken)
    assert main(["recommend", "red", "--model", str(planted_artifacts[0])]) == 2
    err = capsys.readouterr().err
    _one_line_error(err)
    assert expected in err


def test_output_closed_early_ends_quietly(planted_artifacts, planted_model):
    item = planted_model.catalog.item_ids[0]
    cmd = (f"{sys.executable} -m cli.main explain 'scarlet gown' {item} --model "
           f"{planted_artifacts[0]} --json | head -c 10")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    out = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True,
                         env=env, timeout=300)
    assert len(out.stdout) == 10
    assert (out.stderr, out.returncode) == ("", 0)


@pytest.mark.parametrize("command", [
    ["recommend", "scarlet gown", "--k", "50"],  # rich's rendering
    ["recommend", "scarlet gown", "--json"],
    ["explain", "scarlet gown", "ITEM"],
    ["generate", "--out", "OUT", "--items", "50", "--queries", "50"],
])
def test_a_reader_gone_before_anything_is_written_ends_quietly(planted_artifacts, planted_model,
                                                               tmp_path, command):
    """A real pipe whose read end is closed before the command starts: its first write fails
    (EPIPE), every time. No message, no traceback, exit code 0."""
    item = planted_model.catalog.item_ids[0]
    args = [{"ITEM": item, "OUT": str(tmp_path / "gen")}.get(a, a) for a in command]
    if command[0] != "generate":
        args += ["--model", str(planted_artifacts[0])]
    read, write = os.pipe()
    os.close(read)
    try:
        out = subprocess.run([sys.executable, "-m", "cli.main", *args], stdout=write,
                             stderr=subprocess.PIPE, text=True, timeout=300,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    finally:
        os.close(write)
    assert (out.stderr, out.returncode) == ("", 0)
    if command[0] == "generate":
        assert (tmp_path / "gen" / "items.csv").exists()  # the work was done before the print


def test_skipped_lines_are_printed(tmp_path, capsys):
    items = tmp_path / "items.csv"
    items.write_text((GOOD / "items.csv").read_text() + "A9,Shirt, with a comma,red\n")
    code = main(["train", "--items", str(items), "--interactions", str(GOOD / "interactions.csv"),
                 "--out", str(tmp_path / "art"), "--epochs", "1", "--on-bad-lines", "skip", "--json"])
    err = capsys.readouterr().err
    assert code == 0, err
    lines = len((GOOD / "items.csv").read_text().splitlines()) + 1
    assert f"skipped 1 line of {items}: {lines}" in err


def test_a_library_input_error_is_one_line_and_writes_nothing(tmp_path, capsys):
    code = main(["generate", "--out", str(tmp_path / "d"), "--items", "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "error: n_items and n_queries must be at least 1, got 0 and 4000\n"
    assert not (tmp_path / "d").exists()


def test_train_replaces_the_current_version_only_as_a_retrain_would(planted_paths, tmp_path, capsys):
    """`recsys train` into a folder a server may be watching follows the service's rule: the same
    catalogue, not worse on the same held-out queries, becomes current; another catalogue is
    kept beside it until --activate says so."""
    import pandas as pd

    from recsys.artifact import current_version

    art = str(tmp_path / "art")

    def run(items: str, interactions: str, *extra: str) -> dict:
        code = main(["train", "--items", items, "--interactions", interactions, "--epochs", "2",
                     "--out", art, "--json", *extra])
        assert code == 0
        return json.loads(capsys.readouterr().out)

    p = {k: str(v) for k, v in planted_paths.items()}
    first = run(p["items"], p["interactions"])
    assert first["activated"] and first["decision"] == "activated: no model was being served"
    assert first["summary"].startswith("This model ranks ") and "keyword search (BM25)" in first["summary"]
    again = run(p["items"], p["interactions"])  # same data and seed: the same model, not worse
    assert again["activated"] and again["decision"].startswith("activated: ndcg@10"), again["decision"]
    assert current_version(art) == again["version"]

    items = pd.read_csv(p["items"], dtype=str)
    small = tmp_path / "small.csv"
    items.iloc[:36].to_csv(small, index=False)
    clicks = pd.read_csv(p["interactions"], dtype=str)
    small_clicks = tmp_path / "small_clicks.csv"
    clicks[clicks["item_id"].isin(set(items["item_id"].iloc[:36]))].to_csv(small_clicks, index=False)
    other = run(str(small), str(small_clicks))
    assert not other["activated"] and "another catalogue (36 items" in other["decision"]
    assert "--activate" in other["decision"]
    assert current_version(art) == again["version"] and (Path(art) / other["version"]).is_dir()

    forced = run(str(small), str(small_clicks), "--activate")
    assert forced["activated"] and current_version(art) == forced["version"]


def test_explain_draws_a_heatmap_a_long_description_fits_in_80_columns(tmp_path, capsys):
    """An item with a long description has dozens of attributes in one head: drawn all at once at
    80 columns every column was a sliver without a number. The most attended ones are drawn, the
    rest summed into one column, and the erasure line lists the largest changes."""
    import re

    import pandas as pd

    words = [f"word{i}" for i in range(60)]
    items = pd.DataFrame({"item_id": ["I0", "I1", "I2", "I3"],
                          "title": ["lamp", "walnut desk lamp", "oak chair", "table"],
                          "description": [" ".join(words), "a brass desk lamp", "chair", "table"]})
    items.to_csv(tmp_path / "items.csv", index=False)
    pd.DataFrame({"query": ["lamp", "lamp", "chair", "desk lamp"], "item_id": ["I1", "I0", "I2", "I1"],
                  "label": [1, 1, 1, 1]}).to_csv(tmp_path / "interactions.csv", index=False)
    art = tmp_path / "art"
    assert main(["train", "--items", str(tmp_path / "items.csv"), "--interactions",
                 str(tmp_path / "interactions.csv"), "--epochs", "1", "--out", str(art), "--activate"]) == 0
    capsys.readouterr()
    assert main(["explain", "--model", str(art), "lamp word7", "I0"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80, out
    other = out[out.index("other head"):]
    assert re.search(r"\d+ others", other), other  # the attributes that did not fit, summed
    grid = [line for line in other.splitlines() if line.startswith("│ word7") or line.startswith("│ lamp")]
    assert len(grid) == 2 and all(len(re.findall(r"\d\.\d\d", row)) >= 4 for row in grid), other
    assert "description:word7" in other.replace("\n", "")  # the word the query names is drawn
    assert "smaller)" in other  # 60 erasures are not all listed
