"""``bench.read``'s questions: ``--warm-pool``'s untimed ones change nothing the timed ones ask."""

import random

from bench.read import Questions, WarmUpQuestions, context_params, search_params


def test_warm_up_questions_leave_the_timed_sequence_as_it_was_and_never_repeat_it() -> None:
    plain = Questions(random.Random(13))
    expected = [p["q"] for p in search_params(plain, 300)]
    timed, warm = Questions(random.Random(13)), WarmUpQuestions(14)
    asked: list[str | int] = []
    for _ in range(3):
        warming = [p["q"] for p in search_params(warm, 40)] + [p["query"] for p in context_params(warm, 40)]
        asked += [p["q"] for p in search_params(timed, 100)]
        assert not set(warming) & set(expected), (
            "a warm-up question the timed ones ask would be answered from the cache"
        )
    assert asked == expected
