"""choice@1: multiple-choice letters (MMLU-Pro, GPQA, HLE multiple-choice items).

Source: the letter conventions of MMLU-Pro (A–J, TIGER-AI-Lab/MMLU-Pro) and GPQA (A–D).

Rules
-----
- The answer is one option letter after removing wrappers: surrounding space, `$…$`,
  `\\boxed{…}`, `\\text{…}`/`\\textbf{…}`/`\\mathrm{…}`, `**…**`, parentheses or brackets around the
  letter (`(B)`, `[B]`), and a trailing `.`, `)` or `:` (`B.`, `B)`). Case is ignored: the extractor
  decided that this string is a letter, and `b` for option B is unambiguous.
- Anything else (`B and C`, `42`, `The answer is B`) is `parse_error_answer`: reading a letter
  out of prose is the extractor's job, and a grader that guesses is how "The answer is exactly…"
  became E.
- The reference must be a single letter (wrappers allowed), else `parse_error_reference`.
- With `num_choices`, a letter past the last option (K for ten options) is `incorrect` with a
  reason saying so; a reference outside the options is `parse_error_reference`.
- `None` (no answer extracted) is `no_answer`, handled by `Grader.grade`.
"""

from __future__ import annotations

import re

from audit.graders import Judgment, register

MAX_CHOICES = 26
"""Letters A–Z."""

_WRAPPED_RE = (
    re.compile(r"^\$+(.*?)\$+$", re.S),
    re.compile(r"^\\boxed\{(.*)\}$", re.S),
    re.compile(r"^\\(?:text|textbf|mathrm|mathbf|textrm)\{(.*)\}$", re.S),
    re.compile(r"^\*\*(.*)\*\*$", re.S),
    re.compile(r"^\((.*)\)$", re.S),
    re.compile(r"^\[(.*)\]$", re.S),
)
_LETTER_RE = re.compile(r"^([A-Za-z])\s*[.):]?$")


def read_letter(s: str) -> str | None:
    """The option letter in s (upper case), or None when s is not just a letter."""
    s = s.strip()
    for _ in range(8):
        for pat in _WRAPPED_RE:
            m = pat.match(s)
            if m:
                s = m.group(1).strip()
                break
        else:
            break
    m = _LETTER_RE.match(s)
    return m.group(1).upper() if m else None


@register("choice", "1", source="audit (MMLU-Pro / GPQA letter conventions)",
          description="Multiple-choice letter comparison; letters outside the item's options are incorrect")
def choice_letter(answer: str, reference: str, *, num_choices: int | None = None) -> Judgment:
    ref = read_letter(reference)
    if ref is None:
        return Judgment(None, "parse_error_reference", f"reference '{reference[:40]}' is not a single letter")
    if num_choices is not None and not 1 <= num_choices <= MAX_CHOICES:
        return Judgment(None, "error", f"num_choices={num_choices} is outside 1..{MAX_CHOICES}")
    last = chr(ord("A") + num_choices - 1) if num_choices else None
    if last and ref > last:
        return Judgment(None, "parse_error_reference",
                       f"reference {ref} is outside the {num_choices} options A–{last}")
    got = read_letter(answer)
    if got is None:
        return Judgment(None, "parse_error_answer", f"answer '{answer[:40]}' is not a single option letter")
    if last and got > last:
        return Judgment(False, "incorrect", f"{got} is outside the item's {num_choices} options A–{last}")
    if got == ref:
        return Judgment(True, "correct", f"letter {got}")
    return Judgment(False, "incorrect", f"letter {got}, reference {ref}")
