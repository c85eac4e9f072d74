"""Progress of a replay on stderr: events done, events/s and the time left.

On a terminal one line is rewritten in place, at most every 0.2 s; otherwise (a log file, a
pipe) a line is printed every ``every_s`` seconds.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Progress:
    def __init__(self, total: int, *, done: int = 0, label: str = "replay", stream: TextIO | None = None,
                 every_s: float = 5.0) -> None:  # fmt: skip
        self.total = total
        self.done = done
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every_s = 0.2 if self.tty else every_s
        self.started = time.monotonic()
        self.start_done = done
        self._shown = 0.0

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return (self.done - self.start_done) / elapsed if elapsed > 0 else 0.0

    def advance(self, events: int) -> None:
        self.done += events
        self.total = max(self.total, self.done)
        now = time.monotonic()
        if now - self._shown >= self.every_s:
            self._shown = now
            self._show()

    def line(self) -> str:
        rate = self.rate
        percent = 100.0 * self.done / self.total if self.total else 100.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        return (
            f"{self.label}: {self.done:,}/{self.total:,} events ({percent:.1f} %), {rate:,.0f} events/s,"
            f" ETA {duration(left)}"
        )

    def _show(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def finish(self, note: str = "") -> None:
        self._show()
        if self.tty:
            self.stream.write("\n")
        if note:
            self.stream.write(f"{self.label}: {note}\n")
        self.stream.flush()
