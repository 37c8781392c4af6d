"""Issue 19: `diff` printed `q3` and `q3<U+200B>` alike. Every human-readable output of a grading (diff, grade,
show of verdict files) shows invisible characters escaped, by class: zero-width and other format characters (Cf,
bidi controls included), control characters (Cc: an ESC forging terminal colours), unusual spaces (no-break,
line and paragraph separators), private-use and unassigned code points, and a combining mark on its own."""

from __future__ import annotations

import pytest
from tests.attacks import attack
from tests.builders import make_package
from tests.verdict_helpers import component, make_verdict_file, write_verdict_file

from audit.views import visible

CASES = [
    ("q3\u200b", "q3<U+200B>"),        # zero width space (Cf)
    ("q3\u2060", "q3<U+2060>"),        # word joiner (Cf)
    ("\u202eq3", "<U+202E>q3"),        # right-to-left override (Cf, bidi)
    ("q3\u2066", "q3<U+2066>"),        # left-to-right isolate (Cf, bidi)
    ("q3\x1b[31m", "q3<U+001B>[31m"),  # ESC (Cc): terminal colours
    ("q3\x00", "q3<U+0000>"),          # NUL (Cc)
    ("q3\u00a0", "q3<U+00A0>"),        # no-break space (Zs)
    ("q3\u2028", "q3<U+2028>"),        # line separator (Zl)
    ("q3\ue000", "q3<U+E000>"),        # private use (Co)
    ("\u0301q3", "<U+0301>q3"),        # a combining mark with no base (Mn)
    ("q3 \u0301", "q3 <U+0301>"),      # ... after a space
    ("q3\ufeff", "q3<U+FEFF>"),        # byte order mark (Cf)
    ("q3 ", "q3<U+0020>"),             # a trailing space vanishes in a table cell
]


@pytest.mark.parametrize("raw, shown", CASES)
def test_visible_escapes_each_class_of_invisible_character(raw, shown):
    assert visible(raw) == shown


def test_visible_keeps_what_is_seen():
    for s in ("q3", "é", "e\u0301", "中文", "x = 4", "Größe", "a-b_c.d", "α β"):
        assert visible(s) == s


@attack("diff.invisible-ids")
def test_diff_shows_look_alike_ids_and_answers_apart(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ids = [raw for raw, _ in CASES] + ["q3"]
    old = [{"item_id": i, "sample": 0, "verdict": "incorrect", "answer": "A", "rule": "L1"} for i in ids]
    new = [{"item_id": i, "sample": 0, "verdict": "correct", "answer": f"A {i}", "rule": "L1"} for i in ids]
    ex = component("mmlu_pro.official", "f418b11")
    write_verdict_file("old.json", make_verdict_file(old, extractor=ex))
    write_verdict_file("new.json", make_verdict_file(new, extractor=ex))
    r = cli("diff", "old.json", "new.json", "--max-items", "100")
    assert r.code == 1
    rows = [line for line in r.out.splitlines() if line.startswith("| ") and " | 0 | " in line]
    for raw, shown in CASES:
        assert any(line.startswith(f"| {shown} | 0 | A | A {shown} |") for line in rows), shown
    assert sum(line.startswith("| q3 | 0 |") for line in rows) == 1
    for ch in "\u200b\u2060\u202e\u2066\x1b\x00\u00a0\u2028\ue000\ufeff":
        assert ch not in r.out


@attack("diff.invisible-ids")
def test_grade_and_show_escape_subjects_and_benchmark_names(tmp_path, cli):
    items = [{"item_id": "q1", "reference": "A", "choices": ["a", "b"], "subject": "physics\u200b"},
             {"item_id": "q2", "reference": "A", "choices": ["a", "b"], "subject": "physics"}]
    pkg = make_package(tmp_path / "pkg", responses=[{"item_id": "q1", "response": "The answer is (A)."},
                                                    {"item_id": "q2", "response": "The answer is (A)."}],
                       items=items, benchmark="mmlu_pro")
    r = cli("grade", pkg, "--benchmark", "mmlu_pro", "-o", tmp_path / "r.json")
    assert r.code == 0 and "physics<U+200B>" in r.out and "\u200b" not in r.out
    r = cli("show", tmp_path / "r.json")
    assert r.code == 0 and "physics<U+200B>" in r.out and "\u200b" not in r.out
