"""Prompt templates: exact wording on real items, and pinned fingerprints (a version never changes)."""

from __future__ import annotations

import hashlib
import json

import pytest
from tests.conftest import shared_path

from audit.errors import AuditError
from audit.models import ItemRow
from audit.prompts import REGISTRY, chat_messages, prompt_sha256
from audit.specs import lookup, prompt_for

PINNED = {
    "mmlu_pro.cot@1": "9f72f4156a9a22eee4f48484c6a10f759a5a5e224bb72a17f78c9cf898e8abb0",
    "gpqa.simple_evals@1": "4dcdcedb8d74006e15eb30e29d2e2af03ddf89a616d7df18826a81a188b3cd80",
    "math.boxed@1": "66dfffae8fc7f040942e5fe4312819e20514fd15f5922e976e2253c64c552126",
}


def test_registered_versions_keep_their_fingerprints():
    assert {t.key: t.fingerprint for t in REGISTRY} == PINNED


@pytest.mark.shared_data
def test_mmlu_pro_first_test_item():
    # mmlu_pro_test_questions.jsonl row 1 (question_id 70); the wording of TIGER-AI-Lab/MMLU-Pro
    # evaluate_from_api.py@f418b11 (instruction + format_example, which ends "Let's think step by step.").
    with open(shared_path("mmlu_pro/mmlu_pro_test_questions.jsonl"), encoding="utf-8") as f:
        r = json.loads(f.readline())
    item = ItemRow(item_id=str(r["question_id"]), reference=r["answer"], choices=r["options"],
                   subject=r["category"], question=r["question"])
    assert lookup("prompt template", "mmlu_pro.cot").render(item) == (
        'The following are multiple choice questions (with answers) about business. Think step by step and then '
        'output the answer in the format of "The answer is (X)" at the end.\n\n'
        "Question: Typical advertising regulatory bodies suggest, for example that adverts must not: encourage "
        "_________, cause unnecessary ________ or _____, and must not cause _______ offence.\n"
        "Options: A. Safe practices, Fear, Jealousy, Trivial\n"
        "B. Unsafe practices, Distress, Joy, Trivial\n"
        "C. Safe practices, Wants, Jealousy, Trivial\n"
        "D. Safe practices, Distress, Fear, Trivial\n"
        "E. Unsafe practices, Wants, Jealousy, Serious\n"
        "F. Safe practices, Distress, Jealousy, Serious\n"
        "G. Safe practices, Wants, Fear, Serious\n"
        "H. Unsafe practices, Wants, Fear, Trivial\n"
        "I. Unsafe practices, Distress, Fear, Serious\n"
        "Answer: Let's think step by step.\n\n")


def test_mmlu_pro_drops_na_options_like_upstream():
    item = ItemRow(item_id="x", reference="A", choices=["yes", "no", "N/A"], subject="law", question="Q?")
    assert "Options: A. yes\nB. no\nAnswer:" in lookup("prompt template", "mmlu_pro.cot").render(item)


@pytest.mark.shared_data
def test_math500_first_test_item():
    # math500/test.jsonl row 1 (test/precalculus/807.json); the directive of deepseek-ai/DeepSeek-R1 README.md.
    with open(shared_path("math500/test.jsonl"), encoding="utf-8") as f:
        r = json.loads(f.readline())
    item = ItemRow(item_id=r["unique_id"], reference=r["answer"], question=r["problem"])
    assert lookup("prompt template", "math.boxed").render(item) == (
        "Convert the point $(0,3)$ in rectangular coordinates to polar coordinates.  Enter your answer in the form "
        "$(r,\\theta),$ where $r > 0$ and $0 \\le \\theta < 2 \\pi.$\n"
        "Please reason step by step, and put your final answer within \\boxed{}.")


def test_gpqa_template_on_a_made_up_item():
    # Not a GPQA item (their text must not be published): braces in the text stay as they are.
    item = ItemRow(item_id="made-up", reference="B", choices=["3", "4", "{5}", "22"], question="What is 2+2?")
    assert lookup("prompt template", "gpqa.simple_evals").render(item) == (
        "Answer the following multiple choice question. The last line of your response should be of the following "
        "format: 'Answer: $LETTER' (without quotes) where LETTER is one of ABCD. Think step by step before "
        "answering.\n\nWhat is 2+2?\n\nA) 3\nB) 4\nC) {5}\nD) 22")


@pytest.mark.parametrize("template, item, message", [
    ("gpqa.simple_evals", ItemRow(item_id="q1", reference="A", choices=["a", "b", "c"], question="?"),
     "item 'q1' has 3 options; this template asks for A-D"),
    ("mmlu_pro.cot", ItemRow(item_id="q2", reference="A", choices=["a"], question="?"),
     "item 'q2' has no subject, which the MMLU-Pro instruction names"),
    ("math.boxed", ItemRow(item_id="q3", reference="1"), "item 'q3' has no question, which the prompt needs"),
])
def test_missing_fields_name_the_item(template, item, message):
    with pytest.raises(AuditError, match=message):
        lookup("prompt template", template).render(item)


def test_benchmark_defaults_and_unknown_names():
    assert prompt_for("mmlu_pro").key == "mmlu_pro.cot@1"
    assert prompt_for("gpqa_diamond").key == "gpqa.simple_evals@1"
    assert prompt_for("math500").key == "math.boxed@1"
    assert prompt_for("hle", "math.boxed@1").key == "math.boxed@1"
    with pytest.raises(AuditError, match="no default prompt for benchmark 'hle'"):
        prompt_for("hle")
    with pytest.raises(AuditError, match="unknown prompt template 'nope'"):
        lookup("prompt template", "nope")


def test_prompt_hash_covers_exactly_what_is_sent():
    text = "What is 1+1?\nPlease reason step by step."
    assert prompt_sha256("completion", text) == hashlib.sha256(text.encode()).hexdigest()
    canonical = '[{"role":"user","content":"What is 1+1?\\nPlease reason step by step."}]'
    assert json.loads(canonical) == chat_messages(text)
    assert prompt_sha256("chat", text) == hashlib.sha256(canonical.encode()).hexdigest()
