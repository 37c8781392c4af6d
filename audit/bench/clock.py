"""One clock for a run: Unix seconds derived from a single monotonic reference.

Request times, window edges and GPU samples are all read from it, so they line up on one axis
and a wall-clock step (NTP) during a run cannot reorder them.
"""

from __future__ import annotations

import time


class RunClock:
    """`now()` = the wall time at creation + monotonic time elapsed since."""

    def __init__(self) -> None:
        self._wall0 = time.time()
        self._mono0 = time.perf_counter()

    def now(self) -> float:
        return self._wall0 + (time.perf_counter() - self._mono0)

    def at(self, mono: float) -> float:
        """The run-clock time of a `time.perf_counter()` reading."""
        return self._wall0 + (mono - self._mono0)
