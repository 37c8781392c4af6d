"""How one verdict row ends: the attempt graded for an (item, sample), and the decision under the run's
policies (`decide`, a `Decision`): correct, incorrect, or ungraded with a status and a reason."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from audit import extractors, graders
from audit.models import LETTERS, Verdict
from audit.verdicts import Policies
from audit.verdicts.models import AT_BUDGET_NOTE

INCOMPLETE_FINISH_REASONS = frozenset({"abort", "error", "content_filter"})
"""Finish reasons after which the text is partial for a reason other than the output ceiling."""
_SENTENCE_END = frozenset(".!?…。！？)]}>*$`\"'”’»|")
"""Last characters after which a response reads as finished (closing marks included: `(C)`, `**B**`, `$x$`)."""


_LETTER_LINE = re.compile(r"[A-Za-z\s*:()'’-]{0,38}[A-Z]")
"""A short plain-words line ending in a capital letter: `Answer: C`, `I pick B` (not `$dU = T`, `{[A`)."""


def possibly_cut(text: str | None, finish_reason: str | None) -> bool:
    """A labelled heuristic, never a verdict: the row records no finish reason and its text stops mid-sentence
    (its last visible character ends no sentence: "… so the answer is the", "B-cells are", "65°C,").

    With a finish reason the engine said why it stopped (`length` is a cut, and policies handle it); without
    one (upstream MMLU-Pro files keep none) a cut at the output ceiling is invisible but for how the text ends.
    """
    if finish_reason is not None or not text:
        return False
    tail = text.rstrip()
    if not tail or tail[-1] in _SENTENCE_END:
        return False
    # A short last line closing on a lone letter ("Answer: C", "I pick B") is an answer, not a broken sentence
    # (a long one, "… we find $dU = T", is not).
    last_line = tail[tail.rfind("\n") + 1:]
    return not (_LETTER_LINE.fullmatch(last_line) and (len(tail) == 1 or tail[-2] in " \t\n:(*"))


# --------------------------------------------------------------------------- items and attempts


@dataclass(frozen=True, slots=True)
class ItemInfo:
    reference: str
    options: int | None
    subject: str | None = None
    bad_input: str | None = None
    """Why the item's own record is inconsistent (an import's `--on-bad-row record`): never graded."""


@dataclass(slots=True)
class AttemptMeta:
    """One response row as grading needs it: no text, only what was read from it."""

    attempt: int
    finish_reason: str | None
    length: int
    has_text: bool
    excluded: str | None
    error: str | None
    max_tokens: int | None
    extraction: extractors.Extraction | None = None
    digest: str | None = None
    tokens: int | None = None
    """completion_tokens as the row reports it (None when it does not)."""
    chars: int | None = None
    """Characters of the response text (None when not read: then `length` is compared)."""
    at_budget: bool = False
    """The reply used exactly max_tokens and said `stop` (recorded or read from those fields)."""
    cut: bool = False
    """`possibly_cut`: no finish reason and the text stops mid-sentence (a heuristic for reports only)."""


def choose_attempt(attempts: list[AttemptMeta], policy: str) -> tuple[AttemptMeta, dict[str, Any]]:
    """The attempt to grade for one (item, sample), and what was considered.

    `original`: attempt 0 (the lowest present). `longer-only`: among re-runs longer than the
    original's cut, the first that finished (finish_reason not `length`), else the longest of
    them; when no re-run is longer than the original, the original.
    """
    attempts = sorted(attempts, key=lambda a: a.attempt)
    original = attempts[0]
    # Lengths in one unit: `length` is completion_tokens where a row reports it, else characters;
    # when only some attempts report tokens, compare all of them by characters.
    mixed = len({a.tokens is None for a in attempts}) > 1 and all(a.chars is not None for a in attempts)
    size = (lambda a: a.chars) if mixed else (lambda a: a.length)
    detail: dict[str, Any] = {}
    if len(attempts) > 1:
        detail["attempts"] = [a.attempt for a in attempts]
    if policy == "original" or len(attempts) == 1:
        return original, detail
    longer = [a for a in attempts[1:] if size(a) > size(original)]
    if not longer:
        return original, detail
    finished = [a for a in longer if a.finish_reason != "length"]
    chosen = finished[0] if finished else max(longer, key=lambda a: (size(a), -a.attempt))
    return chosen, detail


# --------------------------------------------------------------------------- deciding


UPSTREAM_GUESS = "upstream-guess@964a136"
"""TIGER-AI-Lab/MMLU-Pro evaluate_from_local.py @ 964a136e98ff17f81b0cd11c15c70784f6ee4378 (the commit of the public
result zips; until 996df13, Feb 2025, "Set random seed once per execution"): for a null pred,
`random.seed(12345); x = random.randint(0, len(each["options"]) - 1)`, credited when x == answer_index."""
GUESS_POLICIES = ("random-guess", UPSTREAM_GUESS)


def seeded_guess(policies: Policies, item_id: str, sample: int, options: int) -> tuple[str, dict[str, Any]]:
    if policies.no_answer == UPSTREAM_GUESS:
        # upstream at 964a136: random.seed(12345) right before each draw, so each option count has one letter
        draw = random.Random(policies.guess_seed).randint(0, options - 1)
        return LETTERS[draw], {"guess": LETTERS[draw], "draw": draw, "seed": policies.guess_seed, "options": options,
                               "rule": UPSTREAM_GUESS}
    # Seeded per (item, sample), so the draw does not depend on processing order.
    rng = random.Random(f"{policies.guess_seed}:{item_id}:{sample}")
    draw = rng.randrange(options)
    return LETTERS[draw], {"guess": LETTERS[draw], "draw": draw, "seed": policies.guess_seed, "options": options}


@dataclass(frozen=True, slots=True)
class Decision:
    """How one verdict row ends: the grader's judgment under the run's policies."""

    verdict: Verdict
    """`correct`, `incorrect` or `ungraded`."""
    status: str
    """Why, in one word (`correct`, `truncated`, `no_answer`, `missing`, ...)."""
    reason: str
    """Why, in words (what the verdict file's row says)."""
    detail: dict[str, Any] = field(default_factory=dict)
    """What else decided it (a seeded guess's draw, `at_budget`)."""


def decide(meta: AttemptMeta | None, ex: extractors.Extraction | None, judgment: graders.Judgment | None,
           item: ItemInfo, item_id: str, sample: int, policies: Policies,
           excluded_ids: frozenset[str], short_alphabet: str | None = None) -> Decision:
    """The decision for one row: the grader's judgment under the run's policies.

    `short_alphabet` is set (the reason) when the item has more options than the extractor reads letters:
    such a row is never graded (a K it cannot read, a J read from "D and J are correct")."""
    if item_id in excluded_ids:
        # (a row text that verdict files record: rewording it would stop every such file reproducing)
        return Decision("ungraded", "excluded", "excluded by policy (--policy exclude=...)")
    if item.bad_input is not None:
        return Decision("ungraded", "bad_input", f"the item's source record is inconsistent: {item.bad_input}")
    if meta is None:
        return Decision("ungraded", "missing", f"no response for this item in sample {sample}")
    if meta.excluded is not None:
        return Decision("ungraded", "excluded", f"not sent: {meta.excluded}")
    if short_alphabet:
        return Decision("ungraded", "error", short_alphabet)
    if not meta.has_text:
        return Decision("ungraded", "error", f"no response text: {meta.error or 'response is null'}")
    if meta.error is not None:
        return Decision("ungraded", "error", f"the response carries an error: {meta.error}")
    if meta.finish_reason in INCOMPLETE_FINISH_REASONS:
        return Decision("ungraded", "error",
                        f"generation ended with finish_reason {meta.finish_reason!r}: the text is partial")
    if meta.finish_reason == "length" or (meta.at_budget and policies.at_budget == "truncated"):
        cut = f"cut at the output ceiling (max_tokens={meta.max_tokens})" if meta.max_tokens else \
            "cut at the output ceiling"
        if meta.finish_reason != "length":
            cut = f"used all max_tokens={meta.max_tokens} and said stop; taken as cut (--policy at_budget=truncated)"
        more = {"at_budget": True} if meta.at_budget else {}
        if policies.truncation == "exclude":
            return Decision("ungraded", "truncated", f"{cut}; excluded by policy", more)
        return Decision("incorrect", "truncated", f"{cut}; never credited", more)
    decided = _decide_graded(meta, ex, judgment, item, item_id, sample, policies)
    if meta.at_budget:
        return Decision(decided.verdict, decided.status, decided.reason + AT_BUDGET_NOTE.format(meta.max_tokens),
                        {**decided.detail, "at_budget": True})
    return decided


def _decide_graded(meta: AttemptMeta, ex: extractors.Extraction | None, judgment: graders.Judgment | None,
                   item: ItemInfo, item_id: str, sample: int,
                   policies: Policies) -> Decision:
    assert ex is not None
    if ex.answer is None and ex.rule == extractors.RULE_NO_OPTIONS:
        return Decision("ungraded", "error", "the item records no option count, and the extractor reads only the "
                        "item's own letters: not graded (import the items with their options)")
    if ex.answer is None:
        if policies.no_answer in GUESS_POLICIES and item.options:
            guess, detail = seeded_guess(policies, item_id, sample, item.options)
            ok = guess == item.reference
            return Decision("correct" if ok else "incorrect", "random_guess",
                            f"no answer extracted ({ex.rule}); seeded guess {guess} {'=' if ok else '!='} "
                            f"{item.reference}", detail)
        if policies.no_answer in GUESS_POLICIES:
            return Decision("incorrect", "no_answer", f"no answer extracted ({ex.rule}); the random-guess policy "
                            f"needs the item's option count, which is unknown: counted wrong")
        return Decision("incorrect", "no_answer", f"no answer extracted ({ex.rule})")
    assert judgment is not None
    if judgment.status == "correct":
        return Decision("correct", "correct", judgment.reason)
    if judgment.status in ("incorrect", "parse_error_answer", "no_answer"):
        return Decision("incorrect", judgment.status, judgment.reason)
    return Decision("ungraded", judgment.status, judgment.reason)


def alphabet_too_short(extractor: Any, info: ItemInfo) -> str | None:
    """Why `extractor` cannot grade `info` (it reads fewer letters than the item has options), else None."""
    letters = getattr(extractor, "letters", None)
    if not letters:
        return None
    if not info.options or info.options <= len(letters):
        from audit.graders.choice import read_letter

        ref = read_letter(info.reference)
        if ref is None or ref in letters:
            return None
        return (f"the reference {ref} is outside the letters {extractor.key} reads ({letters[0]}–{letters[-1]}): "
                f"not graded (it could never be credited); use an extractor that reads the item's options "
                f"(mmlu_pro.options@1)")
    last = LETTERS[info.options - 1] if info.options <= len(LETTERS) else f"option {info.options}"
    return (f"the item has {info.options} options (A–{last}); {extractor.key} reads only {letters[0]}–{letters[-1]}: "
            f"not graded (a letter it cannot read, or a wrong one read instead); use an extractor that reads the "
            f"item's options (mmlu_pro.options@1)")
