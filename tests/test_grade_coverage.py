"""Issue 20, "Partial coverage is shown plainly": grading 1,000 responses against 12,032 items led with
`accuracy_all 6.38%`. The headline now says how many items the responses cover and what each figure counts;
an imported verdict file claims no policy it never applied."""

from __future__ import annotations

import json

from tests.builders import make_package

ITEMS = [{"item_id": f"q{i}", "reference": "A", "choices": ["a", "b"]} for i in range(1, 5)]


def test_the_headline_says_the_responses_cover_only_some_items(tmp_path, cli):
    pkg = make_package(tmp_path / "pkg", responses=[{"item_id": "q1", "response": "The answer is (A)."},
                                                    {"item_id": "q2", "response": "The answer is (B)."}],
                       items=ITEMS, benchmark="mmlu_pro")
    r = cli("grade", pkg, "--benchmark", "mmlu_pro", "-o", tmp_path / "r.json")
    assert r.code == 0
    head = ("coverage: responses cover 2 of 4 items (50.00%): `accuracy` is over the rows with a response; "
            "`accuracy_all` counts the 2 items without one as wrong")
    assert r.out.splitlines()[2] == head  # before any figure
    assert r.out.splitlines()[3].startswith("accuracy[sample=0]            50.00%  (1/2)")
    show = cli("show", tmp_path / "r.json").out.splitlines()
    assert show[show.index(head) + 1].startswith("figures")
    # full coverage says nothing
    full = make_package(tmp_path / "full", responses=[{"item_id": i["item_id"], "response": "The answer is (A)."}
                                                      for i in ITEMS], items=ITEMS, benchmark="mmlu_pro")
    r = cli("grade", full, "--benchmark", "mmlu_pro", "-o", tmp_path / "f.json")
    assert "coverage:" not in r.out


def test_show_of_an_imported_verdict_file_claims_no_policy(tmp_path, cli):
    table = tmp_path / "verdicts.jsonl"
    table.write_text("".join(json.dumps({"item_id": f"q{i}", "correct": i % 2 == 0}) + "\n" for i in range(4)),
                     encoding="utf-8")
    assert cli("import", "verdicts", table, "--benchmark", "mmlu_pro", "-o", tmp_path / "rec.json").code == 0
    r = cli("show", tmp_path / "rec.json")
    assert r.code == 0
    policies = [line for line in r.out.splitlines() if line.startswith("policies")]
    assert policies == ["policies   none applied here (imported verdicts: the run's own rules decided them)"]
