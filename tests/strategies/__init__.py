"""Hypothesis strategies shared by unit and integration tests."""
