"""Test-session set-up: the fixture plugins, and Hypothesis profiles that make every
randomised test reproducible.

- ``ci`` (the default): the examples saved in ``tests/hypothesis-examples`` (every failure a
  fuzzing run ever found, committed) are replayed first, read-only, then examples drawn from
  the seed that ``pyproject.toml`` fixes (``--hypothesis-seed``): the same inputs every run.
- ``fuzz`` (``make fuzz``): many more examples from a fresh seed, and any failure found is
  saved to ``tests/hypothesis-examples`` so that CI replays it from then on (commit it, and
  add an ``@example`` for it to the test).
"""

import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

pytest_plugins = ["tests.fixtures.stack", "tests.fixtures.gemini"]

EXAMPLES = Path(__file__).parent / "hypothesis-examples"
#: Examples per fuzzed operation in the ``ci`` and ``fuzz`` profiles (tests that fix their own
#: count keep it).
CI_EXAMPLES = 100
FUZZ_EXAMPLES = 2_000

settings.register_profile(
    "ci",
    database=ReadOnlyDatabase(DirectoryBasedExampleDatabase(EXAMPLES)),
    max_examples=CI_EXAMPLES,
    print_blob=True,
)
settings.register_profile(
    "fuzz",
    database=DirectoryBasedExampleDatabase(EXAMPLES),
    max_examples=FUZZ_EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("MEMSTREAM_HYPOTHESIS_PROFILE", "ci"))
