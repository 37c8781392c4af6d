"""The wrong importer for a file: one line naming the format it looks like and the command to use.

Each case is a real file: lm-eval's own samples and results files (tests/data/lm_eval), MMLU-Pro result
files in the upstream per-category shape built from the real responses (as tests/test_import_mmlu_pro.py
does), the MMLU-Pro question set and the GPQA responses read in place from ../shared/data, and audit's own
verdict file and package. Before, `audit import mmlu-pro` on an lm-eval file printed the same
"missing required field" line for each of 20 rows.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO, shared_path
from tests.test_import_mmlu_pro import upstream_records, write_per_category

DATA = REPO / "tests" / "data" / "lm_eval"
GSM8K = DATA / "samples_gsm8k_2025-04-30T18-24-41.082644.jsonl"
COPA_DIR = DATA / "sshleifer__tiny-gpt2"
COPA_RESULTS = COPA_DIR / "results_2026-10-01T23-15-32.942677.json"
COPA = COPA_DIR / "samples_copa_2026-10-01T23-15-32.942677.jsonl"


def _refused(cli, tmp_path, *args: object) -> str:
    r = cli(*args)
    assert (r.code, r.out) == (2, ""), r.err
    assert r.err.count("\n") == 1
    assert not any(p.name.startswith("out") for p in tmp_path.iterdir())
    return r.err


def test_an_lm_eval_samples_file_given_to_the_mmlu_pro_importer(cli, tmp_path):
    err = _refused(cli, tmp_path, "import", "mmlu-pro", GSM8K, "-o", tmp_path / "out")
    assert err == (f"audit: error: {GSM8K}: this looks like an lm-evaluation-harness --log_samples file (doc_id, doc, "
                   f"resps); use `audit import lm-eval {GSM8K} --benchmark NAME -o OUT [--recorded RECORDED.json]`\n")


def test_an_lm_eval_results_file_names_the_samples_file_beside_it(cli, tmp_path):
    err = _refused(cli, tmp_path, "import", "lm-eval", COPA_RESULTS, "--benchmark", "selected_choice", "-o", tmp_path / "out")
    assert err == (f"audit: error: {COPA_RESULTS}: this looks like an lm-evaluation-harness results file (aggregate "
                   f"scores only, no per-item rows); use `audit import lm-eval {COPA} --benchmark NAME -o OUT` (the "
                   f"--log_samples file written beside it)\n")
    alone = tmp_path / "results_x.json"
    alone.write_bytes(COPA_RESULTS.read_bytes())
    err = _refused(cli, tmp_path, "import", "table", alone, "--kind", "responses", "-o", tmp_path / "out")
    assert err == (f"audit: error: {alone}: this looks like an lm-evaluation-harness results file (aggregate scores "
                   f"only, no per-item rows); use `audit import lm-eval samples_<task>_<date>.jsonl --benchmark NAME "
                   f"-o OUT` on the samples file --log_samples writes beside it\n")


@pytest.fixture(scope="module")
def upstream_dir(tmp_path_factory):
    sample = [json.loads(x) for x in shared_path("mmlu_pro/mmlu_pro_responses_sample.jsonl").open()]
    questions = {q["question_id"]: q for q in map(json.loads, shared_path(
        "mmlu_pro/mmlu_pro_test_questions.jsonl").open())}
    d = tmp_path_factory.mktemp("upstream") / "gpt4o"
    write_per_category(upstream_records(sample, questions, "gpt4o_2024-05"), d)
    return d


@pytest.mark.shared_data
def test_an_mmlu_pro_result_file_given_to_the_lm_eval_importer(cli, tmp_path, upstream_dir):
    src = upstream_dir / "biology_result.json"
    err = _refused(cli, tmp_path, "import", "lm-eval", src, "--benchmark", "mmlu_pro", "-o", tmp_path / "out")
    assert err == (f"audit: error: {src}: this looks like a TIGER-AI-Lab/MMLU-Pro result file (question_id, options, "
                   f"pred and the model's text); use `audit import mmlu-pro {src} -o OUT [--recorded "
                   f"RECORDED.json]`\n")
    # A table mapping that forgot the columns says which importer reads the file, once.
    r = cli("import", "table", src, "--kind", "responses", "-o", tmp_path / "out")
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {src}: row 1: field item_id: required field item_id is not mapped and the source "
                     f"has no column 'item_id' (use --map item_id=COLUMN); this looks like a TIGER-AI-Lab/MMLU-Pro "
                     f"result file (question_id, options, pred and the model's text); use `audit import mmlu-pro {src} "
                     f"-o OUT [--recorded RECORDED.json]`\n")


@pytest.mark.shared_data
def test_the_mmlu_pro_question_set_and_gpqa_responses(cli, tmp_path):
    questions = shared_path("mmlu_pro/mmlu_pro_test_questions.jsonl")
    err = _refused(cli, tmp_path, "import", "mmlu-pro", questions, "-o", tmp_path / "out")
    assert err == (f"audit: error: {questions}: this looks like the MMLU-Pro question set (question_id, options, "
                   f"answer; no model text); use `audit import table {questions} --kind items --map "
                   f"item_id=question_id --map reference=answer --map choices=options --map subject=category -o OUT`\n")
    gpqa = shared_path("gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz")
    err = _refused(cli, tmp_path, "import", "lm-eval", gpqa, "--benchmark", "gpqa_diamond", "-o", tmp_path / "out")
    assert err == (f"audit: error: {gpqa}: this looks like GPQA responses by item_index and version (no question "
                   f"text); use `audit import table {gpqa} --kind responses --map "
                   f"item_id=gpqa-{{item_index:03d}}-v{{version}} --sample-from model -o OUT`\n")


def test_audit_documents_are_not_imported(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("grade", REPO / "packages" / "demo-lab-note" / "mmlu_pro", "--benchmark", "mmlu_pro",
               "-o", "results.json", "-q").code == 0
    err = _refused(cli, tmp_path, "import", "table", "results.json", "--kind", "responses", "-o", "out")
    assert err == ("audit: error: results.json: this looks like an audit verdict file (written by audit grade or "
                   "audit import verdicts): nothing to import; use `audit show results.json`\n")
    err = _refused(cli, tmp_path, "import", "verdicts", "results.json", "--benchmark", "choice", "-o", "out.json")
    assert err.startswith("audit: error: results.json: this looks like an audit verdict file")
    manifest = REPO / "packages" / "demo-lab-note" / "mmlu_pro" / "manifest.json"
    err = _refused(cli, tmp_path, "import", "mmlu-pro", manifest, "-o", "out")
    assert err == (f"audit: error: {manifest}: this looks like an audit package: nothing to import; use "
                   f"`audit show {manifest}`\n")


def test_a_table_of_other_columns_is_one_line_not_one_per_row(cli, tmp_path):
    src = tmp_path / "scores.jsonl"
    src.write_text("".join(json.dumps({"name": f"m{i}", "score": i}) + "\n" for i in range(25)), encoding="utf-8")
    err = _refused(cli, tmp_path, "import", "mmlu-pro", src, "-o", tmp_path / "out")
    assert err == (f"audit: error: {src}: this looks like a table with other columns (name, score); use `audit import "
                   f"table {src} --kind responses --map item_id=COLUMN --map response=COLUMN -o OUT`\n")


def test_a_damaged_record_of_the_right_format_keeps_the_importers_own_error(cli, tmp_path):
    # The first record has MMLU-Pro fields but no question id: the importer says what is missing, once.
    src = tmp_path / "r.jsonl"
    src.write_text("".join(json.dumps({"pred": "A", "model_outputs": "x"}) + "\n" for _ in range(3)), encoding="utf-8")
    r = cli("import", "mmlu-pro", src, "-o", tmp_path / "out")
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {src}: row 1: field question_id: missing required field (and 2 more rows with "
                     f"the same problem)\n")
