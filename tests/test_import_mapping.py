"""`--map` and `--where` beyond `import table`: one shared option for `import verdicts` and `import mmlu-pro`.

The real multi-run file ../shared/data/mmlu_pro/mmlu_pro_responses_sample.jsonl holds 13 runs of 1,000
questions under other column names (`gold_answer`, `source_pred`, `source_correct`); before, each importer
needed a Python rewrite of it first, and `import verdicts`' hint named a command that writes a package."""

from __future__ import annotations

import json

import pytest


from tests.conftest import shared_path

SAMPLE = "mmlu_pro/mmlu_pro_responses_sample.jsonl"
GPT4O = ["--where", "run_id=gpt4o_2024-05"]


def test_import_verdicts_reads_one_run_of_a_multi_run_file(cli, here):
    src = shared_path(SAMPLE)
    r = cli("import", "verdicts", src, "--benchmark", "mmlu_pro", "-o", "v.json", *GPT4O, "--map",
            "item_id=question_id", "--map", "correct=source_correct", "--map", "answer=source_pred",
            "--map", "subject=category")
    # 750 of 1,000: the figure the data's README gives for this run.
    assert (r.code, r.out) == (0, "wrote v.json: mmlu_pro, 1000 items x 1 samples, recorded accuracy 75.00% "
                                  "(750/1000)\n")
    doc = json.loads((here / "v.json").read_text())
    assert json.loads(doc["environment"]["mapping"]) == {
        "map": {"item_id": "question_id", "correct": "source_correct", "answer": "source_pred",
                "subject": "category"}, "where": ["run_id=gpt4o_2024-05"]}
    assert len(doc["summary"]["subjects"]) == 14


@pytest.mark.slow
def test_import_mmlu_pro_reads_one_run_of_a_multi_run_file_then_grades(cli, here):
    src = shared_path(SAMPLE)
    r = cli("import", "mmlu-pro", src, *GPT4O, "--map", "answer=gold_answer", "--map",
            "answer_index=gold_answer_index", "--map", "pred=source_pred", "-o", "pkg", "--recorded", "rec.json")
    assert r.code == 0, r.err
    assert r.out.splitlines()[-1] == ("wrote rec.json: mmlu_pro, 1000 items x 1 samples, recorded accuracy 75.00% "
                                      "(750/1000); 47 without a pred counted wrong")
    manifest = json.loads((here / "pkg" / "manifest.json").read_text())
    assert manifest["provenance"]["extra"]["import"]["where"] == ["run_id=gpt4o_2024-05"]
    r = cli("grade", "pkg", "--benchmark", "mmlu_pro", "-o", "g.json")
    assert r.code == 0 and "accuracy_all                  76.40%  (764/1000)" in r.out


def test_mapping_refusals_are_one_line(cli, here):
    src = shared_path(SAMPLE)
    r = cli("import", "verdicts", src, "--benchmark", "choice", "-o", "v.json", "--map", "verdikt=source_correct")
    assert (r.code, r.err) == (2, "audit: error: --map verdikt: not a field this command reads (fields: item_id, "
                                  "sample, answer, correct, verdict, status, reason, reference, subject)\n")
    r = cli("import", "verdicts", src, "--benchmark", "choice", "-o", "v.json", "--where", "runid=x",
            "--map", "item_id=question_id")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field runid: --where refers to missing column "
                                  f"'runid'\n")
    r = cli("import", "mmlu-pro", src, "-o", "pkg", "--map", "answer={gold}")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field gold: --map answer: template '{{gold}}' refers "
                                  f"to missing column 'gold'\n")
    assert not (here / "v.json").exists() and not (here / "pkg").exists()


def test_the_hint_of_import_verdicts_names_commands_that_write_verdict_files(cli, here):
    src = shared_path(SAMPLE)
    r = cli("import", "verdicts", src, "--benchmark", "choice", "-o", "v.json")
    assert r.code == 2
    assert r.err == (f"audit: error: {src}: this looks like a table with other columns (run_id, model, question_id, "
                     f"category, gold_answer, gold_answer_index, ...), with no `correct` or `verdict` column; name "
                     f"the columns that hold them: `audit import verdicts {src} --benchmark NAME --map item_id=COLUMN "
                     f"--map correct=COLUMN -o OUT.json`, or grade its responses: `audit grade PACKAGE --benchmark "
                     f"NAME -o OUT.json`\n")
    from tests.conftest import REPO

    gsm8k = REPO / "tests" / "data" / "lm_eval" / "samples_gsm8k_2025-04-30T18-24-41.082644.jsonl"
    r = cli("import", "verdicts", gsm8k, "--benchmark", "choice", "-o", "v.json")
    assert (r.code, r.err) == (2, f"audit: error: {gsm8k}: this looks like an lm-evaluation-harness --log_samples "
                                  f"file (doc_id, doc, resps); its run's own verdicts: `audit import lm-eval {gsm8k} "
                                  f"--benchmark NAME -o PACKAGE --recorded OUT.json` (writes the responses package "
                                  f"and the verdict file)\n")


def test_extract_and_judge_take_the_same_options(cli, here):
    src = shared_path(SAMPLE)
    r = cli("extract", "--extractor", "mmlu_pro.official@f418b11", src, *GPT4O, "--map", "item_id=q{question_id}")
    assert r.code == 0, r.err
    rows = [json.loads(line) for line in r.out.splitlines()]
    assert len(rows) == 1000 and rows[0]["item_id"] == "q84"
    assert r.err.endswith(": 993 answers from 1000 rows\n")
    # The run's own letters against its gold: 750 correct, the figure of the data's README.
    r = cli("judge", src, "--grader", "choice", *GPT4O, "--map", "id=question_id", "--map", "answer=source_pred",
            "--map", "reference=gold_answer")
    assert r.code == 0, r.err
    judged = [json.loads(line) for line in r.out.splitlines()]
    assert len(judged) == 1000 and sum(j["correct"] is True for j in judged) == 750
    r = cli("judge", src, "--grader", "choice", "--map", "idd=question_id")
    assert (r.code, r.err) == (2, "audit: error: --map idd: not a field this command reads (fields: id, answer, "
                                  "reference, num_choices)\n")
