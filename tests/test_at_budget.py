"""A reply that used exactly max_tokens and said `stop` (issue 19): recorded as `at_budget`, checked
against the row's own fields, seen by the `at_budget` policy and noted by `audit grade` and `show`."""

from __future__ import annotations

import json

import pytest

from audit.fileio import dumps
from audit.grade import grade_package
from audit.models import ResponseRow
from tests.attacks import attack
from tests.builders import make_package
from tests.test_grade_policies import ITEMS, config, rows_by_key

ROWS = [
    {"item_id": "q1", "response": "ANSWER=B", "finish_reason": "stop", "completion_tokens": 64, "max_tokens": 64},
    {"item_id": "q2", "response": "ANSWER=B", "finish_reason": "stop", "completion_tokens": 63, "max_tokens": 64},
    {"item_id": "q3", "response": "ANSWER=B", "finish_reason": "length", "completion_tokens": 64, "max_tokens": 64},
    {"item_id": "q4", "response": "ANSWER=B", "finish_reason": "stop", "completion_tokens": 64, "max_tokens": 64,
     "at_budget": True},
]


@attack("gen.at-budget")
def test_a_stop_at_exactly_max_tokens_is_noted_and_credited_by_default(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=ROWS)
    rows = rows_by_key(grade_package(pkg, config()))
    assert (rows["q1", 0].verdict, rows["q1", 0].detail) == ("correct", {"at_budget": True})
    assert rows["q1", 0].reason == "string compare; at budget: used all max_tokens=64 and said stop"
    assert (rows["q4", 0].verdict, rows["q4", 0].detail) == ("correct", {"at_budget": True})
    assert (rows["q2", 0].verdict, rows["q2", 0].detail) == ("correct", {})
    assert rows["q3", 0].status == "truncated" and rows["q3", 0].detail == {}


@attack("gen.at-budget")
def test_the_at_budget_policy_takes_them_as_cut(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=ROWS)
    vf = grade_package(pkg, config(at_budget="truncated"))
    rows = rows_by_key(vf)
    assert (rows["q1", 0].verdict, rows["q1", 0].status) == ("incorrect", "truncated")
    assert rows["q1", 0].reason == ("used all max_tokens=64 and said stop; taken as cut (--policy "
                                    "at_budget=truncated); never credited")
    assert rows["q2", 0].verdict == "correct"
    vf.write(tmp_path / "v.json")
    assert '"at_budget": "truncated"' in (tmp_path / "v.json").read_text()
    excl = rows_by_key(grade_package(pkg, config(at_budget="truncated", truncation="exclude")))
    assert (excl["q4", 0].verdict, excl["q4", 0].status) == ("ungraded", "truncated")


def test_the_default_policy_is_not_written_so_older_files_keep_their_bytes(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=ROWS[1:3])
    grade_package(pkg, config()).write(tmp_path / "v.json")
    assert "at_budget" not in (tmp_path / "v.json").read_text()


@attack("gen.at-budget")
@pytest.mark.parametrize("row", [
    {"item_id": "q1", "response": "x", "finish_reason": "stop", "completion_tokens": 10, "max_tokens": 64,
     "at_budget": True},
    {"item_id": "q1", "response": "x", "finish_reason": "stop", "completion_tokens": 64, "max_tokens": 64,
     "at_budget": False},
    {"item_id": "q1", "response": "x", "finish_reason": "length", "completion_tokens": 64, "max_tokens": 64,
     "at_budget": True},
])
def test_a_recorded_at_budget_must_agree_with_the_row(tmp_path, cli, row):
    with pytest.raises(ValueError, match="at_budget is (true|false) but finish_reason is"):
        ResponseRow.model_validate(row)
    root = tmp_path / "p"
    make_package(root, responses=[{"item_id": "q1", "response": "x"}])
    data = (dumps(row) + "\n").encode()
    (root / "responses.jsonl").write_bytes(data)
    m = json.loads((root / "manifest.json").read_text())
    import hashlib

    f = m["files"][0]
    f.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (root / "manifest.json").write_text(json.dumps(m))
    r = cli("validate", str(root))
    assert r.code == 1 and f"{root}/responses.jsonl: row 1: at_budget is " in r.out


@attack("gen.at-budget")
def test_grade_and_show_note_the_rows_at_budget(tmp_path, cli):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=ROWS)
    from audit import views

    out = tmp_path / "v.json"
    vf = grade_package(pkg, config())
    vf.write(out)
    r = cli("show", str(out))
    assert r.code == 0, r.err
    assert ("at budget: 2 rows used exactly max_tokens and said stop: graded as any other; --policy "
            "at_budget=truncated takes them as cut") in r.out.splitlines()
    assert views.at_budget_lines(["used all max_tokens=64 and said stop; taken as cut (--policy "
                                  "at_budget=truncated); never credited"], "truncated") == [
        "at budget: 1 row used exactly max_tokens and said stop: taken as cut (at_budget=truncated)"]
