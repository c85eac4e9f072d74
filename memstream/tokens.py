"""Token counting with a real tokenizer that works offline.

The Llama-2 SentencePiece tokenizer ships inside the wordllama wheel; counts
from it are within a few percent of Gemini's for English text, and unlike
``len(text) / 4`` they are right for code, numbers and other languages.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

TOKENIZER_NAME = "llama2-sentencepiece (wordllama wheel)"


class TokenCounter:
    """Counts tokens of many texts at once (the Rust tokenizer releases the GIL).

    Counts of short texts are remembered (``CACHED`` of them, least recently used out): a
    context call counts the same recent turns, facts and memories as the call before it.
    Each count is remembered for the tenant whose texts were counted (``for_tenant``): a
    remembered count is faster, and another tenant must not learn from that what a tenant's
    memory holds. A batch of many tenants' texts (the workers') names each text's tenant
    (``count_owned``). A counter made directly counts for no tenant: with
    ``remember_untenanted`` it remembers those counts too; without it (the gateway's and the
    workers') it does not."""

    name = TOKENIZER_NAME
    CACHED = 20_000
    #: Longer texts are counted every time (rare, and they would crowd the cache).
    CACHED_CHARS = 4_096

    def __init__(self, *, remember_untenanted: bool = True) -> None:
        #: Counts by (tenant, text), the tenant None for a counter made directly.
        self._counts: OrderedDict[tuple[str | None, str], int] = OrderedDict()
        self._tenant: str | None = None
        self._remembers = remember_untenanted

    def for_tenant(self, tenant_id: str) -> TokenCounter:
        """This counter for ``tenant_id``'s texts: the same tokenizer and bound on remembered
        counts, but only the tenant's own counts are answered from memory."""
        self._tokenizer  # noqa: B018 - loaded once, here, for every tenant's counter to share
        counter = copy.copy(self)
        counter._tenant, counter._remembers = tenant_id, True
        return counter

    @cached_property
    def _tokenizer(self) -> Any:
        import wordllama
        from tokenizers import Tokenizer

        path = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
        return Tokenizer.from_file(str(path))

    def count(self, text: str) -> int:
        """One text's count, remembered like ``count_many``'s: a context's header and section
        titles recur on every call, and each encoding costs the tokenizer's round trip."""
        return self.count_many([text])[0]

    def _uncached(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return self._count_keyed(texts, [self._tenant] * len(texts), remember=self._remembers)

    def count_owned(self, texts: Sequence[str], owners: Sequence[str]) -> list[int]:
        """``texts[i]``'s count for tenant ``owners[i]`` (a batch of many tenants: the workers'),
        each remembered for its own tenant only."""
        return self._count_keyed(texts, owners, remember=True)

    def _count_keyed(self, texts: Sequence[str], owners: Sequence[str | None], *, remember: bool) -> list[int]:
        counts: list[int] = []
        missing: list[int] = []
        for i, (text, owner) in enumerate(zip(texts, owners, strict=True)):
            known = self._counts.get((owner, text))
            if known is None:
                missing.append(i)
                counts.append(0)
            else:
                self._counts.move_to_end((owner, text))
                counts.append(known)
        if missing:
            encodings = self._tokenizer.encode_batch([texts[i] for i in missing], add_special_tokens=False)
            for i, encoding in zip(missing, encodings, strict=True):
                counts[i] = len(encoding.ids)
                if len(texts[i]) <= self.CACHED_CHARS and remember:
                    self._counts[owners[i], texts[i]] = counts[i]
            while len(self._counts) > self.CACHED:
                self._counts.popitem(last=False)
        return counts

    def count_joined(self, lines: Sequence[str]) -> int:
        """``count("\\n".join(lines))``, exactly, from remembered counts of the lines.

        Counting a whole prompt again costs 3 ms a context request; its lines were mostly
        counted already (the same recent turns, facts and memories as the call before). The
        tokenizer has no pre-tokenizer and no merge takes a newline (it is the byte-fallback
        token ``<0x0A>``), so a line after a newline is tokenized on its own, only without
        the ``▁`` every text starts with: ``"\\n" + line`` is that ``▁``, the newline and the
        line's tokens. Hence the first line's count plus, for each further line, the count
        of ``"\\n" + line`` less the one ``▁`` (an empty text has none: after an empty first
        line, the second keeps it). ``tests/unit/test_tokens.py`` holds it to ``count`` on
        varied text."""
        if not lines:
            return 0
        if lines[0] == "" and len(lines) > 1:
            return sum(self.line_costs(lines[1:])) + self._PREFIX_TOKENS
        return self.count(lines[0]) + sum(self.line_costs(lines[1:]))

    def line_costs(self, lines: Sequence[str]) -> list[int]:
        """What each line adds to a text after a line that is not empty: its tokens and its
        newline's (``count_joined``'s terms), one encoding per line. A prompt packed line by
        line (``pack``) costs its first line's count plus these, exactly."""
        return [n - self._PREFIX_TOKENS for n in self.count_many(["\n" + line for line in lines])]

    #: Tokens of the ``▁`` in front of every text (in ``"\\n" + line``: before the newline).
    _PREFIX_TOKENS = 1

    def truncate(self, text: str, max_tokens: int) -> str:
        """``text`` cut to about ``max_tokens`` tokens, keeping its head and its tail.

        A long tool log or pasted file keeps its first ~60 % (what was run) and its last
        ~40 % (how it ended), with a marker saying how many tokens were left out.
        """
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        total = len(encoding.ids)
        if total <= max_tokens:
            return text
        offsets = encoding.offsets
        keep = max(0, max_tokens - 12)  # room for the marker
        while True:
            head, tail = (keep * 3) // 5, keep - (keep * 3) // 5
            # Cut between words: the head ends before a token that starts a word, the tail starts at one.
            head_end = offsets[head][0] if head else 0
            tail_start = offsets[total - tail][0] if tail else len(text)
            head_text, tail_text = text[:head_end], text[tail_start:]
            if _mid_word(text, head_end) and len(parts := head_text.rsplit(None, 1)) > 1:
                head_text = parts[0]
            if _mid_word(text, tail_start) and len(parts := tail_text.split(None, 1)) > 1:
                tail_text = parts[1]
            omitted = total - self._uncached(head_text) - self._uncached(tail_text)
            cut = f"{head_text.rstrip()} [… {omitted} tokens omitted …] {tail_text.lstrip()}".strip()
            if self._uncached(cut) <= max_tokens or keep == 0:
                return cut
            keep = max(0, keep - 8)


def _mid_word(text: str, at: int) -> bool:
    return 0 < at < len(text) and not text[at].isspace() and not text[at - 1].isspace()
