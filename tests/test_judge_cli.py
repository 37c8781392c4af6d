"""`audit judge` and `audit graders`: exact output and exit codes."""

from __future__ import annotations

import json

import pytest

from audit import graders

ROWS = [
    {"id": "a", "answer": "x = 4", "reference": "4"},
    {"id": 2, "answer": r"\dfrac{1}{2}", "reference": "0.5"},
    {"id": "c", "answer": None, "reference": "4"},
    {"id": "d", "answer": r"4:30 \text{ p.m.}", "reference": r"\text{4:30 p.m.}"},
    {"id": "e", "answer": "(C)", "reference": "B", "num_choices": 4},
]


def _write(tmp_path, rows, name="rows.jsonl") -> str:
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return str(p)


def test_judge_prints_one_line_per_row_in_order(cli, tmp_path):
    r = cli("judge", "--grader", "math.hendrycks@985bdc1", _write(tmp_path, ROWS))
    assert r.code == 0 and r.err == ""
    assert r.out == (
        '{"id":"a","correct":true,"status":"correct","reason":"stripped strings equal: \'4\'"}\n'
        '{"id":2,"correct":true,"status":"correct","reason":"stripped strings equal: \'\\\\frac{1}{2}\'"}\n'
        '{"id":"c","correct":null,"status":"no_answer","reason":"no answer was extracted"}\n'
        '{"id":"d","correct":false,"status":"incorrect","reason":"stripped strings differ: \'4:30\' vs '
        '\'\\\\text{4:30p.m.}\'"}\n'
        '{"id":"e","correct":false,"status":"incorrect","reason":"stripped strings differ: \'(C)\' vs \'B\'"}\n'
    )


def test_judge_math_equiv(cli, tmp_path):
    r = cli("judge", "--grader", "math.equiv", "--workers", "1", _write(tmp_path, ROWS[:4]))
    assert r.code == 0
    assert [json.loads(line) for line in r.out.splitlines()] == [
        {"id": "a", "correct": True, "status": "correct", "reason": "equal numbers"},
        {"id": 2, "correct": True, "status": "correct", "reason": "equal numbers"},
        {"id": "c", "correct": None, "status": "no_answer", "reason": "no answer was extracted"},
        {"id": "d", "correct": True, "status": "correct", "reason": "same text"},
    ]


def test_judge_choice_uses_num_choices(cli, tmp_path):
    rows = [{"id": 1, "answer": "K", "reference": "B", "num_choices": 10}]
    r = cli("judge", "--grader", "choice", _write(tmp_path, rows))
    assert r.out == '{"id":1,"correct":false,"status":"incorrect","reason":"K is outside the item\'s 10 options A–J"}\n'


def test_cross_lists_only_rows_that_differ_and_exits_1(cli, tmp_path):
    r = cli("judge", "--cross", "math.equiv,math.hendrycks", _write(tmp_path, ROWS))
    assert r.code == 1
    assert r.out == (
        '{"id":"d","answer":"4:30 \\\\text{ p.m.}","reference":"\\\\text{4:30 p.m.}",'
        '"math.equiv@3":{"correct":true,"status":"correct","reason":"same text"},'
        '"math.hendrycks@985bdc1":{"correct":false,"status":"incorrect",'
        '"reason":"stripped strings differ: \'4:30\' vs \'\\\\text{4:30p.m.}\'"}}\n')
    assert r.err == "1 of 5 rows differ between math.equiv@3 and math.hendrycks@985bdc1\n"


def test_cross_with_no_difference_exits_0(cli, tmp_path):
    r = cli("judge", "--cross", "math.equiv,math.mathverify", _write(tmp_path, ROWS[:2]))
    assert (r.code, r.out, r.err) == (0, "", "0 of 2 rows differ between math.equiv@3 and math.mathverify@0.9.0\n")


@pytest.mark.parametrize("line, message", [
    ('{"id": 1, "answer": 5, "reference": "4"}', "row 1: field answer: expected a string or null"),
    ('{"id": 1, "answer": "5"}', "row 1: field reference: missing"),
    ('{"answer": "5", "reference": "4"}', "row 1: field id: missing"),
    ('{"id": 1, "answer": "5", "reference": "4", "extra": 1}', "row 1: field extra: unknown field (expected id, "
                                                               "answer, reference, num_choices)"),
    ('{"id": 1, "answer": "5", "reference": "4", "num_choices": 0}',
     "row 1: field num_choices: expected an integer from 1 to 26 or null"),
    ('{"id": 1, "answer": "5", "reference": 4}', "row 1: field reference: expected a string"),
    ('{"id": [1], "answer": "5", "reference": "4"}', "row 1: field id: expected a string or an integer"),
    ('{"id": 1, "answer": "5", "reference": "4"', "row 1: malformed JSON: Expecting ',' delimiter at column 42"),
    ('[1, 2]', "row 1: expected a JSON object, found list"),
])
def test_bad_row_is_one_line_exit_2_and_nothing_printed(cli, tmp_path, line, message):
    path = _write(tmp_path, [line])
    r = cli("judge", "--grader", "math.equiv", path)
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {path}: {message}\n"


def test_duplicate_id_names_both_lines(cli, tmp_path):
    path = _write(tmp_path, [ROWS[0], ROWS[2], ROWS[0]])
    r = cli("judge", "--grader", "choice", path)
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {path}: row 3: field id: duplicate id 'a' (first on line 1)\n"


def test_unknown_grader_and_bad_usage(cli, tmp_path):
    path = _write(tmp_path, ROWS[:1])
    r = cli("judge", "--grader", "nope", path)
    assert r.code == 2 and r.err.startswith("audit: error: unknown grader 'nope' (known: choice@1, ")
    r = cli("judge", path)
    assert (r.code, r.err) == (2, "audit: error: give exactly one of --grader NAME, --cross A,B or --judge TEMPLATE\n")
    r = cli("judge", "--cross", "math.equiv", path)
    assert r.code == 2 and "two graders separated by a comma" in r.err
    r = cli("judge", "--grader", "choice", str(tmp_path / "missing.jsonl"))
    assert (r.code, r.err) == (2, f"audit: error: {tmp_path / 'missing.jsonl'}: cannot read: No such file or directory\n")


@pytest.mark.slow
def test_graders_lists_every_version(cli):
    r = cli("graders")
    assert r.code == 0
    expected = sorted(graders.all_graders(), key=lambda g: (g.name, g.version))
    width = max(len(g.key) for g in expected)
    assert r.out == "".join(f"{g.key:<{width}}  {g.fingerprint[:16]}  {g.description}\n" for g in expected)
    r = cli("graders", "--json")
    first = json.loads(r.out.splitlines()[0])
    assert first["name"] == "choice" and first["fingerprint"] == graders.get("choice@1").fingerprint


@pytest.mark.parametrize("cmd", [["judge"], ["graders"]])
def test_help(cli, cmd):
    r = cli(*cmd, "--help")
    assert r.code == 0 and r.out.startswith(f"Usage: audit {cmd[0]} ")
