"""benchmarks/learning_curve.py on a catalogue it generates (`GENERATED`): the electronics one,
small, at no training terms: the untrained start against BM25 on its held-out searches."""

from __future__ import annotations

import json

from ..benchmark_modules import load


def test_a_generated_catalogue_is_written_when_the_data_folder_has_none(tmp_path, capsys):
    bench = load("learning_curve")
    assert bench.main(["--data", str(tmp_path), "--datasets", "electronics", "--counts", "0", "--no-plot",
                       "--json", "--generator-items", "600", "--generator-seed", "1"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["dataset"] == "electronics" and report["items"] == 600 and report["eval_terms"] > 10
    (point,) = report["points"]
    assert point["train_terms"] == 0 and point["model"] == point["untrained"]
    assert 0 < point["bm25"] <= 1 and 0 < point["model"] <= 1
    assert not (tmp_path / "electronics").exists()  # written elsewhere, never into --data
