"""No query can make the read path's own text processing (query decomposition, time words)
take superlinear time: a 2 KB query with a run of 2,000 spaces once held the gateway's event
loop for 14 s. A hang detector, not a benchmark: the bound is generous, the inputs large."""

from datetime import UTC, datetime

import pytest

from agents_gateway.retrieval.decomposition import split_rules
from memstream.extraction.timewords import rewrite_relative_time
from tests.cpu_time import best_cpu_seconds

SIZE = 64 * 1024
FAMILIES = [" ", "\t", "\u00a0", " and", ", ", ",", "?", ";", " as well as", " , and ", "last ", "in the last ",
            "session ", "now ", "yesterday's ", "this morning ", "a"]  # fmt: skip


@pytest.mark.parametrize("unit", FAMILIES, ids=[repr(f) for f in FAMILIES])
def test_query_processing_is_linear(unit: str) -> None:
    query = "a" + unit * (SIZE // len(unit)) + "b"

    def process() -> None:
        split_rules(query)
        rewrite_relative_time(query, session_id="s", previous_session_id="p", now=datetime(2026, 12, 1, tzinfo=UTC))

    assert best_cpu_seconds(process, bound_s=2.0) < 2.0
