from typing import Any

from memstream.tokens import TokenCounter


def test_remembered_counts_are_the_tokenizers_and_the_cache_stays_bounded() -> None:
    counter = TokenCounter()
    counter.CACHED = 3
    texts = ["alpha beta", "gamma", "a much longer line of text to count", "delta", "alpha beta"]
    fresh = [TokenCounter().count(t) for t in texts]
    assert counter.count_many(texts) == fresh
    assert counter.count_many(texts[::-1]) == fresh[::-1], "answered from the cache, the same"
    assert len(counter._counts) == 3
    long = "word " * 2_000
    assert counter.count_many([long]) == [TokenCounter().count(long)] and (None, long) not in counter._counts


def test_a_single_count_is_remembered_too() -> None:
    """A context counts its header and section titles on every call: ``count`` answers them
    from the cache after the first time, the same as the tokenizer would."""
    counter = TokenCounter()
    encoded: list[str] = []
    real = counter._tokenizer

    class Recording:  # the tokenizer, noting every text it encodes
        def encode_batch(self, texts: list[str], **options: Any) -> Any:
            encoded.extend(texts)
            return real.encode_batch(texts, **options)

    counter.__dict__["_tokenizer"] = Recording()
    title = "## Relevant memories"
    assert counter.count(title) == TokenCounter().count(title)
    assert counter.count(title) == TokenCounter().count(title)
    assert encoded == [title]
    long = "word " * 2_000
    assert counter.count(long) == counter.count(long) and encoded.count(long) == 2, "long texts are not kept"


def test_a_count_remembered_for_one_tenant_is_not_another_tenants() -> None:
    """A remembered count is faster than a fresh one: shared across tenants, it would tell one
    tenant which lines another's context held."""
    counter = TokenCounter(remember_untenanted=False)
    encoded: list[str] = []
    real = counter._tokenizer

    class Recording:
        def encode_batch(self, texts: list[str], **options: Any) -> Any:
            encoded.extend(texts)
            return real.encode_batch(texts, **options)

    counter.__dict__["_tokenizer"] = Recording()
    line = "- [2026-01-02, episodic] the merger with globex closes in March"
    acme, globex = counter.for_tenant("acme"), counter.for_tenant("globex")
    assert acme.count(line) == acme.count(line) == globex.count(line) == TokenCounter().count(line)
    assert encoded == [line, line], "counted once for each tenant"
    counter.count(line)
    counter.count(line)
    assert encoded == [line] * 4, "a count for no tenant is not remembered by the gateway's counter"
    assert set(counter._counts) == {("acme", line), ("globex", line)}


#: Lines a prompt can hold: items, titles, indented continuations, blank lines, leading and
#: trailing blanks, tabs, code, numbers, accents, other scripts, emoji (byte fallback), CR.
PINNED_LINES = [
    "# Memory for alice (project blog, session s-1)",
    "## Relevant memories",
    "- [2026-11-02, episodic] The deploy of the payments service failed: migration locked `orders` for 40 s.",
    "    a continuation line of a stored turn",
    "",
    " ",
    "\tindented with a tab",
    "user: héllo wörld, ça va? Ünïcödé",
    "assistant: 日本語のテキストと中文",
    'tool: {"status": 503, "retry_after": 2.5}',
    "def f(x):  return x ** 2  # code",
    "emoji 🚀🔥 and a zero-width\u200bjoiner",
    "trailing spaces   ",
    "carriage\rreturn",
    "-" * 40,
    "1234567890 3.14159 0xdeadbeef",
    "- an item of two lines\n    its continuation",
]


def test_a_joined_prompt_counts_exactly_as_the_whole_text() -> None:
    import random

    counter = TokenCounter()
    rng = random.Random(20261201)
    samples = [
        PINNED_LINES,
        PINNED_LINES[::-1],
        ["only one line"],
        ["", ""],
        ["", " "],
        [""],
        ["a", "", "b", " ", " c"],
    ]
    samples += [[rng.choice(PINNED_LINES) for _ in range(rng.randint(1, 30))] for _ in range(200)]
    for lines in samples:
        assert counter.count_joined(lines) == counter.count("\n".join(lines)), lines
    assert counter.count_joined([]) == 0 == counter.count("")


def test_a_batch_of_many_tenants_is_counted_for_each_text_s_own_tenant() -> None:
    counter = TokenCounter(remember_untenanted=False)
    counts = counter.count_owned(["hello there", "hello there"], ["acme", "globex"])
    assert counts == [TokenCounter().count("hello there")] * 2
    assert set(counter._counts) == {("acme", "hello there"), ("globex", "hello there")}
    counter.count_many(["hello there"])
    assert (None, "hello there") not in counter._counts, "a call that names no tenant is not remembered"
