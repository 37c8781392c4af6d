"""Golden tables under tests/golden/extractors/: every row's answer, rule and span, and every rule of every extractor reached."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.reference_extractors import (
    literal_lmeval,
    literal_lmeval_gsm8k_flexible,
    literal_lmeval_gsm8k_strict,
    literal_official_rule,
    literal_official_x,
    literal_simple_evals,
)

import extractors

GOLDEN = Path(__file__).parent / "golden" / "extractors"

ROWS = [(f"{p.name}:{i}", json.loads(line))
        for p in sorted(GOLDEN.glob("*.jsonl"))
        for i, line in enumerate(p.read_text(encoding="utf-8").split("\n"), 1) if line.strip()]

RULES = {
    "mmlu_pro.official@f418b11": {"L1", "L2", "L3", "none", "no_response"},
    "mmlu_pro.official_x@7535b16": {"L1", "L2", "L3", "none"},
    "mmlu_pro.lmeval@325f168": {"answer_is", "none"},
    "gpqa.final_line@1": {"final_line", "no_final_line", "unreadable_final_line", "truncated"},
    "gpqa.simple_evals@ee3b031": {"answer_pattern", "none"},
    "boxed@1": {"boxed", "fbox", "boxed_unbraced", "unclosed", "malformed_box", "empty_box", "none"},
    "boxed.choice@1": {"boxed_choice", "box_not_a_choice", "unclosed", "malformed_box", "empty_box", "none"},
    "choice.freeform@1": {"answer_is", "answer_label", "boxed", "letter_is_answer", "answer_is_named", "is_letter",
                          "named_option", "colon_line", "option_word", "option_line", "paren_letter", "conflict",
                          "none",
                          "truncated"},
    "hle.exact_answer@1": {"exact_answer_line", "empty_answer_line", "none", "truncated"},
    "hle.choice_answer@1": {"answer_line", "no_letter_on_answer_line", "none", "truncated"},
    "hle.exact_answer@2": {"exact_answer_line", "empty_answer_line", "none", "truncated"},
    "hle.choice_answer@2": {"answer_line", "no_letter_on_answer_line", "none", "truncated"},
    "boxed.choice@2": {"boxed_choice", "box_not_a_choice", "several_choices", "unclosed", "malformed_box", "empty_box",
                       "none"},
    "raw@1": {"whole_response", "empty"},
    "gsm8k.strict_match@b733598": {"strict_match", "none"},
    "gsm8k.flexible_extract@b733598": {"flexible_extract", "none"},
    "gsm8k.answer@1": {"hash_line", "last_number", "none"},
    "math.final@1": {"boxed", "fbox", "boxed_unbraced", "fbox_unbraced", "boxes", "unclosed", "malformed_box",
                     "empty_box", "final_answer", "answer_is", "math_env", "math_envs", "last_number", "none",
                     "no_response"},
}
"""Every rule each extractor can report; the golden rows must reach all of them."""

LITERAL = {
    "mmlu_pro.official@f418b11": lambda t: literal_official_rule(t)[0],
    "mmlu_pro.official_x@7535b16": literal_official_x,
    "mmlu_pro.lmeval@325f168": lambda t: (None if (a := literal_lmeval(t)) == "[invalid]" else a),
    "gpqa.simple_evals@ee3b031": literal_simple_evals,
    "gsm8k.strict_match@b733598": lambda t: (None if (a := literal_lmeval_gsm8k_strict(t)) == "[invalid]" else a),
    "gsm8k.flexible_extract@b733598": lambda t: (None if (a := literal_lmeval_gsm8k_flexible(t)) == "[invalid]" else a),
}
"""Reproduction extractors and the upstream regexes applied literally."""


CLEANED = {"math.final@1"}
"""Extractors whose answer may join several parts of the text or drop stray `$` from it."""


def _assert_parts_in(answer: str, evidence: str) -> None:
    """Each joined part's value (after its `label = `) lies in the evidence, `$` and spaces aside."""
    def squeeze(s: str) -> str:
        return re.sub(r"[\s$]", "", s)

    for part in re.split(r", | \\text\{ or \} ", answer):
        assert squeeze(part.split(" = ")[-1]) in squeeze(evidence), (part, evidence)


@pytest.mark.parametrize("where,row", ROWS, ids=[w for w, _ in ROWS])
def test_golden_row(where, row):
    ex = extractors.get(row["extractor"])
    got = ex.extract(row["text"], finish_reason=row["finish_reason"])
    assert (got.answer, got.rule) == (row["answer"], row["rule"]), row["trap"]
    if "span" in row:
        assert got.span == (tuple(row["span"]) if row["span"] else None)
    if got.answer is not None:
        start, end = got.span
        if row["extractor"] in CLEANED:
            _assert_parts_in(got.answer, row["text"][start:end])
        else:
            assert got.answer in row["text"][start:end]
    if row["text"] is not None and row["extractor"] in LITERAL and row["finish_reason"] is None:
        assert got.answer == LITERAL[row["extractor"]](row["text"])


def test_every_row_names_its_source_and_trap():
    for where, row in ROWS:
        assert row["source"] and row["trap"], where
        if "gpqa" in row["source"]:
            assert row["source"].startswith("synthetic"), f"{where}: GPQA rows must be synthetic"


def test_golden_rows_reach_every_rule_of_every_extractor():
    assert set(RULES) == {e.key for e in extractors.all_extractors()}
    reached: dict[str, set[str]] = {key: set() for key in RULES}
    for _, row in ROWS:
        got = extractors.get(row["extractor"]).extract(row["text"], finish_reason=row["finish_reason"])
        reached[extractors.get(row["extractor"]).key].add(got.rule)
    missing = {key: sorted(RULES[key] - rules) for key, rules in reached.items() if RULES[key] - rules}
    assert not missing
    unexpected = {key: sorted(rules - RULES[key]) for key, rules in reached.items() if rules - RULES[key]}
    assert not unexpected


def test_mmlu_pro_official_spans_match_the_literal_cascade():
    for where, row in ROWS:
        if row["extractor"] == "mmlu_pro.official@f418b11" and row["text"] is not None:
            got = extractors.get(row["extractor"]).extract(row["text"])
            assert (got.answer, got.rule, got.span) == literal_official_rule(row["text"]), where
