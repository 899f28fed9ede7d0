"""An experiment's report: per arm impressions and rates with 95% intervals, and every arm
against the first (the control) with the difference's interval and significance.

Events are attributed to arms by their `user_id` (the same hash the split uses, so an event
counts for the arm that answered its user) and counted only within the experiment's window,
`started_at <= timestamp <= ended_at` (up to now while it runs). Events without a user_id are
in no arm. Every rate is per impression, a proportion: a user's clicks (carts, purchases) are
counted up to that user's impressions. A shopper who clicks three times on one answer is one
impression followed by a click, not a CTR of 3; uncapped, such counts made the Wilson interval
take the square root of a negative number, and the report (and ending the experiment) a 500.
The raw counts are in the report as they are.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from store.db import Database
from store.experiments import Experiment, counts_by_user

from .abtest import ALPHA, Rate, assign_arm, compare_rates, wilson

# metric -> (numerator event type, what it is called in a sentence)
METRICS = {"ctr": ("click", "CTR"), "cart_rate": ("cart", "cart rate"),
           "purchase_rate": ("purchase", "purchase rate")}
METHOD = ("rates per impression; 95% intervals: Wilson score; difference (arm minus the control, "
          "the first arm): Newcombe's hybrid score interval; significance: two-sided pooled "
          f"two-proportion z-test at alpha {ALPHA}; events attributed to arms by the hash of "
          "their user_id, counted within the experiment's window; impressions taken as "
          "independent trials; a user's clicks, carts and purchases counted up to that user's "
          "impressions")


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat(timespec="seconds") + "Z"


def describe(exp: Experiment) -> dict[str, Any]:
    """The experiment without its figures (the list of experiments)."""
    return {"name": exp.name, "status": exp.status, "started_at": _iso(exp.started_at),
            "ended_at": _iso(exp.ended_at), "winner": exp.winner,
            "arms": [{"arm": a.arm, "version": a.version, "traffic": a.traffic} for a in exp.arms]}


def _rate(r: Rate) -> dict[str, Any]:
    return {"rate": r.rate, "ci95": [r.low, r.high]}


def report(db: Database, exp: Experiment) -> dict[str, Any]:
    until = exp.ended_at or datetime.now(UTC).replace(tzinfo=None)
    split = [(a.arm, a.traffic) for a in exp.arms]
    counts: dict[str, dict[str, int]] = {a.arm: {} for a in exp.arms}
    users: dict[str, set[str]] = {a.arm: set() for a in exp.arms}
    answers = dict.fromkeys(counts, 0)
    per_user: dict[str, dict[str, int]] = {}
    for c in counts_by_user(db, exp.started_at, until):
        arm = assign_arm(exp.name, c.user_id, split)
        counts[arm][c.type] = counts[arm].get(c.type, 0) + c.events
        per_user.setdefault(c.user_id, {})[c.type] = c.events
        users[arm].add(c.user_id)
        if c.type == "impression":
            answers[arm] += c.answers
    # successes of a proportion: per user, at most that user's impressions
    capped: dict[str, dict[str, int]] = {arm: {} for arm in counts}
    for user, n in per_user.items():
        mine = capped[assign_arm(exp.name, user, split)]
        for t in {t for t, _ in METRICS.values()}:
            mine[t] = mine.get(t, 0) + min(n.get(t, 0), n.get("impression", 0))
    rates = {arm: {m: wilson(capped[arm].get(t, 0), n.get("impression", 0))
                   for m, (t, _) in METRICS.items()} for arm, n in counts.items()}
    arms = []
    for a in exp.arms:
        n = counts[a.arm]
        arms.append({"arm": a.arm, "version": a.version, "traffic": a.traffic,
                     "users": len(users[a.arm]), "answers": answers[a.arm],
                     "impressions": n.get("impression", 0), "clicks": n.get("click", 0),
                     "carts": n.get("cart", 0), "purchases": n.get("purchase", 0),
                     **{m: _rate(r) for m, r in rates[a.arm].items()}})
    control = exp.arms[0].arm
    comparisons: list[dict[str, Any]] = []
    ctr: list[str] = []
    for a in exp.arms[1:]:
        for metric, (_, words) in METRICS.items():
            d = compare_rates(rates[control][metric], rates[a.arm][metric])
            sentence = _sentence(a.arm, control, words, d.difference, d.low, d.high, d.p_value,
                                 d.significant)
            if metric == "ctr":
                ctr.append(sentence)
            comparisons.append({
                "arm": a.arm, "against": control, "metric": metric, "difference": d.difference,
                "ci95": [d.low, d.high], "z": d.z, "p_value": d.p_value,
                "significant": d.significant, "summary": sentence})
    return {**describe(exp), "window": {"from": _iso(exp.started_at), "to": _iso(until)},
            "arms": arms, "comparisons": comparisons, "summary": " ".join(ctr), "method": METHOD}


def _sentence(arm: str, control: str, words: str, d: float, low: float, high: float, p: float,
              significant: bool) -> str:
    ci = f"{d:+.4f} (95% CI {low:+.4f} to {high:+.4f}, p = {p:.2g})"
    if not significant:
        return f"{arm}'s {words} against {control}'s: {ci}, not significant: no difference shown."
    side = "lower" if d < 0 else "higher"
    return f"{arm}'s {words} is significantly {side} than {control}'s: {ci}."
