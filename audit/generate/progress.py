"""What the user sees while a run goes: one-line notes and the progress of each round of requests."""

from __future__ import annotations

import sys
import time
from typing import IO


def note(log: IO[str], msg: str) -> None:
    """One `audit generate: MSG` line on the run's log stream, flushed at once."""
    log.write(f"audit generate: {msg}\n")
    log.flush()


class Progress:
    """Rows done, tokens/s and ETA on stderr: a redrawn bar on a terminal, a line every 10% otherwise."""

    def __init__(self, label: str, total: int, enabled: bool = True, stream: IO[str] | None = None):
        self.label = label
        self.total = total
        self.done = 0
        self.tokens = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = self.enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.monotonic()
        self._last = 0.0
        self._next_line = 0

    def update(self, tokens: int = 0) -> None:
        """One more row done, with its completion tokens; redraw when it is time."""
        self.done += 1
        self.tokens += tokens
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            if now - self._last >= 0.1 or self.done == self.total:
                self._last = now
                self.stream.write("\r" + self.render(now))
                self.stream.flush()
        elif self.done >= self._next_line or self.done == self.total or now - self._last >= 30:
            self._last = now
            self._next_line = self.done + max(1, self.total // 10)
            self.stream.write(self.render(now) + "\n")
            self.stream.flush()

    def render(self, now: float) -> str:
        """The progress text at monotonic time `now`: a bar on a terminal, a plain line otherwise."""
        elapsed = max(now - self.t0, 1e-9)
        rate = self.tokens / elapsed
        left = self.total - self.done
        eta = elapsed / self.done * left if self.done else float("nan")
        eta_s = "?" if eta != eta else (f"{int(eta // 60)}m{int(eta % 60):02d}s" if eta >= 60 else f"{eta:.0f}s")
        if self.tty:
            width = 24
            filled = int(width * self.done / self.total)
            bar = "#" * filled + "." * (width - filled)
            return f"{self.label} [{bar}] {self.done}/{self.total} rows  {rate:.1f} tok/s  ETA {eta_s} "
        return f"{self.label}: {self.done}/{self.total} rows, {rate:.1f} tok/s, ETA {eta_s}"

    def close(self) -> None:
        """End the redrawn bar's line (a terminal only)."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
