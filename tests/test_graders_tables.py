"""Golden tables, one row per case, each naming its source (tests/golden/graders/*.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import graders
from graders.math import math_equiv, math_equiv_fast

GOLDEN = Path(__file__).parent / "golden" / "graders"


def _table(name: str) -> list[dict]:
    rows = [json.loads(line) for line in (GOLDEN / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    assert rows, name
    return rows


def _ids(rows: list[dict]) -> list[str]:
    return [f"{i}:{r['answer'][:24]}|{r['reference'][:16]}" for i, r in enumerate(rows)]


MATH_CASES = _table("math_equiv_cases.jsonl")


@pytest.fixture(scope="module")
def math_verdicts() -> list[graders.Verdict]:
    # one batch through the worker pool, as `audit grade` will call it
    return graders.grade_many("math.equiv", MATH_CASES)


@pytest.mark.parametrize("i", range(len(MATH_CASES)), ids=_ids(MATH_CASES))
def test_math_equiv_table(i, math_verdicts):
    row, v = MATH_CASES[i], math_verdicts[i]
    assert v.status == row["status"], f"{row['source']}: {row['note']}: {v.reason}"
    assert v.reason


def test_math_equiv_fast_path_agrees_with_the_full_grader():
    # wherever the in-process fast path decides, the full function (run inline here) decides the same
    decided = 0
    for row in MATH_CASES:
        fast = math_equiv_fast(row["answer"], row["reference"])
        if fast is None:
            continue
        decided += 1
        assert fast == math_equiv(row["answer"], row["reference"]), row
    assert decided >= len(MATH_CASES) // 2


def test_math_equiv_seed_cases_from_the_note():
    g = graders.get("math.equiv")
    assert g.grade("x = 4", "4").correct is True
    assert g.grade(r"\dfrac{1}{2}", r"\frac{1}{2}").correct is True
    assert g.grade(r"\boxed{\text{(B)}}", "B").correct is True
    # and the old normalizer gets two of the three wrong in the way the note describes
    h = graders.get("math.hendrycks@985bdc1")
    assert h.grade("x = 4", "4").correct is True  # a one-letter left side is dropped...
    assert h.grade("AB = 4", "4").correct is False  # ...a longer one is not
    assert h.grade(r"\boxed{\text{(B)}}", "B").correct is False


HENDRYCKS_CASES = _table("hendrycks_985bdc1_cases.jsonl")


@pytest.mark.parametrize("row", HENDRYCKS_CASES, ids=_ids(HENDRYCKS_CASES))
def test_hendrycks_table(row):
    v = graders.get("math.hendrycks@985bdc1").grade(row["answer"], row["reference"])
    assert v.correct is row["correct"], f"{row['source']}: {v.reason}"


HLE_CASES = _table("hle_exact_cases.jsonl")


@pytest.mark.parametrize("row", HLE_CASES, ids=_ids(HLE_CASES))
def test_hle_exact_table(row):
    v = graders.get("exact.hle@1").grade(row["answer"], row["reference"])
    assert v.status == row["status"], f"{row['source']}: {row['note']}: {v.reason}"


CHOICE_CASES = _table("choice_cases.jsonl")


@pytest.mark.parametrize("row", CHOICE_CASES, ids=_ids(CHOICE_CASES))
def test_choice_table(row):
    v = graders.get("choice@1").grade(row["answer"], row["reference"], num_choices=row["num_choices"])
    assert v.status == row["status"], f"{row['source']}: {v.reason}"


def test_choice_reasons():
    g = graders.get("choice")
    assert g.grade("K", "B", num_choices=10) == graders.Verdict(False, "incorrect",
                                                                 "K is outside the item's 10 options A–J")
    assert g.grade(None, "B") == graders.Verdict(None, "no_answer", "no answer was extracted")


def test_mathverify_second_opinion_on_its_known_traps():
    g = graders.get("math.mathverify@0.9.0")
    out = graders.grade_many(g, [(r"\boxed{3}, \boxed{5}", "3, 5"), ("x = 4", "4"), (r"\dfrac{1}{2}", "0.5"),
                                 ("", "5"), ("5", "")])
    # math-verify joins two boxed answers into a set; math.equiv refuses (see the table above)
    assert [v.status for v in out] == ["correct", "correct", "correct", "parse_error_answer",
                                       "parse_error_reference"]
