"""Hypothesis properties: the fast cascades equal the literal regexes; no extractor raises or reports
a rule it did not declare; last-match extractors ignore an earlier distractor and first-match ones a
later one.

Texts are drawn from alphabets biased towards what the patterns look for (answer
phrases, capital letters A-J, Unicode word characters, `\\s` and line separators), so
that the interesting branches are reached within a few hundred examples.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.reference_extractors import (
    literal_lmeval,
    literal_lmeval_gsm8k_flexible,
    literal_lmeval_gsm8k_strict,
    literal_official_rule,
    literal_official_x,
    literal_simple_evals,
)

from audit import extractors
from tests.test_extractors_golden import CLEANED, _assert_parts_in

SETTINGS = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
EQUIVALENCE = settings(SETTINGS, max_examples=400)
"""More examples where a fast extractor is compared with the literal regexes."""

MMLU_TOKENS = [
    "answer is (", "answer is ", "The answer is (", "answer is (b)", "Answer:", "answer:", "Answer: ", "ANSWER:",
    " ", "  ", "\n", "\n\n", "\t", "\r", "\u00a0", "\u2028", "\x0b",
    *"ABCDEFGHIJ", "K", "a", "b", "j", "x", "word", "_", "é", "É", "中", "1",
    "(", ")", ".", ",", "*", "**", "$", "-",
]
CHOICE_TOKENS = MMLU_TOKENS + [
    "\\boxed{", "\\fbox{", "\\boxed ", "}", "{", "\\text{", "\\textbf{", "\\", "\\{", "\\}",
    "Option ", "option ", "choice ", "the correct answer is ", "The answer is ", "Answer: ", "**Answer:** ",
    "Final Answer: ", " or ", " and ", "either ", " is ", " is:", ":", "\n- ", "* **", "(Option ", "=", " is not",
    "Let's analyze each option:", "I would select:",
    "$", "$$", "\\(", "\\)", "\\[", "\\]", "\\$", "12", "-3", "1,000", "2/3", "#### ", "####", "#### $", "-", ".,", "\\frac{1}{2}", "final answer is ", " and ",
]
mmlu_texts = st.lists(st.sampled_from(MMLU_TOKENS), max_size=40).map("".join)
choice_texts = st.lists(st.sampled_from(CHOICE_TOKENS), max_size=40).map("".join)
any_texts = st.one_of(st.text(max_size=200), choice_texts,
                      st.text(alphabet=string.printable + "é中\u2028\u00a0", max_size=200))
finish_reasons = st.sampled_from([None, "stop", "length", "content_filter"])

ALL = sorted(e.key for e in extractors.all_extractors())


@pytest.mark.slow
@EQUIVALENCE
@given(mmlu_texts)
def test_official_equals_the_literal_cascade(text):
    got = extractors.get("mmlu_pro.official@f418b11").extract(text)
    assert (got.answer, got.rule, got.span) == literal_official_rule(text)


@pytest.mark.slow
@EQUIVALENCE
@given(mmlu_texts)
def test_official_x_and_lmeval_equal_their_literal_regexes(text):
    assert extractors.get("mmlu_pro.official_x@7535b16").extract(text).answer == literal_official_x(text)
    assert (extractors.get("mmlu_pro.lmeval@325f168").extract(text).answer or "[invalid]") == literal_lmeval(text)


@pytest.mark.slow
@EQUIVALENCE
@given(choice_texts)
def test_gsm8k_filters_equal_lm_evals_literal_regexes(text):
    for key, literal in (("gsm8k.strict_match@b733598", literal_lmeval_gsm8k_strict),
                         ("gsm8k.flexible_extract@b733598", literal_lmeval_gsm8k_flexible)):
        assert (extractors.get(key).extract(text).answer or "[invalid]") == literal(text)


@pytest.mark.slow
@EQUIVALENCE
@given(choice_texts)
def test_simple_evals_equals_its_literal_regex(text):
    assert extractors.get("gpqa.simple_evals@ee3b031").extract(text).answer == literal_simple_evals(text)


@pytest.mark.slow
@pytest.mark.parametrize("key", ALL)
@SETTINGS
@given(text=any_texts, finish_reason=finish_reasons)
def test_never_raises_and_the_span_holds_the_answer(key, text, finish_reason):
    ex = extractors.get(key)
    got = ex.extract(text, finish_reason=finish_reason)
    assert got.rule in ex.rules  # every rule it reports is one it declared at registration
    assert got.answer is None or isinstance(got.answer, str) and got.answer
    if got.span is not None:
        start, end = got.span
        assert 0 <= start <= end <= len(text)
    if got.answer is not None:
        assert got.span is not None
        if key in CLEANED:  # joined parts, stray `$` dropped
            _assert_parts_in(got.answer, text[got.span[0]:got.span[1]])
        else:
            assert got.answer in text[got.span[0]:got.span[1]]


# Last-match extractors: an earlier distractor of the same kind as what was found changes nothing.
# (rules of the original result -> the distractor to put before the text)
LAST_MATCH = {
    "mmlu_pro.official_x@7535b16": {"L1": "The answer is (A).\n\n", "L2": "Answer: A\n\n", "L3": "A.\n\n"},
    "mmlu_pro.official@f418b11": {"L3": "A.\n\n"},
    "boxed@1": {rule: "\\boxed{A}\n\n" for rule in ("boxed", "fbox", "boxed_unbraced", "fbox_unbraced", "unclosed",
                                                  "malformed_box", "empty_box")},
    "boxed.choice@1": {rule: "\\boxed{A}\n\n" for rule in ("boxed_choice", "box_not_a_choice", "unclosed",
                                                         "malformed_box", "empty_box")},
    "gpqa.final_line@1": {"final_line": "Answer: A\n\n", "unreadable_final_line": "Answer: A\n\n"},
    "choice.freeform@1": {rule: "The answer is A.\n\n" for rule in ("answer_is", "answer_label", "boxed",
                                                                 "letter_is_answer", "answer_is_named")},
}


@pytest.mark.parametrize("key", sorted(LAST_MATCH))
@SETTINGS
@given(text=choice_texts)
def test_last_match_extractors_ignore_an_earlier_distractor(key, text):
    ex = extractors.get(key)
    got = ex.extract(text)
    distractor = LAST_MATCH[key].get(got.rule)
    if distractor is None:
        return
    again = ex.extract(distractor + text)
    shifted = (got.span[0] + len(distractor), got.span[1] + len(distractor)) if got.span else None
    assert (again.answer, again.rule, again.span) == (got.answer, got.rule, shifted)


FIRST_MATCH = {
    "mmlu_pro.lmeval@325f168": "\n\nthe answer is (B)",
    "gpqa.simple_evals@ee3b031": "\n\nAnswer: B",
    "mmlu_pro.official@f418b11": "\n\nthe answer is (B)",
}


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(FIRST_MATCH))
@SETTINGS
@given(text=choice_texts)
def test_first_match_steps_ignore_a_later_distractor(key, text):
    ex = extractors.get(key)
    got = ex.extract(text)
    if got.answer is None or (key.startswith("mmlu_pro.official") and got.rule != "L1"):
        return
    assert ex.extract(text + FIRST_MATCH[key]) == got


@SETTINGS
@given(text=choice_texts)
def test_truncated_responses_give_no_answer(text):
    for key in ("gpqa.final_line@1", "choice.freeform@1"):
        got = extractors.get(key).extract(text, finish_reason="length")
        assert (got.answer, got.rule) == (None, "truncated")
