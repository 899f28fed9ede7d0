"""The activation rule of retrains (recsys/promotion.py) on planted manifests."""

from __future__ import annotations

import pytest

from recsys.promotion import decide, decide_after_training, plain_summary, same_catalogue

SCHEMA = {"columns": {}, "rename": {}, "missing": [], "lexicon": {}}


def manifest(items_fp: str = "sha256:aaa", rows: int = 400, schema: dict | None = None,
             held_out: float | None = 0.5, judgments: float | None = None,
             replayed: dict | None = None) -> dict:
    metrics: dict = {}
    if held_out is not None:
        metrics["held_out"] = {"model": {"ndcg@10": held_out}, "bm25": {"ndcg@10": 0.1}}
    if judgments is not None:
        metrics["judgments"] = {"model": {"ndcg@10": judgments}}
    if replayed is not None:
        metrics["replayed"] = replayed
    return {"data": {"items": {"fingerprint": items_fp, "rows": rows}, "schema": schema or SCHEMA},
            "metrics": metrics}


SERVED = manifest(held_out=0.9)  # its own held-out number is never what a retrain is compared on


def replay(held_out: float | None = 0.5, judgments: float | None = None, version: str = "v1") -> dict:
    out: dict = {"version": version}
    if held_out is not None:
        out |= {"held_out": {"ndcg@10": held_out}, "held_out_queries": 7}
    if judgments is not None:
        out |= {"judgments": {"ndcg@10": judgments}, "judgments_queries": 12}
    return out


def test_the_36_item_case_is_kept_however_good_its_numbers():
    small = manifest("sha256:bbb", rows=36, held_out=1.0)
    d = decide("v2", small, "v1", SERVED)
    assert not d.activate
    assert d.reason.startswith("kept, not served: trained on another catalogue (36 items")
    assert "v1 (400 items" in d.reason and "POST /admin/versions/v2/activate" in d.reason


def test_same_items_another_schema_is_another_catalogue():
    other = manifest(schema={**SCHEMA, "columns": {"fabric": "other"}}, replayed=replay(0.1))
    assert not same_catalogue(other, SERVED)
    d = decide("v2", other, "v1", SERVED)
    assert not d.activate
    # the fingerprints are the same: the reason says the schema differs, not "another catalogue"
    assert d.reason.startswith("kept, not served: trained on the same items file (400 items, sha256:aaa) read "
                               "with another schema than the served v1"), d.reason


@pytest.mark.parametrize("mine, theirs, activate", [(0.50, 0.40, True), (0.50, 0.50, True),
                                                    (0.40, 0.50, False)])
def test_same_held_out_queries_not_worse_is_activated(mine, theirs, activate):
    new = manifest(held_out=mine, replayed=replay(theirs))
    d = decide("v2", new, "v1", SERVED)
    assert d.activate is activate
    word = "activated" if activate else "kept, not served"
    assert d.reason.startswith(f"{word}: ndcg@10 {mine:.4f} is ")
    assert f"{theirs:.4f} of v1 on its held-out queries (7 queries" in d.reason


def test_judgments_come_first_when_both_have_them():
    new = manifest(held_out=0.9, judgments=0.3, replayed=replay(0.1, judgments=0.4))
    d = decide("v2", new, "v1", SERVED)
    assert not d.activate and "on the judgments (12 queries" in d.reason


def test_not_replayed_against_the_served_version_is_kept():
    assert not decide("v2", manifest(held_out=0.99), "v1", SERVED).activate  # nothing replayed
    d = decide("v2", manifest(replayed=replay(0.1, version="v0")), "v1", SERVED)
    assert not d.activate and "not evaluated against the served v1 (compared with v0)" in d.reason


def test_forced_or_nothing_served_is_activated():
    small = manifest("sha256:bbb", rows=36)
    assert decide("v2", small, "v1", SERVED, force=True).reason == "activated: forced"
    assert decide("v2", small, None, None).reason == "activated: no model was being served"


def test_a_model_below_its_own_bm25_is_kept_even_with_nothing_served():
    """The held-back report that was activated: model 0.510 against its own BM25 0.833."""
    worse = manifest(held_out=0.510)
    worse["metrics"]["held_out"]["bm25"] = {"ndcg@10": 0.833}
    for served_version, served in ((None, None), ("v1", SERVED)):
        d = decide("v2", worse, served_version, served)
        assert not d.activate
        assert "ndcg@10 0.5100 is below BM25's 0.8330 on its held-out queries" in d.reason
    assert decide("v2", worse, None, None, force=True).activate
    # given judgments, they are the basis: below BM25 there is kept however good held-out is
    judged = manifest(held_out=0.9, judgments=0.40)
    judged["metrics"]["judgments"]["bm25"] = {"ndcg@10": 0.45}
    assert "on the judgments" in decide("v2", judged, None, None).reason
    even = manifest(held_out=0.5)
    even["metrics"]["held_out"]["bm25"] = {"ndcg@10": 0.5}
    assert decide("v2", even, None, None).activate  # not below is enough


def _held_out(model: float, bm25: float, queries: int, se: float | None) -> dict:
    metrics: dict = {"held_out": {"model": {"ndcg@10": model, "queries": queries}, "bm25": {"ndcg@10": bm25}}}
    if se is not None:
        metrics["held_out"]["against_bm25"] = {"difference": model - bm25, "standard_error": se,
                                               "queries": queries}
    return metrics


def test_a_gap_below_bm25_within_the_queries_noise_is_no_reason_to_keep_it():
    """A shop's first model, 0.8052 against BM25's 0.8077 on 20 held-out searches (one search's
    swing moves the mean by 0.05), was kept and its folder served nothing, after a report that
    said it ranked "as well as keyword search". Within one standard error of the per-search
    differences it is served and the report says the gap is noise; beyond it, it is kept and
    never called "as well as"."""
    noisy = manifest()
    noisy["metrics"] = _held_out(0.8052, 0.8077, 20, 0.012)
    assert decide("v2", noisy, None, None).activate
    line = plain_summary(noisy["metrics"])
    assert line.startswith("This model ranks as well as keyword search (BM25)")
    assert "within the noise of 20 searches (standard error 0.012)" in line
    measured = manifest()
    measured["metrics"] = _held_out(0.8052, 0.8077, 5000, 0.001)
    d = decide("v2", measured, None, None)
    assert not d.activate and "more than its standard error 0.0010 over 5000 searches" in d.reason
    assert plain_summary(measured["metrics"]).startswith("This model ranks 0.3% worse than keyword search")
    # a report without the per-search figure (an older version's) keeps the strict rule
    older = manifest()
    older["metrics"] = _held_out(0.8052, 0.8077, 20, None)
    assert not decide("v2", older, None, None).activate


@pytest.mark.parametrize(("model", "bm25", "says"), [
    (0.414, 0.383, "This model ranks 8% better than keyword search (BM25) on searches held out of "
                   "training (1,882): NDCG@10 0.414 against 0.383."),
    (0.30, 0.40, "This model ranks 25% worse than keyword search (BM25)"),
    (0.401, 0.400, "This model ranks as well as keyword search (BM25)"),
])
def test_the_report_leads_with_a_plain_sentence_against_keyword_search(model, bm25, says):
    metrics = {"held_out": {"model": {"ndcg@10": model, "queries": 1882}, "bm25": {"ndcg@10": bm25}}}
    assert plain_summary(metrics).startswith(says)


def test_the_plain_sentence_names_the_judgments_when_they_judge_and_says_why_clicks_score_lower():
    metrics = {"held_out": {"model": {"ndcg@10": 0.194}, "bm25": {"ndcg@10": 0.18}},
               "judgments": {"model": {"ndcg@10": 0.988, "queries": 40}, "bm25": {"ndcg@10": 0.497}}}
    line = plain_summary(metrics)
    assert line.startswith("This model ranks 99% better than keyword search (BM25) on your judged "
                           "searches (40): NDCG@10 0.988 against 0.497.")
    assert "clicks" in line
    assert "untrained start" in plain_summary({"faithfulness": {}})  # nothing held out
    empty = {"held_out": {"model": {"ndcg@10": 0.0, "queries": 0}, "bm25": {"ndcg@10": 0.0, "queries": 0}}}
    assert plain_summary(empty).startswith("No searches could be held out")
    # what the version is, not whether it is served: the activation line says that ("kept, not
    # served" after a line that said "it serves its untrained start" read as a contradiction)
    assert "it is its untrained start" in plain_summary(empty) and "serves" not in plain_summary(empty)


def test_the_plain_sentence_when_keyword_search_found_nothing_and_when_the_searches_are_few():
    line = plain_summary({"held_out": {"model": {"ndcg@10": 0.25, "queries": 2}, "bm25": {"ndcg@10": 0.0}}})
    assert line.startswith("This model ranks better than keyword search (BM25), which found none")
    assert "With 2 searches this is a rough figure." in line


def test_with_nothing_held_out_the_plain_sentence_gives_the_known_item_figures():
    metrics = {"held_out": {"model": {"ndcg@10": 0.0, "queries": 0}, "bm25": {"ndcg@10": 0.0}},
               "known_item": {"model": {"ndcg@10": 0.612, "queries": 190}, "bm25": {"ndcg@10": 0.600}}}
    line = plain_summary(metrics)
    assert line.startswith("No searches could be held out")
    assert line.endswith("On 190 searches drawn from the items' own words (a few words of one item "
                         "each) it ranks 2% better than keyword search (BM25): NDCG@10 0.612 against "
                         "0.600.")


def test_a_version_with_no_searches_held_out_does_not_replace_the_served_one():
    served = {"data": {"items": {"fingerprint": "sha256:a"}, "schema": {}}}
    new = {"data": {"items": {"fingerprint": "sha256:a"}, "schema": {}},
           "metrics": {"held_out": {"model": {"ndcg@10": 0.0, "queries": 0}, "bm25": {"ndcg@10": 0.0}},
                       "replayed": {"version": "v1", "held_out": {"ndcg@10": 0.0}, "held_out_queries": 0}}}
    decision = decide("v2", new, "v1", served)
    assert not decision.activate
    assert decision.reason.startswith("kept, not served: no searches were held out to compare it "
                                      "with the served v1"), decision.reason


# ---- a version that trained while the served one could move (retrain jobs, `recsys train`) ----

REVISED = manifest("sha256:ccc", rows=401)  # the served catalogue after a change made meanwhile


def test_nothing_moved_is_decided_on_the_version_it_was_replayed_on():
    new = manifest(held_out=0.6, replayed=replay(0.5))
    d = decide_after_training("v2", new, "v1", SERVED, "v1", SERVED)
    assert d.activate and d.reason.startswith("activated: ndcg@10 0.6000")


def test_a_move_meanwhile_keeps_it_as_not_compared_with_what_is_served_now():
    new = manifest(held_out=0.6, replayed=replay(0.5))
    d = decide_after_training("v3", new, "v1", SERVED, "v2", REVISED)
    assert not d.activate
    assert d.reason.startswith("kept, not served: trained on another catalogue") and "the served v2" in d.reason


def test_forced_is_kept_when_the_catalogue_changed_meanwhile():
    new = manifest(held_out=0.6)
    d = decide_after_training("v3", new, "v1", SERVED, "v2", REVISED, force=True)
    assert not d.activate
    assert d.reason.startswith("kept, not served: the served catalogue changed while it trained (v1 -> v2)")
    assert "POST /admin/versions/v3/activate?force=true" in d.reason


def test_forced_is_activated_when_the_move_kept_the_catalogue():
    again = manifest(held_out=0.7)  # another version of the same catalogue (a retrain served meanwhile)
    d = decide_after_training("v3", manifest(held_out=0.2), "v1", SERVED, "v2", again, force=True)
    assert d.activate and d.reason == "activated: forced"
