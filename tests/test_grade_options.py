"""Issue 20, "More than ten options": MMLU-Pro+ (lm-eval's `mmlu_pro_plus`, options A-L) lost or misread K and L.
The official cascade reads A-J only: "...both D and J are correct. The answer is (K)." reads J, a false credit
when the gold is J. Grading refuses an item with more options than its extractor reads (an `error` row,
never a silent wrong), and a reference outside the extractor's letters; `mmlu_pro.options@1` reads the
item's own letters. A minimal package written to match MMLU-Pro+'s shape (twelve options)."""

from __future__ import annotations

import json

from tests.builders import make_package

TWELVE = [f"option {c}" for c in "ABCDEFGHIJKL"]
ITEMS = [
    {"item_id": "p1", "reference": "K", "choices": TWELVE, "subject": "physics"},
    {"item_id": "p2", "reference": "J", "choices": TWELVE, "subject": "physics"},
    {"item_id": "p3", "reference": "L", "choices": TWELVE, "subject": "physics"},
    {"item_id": "p4", "reference": "C", "choices": TWELVE[:10], "subject": "physics"},
]
RESPONSES = [
    {"item_id": "p1", "response": "Both D and J are correct. The answer is (K)."},
    {"item_id": "p2", "response": "Both D and J are correct. The answer is (K)."},
    {"item_id": "p3", "response": "Answer: L"},
    {"item_id": "p4", "response": "The answer is (C)."},
]


def _rows(path):
    return {r["item_id"]: r for r in json.loads(path.read_text(encoding="utf-8"))["items"]}


def test_an_item_with_more_options_than_the_extractor_reads_is_an_error_never_a_silent_wrong(tmp_path, cli):
    pkg = make_package(tmp_path / "pkg", responses=RESPONSES, items=ITEMS, benchmark="mmlu_pro")
    r = cli("grade", pkg, "--benchmark", "mmlu_pro", "-o", tmp_path / "official.json", "-q")
    assert r.code == 0
    rows = _rows(tmp_path / "official.json")
    # p2: the official cascade reads J from "D and J" (L3), which a letter match would credit against gold J
    assert (rows["p2"]["answer"], rows["p2"]["rule"]) == ("J", "L3")
    for i in ("p1", "p2", "p3"):
        assert (rows[i]["verdict"], rows[i]["status"]) == ("ungraded", "error")
        assert rows[i]["reason"] == ("the item has 12 options (A–L); mmlu_pro.official@f418b11 reads only A–J: not "
                                     "graded (a letter it cannot read, or a wrong one read instead); use an extractor "
                                     "that reads the item's options (mmlu_pro.options@1)")
    assert (rows["p4"]["verdict"], rows["p4"]["status"]) == ("correct", "correct")


def test_the_options_extractor_reads_the_item_s_own_letters(tmp_path, cli):
    pkg = make_package(tmp_path / "pkg", responses=RESPONSES, items=ITEMS, benchmark="mmlu_pro")
    r = cli("grade", pkg, "--benchmark", "mmlu_pro_plus", "-o", tmp_path / "o.json", "-q")
    assert r.code == 0
    rows = _rows(tmp_path / "o.json")
    assert {i: (x["answer"], x["rule"], x["verdict"]) for i, x in rows.items()} == {
        "p1": ("K", "L1", "correct"), "p2": ("K", "L1", "incorrect"), "p3": ("L", "L2", "correct"),
        "p4": ("C", "L1", "correct")}
    assert cli("reproduce", tmp_path / "o.json").code == 0
    assert json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))["extractor"]["name"] == "mmlu_pro.options"


def test_a_reference_outside_the_extractor_s_letters_is_an_error(tmp_path, cli):
    items = [{"item_id": "q1", "reference": "K"}, {"item_id": "q2", "reference": "B"}]  # no option count
    pkg = make_package(tmp_path / "pkg", responses=[{"item_id": "q1", "response": "The answer is (J)."},
                                                    {"item_id": "q2", "response": "The answer is (B)."}],
                       items=items, benchmark="mmlu_pro")
    assert cli("grade", pkg, "--benchmark", "mmlu_pro", "-o", tmp_path / "r.json", "-q").code == 0
    rows = _rows(tmp_path / "r.json")
    assert (rows["q1"]["verdict"], rows["q1"]["status"]) == ("ungraded", "error")
    assert rows["q1"]["reason"].startswith("the reference K is outside the letters mmlu_pro.official@f418b11 reads (A–J)")
    assert rows["q2"]["verdict"] == "correct"
