"""math.final@1 against the false credits of the 2026-12-01 review: a hedged or multi-valued statement never gives
one of its values, and the last-line number is a whole token that plainly ends the answer, or nothing.

The review's own rows are golden rows (tests/golden/extractors/math_final.jsonl, source "review 2026-12-01 …");
here they also go through the math specs' grader, and generated variants check that the rules are not fitted
to the review's exact words.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit import extractors, graders
from tests.test_extractors_golden import _assert_parts_in

FINAL = extractors.get("math.final@1")
GOLDEN = Path(__file__).parent / "golden" / "extractors" / "math_final.jsonl"

# The review's raw rows: (text, reference, credited?) with math.final@1 + math.equiv@3, the math specs' pipeline.
REVIEW_PIPELINE = [
    ("The answer is 5, 6, 7, 8, 9, 10, 11.", "5", False),
    ("The answer is 5 or 6 or 7 or 8 or 9.", "5", False),
    ("The answer is 2 or 3, depending on the case.", "2", False),
    ("The final answer is 12 if n is even and 13 otherwise.", "12", False),
    ("The answer is 5, but I'm not confident; it might be 6.", "5", False),
    ("The answer is 5 (or possibly 6, if we include the endpoint).", "5", False),
    ("The final answer is 5 or maybe 6 but not 7.", "5", False),
    ("The answer is 5 to 10 depending on the interpretation.", "5", False),
    ("The answer is 5 and also 6 and also 7 and 8.", "5", False),
    ("The area of the square is 5 cm^2.", "2", False),
    ("The result is 2^5", "5", False),
    ("The value is 3 \\cdot 10^4", "4", False),
    ("We obtain 3 x 10^4", "4", False),
    ("the element a_{12}", "12", False),
    ("So the ratio of boys to girls is 3:5.", "5", False),
    ("They arrive at 4:30 p.m.", "30", False),
    ("The time is 2 h 30 min", "30", False),
    ("So x = 3 (see step 2)", "2", False),
    ("So the solution is x = 7 for part 1", "1", False),
    ("Compute $f(3)$:\nf(3) = 3^2 + 1", "1", False),
    ("I could not solve problem 5.", "5", False),
    ("Result: 5 or 6", "6", False),
    ("I think 5, but 6 is also possible", "6", False),
    ("The area of the square is 5 cm^2.", "5", True),
    ("Thus the area is 25 m^2", "25", True),
    ("The result is 2^5", "32", True),
    ("The value is 3 \\times 10^4", "30000", True),
    ("So x = 3 (see step 2)", "3", True),
    ("So the ratio of boys to girls is 3:5.", "3:5", True),
    ("We put the answer in \\boxed{}. The answer is 5.", "5", True),
    ("Problem: find x, the answer in \\boxed{}.\n Solving... x = 5", "5", True),
    ("6 is the answer, not 5", "6", True),
    ("We get \\boxed{5}. Wait, that is wrong; recomputing, the answer is 6.", "6", True),
]


def test_every_review_row_is_a_golden_row():
    rows = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
    pinned = {r["text"] for r in rows if r["source"].startswith("review 2026-12-01")}
    assert {text for text, _, _ in REVIEW_PIPELINE} <= pinned
    assert sum(r["source"].startswith("review 2026-12-01") for r in rows) == 34  # 33 extractor rows + 1 kept reading


@pytest.mark.parametrize("text,reference,credited", REVIEW_PIPELINE, ids=[t[:40] for t, _, _ in REVIEW_PIPELINE])
def test_review_rows_through_the_math_pipeline(text, reference, credited):
    got = FINAL.extract(text)
    judged = graders.get("math.equiv@3").grade(got.answer, reference) if got.answer is not None else None
    assert (judged is not None and judged.correct is True) is credited, (got, judged)


ANCHORS = ["The answer is", "The final answer is", "Final Answer:", "Answer:", "So the answer is"]
HEDGES = [
    "{a} or {b}, depending on n", "{a} if n is even and {b} otherwise", "{a}, but it might be {b}",
    "{a} (or possibly {b})", "{a} or maybe {b}", "{a} to {b} depending on n", "{a} and also {b}",
    "{a} unless n = {b}", "probably {a}", "{a}, assuming n > {b}", "either {a} or {b}, I am not sure",
    "{a}. Or maybe {b}", "{a}. But it could also be {b}", "${a}$ if $n$ is odd, else ${b}$", "{a}.\nActually, {b}",
    "{a}. Wait, it is {b}", "{a} {b}",
]
VALUES = [("5", "6"), ("12", "13"), ("-1", "2"), ("\\frac{1}{2}", "\\frac{1}{3}"), ("0.25", "4")]


@pytest.mark.parametrize("anchor", ANCHORS)
@pytest.mark.parametrize("hedge", HEDGES)
def test_a_hedged_statement_gives_none_of_its_values(anchor, hedge):
    for a, b in VALUES:
        text = f"Some work first, x = {a}.\n\n{anchor} {hedge.format(a=a, b=b)}."
        got = FINAL.extract(text)
        assert got.answer not in (a, b, f"${a}$"), (text, got)
        assert got.answer is None or a in got.answer and b in got.answer, (text, got)


@pytest.mark.parametrize("anchor", ANCHORS)
@pytest.mark.parametrize("body", ["{a}, {b}", "{a} or {b}", "{a} and {b}", "{a}, {b}, and {c}",
                                  "x = {a} or x = {b}"])
def test_a_list_statement_is_the_answer_whole(anchor, body):
    for a, b in VALUES:
        got = FINAL.extract(f"{anchor} {body.format(a=a, b=b, c='7')}.")
        assert got.answer is not None and a in got.answer and b in got.answer, got


# Last lines whose final number is not the answer: (text, a value the extractor must never give).
NOT_THE_NUMBER = [
    ("The area is 7 cm^3", "3"), ("The volume is 8 m^{3}.", "3"), ("That is 6.02 \\times 10^{23}", "23"),
    ("We get 1.5 \\cdot 10^{-3}", "-3"), ("the term x_{7}", "7"), ("so we use a_3", "3"), ("It is \\sqrt{2}", "2"),
    ("The train leaves at 10:45", "45"), ("The odds are 2:7.", "7"), ("as shown in Equation 4", "4"),
    ("See Problem 12.", "12"), ("This follows from Lemma 3", "3"), ("I give up on question 9.", "9"),
    ("The answer lies in part 2", "2"), ("x = 4 or 9", "9"), ("x = 4, 9", "9"), ("maybe 8", "8"),
    ("y = 2x + 5", "5"), ("f(x) = x^2 - 1", "1"), ("which is greater than 3", "3"), ("It weighs 3 kg 200 g", "200"),
    ("between 4 and 8", "8"), ("we get 4 and then 8", "8"), ("If n = 3, then x = 10", "10"),
    ("x = 5 if n is even", "5"), ("It is 7 (or 8)", "7"), ("The result is \\frac{1", "1"), ("Step 3", "3"),
    ("#4", "4"), ("the value is 3 out of 5", "5"), ("3 plus 4", "4"), ("We need 2 more. Or 3", "3"),
    ("so the sum is 2n", "2"), ("x = 5i", "5"), ("The result is 5!", "5"), ("x = 3 pi", "3"), ("x = 3\\pi", "3"),
    ("x = 4 y", "4"), ("x = \u22125", "5"), ("x = \u221a2", "2"), ("x = 1\\frac{1}{2}", "1"),
    ("so x = 0.\\overline{3}", "0"),
    ("It is 2 \\text{ or } 3", "3"), ("It is 2 \\text{ or } 3", "2"), ("x \u2260 5", "5"), ("Then x > 5.", "5"),
]


@pytest.mark.parametrize("text,never", NOT_THE_NUMBER, ids=[t for t, _ in NOT_THE_NUMBER])
def test_the_last_number_is_never_a_piece_a_reference_or_one_of_several(text, never):
    got = FINAL.extract(text)
    assert got.answer != never, got
    assert got.rule in ("last_number", "unsure_number", "none", "math_env", "answer_is"), got


# Last lines whose final number plainly is the answer: (text, answer).
THE_NUMBER = [
    ("So the total is 42.", "42"), ("x = -7", "-7"), ("The area is 12 square units.", "12"),
    ("It costs $15.", "15"), ("Hence 3 + 4 = 7", "7"), ("The angle is 30^\\circ.", "30"),
    ("The probability is 2/3.", "2/3"), ("so the mass is 2.5 \\times 10^3 kg", "2.5 \\times 10^3"),
    ("The meeting starts at 9:15 a.m.", "9:15"), ("Thus x = 2 (double root).", "2"),
    ("We have 3 apples and 4 pears, so there are 7 fruits.", "7"), ("Result = 1,000", "1,000"),
    ("the length is 100m", "100"), ("It takes 5 h.", "5"), ("The mass is 4 kg", "4"),
    ("Therefore, the count is 12 in total.", "12"),
]


@pytest.mark.parametrize("text,answer", THE_NUMBER, ids=[t for t, _ in THE_NUMBER])
def test_the_last_number_that_ends_the_answer_is_read(text, answer):
    got = FINAL.extract(text)
    assert (got.answer, got.rule) == (answer, "last_number")
    assert text[got.span[0]:got.span[1]] == answer


MATH_TOKENS = [
    "The answer is ", "Final Answer: ", "answer", " is ", "5", "12", "-3", "2/3", "1,000", "3:5", "10^4", "^", "_", "{",
    "}", "(", ")", "$", "\\boxed{", "\\frac{1}{2}", "\\cdot ", "\\sqrt{", " or ", " and ", " if ", "step ", " cm",
    "m^2", "μm^2", "²", "\u2212", "\u221a", "!", "%", "\n", ". ", ", ", " not ", "I hope it is correct.",
    "<|im_start|>", "Therefore, ", " p.m.", "\\text{ or }", "x = ", " ", "#", "(see step 2)",
]


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(MATH_TOKENS), max_size=30).map("".join))
def test_never_raises_and_a_read_number_is_in_its_span(text):
    got = FINAL.extract(text)
    assert got.rule in FINAL.rules
    if got.answer is not None:
        start, end = got.span
        _assert_parts_in(got.answer, text[start:end])
    if got.rule == "last_number":  # a whole token that the text holds where the span says
        assert text[got.span[0]:got.span[1]] == got.answer
        assert not text[:got.span[0]].rstrip().endswith(("^", "_", "{", "+", "\u2212", "\u221a"))
