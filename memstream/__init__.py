"""The domain core: what memory is, independent of how it travels or where it is stored.

Settings (``settings.py``), errors, the privacy filter (``privacy.py``), token counting,
importance, fact extraction (``extraction/``), summarisation (``summarization/``), embedders
(``embedder/``) and LLM clients (``llm/``), and the metric collectors they share.

The ground floor above the event contract: it imports only ``schemas`` (and libraries);
``sinks``, ``streams``, ``agents_gateway``, ``ops`` and ``bench`` build on it (``make lint``
checks the direction).
"""
