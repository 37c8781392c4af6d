"""exact.hle@1: HLE-style strict exact match; numbers count only to the reference's stated precision.

Source: the answer-matching rules of Humanity's Last Exam (centerforaisafety/hle, exact-match
questions: "the final answer must match the correct answer") made mechanical, without an LLM
judge. Multiple-choice HLE items use `choice@1`.

Rules
-----
- Strings: compared after normalization: Unicode NFKC, case folded, whitespace collapsed (and
  removed next to symbols: `x + 1` == `x+1`, `New York` != `NewYork`), outer
  `$…$`/`\\(…\\)`/`\\boxed{…}`/`\\text{…}`/`\\mathrm{…}`/`**…**` wrappers removed, trailing period
  dropped. No symbolic equivalence: `x+1` != `1+x`.
- Numbers (optional sign, thousands separators, decimals, `1.2e-3`, `1.2\\times10^{-3}`, a trailing
  `%` on both sides): the answer is correct only when it rounds to the reference at the
  reference's own last stated digit, i.e. |answer - reference| <= half a unit of the reference's
  last digit (ties accepted). `3.1416` matches `3.14`; `3.15` and `3.1` do not; `0.0124` never
  matches `0.0123`, whatever relative tolerance someone would find reasonable.
- An integer reference is exact: `42.3` does not match `42` (a count is not rounded), `42.0`
  does. Scientific references state their precision in the mantissa: `1.2e3` accepts 1150–1250.
- Exact fractions `a/b` are compared exactly; a decimal never matches a fraction reference
  unless it is exactly equal (`0.5` matches `1/2`, `0.333` does not match `1/3`).

Known trap avoided: a relative tolerance (e.g. 1%) accepts answers whose digits differ from the
reference's; here the only slack is the reference's own rounding.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from audit.graders import Judgment, register

MAX_EXACT_CHARS = 10_000
"""Longer answers are compared as raw strings only (no normalization)."""
MAX_EXPONENT = 10_000
"""Scientific exponents beyond this are compared as strings."""

_WRAPPERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"), ("**", "**"))
_COMMANDS = ("\\boxed", "\\text", "\\mathrm", "\\textbf", "\\mathbf", "\\textrm")
_NUMBER_RE = re.compile(r"^([-+]?)(\d{1,3}(?:,\d{3})+|\d+)?(\.\d+)?(?:(?:e|\\times\s*10\^)\{?([-+]?\d+)\}?)?$")
_FRACTION_RE = re.compile(r"^([-+]?\d+)\s*/\s*(\d+)$")
_SPACE_AROUND_SYMBOL_RE = re.compile(r"\s*([^\w\s])\s*")
_LATEX_FRAC_RE = re.compile(r"^([-+]?)\\[dt]?frac\{(\d+)\}\{(\d+)\}$")


def _unwrap(s: str) -> str:
    changed = True
    while changed:
        changed = False
        s = s.strip()
        for left, right in _WRAPPERS:
            if len(s) > len(left) + len(right) and s.startswith(left) and s.endswith(right):
                s = s[len(left): -len(right)]
                changed = True
        for cmd in _COMMANDS:
            if s.startswith(cmd + "{") and s.endswith("}") and _closes_at_end(s, len(cmd)):
                s = s[len(cmd) + 1: -1]
                changed = True
    return s


def _closes_at_end(s: str, brace: int) -> bool:
    depth = 0
    for i in range(brace, len(s)):
        if s[i] == "{":
            depth += 1
        elif s[i] == "}":
            depth -= 1
            if depth == 0:
                return i == len(s) - 1
    return False


def normalize_text(s: str) -> str:
    """The string key: NFKC, unwrapped, case folded, single spaces, no trailing period. Idempotent."""
    for _ in range(4):  # NFKC and case folding can expose more to normalize; stop at a fixpoint
        t = _normalize_text_once(s)
        if t == s:
            break
        s = t
    return s


def _normalize_text_once(s: str) -> str:
    s = unicodedata.normalize("NFKC", s).replace("\u2212", "-")
    s = _unwrap(s)
    s = " ".join(s.split()).casefold()
    s = _SPACE_AROUND_SYMBOL_RE.sub(r"\1", s)  # `x + 1` → `x+1`; `new york` keeps its space
    if s.endswith(".") and not s.endswith(".."):
        s = s[:-1].rstrip()
    return s


def _number(s: str) -> tuple[Fraction, Fraction | None] | None:
    """(value, half a unit of the last stated digit) for a decimal; half is None for exact numbers
    (fractions, and integers written without an exponent)."""
    t = s.replace(" ", "").replace("\\,", "").replace("{,}", ",")
    m = _LATEX_FRAC_RE.match(t)
    if m:
        den = int(m.group(3))
        num = -int(m.group(2)) if m.group(1) == "-" else int(m.group(2))
        return (Fraction(num, den), None) if den else None
    m = _FRACTION_RE.match(t)
    if m:
        den = int(m.group(2))
        return (Fraction(int(m.group(1)), den), None) if den else None
    m = _NUMBER_RE.match(t)
    if not m or not (m.group(2) or m.group(3)):
        return None
    sign, whole, frac, exp = m.groups()
    if exp is not None and abs(int(exp)) > MAX_EXPONENT:
        return None
    text = f"{sign}{(whole or '0').replace(',', '')}{frac or ''}" + (f"e{exp}" if exp is not None else "")
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if frac is None and exp is None:
        return Fraction(value), None  # an integer is exact: a count is not rounded
    half = Fraction(Decimal(5).scaleb(value.as_tuple().exponent - 1))
    return Fraction(value), half


def _strip_percent(a: str, r: str) -> tuple[str, str]:
    def cut(s: str) -> str:
        return s[:-2] if s.endswith("\\%") else s[:-1] if s.endswith("%") else s

    if r.endswith("%"):  # the answer may state the sign or leave it out
        return cut(a).rstrip(), cut(r).rstrip()
    return a, r


@register("exact.hle", "1", source="centerforaisafety/hle (exact-match answer rules, made mechanical)",
          description="HLE-style strict exact match; numbers only to the reference's stated precision")
def hle_exact(answer: str, reference: str, *, num_choices: int | None = None) -> Judgment:
    if not reference.strip():
        return Judgment(None, "parse_error_reference", "reference is empty")
    if len(answer) > MAX_EXACT_CHARS or len(reference) > MAX_EXACT_CHARS:
        same = answer == reference
        return Judgment(same, "correct" if same else "incorrect",
                       f"over MAX_EXACT_CHARS={MAX_EXACT_CHARS}: raw strings {'equal' if same else 'differ'}")
    na, nr = normalize_text(answer), normalize_text(reference)
    if not na:
        return Judgment(None, "parse_error_answer", "answer is empty after normalization")
    if na == nr:
        return Judgment(True, "correct", "normalized strings equal")
    pa, pr = _strip_percent(na, nr)
    num_r, num_a = _number(pr), _number(pa)
    if num_r is None or num_a is None:
        return Judgment(False, "incorrect", f"normalized strings differ: '{_clip(na)}' vs '{_clip(nr)}'")
    (va, _), (vr, half) = num_a, num_r
    if half is None:
        ok = va == vr
        why = "equal as exact numbers" if ok else f"exact reference {_clip(pr)}: {_clip(pa)} is not equal"
        return Judgment(ok, "correct" if ok else "incorrect", why)
    ok = abs(va - vr) <= half
    why = (f"{_clip(pa)} rounds to the reference {_clip(pr)} at its last digit" if ok else
           f"{_clip(pa)} differs from {_clip(pr)} by more than half a unit of its last digit ({float(half):g})")
    return Judgment(ok, "correct" if ok else "incorrect", why)


def _clip(s: str, limit: int = 60) -> str:
    return s if len(s) <= limit else s[: limit - 1] + "…"
