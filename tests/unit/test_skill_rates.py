"""A skill's success rate as it is shown (issue 46): successes / attempts with its counts, rounded
as the explorer rounds it; the smoothed rate only ranks."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from sinks.postgres.queries.skills import smoothed_success_rate, success_phrase, success_rate


@pytest.mark.parametrize(
    ("successes", "attempts", "phrase"),
    [(1, 1, "100%, 1 of 1"), (2, 3, "67%, 2 of 3"), (0, 4, "0%, 0 of 4"), (1, 8, "13%, 1 of 8"),
     (1, 200, "1%, 1 of 200"), (0, 0, "0%, 0 of 0")],
)  # fmt: skip
def test_the_record_in_words(successes: int, attempts: int, phrase: str) -> None:
    assert success_phrase(successes, attempts) == phrase


def test_the_rate_shown_is_the_record_and_the_smoothed_one_only_ranks() -> None:
    assert success_rate(1, 1) == 1.0 and success_rate(0, 0) == 0.0
    assert smoothed_success_rate(1, 1) == pytest.approx(2 / 3)
    # Half up, as JavaScript's Math.round in the explorer's percent(): 12.5 % is 13 %.
    for attempts in range(1, 41):
        for successes in range(attempts + 1):
            shown = int(success_phrase(successes, attempts).split("%")[0])
            assert shown == math.floor(Fraction(100 * successes, attempts) + Fraction(1, 2))
