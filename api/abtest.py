"""Online experiments between model versions: which arm a shopper is in, and how the arms compare.

Pure functions, no I/O: the service (api/experiments.py) splits traffic with `assign_arm` and
reports with `compare_rates`.

- **The split** hashes `experiment name + user_id` (SHA-256) to a number in [0, 1) and walks the
  arms' cumulative traffic shares: the same user is always in the same arm of one experiment,
  and the name salts it, so a new experiment reshuffles users instead of putting the same ones
  in its B arm again.
- **A rate's 95% interval** is Wilson's score interval: unlike the normal (Wald) interval it
  stays inside [0, 1] and keeps its coverage at the small rates (carts, purchases) and counts
  an experiment starts with.
- **The difference of two rates** gets Newcombe's hybrid score interval (his method 10, built
  from the two Wilson intervals), and its significance the two-sided two-proportion z-test with
  the pooled rate (the same as Pearson's chi-square test of the 2x2 table).

Both treat every impression as an independent trial. A shopper's impressions are not quite
independent (some users click more than others), so with few users per arm the intervals are
somewhat too narrow; the split by user keeps the two arms' users apart, which the comparison
needs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile: two-sided 95%
ALPHA = 0.05


def hash_unit(salt: str, key: str) -> float:
    """A number in [0, 1) that depends only on (salt, key), the same on every machine and run."""
    digest = hashlib.sha256(f"{salt}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def assign_arm(experiment: str, user_id: str, arms: Sequence[tuple[str, float]]) -> str:
    """The arm of `user_id`: `arms` are (name, traffic share) in their fixed order, shares
    summing to 1. The last arm also takes what float rounding leaves at the top of [0, 1)."""
    u = hash_unit(experiment, user_id)
    edge = 0.0
    for name, share in arms:
        edge += share
        if u < edge:
            return name
    return arms[-1][0]


@dataclass(frozen=True)
class Rate:
    """`successes` of `trials`, with Wilson's 95% interval (0 trials: rate 0, interval [0, 1])."""

    successes: int
    trials: int
    rate: float
    low: float
    high: float


def wilson(successes: int, trials: int, z: float = Z95) -> Rate:
    if trials <= 0:
        return Rate(successes, trials, 0.0, 0.0, 1.0)
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # clamped: at 0 or n successes rounding can put a bound a hair outside [0, 1], or a hair
    # short of the rate itself (5.6e-17 for 0 of 3), which the interval always holds
    return Rate(successes, trials, p, min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half)))


@dataclass(frozen=True)
class Difference:
    """`b.rate - a.rate`, Newcombe's 95% interval, the pooled z-test's z and two-sided p."""

    difference: float
    low: float
    high: float
    z: float
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA


def compare_rates(a: Rate, b: Rate) -> Difference:
    """B against A. With no trials on a side there is nothing to compare: z 0, p 1."""
    d = b.rate - a.rate
    low = d - math.sqrt((b.rate - b.low) ** 2 + (a.high - a.rate) ** 2)
    high = d + math.sqrt((b.high - b.rate) ** 2 + (a.rate - a.low) ** 2)
    z, p = 0.0, 1.0
    if a.trials > 0 and b.trials > 0:
        pooled = (a.successes + b.successes) / (a.trials + b.trials)
        se = math.sqrt(pooled * (1 - pooled) * (1 / a.trials + 1 / b.trials))
        if se > 0:
            z = d / se
            p = math.erfc(abs(z) / math.sqrt(2))
    return Difference(d, low, high, z, p)
