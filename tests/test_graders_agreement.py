"""math.equiv, math.hendrycks and math.mathverify against independent verdicts.

Label sources (../shared/data): Qwen2.5-Math's grader on 800 CoT responses (qwen25_math_rm_maj_example)
and PRM800K human ratings of 306 final steps (prm800k_phase1_test_stepwise). Every disagreement of
math.equiv with a label is adjudicated by hand in golden/graders/math_equiv_adjudicated.jsonl; the tests pin
both the agreement counts and that table. math.equiv@2 revises assignments, decimals and division by zero;
no labelled row turns on those, so @2 disagrees with the labels on exactly @1's adjudicated rows, with the
same statuses (a row where it would not needs adjudicating by hand before this test passes). So does
math.equiv@3 (exact numbers, labels, word-joined lists): no labelled row turns on its revisions either.

The responses' final answers are read with the project's `boxed@1` extractor (the last `\\boxed{}`).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from audit import extractors
from audit import graders

ADJUDICATED = Path(__file__).parent / "golden" / "graders" / "math_equiv_adjudicated.jsonl"
QWEN = "qwen25_math_rm_maj_example/math_cot_100.jsonl"
PRM = "prm800k_phase1_test_stepwise/phase1_test_final_answers_vs_math500.jsonl"
SOURCE_BOXED = "qwen25_math_cot_100 (last \\boxed{} of response vs answer)"
SOURCE_PRED = "qwen25_math_cot_100 (pred vs gt)"
SOURCE_PRM = "prm800k_phase1_test_final_answers"
BOXED = extractors.get("boxed@1")


def _rows(shared) -> dict[str, list[dict]]:
    qwen_boxed, qwen_pred, prm = [], [], []
    for line in shared(QWEN).read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        for k, (resp, pred, label) in enumerate(zip(r["code"], r["pred"], r["score"], strict=True)):
            rid = f"{r['idx']}/{k}"
            qwen_boxed.append({"row": rid, "answer": BOXED.extract(resp).answer, "reference": r["answer"],
                               "label": label})
            qwen_pred.append({"row": rid, "answer": pred, "reference": r["gt"], "label": label})
    for line in shared(PRM).read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        prm.append({"row": str(r["row_index"]), "answer": r["model_answer"], "reference": r["gold_answer"],
                    "label": r["human_rating"] == 1})
    return {SOURCE_BOXED: qwen_boxed, SOURCE_PRED: qwen_pred, SOURCE_PRM: prm}


def _agreement(spec: str, rows: list[dict]) -> tuple[int, list[tuple[dict, graders.Judgment]]]:
    verdicts = graders.grade_many(spec, rows)
    assert all(v.status != "timeout" for v in verdicts), "no item may hit its budget on this data"
    misses = [(r, v) for r, v in zip(rows, verdicts, strict=True) if (v.correct is True) != r["label"]]
    return len(rows) - len(misses), misses


def _adjudicated() -> list[dict]:
    return [json.loads(line) for line in ADJUDICATED.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("spec", ["math.equiv@1", "math.equiv@2", "math.equiv@3"])
def test_math_equiv_agreement_and_every_disagreement_adjudicated(shared, spec):
    table = {(r["source"], r["row"]): r for r in _adjudicated()}
    agree = {}
    for source, rows in _rows(shared).items():
        n, misses = _agreement(spec, rows)
        agree[source] = n
        for r, v in misses:
            key = (source, r["row"])
            assert key in table, f"disagreement not adjudicated: {key} {r['answer']!r} vs {r['reference']!r}"
            assert table[key]["ours"] == v.status
        assert {k for k in table if k[0] == source} == {(source, r["row"]) for r, _ in misses}
    assert agree == {SOURCE_BOXED: 791, SOURCE_PRED: 799, SOURCE_PRM: 271}


@pytest.mark.shared_data
def test_hendrycks_agreement(shared):
    agree = {source: _agreement("math.hendrycks@985bdc1", rows)[0] for source, rows in _rows(shared).items()}
    assert agree == {SOURCE_BOXED: 780, SOURCE_PRED: 780, SOURCE_PRM: 253}


@pytest.mark.slow
@pytest.mark.shared_data
def test_mathverify_agreement(shared):
    agree = {source: _agreement("math.mathverify@0.9.0", rows)[0] for source, rows in _rows(shared).items()}
    assert agree == {SOURCE_BOXED: 799, SOURCE_PRED: 799, SOURCE_PRM: 271}


@pytest.mark.parametrize("spec", ["math.equiv@1", "math.equiv@2", "math.equiv@3"])
def test_adjudicated_table_pins_our_verdicts(spec):
    rows = _adjudicated()
    verdicts = graders.grade_many(spec, rows)
    for r, v in zip(rows, verdicts, strict=True):
        assert v.status == r["ours"], (r["source"], r["row"], v.reason)
        assert r["decided"] in ("correct", "incorrect") and r["reason"]
    # the decided verdict differs from ours only on the known limitation rows: forms demanded by the question
    wrong = sorted((r["source"], r["row"]) for r in rows if r["ours"] != r["decided"])
    assert wrong == [(SOURCE_PRM, rid) for rid in ("2005", "2008", "4107", "4110", "4111", "4113")]
    assert Counter(r["source"] for r in rows) == {SOURCE_BOXED: 9, SOURCE_PRED: 1, SOURCE_PRM: 35}
