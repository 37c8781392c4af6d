"""Parse rules: versioned readers of a judge's raw reply, registered like extractors.

A rule reads the recorded reply (text, and logprobs for AlpacaEval) and says `correct`, `incorrect`,
`preference` (pairwise judges) or `judge_error` (the reply does not parse under the rule), with the fields it
read and a reason in closed vocabulary (never the reply's text). A registered version never changes what it
reads: a new reading is a new version, and re-grading the recorded calls under it (no judge called) lists every
item whose verdict changed. `lock.json` here pins every fingerprint.

Sources (behaviour reimplemented from these files, not copied code):

- `hle.substring@a590489`: centerforaisafety/hle `hle_eval/run_judge_results.py` at a590489: the reply is
  validated as pydantic's `ExtractedAnswer` (lax, as openai-python's `parse` does; extra keys ignored) and
  counted correct when `"yes" in correct`. A reply that does not validate is `judge_error` (upstream returns
  None and, dividing by all questions, counts it wrong).
- `hle.strict@1`: the same fields read strictly: one JSON object with exactly the five keys, `correct` exactly
  `yes` or `no`, `confidence` an integer 0-100, `strict` true; anything else is `judge_error`.
- `simple_evals.yes@ee3b031`: openai/simple-evals `common.py` `check_equality`: `text.lower().strip() == "yes"`;
  anything else is incorrect (upstream has no failure state).
- `inspect.grade@3ce8aed`: inspect_ai `_model.py` at 3ce8aed (2025): `re.search(r"(?i)GRADE\\s*:\\s*([CPI])(.*)$")`,
  the first grade on the reply's last line; no match is `judge_error` (inspect then scored it INCORRECT).
- `inspect.grade@499e615`: inspect_ai at 499e615 (2026): the last `GRADE: word` (permissive capture, bounded
  `GRADE` token, zero-width marks allowed around the colon), its first letter upper-cased, kept only when it is
  one of the offered grades C, I; else unscored (`judge_error`).
- `alpaca_eval.logprob@cd543a1`: tatsu-lab/alpaca_eval `completion_parsers.py` `logprob_parser` at cd543a1 with
  `weighted_alpaca_eval_gpt4_turbo`'s config (numerator `m`, denominator `m`, `M`, not binarized): preference
  `2 - p(m) / (p(m) + p(M))` from the first token's top logprobs, then `3 - x` when the outputs were swapped.
  Neither token among the top logprobs is `judge_error` (upstream: NaN).
- `arena_hard.verdict@4ce0f00`: lmarena/arena-hard-auto `gen_judgment.py` `get_score` at 4ce0f00 (unchanged from
  the release, 7f1b7f5, until 9a1d386 of 2025-04-18: the judge that wrote the `question_id` judgment files), with
  `judge_config.yaml`'s one pattern `\\[\\[([AB<>=]+)\\]\\]` on the judgment as written (not upper-cased): exactly
  one distinct non-empty match is the label; none, more than one distinct label (upstream: no score), or a label
  that era's `show_result.py` gives no battle (it scores only A>>B, A>B, A=B, B>A, B>>A) is `judge_error`.
- `arena_hard.verdict@196f6b8`: lmarena/arena-hard-auto `gen_judgment.py` `get_score` at 196f6b8 with
  `arena-hard-v0.1.yaml`'s patterns `\\[\\[([AB<>=]+)\\]\\]`, then `\\[([AB<>=]+)\\]`: on the upper-cased judgment,
  the last non-empty match of the first pattern that matches; none, or a label `show_result.py` cannot score,
  is `judge_error`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic

from audit.registry import Registry, table

LOCK_FILE = Path(__file__).resolve().parent / "rules.lock.json"


@dataclass(frozen=True)
class Parsed:
    """What a rule read from one reply."""

    status: Literal["correct", "incorrect", "judge_error", "preference"]
    reason: str
    """Closed vocabulary: the step that fired, or what did not parse (never the reply's text)."""
    parsed: dict[str, Any] | None = None
    preference: float | None = None


@dataclass(frozen=True)
class Reply:
    """A recorded reply as a rule reads it."""

    raw: str | None
    logprobs: list[dict[str, Any]] | None = None
    swapped: bool | None = None


@dataclass(frozen=True)
class ParseRule:
    """One versioned reading of a judge's reply."""

    name: str
    version: str
    description: str
    source: str
    parse_fn: Callable[[Reply], Parsed] = field(repr=False)
    reads: Literal["raw", "logprobs"] = "raw"
    """What the rule needs recorded: the reply text, or its logprobs."""

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def fingerprint(self) -> str:
        """sha256 over the key and the source of the rule's function and the module constants it names."""
        parts = [self.key, self.reads, _source(self.parse_fn)]
        names = sorted(set(self.parse_fn.__code__.co_names))
        g = self.parse_fn.__globals__
        for n in names:
            v = g.get(n)
            if inspect.isfunction(v) and v.__module__ == __name__:
                parts.append(_source(v))
            elif isinstance(v, re.Pattern):
                parts.append(f"{n}={v.pattern!r}/{int(v.flags)}")
            elif isinstance(v, frozenset):
                parts.append(f"{n}={sorted(v)!r}")  # (a set's order changes with the hash seed)
            elif isinstance(v, (str, int, float, tuple)):
                parts.append(f"{n}={v!r}")
            elif isinstance(v, type) and issubclass(v, pydantic.BaseModel):
                parts.append(json.dumps(v.model_json_schema(), sort_keys=True))
        return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()

    def parse(self, reply: Reply) -> Parsed:
        """Read one reply (never raises on what a judge may send: a reply that does not parse is judge_error)."""
        if self.reads == "raw" and reply.raw is None:
            return Parsed("judge_error", "no reply text recorded")
        return self.parse_fn(reply)


def _source(fn: Callable[..., Any]) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return fn.__qualname__


REGISTRY: Registry[ParseRule] = table("judge parse rule", home=__name__)
"""Every registered parse rule."""


# --------------------------------------------------------------------------- HLE


class _ExtractedAnswer(pydantic.BaseModel):
    """Upstream's `ExtractedAnswer`, validated as openai-python's `parse` does (lax; extra keys ignored)."""

    extracted_final_answer: str
    reasoning: str
    correct: Literal["yes", "no"]
    confidence: int
    strict: Literal[True]


def _validation_reason(e: pydantic.ValidationError) -> str:
    first = e.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"]) or "reply"
    return f"not ExtractedAnswer: {where}: {first['type']}"


def _hle_fields(m: _ExtractedAnswer) -> dict[str, Any]:
    return {"extracted_final_answer": m.extracted_final_answer, "reasoning": m.reasoning, "correct": m.correct,
            "confidence": m.confidence}


def _parse_hle_substring(reply: Reply) -> Parsed:
    assert reply.raw is not None
    try:
        m = _ExtractedAnswer.model_validate_json(reply.raw)
    except pydantic.ValidationError as e:
        return Parsed("judge_error", _validation_reason(e))
    ok = "yes" in m.correct  # upstream's test, kept as written
    return Parsed("correct" if ok else "incorrect", f"'yes' {'in' if ok else 'not in'} correct", _hle_fields(m))


_HLE_KEYS = frozenset({"extracted_final_answer", "reasoning", "correct", "confidence", "strict"})


def _parse_hle_strict(reply: Reply) -> Parsed:
    assert reply.raw is not None
    try:
        obj = json.loads(reply.raw)
    except (json.JSONDecodeError, RecursionError):
        return Parsed("judge_error", "reply is not JSON")
    if not isinstance(obj, dict):
        return Parsed("judge_error", "reply is not a JSON object")
    if set(obj) != _HLE_KEYS:
        return Parsed("judge_error", "keys are not exactly the schema's five")
    if not isinstance(obj["extracted_final_answer"], str) or not isinstance(obj["reasoning"], str):
        return Parsed("judge_error", "extracted_final_answer or reasoning is not a string")
    if obj["correct"] not in ("yes", "no"):
        return Parsed("judge_error", "correct is not exactly 'yes' or 'no'")
    conf = obj["confidence"]
    if isinstance(conf, bool) or not isinstance(conf, int) or not 0 <= conf <= 100:
        return Parsed("judge_error", "confidence is not an integer from 0 to 100")
    if obj["strict"] is not True:
        return Parsed("judge_error", "strict is not true")
    fields = {k: obj[k] for k in ("extracted_final_answer", "reasoning", "correct", "confidence")}
    return Parsed("correct" if obj["correct"] == "yes" else "incorrect", f"correct == {obj['correct']!r}", fields)


_HLE = "centerforaisafety/hle hle_eval/run_judge_results.py@a59048963171c5b9cfe89fbcb97ddde39b540897"
REGISTRY.add(ParseRule("hle.substring", "a590489",
                       "HLE's reading: the reply as ExtractedAnswer (lax), correct when 'yes' in correct",
                       f"{_HLE} extract_answer, dump_metrics", _parse_hle_substring))
REGISTRY.add(ParseRule("hle.strict", "1",
                       "HLE's fields read strictly: exactly the schema's keys, correct exactly yes/no, "
                       "confidence 0-100", f"audit (strict variant of {_HLE})", _parse_hle_strict))


# --------------------------------------------------------------------------- simple-evals


def _parse_yes(reply: Reply) -> Parsed:
    assert reply.raw is not None
    ok = reply.raw.lower().strip() == "yes"
    return Parsed("correct" if ok else "incorrect", "reply is 'yes'" if ok else "reply is not 'yes'",
                  {"equivalent": ok})


REGISTRY.add(ParseRule("simple_evals.yes", "ee3b031", "simple-evals' check_equality: the reply, lower-cased and "
                       "stripped, equals 'yes'",
                       "openai/simple-evals common.py@ee3b0318d8d1d9d72755a4120879be65f7c07e9e check_equality",
                       _parse_yes))


# --------------------------------------------------------------------------- inspect_ai

_GRADE_2025 = re.compile(r"(?i)GRADE\s*:\s*([CPI])(.*)$")
_SPACING = r"[\s\u200b\u200c\u200d\u200e\u200f\u2060\u2063\ufeff]*"
_GRADE_2026 = re.compile(rf"(?is).*(?<!\w)GRADE(?!\w){_SPACING}:{_SPACING}(\w*)")
_OFFERED = ("C", "I")


def _grade(letter: str, how: str) -> Parsed:
    if letter == "C":
        return Parsed("correct", f"{how}: C", {"grade": "C"})
    if letter == "I":
        return Parsed("incorrect", f"{how}: I", {"grade": "I"})
    return Parsed("judge_error", f"{how}: {letter!r} is not an offered grade (C, I)", {"grade": letter})


def _parse_inspect_2025(reply: Reply) -> Parsed:
    assert reply.raw is not None
    m = _GRADE_2025.search(reply.raw)
    if m is None:
        return Parsed("judge_error", "no 'GRADE: C|P|I' on the reply's last line")
    return _grade(m.group(1).upper(), "first GRADE match")


def _parse_inspect_2026(reply: Reply) -> Parsed:
    assert reply.raw is not None
    m = _GRADE_2026.search(reply.raw)
    if m is None:
        return Parsed("judge_error", "no 'GRADE:' in the reply")
    value = m.group(1)[:1].upper()
    if not value:
        return Parsed("judge_error", "last 'GRADE:' has no word after it")
    if value not in _OFFERED:
        return Parsed("judge_error", "last GRADE is not an offered grade (C, I)", {"grade": value})
    return _grade(value, "last GRADE")


_INSPECT = "UKGovernmentBEIS/inspect_ai src/inspect_ai/scorer/_model.py"
REGISTRY.add(ParseRule("inspect.grade", "3ce8aed", "inspect_ai's 2025 grade pattern: first GRADE: C|P|I on the last "
                       "line", f"{_INSPECT}@3ce8aed77bc7fe39389eb1fd9e780b949357cc00 DEFAULT_GRADE_PATTERN",
                       _parse_inspect_2025))
REGISTRY.add(ParseRule("inspect.grade", "499e615", "inspect_ai's 2026 grade pattern: the last GRADE: word, kept "
                       "when an offered grade", f"{_INSPECT}@499e6152e7b8fc8cbd8ac5283536572aa6e4ab17 "
                       "_PERMISSIVE_GRADE_PATTERN, offered-grade check", _parse_inspect_2026))


# --------------------------------------------------------------------------- AlpacaEval

_NUMERATOR = "m"
_DENOMINATOR = ("m", "M")


def _parse_alpaca_logprob(reply: Reply) -> Parsed:
    content = reply.logprobs
    if not content or not isinstance(content[0], dict) or not isinstance(content[0].get("top_logprobs"), list):
        return Parsed("judge_error", "no top logprobs recorded for the first token")
    tops: dict[str, float] = {}
    for t in content[0]["top_logprobs"]:
        if isinstance(t, dict) and t.get("token") in _DENOMINATOR and isinstance(t.get("logprob"), (int, float)):
            tops[t["token"]] = float(t["logprob"])
    if not tops:
        return Parsed("judge_error", "neither 'm' nor 'M' among the top logprobs")
    num = tops.get(_NUMERATOR, -math.inf)
    top = max(tops.values())
    den = top + math.log(sum(math.exp(v - top) for v in tops.values()))
    pref = 2 - math.exp(num - den)
    if reply.swapped:
        pref = 3 - pref
    return Parsed("preference", "p(m) / (p(m) + p(M)) of the first token" + (", swapped" if reply.swapped else ""),
                  {"logprob_m": tops.get("m"), "logprob_M": tops.get("M")}, pref)


REGISTRY.add(ParseRule("alpaca_eval.logprob", "cd543a1", "AlpacaEval's weighted preference from the first token's "
                       "top logprobs of m and M, swap undone",
                       "tatsu-lab/alpaca_eval src/alpaca_eval/completion_parsers.py"
                       "@cd543a149df89434d8a54582c0151c0b945c3d20 logprob_parser", _parse_alpaca_logprob,
                       reads="logprobs"))


# --------------------------------------------------------------------------- Arena-Hard

_ARENA_4CE0F00_PATTERN = re.compile(r"\[\[([AB<>=]+)\]\]")
ARENA_4CE0F00_LABELS = frozenset({"A>>B", "A>B", "A=B", "B>A", "B>>A"})
"""The labels `show_result.py` before 2025-04 turns into battles (any other label gets weight 0)."""


def _parse_arena_4ce0f00(reply: Reply) -> Parsed:
    assert reply.raw is not None
    labels = {m for m in _ARENA_4CE0F00_PATTERN.findall(reply.raw) if m != ""}
    if not labels:
        return Parsed("judge_error", "no [[verdict]] in the judgment")
    if len(labels) > 1:
        return Parsed("judge_error", "more than one distinct [[verdict]] (upstream: no score)")
    label = next(iter(labels)).strip("\n")
    if label not in ARENA_4CE0F00_LABELS:
        return Parsed("judge_error", "label is not one show_result scores", {"score": label})
    return Parsed("preference", "the one [[verdict]]", {"score": label})


REGISTRY.add(ParseRule("arena_hard.verdict", "4ce0f00", "Arena-Hard's verdict regex before 2025-04 (one distinct "
                       "[[label]], as written) re-run on the judgment text",
                       "lmarena/arena-hard-auto gen_judgment.py@4ce0f0087776158a4461162cbef1d9bb5464bb57 get_score, "
                       "config/judge_config.yaml regex_pattern", _parse_arena_4ce0f00))


_ARENA_PATTERNS = (re.compile(r"\[\[([AB<>=]+)\]\]"), re.compile(r"\[([AB<>=]+)\]"))
ARENA_LABELS = frozenset({"A>B", "A>>B", "A=B", "A<<B", "A<B", "B>A", "B>>A", "B=A", "B<<A", "B<A"})
"""The labels `show_result.py`'s `label_to_score` can score."""


def _parse_arena(reply: Reply) -> Parsed:
    assert reply.raw is not None
    text = reply.raw.upper()
    for i, pattern in enumerate(_ARENA_PATTERNS):
        matches = [m for m in pattern.findall(text) if m != ""]
        if matches:
            label = matches[-1].strip("\n")
            if label not in ARENA_LABELS:
                return Parsed("judge_error", f"pattern {i + 1}: label is not one show_result scores", {"score": label})
            return Parsed("preference", f"pattern {i + 1}, last match", {"score": label})
    return Parsed("judge_error", "no [[verdict]] or [verdict] in the judgment")


REGISTRY.add(ParseRule("arena_hard.verdict", "196f6b8", "Arena-Hard's verdict regex re-run on the judgment text",
                       "lmarena/arena-hard-auto gen_judgment.py@196f6b826783b3da7310e361a805fa36f0be83f3 get_score, "
                       "config/arena-hard-v0.1.yaml regex_patterns", _parse_arena))


def get(spec: str) -> ParseRule:
    """The rule `name[@version]`; UnknownError listing the registered ones otherwise."""
    return REGISTRY.get(spec)
