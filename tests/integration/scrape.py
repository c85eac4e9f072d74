"""Reading a Prometheus ``/metrics`` page in tests."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    """The samples of one ``/metrics`` page."""

    def __init__(self, text: str) -> None:
        self.samples = [
            (sample.name, sample.labels, sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples named ``name`` whose labels include ``labels`` (0 if none)."""
        return sum(
            value
            for sample, have, value in self.samples
            if sample == name and all(have.get(k) == v for k, v in labels.items())
        )

    def labels(self, name: str, label: str, **labels: str) -> dict[str, float]:
        """``label``'s value -> the sample's value, for the samples named ``name`` with ``labels``."""
        return {
            have[label]: value
            for sample, have, value in self.samples
            if sample == name and label in have and all(have.get(k) == v for k, v in labels.items())
        }
