"""Whether a new version may replace the served one on its own (admin retrains, `recsys train`).

Only when both were evaluated on the same data and the new one is not worse there: the same
catalogue (items file fingerprint and schema), and the same held-out queries, because training
replays the served version on the new version's evaluation sets (`TrainInputs.baseline`): the
judgments when given, else its held-out slice of queries. Anything else is kept, inactive, with
the reason; a new catalogue needs an explicit activation.

Before any of that, a version must rank at least as well as the project's own keyword baseline
(BM25 over the same item text) in its own report: on the judgments when it was given them, else
on its held-out queries. A model that loses to BM25 there is kept, even when nothing is served
yet: serving it would make search worse than the baseline the report printed beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# a rounding difference is no regression
TOLERANCE = 1e-9
# what each evaluation set of a report is called in a reason
_BASIS_WORDS = {"judgments": "the judgments", "held_out": "its held-out queries"}


@dataclass(frozen=True)
class Decision:
    activate: bool
    reason: str


def catalogue_key(manifest: dict[str, Any]) -> tuple[str | None, str]:
    """What makes two versions' catalogues the same: the items file's bytes and the schema."""
    data = manifest.get("data") or {}
    items = data.get("items") or {}
    return items.get("fingerprint"), json.dumps(data.get("schema"), sort_keys=True)


def same_catalogue(a: dict[str, Any], b: dict[str, Any]) -> bool:
    key = catalogue_key(a)
    return key[0] is not None and key == catalogue_key(b)


def catalogue_changed(new_version: str, started_with: str, served_version: str) -> Decision:
    """Why a forced version is kept after all: the served catalogue changed while it trained
    (`started_with` was served when training began, `served_version` is now, on another
    catalogue), and serving it would undo changes that were acknowledged meanwhile. `force`
    overrides the comparison of quality, never a shop's later catalogue changes (a server
    moved what is served, so its admin API is the way to serve this one anyway)."""
    return Decision(False, f"kept, not served: the served catalogue changed while it trained "
                           f"({started_with} -> {served_version}), and serving it would undo those "
                           f"changes; retrain to include them, or POST /admin/versions/"
                           f"{new_version}/activate?force=true serves it as it is")


def decide_after_training(new_version: str, new: dict[str, Any], started_version: str | None,
                          started: dict[str, Any] | None, now_version: str | None, now: dict[str, Any] | None,
                          force: bool = False, hint: str | None = None) -> Decision:
    """`decide` for a version that trained while something else could move what is served
    (a retrain job, `recsys train`): `started_version` was served when training began (what it
    replayed), `now_version` is served now. Compared with the version it was replayed on; when
    the served one moved meanwhile, compared with that (and so kept: it was not replayed on it),
    and even a forced one is kept when the move changed the catalogue (`catalogue_changed`)."""
    moved = now_version is not None and now_version != started_version
    if moved and not force:
        return decide(new_version, new, now_version, now, hint=hint)
    if moved and started_version is not None and started is not None and now is not None \
            and not same_catalogue(now, started):
        return catalogue_changed(new_version, started_version, str(now_version))
    return decide(new_version, new, started_version, started, force=force, hint=hint)


def ndcg(report: dict[str, Any] | None) -> float | None:
    try:
        return float((report or {})["ndcg@10"])
    except (KeyError, TypeError, ValueError):
        return None


def decide(new_version: str, new: dict[str, Any], served_version: str | None,
           served: dict[str, Any] | None, force: bool = False, hint: str | None = None) -> Decision:
    """`new`, `served`: the manifests. The reason is one line, ready for the job and /admin/versions.
    `hint`: how to serve a kept version anyway (default: the admin API's call)."""
    explicit = hint or f"POST /admin/versions/{new_version}/activate serves it"
    forced = hint or f"{explicit}?force=true"
    if force:
        return Decision(True, "activated: forced")
    if served_version is not None and served is not None and not same_catalogue(new, served):
        fp_new, fp_old = catalogue_key(new)[0], catalogue_key(served)[0]
        n_new = ((new.get("data") or {}).get("items") or {}).get("rows")
        n_old = ((served.get("data") or {}).get("items") or {}).get("rows")
        if fp_new == fp_old:  # the same file read with another schema: its fingerprints say nothing
            return Decision(False, f"kept, not served: trained on the same items file ({n_new} items, "
                                   f"{str(fp_new)[:19]}) read with another schema than the served "
                                   f"{served_version}; a catalogue read otherwise needs an explicit "
                                   f"activation: {explicit}")
        return Decision(False, f"kept, not served: trained on another catalogue ({n_new} items, "
                               f"{str(fp_new)[:19]}) than the served {served_version} ({n_old} "
                               f"items, {str(fp_old)[:19]}); a new catalogue needs an explicit "
                               f"activation: {explicit}")
    below = below_baseline(new)
    if below is not None:
        return Decision(False, f"kept, not served: {below}; {forced}")
    if served_version is None or served is None:
        return Decision(True, "activated: no model was being served")
    metrics = new.get("metrics") or {}
    replayed = metrics.get("replayed") or {}
    if replayed.get("version") != served_version:
        return Decision(False, f"kept, not served: it was not evaluated against the served "
                               f"{served_version} (compared with {replayed.get('version')}); "
                               f"{explicit}")
    basis = "judgments" if "judgments" in metrics and "judgments" in replayed else "held_out"
    what = _BASIS_WORDS[basis]
    mine, theirs = ndcg((metrics.get(basis) or {}).get("model")), ndcg(replayed.get(basis))
    if mine is None or theirs is None:
        return Decision(False, f"kept, not served: no ndcg@10 on {what} to compare; {explicit}")
    n = replayed.get(f"{basis}_queries")
    if n == 0:  # both score 0 on no query: a start must not replace a fitted model on that
        return Decision(False, f"kept, not served: no searches were held out to compare it with "
                               f"the served {served_version}; {explicit}")
    on = f"on {what} ({n} queries, the served version replayed on the same ones)"
    if mine + TOLERANCE >= theirs:
        return Decision(True, f"activated: ndcg@10 {mine:.4f} is not below {theirs:.4f} of "
                              f"{served_version} {on}")
    return Decision(False, f"kept, not served: ndcg@10 {mine:.4f} is below {theirs:.4f} of "
                           f"{served_version} {on}; {forced}")


def _against_bm25(metrics: dict[str, Any]) -> tuple[str, float, float, int | None] | None:
    """(basis, the model's NDCG@10, BM25's, how many queries) on the set a version is judged
    by: the judgments when it was given them, else its held-out queries; None without both."""
    basis = "judgments" if "judgments" in metrics else "held_out"
    report = metrics.get(basis) or {}
    mine, bm25 = ndcg(report.get("model")), ndcg(report.get("bm25"))
    if mine is None or bm25 is None:
        return None
    queries = (report.get("model") or {}).get("queries")
    return basis, mine, bm25, int(queries) if isinstance(queries, int | float) else None


def _noise(metrics: dict[str, Any], basis: str) -> float | None:
    """The standard error of the model's NDCG@10 less BM25's over the set's queries
    (`metrics.paired_difference`), or None where the report has no such figure (older ones)."""
    paired = (metrics.get(basis) or {}).get("against_bm25") or {}
    se = paired.get("standard_error")
    return float(se) if isinstance(se, int | float) else None


def _measurably_below(metrics: dict[str, Any]) -> bool | None:
    """Whether the version ranks below BM25 on its set by more than the queries' noise (its mean
    difference below minus one standard error); None where it is not below at all. A gap
    within the noise is no evidence either way: 0.805 against 0.808 on 20 searches, where one
    search's swing is 0.05, left a shop's first model unserved and its folder serving nothing."""
    found = _against_bm25(metrics)
    if found is None or found[1] + TOLERANCE >= found[2]:
        return None
    se = _noise(metrics, found[0])
    return se is None or found[1] - found[2] < -se


def below_baseline(manifest: dict[str, Any]) -> str | None:
    """Why the version ranks measurably below BM25 in its own report (`_measurably_below`), or
    None when it does not (or the report has no such comparison: a run with no held-out
    queries serves the lexical start)."""
    metrics = manifest.get("metrics") or {}
    found = _against_bm25(metrics)
    if found is None or not _measurably_below(metrics):
        return None
    basis, mine, bm25, n = found
    se = _noise(metrics, basis)
    noise = f", more than its standard error {se:.4f} over {n} searches" if se is not None else ""
    return f"ndcg@10 {mine:.4f} is below BM25's {bm25:.4f} on {_BASIS_WORDS[basis]} in its own report{noise}"


# fewer held-out searches than this give a figure that moves by several percent between splits
# (CrowdFlower's 25 move NDCG@10 by 0.01 from one split to another)
ROUGH_BELOW = 30
# what each evaluation set is called for a shop's team
_PLAIN_BASIS = {"judgments": "your judged searches", "held_out": "searches held out of training"}


def plain_summary(metrics: dict[str, Any]) -> str:
    """The report's first line, for a shop's team: how much better (or worse) than keyword
    search (BM25 over the same item text) the model ranks, on the set it is judged by."""
    found = _against_bm25(metrics)
    if found is None or found[3] == 0:  # a report with nothing held out has 0.000 for both
        # whether the version is served is the activation line's to say: "serves" here read as
        # if it were, beside "kept, not served"
        line = ("No searches could be held out to compare this model with keyword search: it is "
                "its untrained start, which ranks as keyword search (BM25) does, with any logged "
                "clicks as evidence.")
        known = metrics.get("known_item") or {}
        mine, bm25 = ndcg(known.get("model")), ndcg(known.get("bm25"))
        if mine is not None and bm25 is not None:
            queries = (known.get("model") or {}).get("queries")
            line += (f" On {queries:,} searches drawn from the items' own words (a few words of "
                     f"one item each) it ranks {_verdict(mine, bm25)}: NDCG@10 {mine:.3f} against "
                     f"{bm25:.3f}.")
        return line
    basis, mine, bm25, queries = found
    on = _PLAIN_BASIS[basis] + (f" ({queries:,})" if queries else "")
    below = _measurably_below(metrics)
    line = f"This model ranks {_verdict(mine, bm25, below)} on {on}: NDCG@10 {mine:.3f} against {bm25:.3f}."
    if below is False:
        line += (f" The gap is within the noise of {queries} searches (standard error "
                 f"{_noise(metrics, basis):.3f}): no evidence that it ranks worse.")
    if queries is not None and queries < ROUGH_BELOW:
        line += f" With {queries} searches this is a rough figure."
    if basis == "judgments" and "held_out" in metrics:
        line += (" The held-out searches below are scored by logged clicks alone, which mark only "
                 "what shoppers clicked: their figures are lower and noisier.")
    return line


def _verdict(mine: float, bm25: float, below: bool | None = None) -> str:
    """'12% better than keyword search (BM25)' and the like. `below`: whether the model is
    measurably below (`_measurably_below`); then it is never "as well as" (a version kept for
    ranking below BM25 was said to rank as well as it, 0.805 against 0.808)."""
    change = mine / bm25 - 1.0 if bm25 > 0 else (1.0 if mine > 0 else 0.0)
    if bm25 <= 0 < mine:
        return "better than keyword search (BM25), which found none of what was wanted,"
    if abs(change) < 0.005 and not below:
        return "as well as keyword search (BM25)"
    share = f"{abs(change):.0%}" if abs(change) >= 0.005 else f"{abs(change):.1%}"
    return f"{share} {'better' if change > 0 else 'worse'} than keyword search (BM25)"
