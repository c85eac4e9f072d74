"""LLM providers: one interface (``base.py``), one file per provider (Gemini)."""
