pytest_plugins = ["tests.fixtures.stack", "tests.fixtures.gemini"]
