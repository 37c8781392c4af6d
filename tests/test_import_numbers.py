"""Numbers the importers read: ASCII digits only, every reader (issue 19).

Python's int() and float() and re's \\d accept any Unicode decimal digit ("٣" is 3, "３" is 3) and
str.isdigit() accepts superscripts that int() then refuses ("²": a traceback). An importer that reads
"٣" as 3 credits a row the file never recorded, so each such read is refused in one line."""

from __future__ import annotations

import json
import os

import pytest

from audit.importers.mapping import coerce
from audit.verdicts import load_verdict_file
from tests.attacks import attack
from tests.builders import make_package

NOT_ASCII = ["٣", "３", "²", "۳", "1٣", "-٣", "𝟑"]


@attack("import.superscript-crash")
def test_a_superscript_sample_is_one_line_not_a_traceback(cli, tmp_path):
    src = tmp_path / "v.csv"
    src.write_text("item_id,sample,correct\nq1,²,true\n", encoding="utf-8")
    r = cli("import", "verdicts", src, "--benchmark", "choice", "-o", tmp_path / "v.json")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {src}: row 1: field sample: expected a non-negative "
                                             f"integer in ASCII digits, got '²'\n")
    assert not (tmp_path / "v.json").exists()


@attack("import.unicode-digits")
@pytest.mark.parametrize("digit", ["٣", "３", "۳"])
def test_non_ascii_digits_are_refused_by_import_verdicts(cli, tmp_path, digit):
    src = tmp_path / "v.csv"
    src.write_text(f"item_id,sample,correct\nq1,0,true\nq1,{digit},false\n", encoding="utf-8")
    r = cli("import", "verdicts", src, "--benchmark", "choice", "-o", tmp_path / "v.json")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 2: field sample: expected a non-negative integer in "
                                  f"ASCII digits, got {digit!r}\n")


@attack("import.unicode-digits")
def test_non_ascii_digits_are_refused_by_import_table(cli, tmp_path):
    src = tmp_path / "r.csv"
    src.write_text("item_id,sample,response\nq1,٣,B\n", encoding="utf-8")
    r = cli("import", "table", src, "--kind", "responses", "-o", tmp_path / "pkg")
    assert r.code == 2 and "row 1" in r.err and "field sample" in r.err, r.err
    assert not (tmp_path / "pkg").exists()
    # A template's number format takes ASCII digits only, too.
    src.write_text("n,response\n٣,B\n", encoding="utf-8")
    r = cli("import", "table", src, "--kind", "responses", "--map", "item_id=q{n:03d}", "-o", tmp_path / "pkg")
    assert r.code == 2 and "row 1" in r.err and "field item_id" in r.err, r.err


@attack("import.unicode-digits")
def test_non_ascii_digits_are_refused_by_import_lm_eval(cli, tmp_path):
    def mc(target: str, ll: str) -> dict:
        opts = ["a", "b", "c", "d"]
        lls = ["-4.0", "-3.0", "-2.0", ll]
        return {"doc_id": 0, "doc": {"q": 0}, "target": target,
                "arguments": {f"gen_args_{i}": {"arg_0": "Q", "arg_1": " " + o} for i, o in enumerate(opts)},
                "resps": [[[x, "False"]] for x in lls], "filtered_resps": [[x, "False"] for x in lls],
                "filter": "none", "metrics": ["acc"], "acc": 1.0}

    src = tmp_path / "samples_x.jsonl"
    src.write_text(json.dumps(mc("٣", "-1.0"), ensure_ascii=False) + "\n", encoding="utf-8")
    r = cli("import", "lm-eval", src, "--benchmark", "choice", "-o", tmp_path / "pkg", "--no-hash-check")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field target: target '٣' is neither an option index "
                                  f"nor an option's text (--on-bad-row record imports it ungraded)\n")
    src.write_text(json.dumps(mc("3", "-١.0"), ensure_ascii=False) + "\n", encoding="utf-8")
    r = cli("import", "lm-eval", src, "--benchmark", "choice", "-o", tmp_path / "pkg", "--no-hash-check")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field filtered_resps: expected a log-likelihood, "
                                  f"got '-١.0'\n")
    src.write_text(json.dumps(mc("²", "-1.0"), ensure_ascii=False) + "\n", encoding="utf-8")
    r = cli("import", "lm-eval", src, "--benchmark", "choice", "-o", tmp_path / "pkg", "--no-hash-check")
    assert r.code == 2 and "field target" in r.err and "Traceback" not in r.err


@attack("import.unicode-digits")
@pytest.mark.parametrize("text", NOT_ASCII + ["1_000", " 1 2", "0x10", "nan", "inf", "1e400"])
def test_the_shared_readers_take_ascii_digits_only(text):
    from audit.importers.mapping import parse_float, parse_int

    assert parse_int(text) is None and parse_float(text) is None
    assert coerce(text, (int,)) == text  # unchanged: the row schema refuses it with its own line
    assert coerce(text, (float,)) == text


def test_the_shared_readers_still_read_plain_numbers():
    from audit.importers.mapping import parse_float, parse_int

    assert [parse_int(t) for t in ("0", "7", "-3", "+12", " 42 ")] == [0, 7, -3, 12, 42]
    assert [parse_float(t) for t in ("0.5", "-1e-3", "3", ".5", "2.")] == [0.5, -0.001, 3.0, 0.5, 2.0]
    assert parse_float("nan") is None and parse_float("1e400") is None
    assert coerce("7", (int,)) == 7 and coerce("-0.25", (float,)) == -0.25


@attack("import.package-path")
def test_import_verdicts_records_the_package_relative_to_the_verdict_file(cli, tmp_path, monkeypatch):
    (tmp_path / "pkgs").mkdir()
    pkg = make_package(tmp_path / "pkgs" / "p", items=[{"item_id": "a", "reference": "B"}],
                       responses=[{"item_id": "a", "response": "B"}])
    src = tmp_path / "lab.jsonl"
    src.write_text(json.dumps({"item_id": "a", "answer": "B", "correct": True}) + "\n")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    r = cli("import", "verdicts", "lab.jsonl", "--benchmark", "choice", "--package", "pkgs/p", "-o", "out/lab.json")
    assert r.code == 0, r.err
    ref = load_verdict_file(tmp_path / "out" / "lab.json").responses_package
    assert ref.path == "../pkgs/p"
    assert (tmp_path / "out" / ref.path).resolve() == pkg.resolve()
    assert os.path.isdir(tmp_path / "out" / ref.path)
