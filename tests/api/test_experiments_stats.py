"""api.abtest on planted numbers: the split of users between arms, Wilson's interval,
Newcombe's interval of a difference and the two-proportion z-test, against published values."""

from __future__ import annotations

from collections import Counter

import pytest
from scipy.stats import chi2_contingency

from api.abtest import assign_arm, compare_rates, hash_unit, wilson

HALF = [("A", 0.5), ("B", 0.5)]


def test_a_user_is_always_in_the_same_arm_and_the_name_salts_the_split():
    users = [f"u{i}" for i in range(2000)]
    first = [assign_arm("exp-1", u, HALF) for u in users]
    assert first == [assign_arm("exp-1", u, HALF) for u in users]
    other = [assign_arm("exp-2", u, HALF) for u in users]
    # another experiment reshuffles: about half the users change arm (independent halves)
    changed = sum(a != b for a, b in zip(first, other)) / len(users)
    assert 0.45 < changed < 0.55


@pytest.mark.parametrize("split", [HALF, [("A", 0.9), ("B", 0.1)],
                                   [("A", 0.2), ("B", 0.3), ("C", 0.5)]])
def test_the_split_follows_the_traffic_shares(split):
    n = 40_000
    counts = Counter(assign_arm("shares", f"user-{i}", split) for i in range(n))
    for arm, share in split:
        # binomial sd at n = 40,000 is at most 0.0025; 0.01 is four of them
        assert counts[arm] / n == pytest.approx(share, abs=0.01), counts


def test_the_hash_is_sha256_of_salt_and_key():
    # the first 8 bytes of sha256(b"exp\x00user"), read big-endian, over 2**64
    import hashlib

    expected = int.from_bytes(hashlib.sha256(b"exp\x00user").digest()[:8], "big") / 2**64
    assert hash_unit("exp", "user") == expected
    assert 0 <= hash_unit("exp", "user") < 1
    # a user at u goes to the first arm whose cumulative share is above u
    u = hash_unit("exp", "user")
    assert assign_arm("exp", "user", [("A", u + 1e-9), ("B", 1 - u - 1e-9)]) == "A"
    assert assign_arm("exp", "user", [("A", u), ("B", 1 - u)]) == "B"


# Newcombe, "Two-sided confidence intervals for the single proportion" (Stat Med 1998), Table I,
# the Wilson score interval
@pytest.mark.parametrize("x, n, low, high", [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605),
                                             (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)])
def test_wilson_interval_matches_published_values(x, n, low, high):
    r = wilson(x, n)
    assert r.rate == pytest.approx(x / n)
    assert (r.low, r.high) == pytest.approx((low, high), abs=5e-5)


@pytest.mark.parametrize("n", [1, 3, 7, 10, 33, 1000])
def test_the_interval_holds_the_rate_at_none_and_all(n):
    # rounding put the lower bound of 0 of 3 at 5.6e-17, above the rate
    assert wilson(0, n).low == 0.0 and wilson(n, n).high == 1.0
    for x in range(n + 1) if n <= 33 else (0, 1, n - 1, n):
        r = wilson(x, n)
        assert 0.0 <= r.low <= r.rate <= r.high <= 1.0


def test_no_trials_is_no_information():
    r = wilson(0, 0)
    assert (r.rate, r.low, r.high) == (0.0, 0.0, 1.0)
    d = compare_rates(r, wilson(5, 10))
    assert (d.z, d.p_value, d.significant) == (0.0, 1.0, False)


# Newcombe, "Interval estimation for the difference between independent proportions" (Stat Med
# 1998), Table II, method 10 (hybrid score); the difference is the first minus the second
@pytest.mark.parametrize("x1, n1, x2, n2, low, high", [
    (56, 70, 48, 80, 0.0524, 0.3339),
    (9, 10, 3, 10, 0.1705, 0.8090),
    (5, 56, 0, 29, -0.0381, 0.1926),
])
def test_newcombe_interval_matches_published_values(x1, n1, x2, n2, low, high):
    d = compare_rates(wilson(x2, n2), wilson(x1, n1))  # B = the first, A = the second
    assert d.difference == pytest.approx(x1 / n1 - x2 / n2)
    assert (d.low, d.high) == pytest.approx((low, high), abs=5e-5)


def test_the_z_test_by_hand_and_as_pearsons_chi_square():
    # 50/100 against 65/100: pooled 0.575, se = sqrt(0.575 * 0.425 * (1/100 + 1/100)) = 0.069911
    d = compare_rates(wilson(50, 100), wilson(65, 100))
    assert d.z == pytest.approx(0.15 / 0.0699106, abs=1e-4)
    assert d.p_value == pytest.approx(0.031905, abs=1e-5)
    assert d.significant and d.low > 0
    # the same test as the 2x2 table's chi-square without continuity correction
    for a, b in [((50, 100), (65, 100)), ((480, 10_000), (560, 10_000)), ((3, 40), (1, 45))]:
        got = compare_rates(wilson(*a), wilson(*b)).p_value
        table = [[a[0], a[1] - a[0]], [b[0], b[1] - b[0]]]
        assert got == pytest.approx(chi2_contingency(table, correction=False)[1], rel=1e-9)


def test_a_small_difference_on_few_trials_is_not_significant():
    d = compare_rates(wilson(8, 100), wilson(6, 100))
    assert not d.significant and d.low < 0 < d.high
