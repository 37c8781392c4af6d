"""`audit import verdicts`: another tool's per-item verdicts as a verdict file for `audit diff`."""

from __future__ import annotations

import json

import pytest

from audit.packages import content_digest, open_package
from audit.verdicts import PackageRef, load_verdict_file
from tests.attacks import attack
from tests.builders import make_package


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_recorded_verdicts_become_a_verdict_file(cli, tmp_path):
    pkg = make_package(tmp_path / "pkg", items=[{"item_id": "a", "reference": "B"}, {"item_id": "b", "reference": "C"}],
                       responses=[{"item_id": "a", "response": "B"}, {"item_id": "b", "response": "D"}])
    src = write(tmp_path / "lab.jsonl", [{"item_id": "b", "answer": "D", "correct": True},
                                         {"item_id": "a", "answer": "B", "correct": "false"}])
    out = tmp_path / "lab.json"
    r = cli("import", "verdicts", src, "--benchmark", "choice", "--tool", "lab runner", "--package", pkg, "-o", out)
    assert (r.code, r.out) == (0, f"wrote {out}: choice, 2 items x 1 samples, recorded accuracy 50.00% (1/2)\n")
    vf = load_verdict_file(out)
    assert vf.extractor is None and vf.grader is None
    with open_package(pkg) as p:  # the id names the files' content; the digest covers the whole manifest
        assert vf.responses_package == PackageRef(package_id="responses-test-" + content_digest(p.manifest.files)[:12],
                                                  digest=p.digest, path=vf.responses_package.path)
    assert [(x.item_id, x.verdict, x.attempt, x.reason) for x in vf.items] == [
        ("a", "incorrect", None, "recorded by lab runner"), ("b", "correct", None, "recorded by lab runner")]


def test_bad_rows_are_one_line_and_nothing_is_written(cli, tmp_path):
    out = tmp_path / "lab.json"
    cases = [
        ([{"item_id": "a", "correct": "maybe"}], "row 1: field correct: expected true, false or null, got 'maybe'"),
        ([{"item_id": "a", "answer": "B"}], "row 1: field correct: needs `correct` or `verdict`"),
        ([{"item_id": "a", "correct": True}, {"item_id": "a", "correct": False}],
         "row 2: field item_id: duplicate (item_id='a', sample=0); first seen in row 1"),
        ([{"sample": 0, "correct": True}], "row 1: field item_id: missing required field"),
    ]
    for rows, message in cases:
        src = write(tmp_path / "lab.jsonl", rows)
        r = cli("import", "verdicts", src, "--benchmark", "choice", "-o", out)
        assert (r.code, r.out, r.err) == (2, "", f"audit: error: {src}: {message}\n")
        assert not out.exists()


def test_a_subject_column_gives_per_subject_figures(cli, tmp_path):
    src = tmp_path / "v.csv"
    src.write_text("item_id,correct,subject\nq10,true,physics\nq2,false,biology\nq1,true,physics\n", encoding="utf-8")
    r = cli("import", "verdicts", src, "--benchmark", "choice", "-o", tmp_path / "v.json")
    assert r.code == 0, r.err
    doc = json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))
    assert [(s["subject"], s["items"], [f["correct"] for f in s["figures"]]) for s in doc["summary"]["subjects"]] == [
        ("biology", ["q2"], [0, 0]), ("physics", ["q1", "q10"], [2, 2])]
    src.write_text("item_id,sample,correct,subject\nq1,0,true,physics\nq1,1,true,biology\n", encoding="utf-8")
    r = cli("import", "verdicts", src, "--benchmark", "choice", "-o", tmp_path / "w.json")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 2: field subject: item 'q1' has subject 'biology' here "
                                  f"and 'physics' in another row\n")


@attack("verdicts.self-contradicting-row")
@pytest.mark.parametrize("row, why", [
    ({"item_id": "q1", "verdict": "correct", "status": "no_answer"},
     "verdict correct with status no_answer: a row no_answer is never credited"),
    ({"item_id": "q1", "verdict": "correct", "status": "truncated", "answer": "A"},
     "verdict correct with status truncated: a row truncated is never credited"),
    ({"item_id": "q1", "verdict": "ungraded", "status": "correct", "answer": "A"}, "status correct with verdict ungraded"),
])
def test_a_row_that_contradicts_itself_is_refused(cli, tmp_path, row, why):
    src = tmp_path / "v.jsonl"
    src.write_text(json.dumps(row) + "\n", encoding="utf-8")
    r = cli("import", "verdicts", src, "-o", tmp_path / "v.json", "--benchmark", "mmlu_pro")
    assert r.code == 2, r.out
    assert r.err == f"audit: error: {src}: row 1: field verdict: the row contradicts itself: {why}\n"
    assert not (tmp_path / "v.json").exists()
