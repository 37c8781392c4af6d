"""Issue 31 item 1: MMLU-Pro+ samples imported from lm-eval (12 options, A-L) and graded with `mmlu_pro_plus`.

lm-eval logged 6/9 on a real mmlu_pro_plus run where audit gave 2/9, every row `incorrect`: `import lm-eval` kept
no options for generate_until items (the doc holds them), and `mmlu_pro.options@1` then read A-J, so "The answer
is (K)" read J and "(L)" nothing. No public mmlu_pro_plus samples file was found (see the report of issue 31), so
the records are written in the harness's `--log_samples` shape (tests/test_import_lm_eval.py's writer) around
real MMLU-Pro questions from ../shared/data, each given MMLU-Pro+'s two added options (K, L: "Both X and Y are
correct"), with the issue's answer letters.
"""

from __future__ import annotations

import json

import pytest

from tests.test_import_lm_eval import lm_eval_record, write_samples

pytestmark = pytest.mark.shared_data
# (gold, the response's final letter): six right, three wrong, as the run (6/9); K and L among both.
CASES = [("K", "K"), ("L", "L"), ("K", "K"), ("A", "A"), ("L", "L"), ("C", "C"), ("K", "J"), ("B", "L"),
         ("L", "K")]


@pytest.fixture(scope="module")
def plus_docs():
    from tests.conftest import shared_path

    docs = []
    with shared_path("mmlu_pro/mmlu_pro_test_questions.jsonl").open() as f:
        for line in f:
            q = json.loads(line)
            if len(q["options"]) == 10:
                docs.append(q)
            if len(docs) == len(CASES):
                break
    out = []
    for q, (gold, _) in zip(docs, CASES, strict=True):
        options = [*q["options"], "Both A and B are correct", "Both C and D are correct"]
        out.append({"question_id": q["question_id"], "question": q["question"], "options": options,
                    "answer": gold, "answer_index": "ABCDEFGHIJKL".index(gold), "cot_content": "",
                    "category": q["category"], "src": q["src"]})
    return out


def _records(docs, with_options=True):
    records = []
    for i, (doc, (_, said)) in enumerate(zip(docs, CASES, strict=True)):
        text = f"Let's think step by step. Options {said} and others were weighed. The answer is ({said})."
        rec = lm_eval_record(i, dict(doc), [text], said)  # lm-eval's filter reads the same letter
        if not with_options:  # a doc that keeps its options elsewhere (or not at all); doc_hash no longer holds
            rec["doc"].pop("options")
        records.append(rec)
    return records


def _grade(cli, tmp_path, records, name, *flags):
    src = write_samples(tmp_path / f"samples_mmlu_pro_plus_{name}_2025-01-01T00-00-00.jsonl", records)
    pkg = tmp_path / f"pkg_{name}"
    r = cli("import", "lm-eval", src, "--benchmark", "mmlu_pro_plus", "-o", pkg, *flags)
    assert r.code == 0, r.err
    r = cli("grade", pkg, "--benchmark", "mmlu_pro_plus", "-o", tmp_path / f"{name}.json", "-q")
    assert r.code == 0, r.err
    doc = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
    return pkg, doc


def test_the_doc_s_options_are_kept_and_k_and_l_are_read(cli, tmp_path, plus_docs):
    records = _records(plus_docs)
    logged = sum(r["exact_match"] for r in records)
    assert logged == 6
    pkg, doc = _grade(cli, tmp_path, records, "kept")
    items = [json.loads(x) for x in (pkg / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [len(i["choices"]) for i in items] == [12] * 9
    assert {i["extra"]["choices_from"] for i in items} == {"doc.options"}
    assert doc["extractor"]["name"] + "@" + doc["extractor"]["version"] == "mmlu_pro.options@2"
    rows = doc["items"]
    assert [r["answer"] for r in rows] == [said for _, said in CASES]
    assert sum(r["verdict"] == "correct" for r in rows) == logged  # 6/9, as lm-eval logged (was 2/9)


def test_without_options_every_row_is_an_error_never_a_silent_wrong(cli, tmp_path, plus_docs):
    _, doc = _grade(cli, tmp_path, _records(plus_docs, with_options=False), "none", "--no-hash-check")
    rows = doc["items"]
    assert {(r["verdict"], r["status"], r["rule"]) for r in rows} == {("ungraded", "error", "no_options")}
    assert rows[0]["reason"] == ("the item records no option count, and the extractor reads only the item's own "
                                 "letters: not graded (import the items with their options)")
