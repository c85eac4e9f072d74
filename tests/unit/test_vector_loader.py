"""The binary ``vector`` loader of the pools: pgvector's wire format straight into float32."""

from __future__ import annotations

import numpy as np
import pytest
from pgvector import Vector

from sinks.postgres.pool import VectorArrayLoader


def test_a_binary_vector_loads_as_the_float32_array_it_was() -> None:
    values = np.array([0.5, -1.25, 3.0e-7, 1e30, 0.0], dtype=np.float32)
    loaded = VectorArrayLoader(0).load(Vector(values).to_binary())
    assert loaded.dtype == np.float32
    assert loaded.flags.writeable and loaded.flags.owndata, "a copy, not a view of the connection's buffer"
    np.testing.assert_array_equal(loaded, values)


def test_the_loader_reads_from_a_memoryview() -> None:
    data = memoryview(Vector([1.0, 2.0]).to_binary())
    np.testing.assert_array_equal(VectorArrayLoader(0).load(data), [1.0, 2.0])


def test_a_truncated_vector_is_an_error_not_a_short_array() -> None:
    data = Vector([1.0, 2.0, 3.0]).to_binary()[:-4]
    with pytest.raises(ValueError, match="3 dimensions"):
        VectorArrayLoader(0).load(data)
