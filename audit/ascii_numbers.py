"""Numbers as people type them: ASCII digits only.

int() and float() (and re's \\d) take any Unicode digit ("٣" is 3, "３" is 3) and underscores
("1_000" is 1000), so text that only looks like a number would be read as one. Readers of
numbers in text (CLI options, CSV cells, templates) match these first.
"""

from __future__ import annotations

import re

INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
"""A decimal integer, optionally signed."""
FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
"""A decimal number, optionally signed, with an optional exponent (no nan, inf or underscores)."""
