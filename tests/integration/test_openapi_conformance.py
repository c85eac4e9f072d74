"""The OpenAPI document is true: schemathesis, a property-based tester driven by the document
itself, runs every operation against a real gateway process (uvicorn, as deployed) with all of
its checks — no 5xx, status codes, content types and bodies as documented, schema-valid input
accepted and schema-invalid input refused, 405s with a complete ``Allow``, authentication not
ignored — and the stateful phase follows the document's links.

Deterministic in CI: a fixed seed (``make fuzz`` uses a fresh one and more examples; a failure
it finds is reproduced by the command it prints and then pinned as a regression test). ``make fuzz`` runs it
deeper (``MEMSTREAM_SCHEMATHESIS_EXAMPLES``, ``MEMSTREAM_SCHEMATHESIS_SEED``).
The key's and tenant's rate limits are high, so that the logic behind the limiter is tested,
not the limiter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.stack import RunningStack, Served, WorkerHandle, serve_gateway

SCHEMATHESIS = str(Path(sys.executable).parent / "schemathesis")
#: The few documented exceptions (a value whose validity JSON Schema cannot say).
CONFIG = Path(__file__).parent.parent / "schemathesis.toml"
#: Examples per operation in CI (make fuzz sets more), and the seed.
CI_EXAMPLES = 20
SEED = 20261201


@pytest.fixture(scope="module")
def conformance_gateway(stack: RunningStack) -> Iterator[Served]:
    limits = {
        "MEMSTREAM_TENANT_RATE_LIMIT_PER_S": "100000",
        "MEMSTREAM_TENANT_RATE_LIMIT_BURST": "100000",
        "MEMSTREAM_ADDR_RATE_LIMIT_PER_S": "100000",
        "MEMSTREAM_ADDR_RATE_LIMIT_BURST": "100000",
        "MEMSTREAM_PERMISSION_MAX_MATCHING_PER_TENANT": "64",
    }
    with serve_gateway(stack, "gateway-openapi", limits) as gateway:
        yield gateway


def test_the_openapi_document_describes_what_the_gateway_does(
    stack: RunningStack, conformance_gateway: Served, running_memory_worker: WorkerHandle, tenant: str, tmp_path: Path
) -> None:
    """(Both workers run, so that /readyz/workers answers 200: its 503 is documented, but
    schemathesis counts any 5xx as a failure.)"""
    key = stack.key(tenant)  # a tenant-level key with every scope
    examples = int(os.environ.get("MEMSTREAM_SCHEMATHESIS_EXAMPLES", CI_EXAMPLES))
    seed = int(os.environ.get("MEMSTREAM_SCHEMATHESIS_SEED", SEED))
    argv = [
        SCHEMATHESIS, "--config-file", str(CONFIG), "run", f"{conformance_gateway.url}/openapi.json",
        "--checks", "all",
        "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", str(examples),
        "--seed", str(seed),
        "--generation-database", "none",
        "--header", f"Authorization: Bearer {key}",
        "--workers", "1",
        "--request-timeout", "30",
        "--no-color",
        "--output-truncate", "false",
        "--report", "junit", "--report-junit-path", str(tmp_path / "schemathesis.xml"),
    ]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-20_000:] + result.stderr[-5_000:]
