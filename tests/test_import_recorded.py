"""`audit import mmlu-pro --recorded`: the run's own verdicts (upstream `pred` vs the gold letter) as a verdict
file pinned to the imported responses, ready for `audit diff`, on the real gpt-4o (May 2024) run put back into
TIGER-AI-Lab/MMLU-Pro's per-category result files (as tests/test_import_mmlu_pro.py does).

../shared/data/mmlu_pro/README.md counts 750 of 1,000 correct and 47 null preds for that run; its script had
only the `answer is (X)` regex, so the official cascade (L2, L3) reads a letter from some of those 47.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import shared_path
from tests.test_import_mmlu_pro import upstream_records, write_per_category

pytestmark = pytest.mark.shared_data
RUN = "gpt4o_2024-05"


@pytest.fixture(scope="module")
def run():
    sample = [json.loads(x) for x in shared_path("mmlu_pro/mmlu_pro_responses_sample.jsonl").open()]
    questions = {q["question_id"]: q for q in map(json.loads, shared_path(
        "mmlu_pro/mmlu_pro_test_questions.jsonl").open())}
    return upstream_records(sample, questions, RUN)


@pytest.mark.slow
def test_recorded_verdicts_in_one_step_then_diff(cli, run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    srcs = write_per_category(run, tmp_path / "gpt4o")
    r = cli("import", "mmlu-pro", *srcs, "-o", "responses", "--items-out", "items", "--recorded", "recorded.json")
    assert (r.code, r.err) == (0, "")
    ids = [json.loads((tmp_path / p / "manifest.json").read_text())["package_id"] for p in ("responses", "items")]
    assert r.out == (f"wrote responses: responses package {ids[0]}, 1000 rows and 1000 items\n"
                     f"wrote items: items package {ids[1]}, 1000 rows\n"
                     f"wrote recorded.json: mmlu_pro, 1000 items x 1 samples, recorded accuracy 75.00% (750/1000); "
                     f"47 without a pred counted wrong\n")
    doc = json.loads((tmp_path / "recorded.json").read_text(encoding="utf-8"))
    assert doc["responses_package"]["package_id"] == ids[0] and doc["responses_package"]["path"] == "responses"
    assert (doc["extractor"], doc["grader"], doc["environment"]["recorded_by"]) == (None, None,
                                                                                    "TIGER-AI-Lab/MMLU-Pro (pred)")
    by_id = {str(rec["question_id"]): rec for rec in run}
    for row in doc["items"]:
        rec = by_id[row["item_id"]]
        assert (row["answer"], row["reference"]) == (rec["pred"], rec["answer"])
        assert row["verdict"] == ("correct" if rec["pred"] == rec["answer"] else "incorrect")
        assert row["status"] == ("no_answer" if rec["pred"] is None else row["verdict"])
    assert len({s["subject"] for s in doc["summary"]["subjects"]}) == 14

    assert cli("grade", "responses", "--items", "items", "--benchmark", "mmlu_pro", "-o", "regraded.json",
               "-q").code == 0
    r = cli("diff", "recorded.json", "regraded.json", "--format", "json")
    assert r.code == 1
    report = json.loads(r.out)
    # Same responses package on both sides; only rows without an upstream pred change, all to correct.
    assert not report["different_responses"]
    assert [(c["cause"], c["rows"], c["transitions"]) for c in report["causes"]] == [
        ("extractor", 14, {"incorrect->correct": 14})]
    assert all(c["old"]["answer"] is None and c["new"]["rule"] in ("L2", "L3") for c in report["changed"])
    assert sum(s["changed"] for s in report["subjects"]) == 14


def test_a_record_without_a_question_id_is_one_line_with_recorded(cli, run, tmp_path):
    """The same line as without --recorded (it was an AttributeError's traceback)."""
    records = [dict(r) for r in run[:3]]
    del records[1]["question_id"]
    src = tmp_path / "x_result.json"
    src.write_text(json.dumps(records), encoding="utf-8")
    line = f"audit: error: {src}: row 2: field question_id: missing required field\n"
    assert cli("import", "mmlu-pro", src, "-o", tmp_path / "plain").err == line
    r = cli("import", "mmlu-pro", src, "-o", tmp_path / "responses", "--recorded", tmp_path / "recorded.json")
    assert (r.code, r.out, r.err) == (2, "", line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x_result.json"]


def test_a_record_without_pred_records_no_verdict_and_nothing_is_written(cli, run, tmp_path):
    records = [dict(r) for r in run[:3]]
    del records[1]["pred"]
    src = tmp_path / "x_result.json"
    src.write_text(json.dumps(records), encoding="utf-8")
    r = cli("import", "mmlu-pro", src, "-o", tmp_path / "responses", "--recorded", tmp_path / "recorded.json")
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {src}: row 2: field pred: no upstream pred: this record holds no recorded "
                     f"verdict\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x_result.json"]
