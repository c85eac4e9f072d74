"""Cost of the privacy filter per turn: ``python -m bench.privacy [module ...]``.

Runs ``redact`` over the 45 turns of ``bench.conversation`` (user and assistant turns of
about 120 characters, tool output of up to 30,000) and prints, for each module (default
``memstream.privacy``; name an older copy to compare), the median of three runs in µs per
turn, for the short (user/assistant) turns and for all turns. CPU time of this process,
with the modules' runs interleaved, so that a busy machine skews them alike.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.conversation import build_conversation


def one_run(redact: Callable[[str], Any], texts: list[str], repeat: int) -> float:
    started = time.process_time()
    for _ in range(repeat):
        for text in texts:
            redact(text)
    return (time.process_time() - started) / (repeat * len(texts)) * 1e6


def main() -> None:
    names = sys.argv[1:] or ["memstream.privacy"]
    modules = [importlib.import_module(name) for name in names]
    turns = build_conversation()
    every = [t.content for t in turns]
    short = [t.content for t in turns if t.role != "tool"]
    chars = sum(map(len, short)) / len(short)
    for label, texts, repeat in (
        (f"{len(short)} user/assistant turns (mean {chars:.0f} chars)", short, 400),
        (f"all {len(every)} turns", every, 4),
    ):
        runs: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(3):
            for name, module in zip(names, modules, strict=True):
                runs[name].append(one_run(module.redact, texts, repeat))
        for name in names:
            print(f"{name}: {label}: {statistics.median(runs[name]):.1f} µs/turn")


if __name__ == "__main__":
    main()
