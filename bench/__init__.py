"""Reproducible benchmarks: each is ``python -m bench.NAME`` and prints JSON on stdout."""
