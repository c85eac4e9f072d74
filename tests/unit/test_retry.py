import psycopg
import pytest
import redis.exceptions

from memstream.embedder import EmbeddingError
from sinks.errors import SchemaNotReadyError
from streams.defects import CodeDefectError
from streams.retry import Backoff, EventRejectedError, is_event_error, retry_until_done

FAST = Backoff(initial_s=0.001, max_s=0.002)


async def test_transient_errors_are_retried_until_success() -> None:
    attempts = []

    async def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise psycopg.OperationalError("connection refused")
        return "done"

    assert await retry_until_done(flaky, what="test", backoff=FAST) == "done"
    assert len(attempts) == 3


async def test_data_errors_are_not_retried() -> None:
    attempts = []

    async def bad() -> None:
        attempts.append(1)
        raise psycopg.errors.InvalidTextRepresentation("bad input syntax")

    with pytest.raises(EventRejectedError, match="InvalidTextRepresentation"):
        await retry_until_done(bad, what="test", backoff=FAST)
    assert len(attempts) == 1


async def test_fatal_errors_propagate() -> None:
    async def unmigrated() -> None:
        raise SchemaNotReadyError("run memstream migrate")

    with pytest.raises(SchemaNotReadyError):
        await retry_until_done(unmigrated, what="test", backoff=FAST, fatal=(SchemaNotReadyError,))


@pytest.mark.parametrize(
    ("exc", "event_error"),
    [
        (psycopg.errors.NotNullViolation("null"), True),
        (psycopg.errors.UndefinedTable("no table"), False),  # systemic: retry, don't dead-letter
        (psycopg.OperationalError("down"), False),
        (EmbeddingError("bad text", retryable=False), True),
        (EmbeddingError("429", retryable=True), False),
        (redis.exceptions.ConnectionError("down"), False),
    ],
)
def test_classification(exc: Exception, event_error: bool) -> None:
    assert is_event_error(exc) is event_error


def test_backoff_grows_to_its_cap() -> None:
    delays = Backoff(initial_s=1, max_s=8).delays()
    values = [next(delays) for _ in range(8)]
    assert all(0.5 <= v <= 8 for v in values)
    assert max(values[5:]) > 4


async def test_a_code_defect_is_retried_a_bounded_number_of_times_then_raised() -> None:
    attempts: list[str] = []

    async def defective() -> None:
        # outages in between are not defects and do not count towards the bound
        attempts.append("outage" if len(attempts) % 2 else "defect")
        if attempts[-1] == "outage":
            raise psycopg.OperationalError("connection refused")
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    backoff = Backoff(initial_s=0.001, max_s=0.002, defect_attempts=3)
    with pytest.raises(CodeDefectError) as raised:
        await retry_until_done(defective, what="episodes sink", backoff=backoff, where="t[0]@5")
    assert attempts == ["defect", "outage", "defect", "outage", "defect"]
    defect = raised.value
    assert (defect.what, defect.where, defect.attempts) == ("episodes sink", "t[0]@5", 3)
    assert isinstance(defect.cause, TypeError)
