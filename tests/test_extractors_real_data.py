"""Extractors on the real responses in ../shared/data: equivalence with the upstream regexes and pinned counts.

GPQA responses are read here but never printed: assertion messages carry counts and row
references only.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter

import pytest
from tests.reference_extractors import literal_lmeval, literal_official_rule, literal_official_x, literal_simple_evals

from audit import extractors

pytestmark = pytest.mark.shared_data

_L2_KEY = re.compile(r"[aA]nswer:")


@pytest.fixture(scope="module")
def mmlu_rows():
    from tests.conftest import shared_path

    with open(shared_path("mmlu_pro/mmlu_pro_responses_sample.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def gpqa_rows():
    from tests.conftest import shared_path

    with gzip.open(shared_path("gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz"), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def literal_official_guarded(text: str):
    """The literal cascade, skipping the L2 regex where it cannot match.

    `.*[aA]nswer:\\s*([A-J])` needs the substring `answer:`/`Answer:`; without it the
    search returns None after quadratic work on long lines (about 49 s for these 13,000
    responses, nearly all of it in that step). Skipping it there changes no result.
    """
    if _L2_KEY.search(text):
        return literal_official_rule(text)
    m = re.search(r"answer is \(?([A-J])\)?", text)
    if m:
        return m.group(1), "L1", m.span()
    m = re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)
    return (m.group(0), "L3", m.span()) if m else (None, "none", None)


def test_the_l2_guard_changes_nothing_where_the_literal_l2_is_cheap(mmlu_rows):
    short = [r["response"] for r in mmlu_rows if len(r["response"]) < 600][:1500]
    assert len(short) >= 1000
    assert [literal_official_guarded(t) for t in short] == [literal_official_rule(t) for t in short]


def test_official_equals_the_literal_cascade_on_all_13000_responses(mmlu_rows):
    ex = extractors.get("mmlu_pro.official@f418b11")
    diff = []
    for r in mmlu_rows:
        got = ex.extract(r["response"])
        if (got.answer, got.rule, got.span) != literal_official_guarded(r["response"]):
            diff.append((r["run_id"], r["question_id"]))
    assert len(mmlu_rows) == 13000
    assert diff == []
    rules = Counter(ex.extract(r["response"]).rule for r in mmlu_rows)
    assert rules == {"L1": 11890, "L3": 660, "none": 417, "L2": 33}


def test_official_x_and_lmeval_equal_their_literal_regexes(mmlu_rows):
    ox = extractors.get("mmlu_pro.official_x@7535b16")
    lm = extractors.get("mmlu_pro.lmeval@325f168")
    for r in mmlu_rows:
        t = r["response"]
        assert ox.extract(t).answer == literal_official_x(t), (r["run_id"], r["question_id"])
        assert (lm.extract(t).answer or "[invalid]") == literal_lmeval(t), (r["run_id"], r["question_id"])


# Which upstream extractor produced each run's stored `source_pred` (see ../shared/data/mmlu_pro/README.md).
FULL_CASCADE_RUNS = ("gemini-3.1-pro-preview_2026-02", "gemini-1.5-pro-002_5shots", "jamba-1.5-large_5shots")
L1_ONLY_RUNS = ("gpt4o_2024-05", "deepseek_2024-05", "Mixtral-8x7B-Instruct-v0.1_5shots", "Mistral-7B-v0.1_5shots",
                "Qwen1.5-7B-Chat_5shots", "Phi-3-mini-4k-instruct_5shots", "Llama-2-7b-hf_5shots")


def test_official_reproduces_the_stored_pred_of_runs_made_with_it(mmlu_rows):
    ex = extractors.get("mmlu_pro.official@f418b11")
    rows = [r for r in mmlu_rows if r["run_id"] in FULL_CASCADE_RUNS]
    assert len(rows) == 3000
    assert [r["question_id"] for r in rows if ex.extract(r["response"]).answer != r["source_pred"]] == []


def test_lmeval_pattern_reproduces_the_stored_pred_of_l1_only_runs(mmlu_rows):
    # lm-eval's pattern is upstream's L1 step alone, which the May-2024 API scripts and these zips used.
    ex = extractors.get("mmlu_pro.lmeval@325f168")
    rows = [r for r in mmlu_rows if r["run_id"] in L1_ONLY_RUNS]
    assert len(rows) == 7000
    assert [(r["run_id"], r["question_id"]) for r in rows if ex.extract(r["response"]).answer != r["source_pred"]] == []


def test_simple_evals_pattern_on_the_gpqa_responses(gpqa_rows):
    ex = extractors.get("gpqa.simple_evals@ee3b031")
    got = [ex.extract(r["response"]).answer for r in gpqa_rows]
    assert got == [literal_simple_evals(r["response"]) for r in gpqa_rows]
    assert sum(a is not None for a in got) == 92


def test_final_line_on_the_gpqa_responses(gpqa_rows):
    # These responses were never asked for "Answer: X": the final line rarely holds one.
    ex = extractors.get("gpqa.final_line@1")
    rules = Counter(ex.extract(r["response"]).rule for r in gpqa_rows)
    assert rules == {"no_final_line": 6225, "final_line": 89, "unreadable_final_line": 22}
    assert {ex.extract(r["response"], finish_reason="length").rule for r in gpqa_rows[:50]} == {"truncated"}


@pytest.mark.slow
def test_freeform_agreement_with_the_third_party_extractor(gpqa_rows):
    """choice.freeform against `source_extracted` (E or empty = no clear option); see the report for categories."""
    ex = extractors.get("choice.freeform@1")
    agree = 0
    for r in gpqa_rows:
        source = r["source_extracted"] if r["source_extracted"] in ("A", "B", "C", "D") else None
        agree += ex.extract(r["response"]).answer == source
    assert agree == 5508  # 86.9% of 6,336; pinned: a change in Python's `re` would show here


def test_boxed_on_real_math_responses():
    from tests.conftest import shared_path

    ex = extractors.get("boxed@1")
    with open(shared_path("qwen25_math_rm_maj_example/math_cot_100.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    pairs = [(ex.extract(code), pred) for r in rows for code, pred in zip(r["code"], r["pred"], strict=True)]
    assert len(pairs) == 800
    assert all(g.rule == "boxed" for g, _ in pairs)
    # The remaining 34 differ only by the Qwen grader's normalisation (e.g. `4:30 \text{ p.m.}` vs `4:30`).
    assert sum(g.answer == pred for g, pred in pairs) == 766
