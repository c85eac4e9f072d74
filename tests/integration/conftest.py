"""What every integration test may ask for, beside the stack fixtures (tests/fixtures)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiokafka.admin import AIOKafkaAdminClient

from tests.fixtures.stack import RunningStack


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration/" in str(item.path):
            item.add_marker(pytest.mark.integration)


@pytest_asyncio.fixture(loop_scope="session")
async def kafka_admin(stack: RunningStack) -> AsyncIterator[AIOKafkaAdminClient]:
    """An admin client of the session's broker."""
    client = AIOKafkaAdminClient(bootstrap_servers=stack.settings.require_kafka())
    await client.start()
    try:
        yield client
    finally:
        await client.close()
