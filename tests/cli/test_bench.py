"""`recsys bench`: a small smoke run. No timing is asserted (the machine is shared)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cli.bench import format_report
from cli.main import main

ENGINES = ("model", "recommend", "index", "index_cold", "reference", "bm25s", "tantivy")


def test_bench_json_smoke_run(capsys):
    assert main(["bench", "--items", "2000", "--queries", "20", "--rounds", "2", "--json"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out)  # exactly one JSON object on stdout; progress goes to stderr
    assert result["items"] == 2000 and result["queries"] == 20
    for name in ENGINES:
        figures = result[name]
        assert set(figures) >= {"p50_ms", "p99_ms", "qps", "build_s"}
        assert 0 < figures["p50_ms"] <= figures["p99_ms"]
        assert figures["qps"] > 0 and figures["build_s"] >= 0
    assert result["reference"]["queries"] >= 3
    # the production path is exact: it ranks like the reference and its scores are the same
    assert result["agree@10"] >= 0.9
    assert result["max_abs_score_diff"] < 1e-3
    assert 0 < result["bytes_per_item"] < 2000
    assert result["training"]["interactions_per_s"] > 0
    # each production engine ran the queries once per round, the lexical ones beside each of the
    # four; the ratio is the median of the rounds' two
    assert result["rounds"] == 2 and result["model"]["queries"] == 40 and result["tantivy"]["queries"] == 160
    per_round = result["ratios"]["model_p50_over_tantivy_per_round"]
    assert len(per_round) == 2
    assert result["ratios"]["model_p50_over_tantivy"] == pytest.approx(sum(per_round) / 2, rel=1e-3)
    report = format_report(result)
    assert "tantivy" in report and "interactions/s" in report and "bytes per item" in report


def test_bench_without_tantivy_says_which_extra_to_install(monkeypatch, capsys):
    import sys

    from cli import bench

    monkeypatch.setitem(sys.modules, "tantivy", None)  # `import tantivy` raises ImportError
    # said at once, not after generating and training
    monkeypatch.setattr(bench, "generate", lambda *a, **k: pytest.fail("generated before the check"))
    assert main(["bench", "--items", "100000", "--queries", "20"]) == 2
    assert capsys.readouterr().err == ("error: recsys bench needs tantivy, which is not installed: "
                                       "pip install -e '.[bench]'\n")


@pytest.fixture
def planted_csvs(tmp_path):
    from tests.planted import planted_interactions, planted_items

    items = planted_items()
    items.to_csv(tmp_path / "items.csv", index=False)
    planted_interactions(items, n_queries=60).to_csv(tmp_path / "interactions.csv", index=False)
    return tmp_path / "items.csv", tmp_path / "interactions.csv"


@pytest.mark.parametrize("with_interactions", [True, False])
def test_bench_on_a_catalogue_reports_it_and_every_engine(planted_csvs, with_interactions, capsys):
    items, interactions = planted_csvs
    args = ["bench", "--catalog", str(items), "--queries", "12", "--rounds", "1", "--reference-seconds", "1"]
    if with_interactions:
        args += ["--interactions", str(interactions)]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["catalogue"] == str(items) and result["items"] == 48 and result["queries"] == 12
    for name in ENGINES:
        assert result[name]["queries"] > 0
    if with_interactions:  # trained on the file (its distinct rows), timed on its search terms
        assert 0 < result["training"]["interactions"] <= len(pd.read_csv(interactions))
        assert result["query_source"] == f"the search terms of {interactions}"
    else:  # the untrained start on known-item queries
        assert result["training"]["interactions"] == 0 and "known-item" in result["query_source"]
    assert result["agree@10"] >= 0.9  # the same exact path as the synthetic bench
    report = format_report(result)
    assert report.startswith(f"catalogue: {items}, 48 items")
    assert all(name in report for name in ENGINES) and "model p50 / tantivy p50" in report


def test_bench_interactions_without_a_catalogue_is_refused(capsys):
    assert main(["bench", "--interactions", "interactions.csv"]) == 2
    assert "--interactions needs --catalog" in capsys.readouterr().err


def test_bench_http_reads_http_bench_figures(monkeypatch, capsys):
    """`recsys bench --http-only` runs benchmarks/http_bench.py --ratios for 1 and 2 workers and
    reports its medians (the run itself is the benchmark's: a fake one here)."""
    import subprocess
    from pathlib import Path

    from cli import bench

    asked = []

    def fake_run(cmd, **kw):
        asked.append(cmd)
        phases = {"/health": {"rps": 2000.0, "of_health": 1.0, "cpu_ms": 0.2},
                  "/recommend explain false": {"rps": 1000.0, "of_health": 0.5, "cpu_ms": 0.4},
                  "/recommend explain true": {"rps": 500.0, "of_health": 0.25, "cpu_ms": 0.8}}
        Path(cmd[cmd.index("--json") + 1]).write_text(json.dumps({
            "items": 3000, "k": 10, "client": "wrk -t2 -c16", "seconds": 2.0, "rounds": 1,
            "load_start": "1.00 1.00 1.00 (1, 5, 15 min; 2 cores)", "load_end": "1.50 1.00 1.00",
            "workers": {"1": phases, "2": phases}}))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    assert main(["bench", "--http-only", "--rounds", "1", "--http-seconds", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    [cmd] = asked
    assert cmd[1] == str(bench.HTTP_BENCH) and cmd[cmd.index("--workers") + 1] == "1,2"
    assert cmd[cmd.index("--rounds") + 1] == "1" and cmd[cmd.index("--seconds") + 1] == "2"
    assert set(result) == {"http"} and set(result["http"]["workers"]) == {"1", "2"}
    report = format_report(result)
    assert "POST /recommend, explain true" in report and "load average 1.00 1.00 1.00 at the start" in report
    assert [line.split()[0] for line in report.splitlines()[2:]] == ["1"] * 3 + ["2"] * 3


def test_bench_http_failure_says_so(monkeypatch, capsys):
    import subprocess

    from cli import bench

    monkeypatch.setattr(bench.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 3))
    with pytest.raises(RuntimeError, match="exit code 3"):
        bench.run_http(rounds=1, seconds=1)
