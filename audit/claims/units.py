"""Units of claims: which recipe units convert to which claim units, and how values are shown.

A recipe gives its value in one unit (accuracy as a `fraction`); a claim states it in
the unit it was published in (`percent`). Only the conversions below are allowed;
anything else must match exactly, so a tok/s figure is never compared with a ratio.
"""

from __future__ import annotations

CONVERSIONS: dict[tuple[str, str], float] = {
    ("fraction", "percent"): 100.0,
    ("fraction", "points"): 100.0,  # a difference of two fractions, in percentage points
    ("percent", "fraction"): 0.01,
    ("points", "fraction"): 0.01,
    ("ms", "s"): 0.001,
    ("s", "ms"): 1000.0,
    ("ms", "µs"): 1000.0,
    ("µs", "ms"): 0.001,
}
"""(recipe unit, claim unit) → factor."""

MEASURE_DIGITS = {"tok/s": 1, "ms": 3, "µs": 1, "s": 3, "W": 1, "J": 0}
"""Measurement units shown with a fixed number of decimals (a tok/s figure as `203.9 tok/s`, not `203.9`
in one place and `204` in another)."""

ANY = "any"
"""The unit of recipes whose result takes the claim's unit (arithmetic)."""


def factor(recipe_unit: str, claim_unit: str) -> float | None:
    """The factor that turns a value in `recipe_unit` into `claim_unit`, or None when they do not convert."""
    if recipe_unit == claim_unit or recipe_unit == ANY:
        return 1.0
    return CONVERSIONS.get((recipe_unit, claim_unit))


_COUNTS = ("count", "rows", "items", "tasks")


def _number(value: float, unit: str) -> str:
    """The number as `unit` shows it, without the unit."""
    if unit in ("percent", "points"):
        return f"{value:.2f}"
    if unit == "fraction":
        return f"{value:.4f}"
    if unit in _COUNTS:
        return f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"
    if unit == "ratio":
        return f"{value:.3f}"
    if unit in MEASURE_DIGITS:
        return f"{value:,.{MEASURE_DIGITS[unit]}f}"
    return f"{value:.4g}"


def _suffix(unit: str) -> str:
    """What follows a number (or an interval) in `unit`: `%`, ` pts`, `×`, ` tok/s`; nothing for a fraction or
    a count."""
    return {"percent": "%", "points": " pts", "ratio": "×", "fraction": "", "count": ""}.get(unit, f" {unit}")


def fmt(value: float | None, unit: str) -> str:
    """A value as the page and `audit verify` show it: the same text on every machine."""
    if value is None:
        return "—"
    return _number(value, unit) + _suffix(unit)


def fmt_interval(low: float | None, high: float | None, unit: str) -> str:
    """An interval in the unit's own style: `[58.73, 100.00]%`, `[1.812, 2.044]×`, `[0.52, 0.91] s`."""
    if low is None or high is None:
        return "—"
    return f"[{_number(low, unit)}, {_number(high, unit)}]{_suffix(unit)}"
