"""Linear-time scanning helpers shared by the extractor families."""

from __future__ import annotations

import re

_FIRST_WINDOW = 4096


def last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The match of `pattern` that starts last in `text`, scanning backwards in growing windows.

    Only for patterns whose set of match positions does not depend on where a scan
    starts (e.g. single-character matches guarded by `\\b`): `finditer(text, pos)`
    still sees the real character before `pos`, so `\\b` and lookbehinds behave as in
    a scan from 0. Windows grow 4x, so the total work stays under 4/3 of one pass.
    """
    n = len(text)
    size = _FIRST_WINDOW
    while True:
        start = max(0, n - size)
        last = None
        for last in pattern.finditer(text, start):
            pass
        if last is not None or start == 0:
            return last
        size *= 4


def last_of(matches) -> re.Match[str] | None:  # type: ignore[no-untyped-def]
    """The last item of an iterator of matches, or None."""
    last = None
    for last in matches:
        pass
    return last
