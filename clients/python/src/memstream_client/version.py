"""The package's version (also in ``pyproject.toml``; a unit test keeps the two equal)."""

VERSION = "0.1.0"
