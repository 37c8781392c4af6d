"""math.hendrycks@985bdc1: the classic MATH string normalizer, reproduced with its bugs.

Source: hendrycks/math, commit 985bdc1696e88e8643f081a0ff4719da39f2ae2a,
`modeling/math_equivalence.py` (`is_equiv`, `_strip_string`, `_fix_fracs`, `_fix_a_slash_b`,
`_remove_right_units`, `_fix_sqrt`). MIT licence. Reimplemented here from reading; the behaviour
is meant to be identical so that old MATH scores can be diffed against `math.equiv`.

What it does: both strings go through `_strip_string` and are compared for equality. Any
exception inside the normalizer (see the traps below) makes `is_equiv` fall back to comparing
the raw strings.

Known traps, all reproduced on purpose:
- `x = 4` vs `4`: only a left side of at most two characters is dropped (`k = 4` → `4`), and only
  when the string has exactly one `=`. `x=4` works, `AB = 4` does not.
- `\\dfrac`/`\\tfrac` are rewritten by plain substring replacement, so `\\dfrac` → `\\frac` works.
- Units: only `\\text{ ` with a space after the brace counts; two such groups raise inside the
  normalizer (an assert), so the raw strings are compared.
- `\\sqrt` at the very end of a string, and `\\frac` at the end, raise IndexError: raw comparison.
- `0.5` becomes `\\frac{1}{2}`, but no other decimal is converted; `1/2` → `\\frac{1}{2}` only for
  plain integers written canonically.
- No symbolic equality at all: `\\frac{2}{4}` != `\\frac{1}{2}`, `10,000` != `10000`,
  `2 \\pi` != `2\\pi` is equal only because spaces are removed.
"""

from __future__ import annotations

from audit.graders import Judgment, register

SOURCE = "hendrycks/math@985bdc1696e88e8643f081a0ff4719da39f2ae2a:modeling/math_equivalence.py"


class _Unparseable(Exception):
    """Where the original code raises; `is_equiv` then compares the raw strings."""


def _fix_fracs(string: str) -> str:
    r"""`\frac12` → `\frac{1}{2}`, `\frac1{72}` → `\frac{1}{72}`; unchanged on a one-character tail."""
    head, *rest = string.split("\\frac")
    if not rest:
        return string
    pieces = [head]
    for tail in rest:
        pieces.append("\\frac")
        if not tail:
            raise _Unparseable("\\frac at the end")  # the original indexes tail[0]
        if tail[0] == "{":
            pieces.append(tail)
            continue
        if len(tail) < 2:
            return string  # the original gives up and returns its input
        first, second, after = tail[0], tail[1], tail[2:]
        if second == "{":
            pieces.append("{" + first + "}" + second + after)
        else:
            pieces.append("{" + first + "}{" + second + "}" + after)
    return "".join(pieces)


def _fix_a_slash_b(string: str) -> str:
    """`3/4` → `\\frac{3}{4}` only when both sides are integers written exactly as Python prints them."""
    parts = string.split("/")
    if len(parts) != 2:
        return string
    try:
        num, den = int(parts[0]), int(parts[1])
    except ValueError:
        return string
    if string != f"{num}/{den}":
        return string
    return "\\frac{" + str(num) + "}{" + str(den) + "}"


def _remove_right_units(string: str) -> str:
    marker = "\\text{ "
    if marker not in string:
        return string
    parts = string.split(marker)
    if len(parts) != 2:
        raise _Unparseable("more than one `\\text{ ` unit")  # an assert in the original
    return parts[0]


def _fix_sqrt(string: str) -> str:
    if "\\sqrt" not in string:
        return string
    head, *rest = string.split("\\sqrt")
    pieces = [head]
    for tail in rest:
        if not tail:
            raise _Unparseable("\\sqrt at the end")  # the original indexes tail[0]
        if tail[0] == "{":
            pieces.append("\\sqrt" + tail)
        else:
            pieces.append("\\sqrt{" + tail[0] + "}" + tail[1:])
    return "".join(pieces)


def strip_string(string: str) -> str:
    """`_strip_string` of the source, step by step in the same order."""
    s = string.replace("\n", "")
    s = s.replace("\\!", "")
    s = s.replace("\\\\", "\\")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "")
    s = _remove_right_units(s)
    s = s.replace("\\%", "")  # the source removes `\%` twice, spelled two ways; same string
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    sides = s.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:
        s = sides[1]
    s = _fix_sqrt(s)
    s = s.replace(" ", "")
    s = _fix_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    s = _fix_a_slash_b(s)
    return s


def is_equiv(str1: str | None, str2: str | None) -> bool:
    """`is_equiv` of the source: equal after `strip_string`, raw equality when stripping fails."""
    if str1 is None and str2 is None:
        return True  # the source prints a warning and returns True
    if str1 is None or str2 is None:
        return False
    try:
        return strip_string(str1) == strip_string(str2)
    except (_Unparseable, IndexError, ValueError):
        return str1 == str2


@register("math.hendrycks", "985bdc1", source=SOURCE,
          description="hendrycks/math is_equiv: string normalizer of the MATH paper, bugs included")
def hendrycks_equiv(answer: str, reference: str, *, num_choices: int | None = None) -> Judgment:
    try:
        sa, sr = strip_string(answer), strip_string(reference)
    except (_Unparseable, IndexError, ValueError) as e:
        same = answer == reference
        why = f"normalizer failed ({e}); raw strings {'equal' if same else 'differ'}"
        return Judgment(True, "correct", why) if same else Judgment(False, "incorrect", why)
    if sa == sr:
        return Judgment(True, "correct", f"stripped strings equal: '{_clip(sa)}'")
    return Judgment(False, "incorrect", f"stripped strings differ: '{_clip(sa)}' vs '{_clip(sr)}'")


def _clip(s: str, limit: int = 60) -> str:
    return s if len(s) <= limit else s[: limit - 1] + "…"
