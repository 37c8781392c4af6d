"""`audit diff`: causes, figures, exact output, exit codes, readers, and the changed-row set checked independently."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
from tests.verdict_helpers import DIGEST_B, component, make_verdict_file, package, write_verdict_file

from audit import stats
from audit.diff import CAUSES, DiffReport, diff_files, render_json, render_markdown
from audit.schemas import SCHEMA_DIR
from audit.verdicts import Policies, read_verdicts


def R(item_id: str, sample: int, verdict: str, **kw):
    return {"item_id": item_id, "sample": sample, "verdict": verdict, **kw}


# One row per cause, plus an unchanged row, a changed answer with the same verdict, and one row on each side only.
OLD_ROWS = [
    R("q01", 0, "incorrect", status="no_answer", rule="none"),
    R("q02", 0, "correct", answer="B", rule="answer_is", reference="B"),
    R("q03", 0, "correct", answer="C", rule="answer_is"),
    R("q04", 0, "correct", answer="x = 4", rule="boxed", reference="4"),
    R("q05", 0, "incorrect", status="no_answer", rule="none"),
    R("q06", 0, "incorrect", answer="D", rule="answer_is", attempt=0),
    R("q07", 0, "incorrect", status="truncated", answer="E", rule="answer_is"),
    R("q08", 0, "correct", answer="F", rule="answer_is"),
    R("q09", 0, "incorrect", answer="G", rule="answer_is"),
    R("q10", 0, "correct", answer="A", rule="answer_is"),
] + [R(f"q0{i}", 1, "correct", answer="A", rule="answer_is") for i in range(1, 9)]

NEW_ROWS = [
    R("q01", 0, "correct", answer="A", rule="official_L1"),                      # extractor
    R("q02", 0, "incorrect", answer="B", rule="answer_is", reference="G"),       # reference
    R("q03", 0, "incorrect", status="truncated", answer="C", rule="answer_is"),  # policy: cut at the ceiling
    R("q04", 0, "incorrect", answer="x = 4", rule="boxed", reference="4"),       # grader
    R("q05", 0, "correct", status="random_guess", rule="none"),                  # policy: no-answer guess
    R("q06", 0, "correct", answer="A", rule="answer_is", attempt=1),             # policy: re-sampling
    R("q07", 0, "ungraded", status="truncated", answer="E", rule="answer_is"),   # policy: truncation excluded
    R("q08", 0, "correct", answer="F", rule="answer_is"),
    R("q09", 0, "incorrect", answer="H", rule="answer_is"),
    R("q11", 0, "incorrect", answer="B", rule="answer_is"),
] + [R(f"q0{i}", 1, "correct", answer="A", rule="answer_is") for i in range(1, 9)]

NEW_POLICIES = Policies(truncation="exclude", resampling="longer-only", no_answer="random-guess")


@pytest.fixture
def pair(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_verdict_file("old.json", make_verdict_file(OLD_ROWS, extractor=component("mmlu_pro.lmeval", "1")))
    write_verdict_file("new.json", make_verdict_file(NEW_ROWS, extractor=component("mmlu_pro.official", "f418b11"),
                                                     grader=component("test.grader", "2"), policies=NEW_POLICIES))
    return tmp_path


# Overall figures come first (the headline; with 13 runs it used to be the 12th paragraph), then each run.
EXPECTED_MARKDOWN = """\
# audit diff

- OLD: `old.json` — test, 18 rows (json-stream); extractor mmlu_pro.lmeval@1, grader test.grader@1; responses responses-test aaaaaaaaaaaa
- NEW: `new.json` — test, 18 rows (json-stream); extractor mmlu_pro.official@f418b11, grader test.grader@2; responses responses-test aaaaaaaaaaaa
- rows: 17 compared, 7 verdicts changed, 1 only in OLD, 1 only in NEW
- note: extractor: mmlu_pro.lmeval@1 -> mmlu_pro.official@f418b11
- note: grader: test.grader@1 -> test.grader@2
- note: policy truncation: wrong -> exclude
- note: policy resampling: original -> longer-only
- note: policy no_answer: wrong -> random-guess

## Retractions

Figures that fell: the rows support less than OLD recorded.

**accuracy** (all runs, graded denominator): recorded 72.22% (13/18), recomputed 70.59% (12/17), Δ -1.63 points. 7 verdicts changed: 4 policy, 1 reference, 1 extractor, 1 grader. Paired over 16 rows: 3 to correct, 3 to incorrect; McNemar exact p = 1.000. 0 rows entered and 1 left the denominator. 1 row only in OLD, 1 only in NEW.

**accuracy_all** (all runs, all rows, ungraded counted wrong): recorded 72.22% (13/18), recomputed 66.67% (12/18), Δ -5.56 points. 6 verdicts changed: 3 policy, 1 reference, 1 extractor, 1 grader. Paired over 17 rows: 3 to correct, 3 to incorrect; McNemar exact p = 1.000. 1 row only in OLD, 1 only in NEW.

**accuracy[sample=0]** (run 0, graded denominator): recorded 50.00% (5/10), recomputed 44.44% (4/9), Δ -5.56 points. 7 verdicts changed: 4 policy, 1 reference, 1 extractor, 1 grader. Paired over 8 rows: 3 to correct, 3 to incorrect; McNemar exact p = 1.000. 0 rows entered and 1 left the denominator. 1 row only in OLD, 1 only in NEW.

**accuracy_all[sample=0]** (run 0, all rows, ungraded counted wrong): recorded 50.00% (5/10), recomputed 40.00% (4/10), Δ -10.00 points. 6 verdicts changed: 3 policy, 1 reference, 1 extractor, 1 grader. Paired over 9 rows: 3 to correct, 3 to incorrect; McNemar exact p = 1.000. 1 row only in OLD, 1 only in NEW.

## Changed verdicts by cause

| cause | rows | transitions |
| --- | ---: | --- |
| policy | 4 | correct → incorrect 1, incorrect → correct 2, incorrect → ungraded 1 |
| reference | 1 | correct → incorrect 1 |
| extractor | 1 | incorrect → correct 1 |
| grader | 1 | correct → incorrect 1 |

### policy (4)

| item_id | sample | old answer | new answer | old rule | new rule | old verdict | new verdict | note |
| --- | ---: | --- | --- | --- | --- | --- | --- | --- |
| q03 | 0 | C | C | answer_is | answer_is | correct | incorrect (truncated) |  |
| q05 | 0 | — | — | none | none | incorrect (no_answer) | correct (random_guess) |  |
| q06 | 0 | D | A | answer_is | answer_is | incorrect | correct | attempt 0 → 1; also extractor |
| q07 | 0 | E | E | answer_is | answer_is | incorrect (truncated) | ungraded (truncated) |  |

### reference (1)

| item_id | sample | old answer | new answer | old rule | new rule | old verdict | new verdict | note |
| --- | ---: | --- | --- | --- | --- | --- | --- | --- |
| q02 | 0 | B | B | answer_is | answer_is | correct | incorrect | reference B → G |

### extractor (1)

| item_id | sample | old answer | new answer | old rule | new rule | old verdict | new verdict | note |
| --- | ---: | --- | --- | --- | --- | --- | --- | --- |
| q01 | 0 | — | A | none | official_L1 | incorrect (no_answer) | correct |  |

### grader (1)

| item_id | sample | old answer | new answer | old rule | new rule | old verdict | new verdict | note |
| --- | ---: | --- | --- | --- | --- | --- | --- | --- |
| q04 | 0 | x = 4 | x = 4 | boxed | boxed | correct | incorrect |  |

Rules in the changed rows, in words:

- `none` (mmlu_pro.official@f418b11): no letter found (upstream then scores a seeded random guess)

## Rows in one file only

| file | item_id | sample | verdict |
| --- | --- | ---: | --- |
| OLD | q10 | 0 | correct |
| NEW | q11 | 0 | incorrect |

1 further row kept the verdict with a different answer, status, attempt or reference (see --format json).
"""

EXPECTED_CHANGED_LINES = [
    '{"item_id":"q01","sample":0,"cause":"extractor","causes":["extractor"],"old":{"attempt":0,"answer":null,"rule":"none","verdict":"incorrect","status":"no_answer","reason":"test row: no_answer","reference":null},"new":{"attempt":0,"answer":"A","rule":"official_L1","verdict":"correct","status":"correct","reason":"test row: correct","reference":null}}',
    '{"item_id":"q02","sample":0,"cause":"reference","causes":["reference"],"old":{"attempt":0,"answer":"B","rule":"answer_is","verdict":"correct","status":"correct","reason":"test row: correct","reference":"B"},"new":{"attempt":0,"answer":"B","rule":"answer_is","verdict":"incorrect","status":"incorrect","reason":"test row: incorrect","reference":"G"}}',
    '{"item_id":"q03","sample":0,"cause":"policy","causes":["policy"],"old":{"attempt":0,"answer":"C","rule":"answer_is","verdict":"correct","status":"correct","reason":"test row: correct","reference":null},"new":{"attempt":0,"answer":"C","rule":"answer_is","verdict":"incorrect","status":"truncated","reason":"test row: truncated","reference":null}}',
    '{"item_id":"q04","sample":0,"cause":"grader","causes":["grader"],"old":{"attempt":0,"answer":"x = 4","rule":"boxed","verdict":"correct","status":"correct","reason":"test row: correct","reference":null},"new":{"attempt":0,"answer":"x = 4","rule":"boxed","verdict":"incorrect","status":"incorrect","reason":"test row: incorrect","reference":null}}',
    '{"item_id":"q05","sample":0,"cause":"policy","causes":["policy"],"old":{"attempt":0,"answer":null,"rule":"none","verdict":"incorrect","status":"no_answer","reason":"test row: no_answer","reference":null},"new":{"attempt":0,"answer":null,"rule":"none","verdict":"correct","status":"random_guess","reason":"test row: random_guess","reference":null}}',
    '{"item_id":"q06","sample":0,"cause":"policy","causes":["policy","extractor"],"old":{"attempt":0,"answer":"D","rule":"answer_is","verdict":"incorrect","status":"incorrect","reason":"test row: incorrect","reference":null},"new":{"attempt":1,"answer":"A","rule":"answer_is","verdict":"correct","status":"correct","reason":"test row: correct","reference":null}}',
    '{"item_id":"q07","sample":0,"cause":"policy","causes":["policy"],"old":{"attempt":0,"answer":"E","rule":"answer_is","verdict":"incorrect","status":"truncated","reason":"test row: truncated","reference":null},"new":{"attempt":0,"answer":"E","rule":"answer_is","verdict":"ungraded","status":"truncated","reason":"test row: truncated","reference":null}}',
]


def test_markdown_exact(pair, cli):
    r = cli("diff", "old.json", "new.json")
    assert (r.code, r.err) == (1, "")
    assert r.out == EXPECTED_MARKDOWN


def test_json_rows_exact_and_valid(pair, cli):
    r = cli("diff", "old.json", "new.json", "--format", "json")
    assert (r.code, r.err) == (1, "")
    lines = r.out.splitlines()
    start = lines.index('  "changed": [')
    assert [x.strip().rstrip(",") for x in lines[start + 1:start + 8]] == EXPECTED_CHANGED_LINES
    assert lines[start + 8:] == ["  ],", '  "only_old": [',
                                 '    {"item_id":"q10","sample":0,"verdict":"correct","status":"correct"}', "  ],",
                                 '  "only_new": [',
                                 '    {"item_id":"q11","sample":0,"verdict":"incorrect","status":"incorrect"}', "  ],",
                                 '  "subjects": [],', '  "rules": [', "    {",
                                 '      "extractor": "mmlu_pro.official@f418b11",', '      "rule": "none",',
                                 '      "words": "no letter found (upstream then scores a seeded random guess)"',
                                 "    }", "  ],", '  "strengths": [', "    {", '      "side": "new",',
                                 '      "strength": "no read",', '      "rows": 1,', '      "to_correct": 1,',
                                 '      "to_incorrect": 0', "    },", "    {", '      "side": "new",',
                                 '      "strength": "unknown",', '      "rows": 6,', '      "to_correct": 2,',
                                 '      "to_incorrect": 3', "    }", "  ],", '  "fallback": null,',
                                 '  "possibly_cut": {', '    "checked": 0,', '    "rows": 0,', '    "items": [],',
                                 '    "note": "no responses package of either file could be opened to read the texts"',
                                 "  }", "}"]
    doc = json.loads(r.out)
    assert list(doc)[:2] == ["schema_version", "kind"] and doc["schema_version"] == 1
    schema = json.loads((SCHEMA_DIR / "diff_report.v1.json").read_text(encoding="utf-8"))
    jsonschema.validate(doc, schema)
    report = DiffReport.model_validate(doc)
    assert [(c.cause, c.rows) for c in report.causes] == [("policy", 4), ("reference", 1), ("extractor", 1),
                                                         ("grader", 1)]
    assert report.other_changes == 1 and report.aligned == 17 and report.unchanged == 10
    acc = {f.name: f for f in report.figures}
    assert set(acc) == {"accuracy", "accuracy[sample=0]", "accuracy_all", "accuracy_all[sample=0]"}
    a = acc["accuracy"]
    assert (a.old.correct, a.old.total, a.new.correct, a.new.total) == (13, 18, 12, 17)
    assert a.delta_points == pytest.approx((12 / 17 - 13 / 18) * 100)
    assert (a.to_correct, a.to_incorrect, a.entered, a.left, a.pairs) == (3, 3, 0, 1, 16)
    assert a.mcnemar_p == stats.mcnemar_exact(3, 3)


def test_library_report_matches_json(pair):
    result = diff_files("old.json", "new.json")
    assert result.to_report() == DiffReport.model_validate_json(render_json(result))


def test_same_file_exit_0(pair, cli):
    r = cli("diff", "old.json", "old.json")
    assert r.code == 0
    assert r.out.endswith("\nNo figure and no verdict changed.\n")
    j = cli("diff", "old.json", "old.json", "--format", "json")
    assert j.code == 0 and json.loads(j.out)["changed"] == []


def test_max_items_bounds_printed_rows_only(pair, cli):
    r = cli("diff", "old.json", "new.json", "--max-items", "1")
    assert r.code == 1
    section = r.out.split("### policy (4)")[1].split("###")[0]
    assert "| q03 |" in section and "| q05 |" not in section
    assert "| … 3 more (all are in --format json) | | | | | | | | |" in section
    assert len(json.loads(cli("diff", "old.json", "new.json", "--format", "json", "--max-items", "1").out)
               ["changed"]) == 7


def test_output_file(pair, cli):
    r = cli("diff", "old.json", "new.json", "-o", "report.md")
    assert (r.code, r.out) == (1, "")
    assert (pair / "report.md").read_text(encoding="utf-8") == EXPECTED_MARKDOWN


def test_an_existing_output_is_replaced_only_with_force(pair, cli):
    """`-o FILE` refuses a FILE that exists before comparing anything; --force replaces a report audit
    wrote, never a user's file (nor a symbolic link)."""
    exists = "audit: error: report.md: already exists (use --force to replace it)\n"
    (pair / "report.md").write_text("my notes\n", encoding="utf-8")
    r = cli("diff", "old.json", "new.json", "-o", "report.md")
    assert (r.code, r.out, r.err) == (2, "", exists)
    r = cli("diff", "old.json", "new.json", "-o", "report.md", "--force")
    assert (r.code, r.out) == (2, "")
    assert r.err == ("audit: error: report.md: --force replaces only what audit wrote (a report of `audit diff` or "
                     "`audit verify`); not this one: it does not begin as one of their reports\n")
    assert (pair / "report.md").read_text(encoding="utf-8") == "my notes\n"
    (pair / "report.md").unlink()
    for fmt in ("markdown", "json", "markdown"):  # a report of either format replaces the other
        r = cli("diff", "old.json", "new.json", "-o", "report.md", "--format", fmt, "--force")
        assert (r.code, r.out, r.err) == (1, "", "")
    assert (pair / "report.md").read_text(encoding="utf-8") == EXPECTED_MARKDOWN
    r = cli("diff", "old.json", "new.json", "-o", "report.md")
    assert (r.code, r.err) == (2, exists)
    (pair / "link.md").symlink_to("report.md")
    r = cli("diff", "old.json", "new.json", "-o", "link.md", "--force")
    assert r.code == 2 and r.err.endswith("not this one: it is a symbolic link\n")
    assert sorted(p.name for p in pair.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_errors_exit_2(pair, cli):
    r = cli("diff", "old.json", "missing.json")
    assert r.code == 2 and r.err == "audit: error: missing.json: no such file\n"
    (pair / "bad.json").write_text('{"schema_version": 1, "kind": "verdicts"}', encoding="utf-8")
    r = cli("diff", "old.json", "bad.json")
    assert r.code == 2 and r.err.startswith("audit: error: bad.json: field benchmark: missing required field")
    (pair / "broken.json").write_text("{not json", encoding="utf-8")
    r = cli("diff", "broken.json", "old.json")
    assert r.code == 2 and r.err.startswith("audit: error: broken.json: not a JSON verdict file")


def test_errors_are_one_line(pair, cli):
    r = cli("diff", "old.json", "new.json", "-o", "no/such/dir/report.md")
    assert (r.code, r.out) == (2, "")
    assert r.err == "audit: error: no/such/dir/report.md: parent directory does not exist\n"
    (pair / "release.json").write_text(json.dumps({"schema_version": 1, "kind": "release_info", "items": 3}),
                                       encoding="utf-8")
    r = cli("diff", "release.json", "new.json")
    assert r.code == 2
    assert r.err == ("audit: error: release.json: field kind: is a 'release_info' document, not a verdict file "
                     "(kind 'verdicts', written by `audit grade`)\n")


def test_an_unwritable_output_is_one_line_not_a_traceback(tmp_path, cli, monkeypatch):
    """Outputs into a missing directory are refused up front; any other OSError is the CLI's last resort."""
    from tests.builders import make_package

    monkeypatch.chdir(tmp_path)
    make_package(tmp_path / "p", responses=[{"item_id": "i1", "response": "The answer is (A)."}],
                 items=[{"item_id": "i1", "reference": "A", "num_choices": 4}])
    r = cli("bundle", "p", "-o", "no/such/dir/p.tar.gz")
    assert (r.code, r.out, r.err) == (2, "", "audit: error: no/such/dir: parent directory does not exist\n")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device", "p.tar.gz")

    monkeypatch.setattr("audit.cli.packages_cmd.bundle", full_disk)
    r = cli("bundle", "p", "-o", "p.tar.gz")
    assert r.code == 2 and r.out == ""
    assert len(r.err.splitlines()) == 1 and r.err.startswith("audit: error: ") and "No space left" in r.err


def test_identical_denominators_print_as_one_paragraph(tmp_path, cli):
    """Nothing ungraded: `accuracy_all` says what `accuracy` says, so Markdown prints it once; JSON keeps both."""
    old = [R("q1", 0, "incorrect", answer="B"), R("q2", 0, "correct", answer="A"),
           R("q1", 1, "correct", answer="A"), R("q2", 1, "correct", answer="A")]
    new = [R("q1", 0, "correct", answer="A")] + old[1:]
    write_verdict_file(tmp_path / "a.json", make_verdict_file(old))
    write_verdict_file(tmp_path / "b.json", make_verdict_file(new, extractor=component("test.extractor", "2"),
                                                              reference_field="extra.gold_2024"))
    r = cli("diff", tmp_path / "a.json", tmp_path / "b.json")
    assert r.code == 1
    assert "- note: reference field: reference -> extra.gold_2024\n" in r.out
    assert r.out.split("## Upward revisions\n\n")[1].split("## Changed")[0] == (
        "Figures that rose: the rows support more than OLD recorded (not retractions).\n\n"
        "**accuracy** = **accuracy_all** (all runs, both denominators: nothing ungraded): recorded 75.00% (3/4), "
        "recomputed 100.00% (4/4), Δ +25.00 points. 1 verdict changed: 1 extractor. Paired over 4 rows: 1 to correct, "
        "0 to incorrect; McNemar exact p = 1.000.\n\n"
        "**accuracy[sample=0]** = **accuracy_all[sample=0]** (run 0, both denominators: nothing ungraded): recorded "
        "50.00% (1/2), recomputed 100.00% (2/2), Δ +50.00 points. 1 verdict changed: 1 extractor. Paired over 2 rows: "
        "1 to correct, 0 to incorrect; McNemar exact p = 1.000.\n\n")
    doc = json.loads(cli("diff", tmp_path / "a.json", tmp_path / "b.json", "--format", "json").out)
    assert [f["name"] for f in doc["figures"]] == ["accuracy[sample=0]", "accuracy", "accuracy_all[sample=0]",
                                                   "accuracy_all"]


def test_unknown_row_field_is_named(pair, cli):
    text = (pair / "old.json").read_text(encoding="utf-8")
    (pair / "odd.json").write_text(text.replace('"sample":1,', '"sample":1,"colour":"red",', 1), encoding="utf-8")
    r = cli("diff", "odd.json", "new.json")
    assert r.code == 2
    assert r.err.startswith("audit: error: odd.json: row 2: field colour: unknown field")


def test_read_rows_frame(pair):
    df = read_verdicts("old.json", rows="frame").rows
    assert list(df.columns) == ["item_id", "sample", "attempt", "answer", "rule", "verdict", "status", "reason",
                                "reference", "response_sha256"]
    assert len(df) == 18 and str(df["attempt"].dtype) == "Int64"
    assert df.loc[0, "item_id"] == "q01" and df["answer"].isna().sum() == 2


def test_duplicate_rows_refused(tmp_path, cli):
    rows = [R("q1", 0, "correct"), R("q2", 0, "correct")]
    vf = make_verdict_file(rows)
    vf = vf.model_copy(update={"items": [vf.items[0], vf.items[1], vf.items[0]]})
    write_verdict_file(tmp_path / "dup.json", vf)
    r = cli("diff", tmp_path / "dup.json", tmp_path / "dup.json")
    assert r.code == 2 and "row 3: field items: duplicate row: the item_id and sample of row 1" in r.err


# --------------------------------------------------------------------------- responses packages


def test_different_responses_refused_then_allowed(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ext = component("mmlu_pro.official", "f418b11")
    old = [R("q1", 0, "incorrect", answer="B"), R("q2", 0, "correct", answer="C"), R("q3", 0, "correct", answer="D")]
    new = [R("q1", 0, "correct", answer="A"),                                # same extractor read another answer
           R("q2", 0, "ungraded", status="missing", answer=None),            # the response is gone
           R("q3", 0, "incorrect", answer="D")]                              # same answer, same grader
    write_verdict_file("a.json", make_verdict_file(old, extractor=ext))
    write_verdict_file("b.json", make_verdict_file(new, extractor=ext,
                                                   responses_package=package(DIGEST_B, "responses-rerun")))
    r = cli("diff", "a.json", "b.json")
    assert r.code == 2
    assert r.err == ("audit: error: b.json: field responses_package: the files grade different responses packages "
                     "(responses-test aaaaaaaaaaaa vs responses-rerun bbbbbbbbbbbb); pass "
                     "--allow-different-responses to compare anyway\n")
    r = cli("diff", "a.json", "b.json", "--allow-different-responses")
    assert r.code == 1
    assert ("- note: DIFFERENT responses packages (compared with --allow-different-responses): OLD responses-test "
            "aaaaaaaaaaaa, NEW responses-rerun bbbbbbbbbbbb\n") in r.out
    doc = json.loads(cli("diff", "a.json", "b.json", "--allow-different-responses", "--format", "json").out)
    assert doc["different_responses"] is True
    assert [(c["item_id"], c["cause"]) for c in doc["changed"]] == [("q1", "response"), ("q2", "response"),
                                                                    ("q3", "inconsistent")]


def test_different_responses_and_extractor_is_flagged_ambiguous(tmp_path):
    old = make_verdict_file([R("q1", 0, "incorrect", answer="B")], extractor=component("e", "1"))
    new = make_verdict_file([R("q1", 0, "correct", answer="A")], extractor=component("e", "2"),
                            responses_package=package(DIGEST_B))
    write_verdict_file(tmp_path / "a.json", old)
    write_verdict_file(tmp_path / "b.json", new)
    res = diff_files(tmp_path / "a.json", tmp_path / "b.json", allow_different_responses=True)
    assert res.changed_rows()[0]["cause"] == "extractor"
    assert any("may also reflect changed response text" in n for n in res.notes)


def test_response_hashes_make_the_response_cause_exact(tmp_path):
    # Extractor AND text changed: without hashes this is ambiguous (see the test above); with them it is not.
    h1, h2 = "1" * 64, "2" * 64
    old = make_verdict_file([R("q1", 0, "incorrect", answer="B", response_sha256=h1),
                             R("q2", 0, "incorrect", answer="B", response_sha256=h1)],
                            extractor=component("e", "1"))
    new = make_verdict_file([R("q1", 0, "correct", answer="A", response_sha256=h2),   # the text changed
                             R("q2", 0, "correct", answer="A", response_sha256=h1)],  # same text, new reading
                            extractor=component("e", "2"), responses_package=package(DIGEST_B))
    write_verdict_file(tmp_path / "a.json", old)
    write_verdict_file(tmp_path / "b.json", new, parquet=True)
    res = diff_files(tmp_path / "a.json", tmp_path / "b.json", allow_different_responses=True)
    assert [(r["item_id"], r["cause"]) for r in res.changed_rows()] == [("q1", "response"), ("q2", "extractor")]


def test_imported_files_without_components(tmp_path, cli):
    old = make_verdict_file([R("q1", 0, "correct", answer="A"), R("q2", 0, "incorrect", answer="B")],
                            extractor=None, grader=None, responses_package=None)
    new = make_verdict_file([R("q1", 0, "correct", answer="A"), R("q2", 0, "correct", answer="C")])
    write_verdict_file(tmp_path / "imp.json", old)
    write_verdict_file(tmp_path / "new.json", new)
    r = cli("diff", tmp_path / "imp.json", tmp_path / "new.json")
    assert r.code == 1
    assert "extractor none (imported), grader none (imported); responses not named" in r.out
    assert "- note: responses package not named in OLD: cannot check that both grade the same responses" in r.out
    assert "| q2 | 0 | B | C |" in r.out


def test_summary_that_disagrees_with_rows_is_a_retraction(tmp_path, cli):
    vf = make_verdict_file([R("q1", 0, "correct"), R("q2", 0, "incorrect")])
    figs = [f.model_copy(update={"value": 0.7259}) if f.name == "accuracy" else f for f in vf.summary.figures]
    lied = vf.model_copy(update={"summary": vf.summary.model_copy(update={"figures": figs})})
    write_verdict_file(tmp_path / "lied.json", lied)
    write_verdict_file(tmp_path / "rows.json", vf)
    r = cli("diff", tmp_path / "lied.json", tmp_path / "rows.json")
    assert r.code == 1
    assert ("**accuracy** (all runs, graded denominator): recorded 72.59% (OLD's summary; its rows give 50.00%, 1/2), "
            "recomputed 50.00% (1/2), Δ +0.00 points. No verdict changed.") in r.out
    assert "note: OLD's summary records accuracy = 72.59% but its rows give 50.00%" in r.out


# --------------------------------------------------------------------------- readers


def test_parquet_sidecar_and_full_json_give_the_same_report(pair, tmp_path):
    old = make_verdict_file(OLD_ROWS, extractor=component("mmlu_pro.lmeval", "1"))
    write_verdict_file(tmp_path / "old_pq.json", old, parquet=True)
    (tmp_path / "old_foreign.json").write_text(json.dumps(old.model_dump(mode="json"), indent=4), encoding="utf-8")
    sources = {}
    reports = {}
    for name in ("old.json", "old_pq.json", "old_foreign.json"):
        sources[name] = read_verdicts(tmp_path / name).source
        rep = diff_files(tmp_path / name, "new.json").to_report()
        reports[name] = rep.model_copy(update={"old": rep.old.model_copy(update={"path": "", "rows_source": "json"})})
    assert sources == {"old.json": "json-stream", "old_pq.json": "parquet", "old_foreign.json": "json"}
    assert reports["old.json"] == reports["old_pq.json"] == reports["old_foreign.json"]
    frames = [read_verdicts(tmp_path / name, rows="frame").rows for name in ("old.json", "old_pq.json")]
    assert frames[0].equals(frames[1])


def test_tampered_sidecar_is_refused(tmp_path, cli):
    vf = make_verdict_file([R("q1", 0, "correct"), R("q2", 0, "incorrect")])
    write_verdict_file(tmp_path / "v.json", vf, parquet=True)
    side = tmp_path / "v.rows.parquet"
    side.write_bytes(side.read_bytes() + b"\0")
    r = cli("diff", tmp_path / "v.json", tmp_path / "v.json")
    assert r.code == 2 and "rows_file v.rows.parquet: sha256 is" in r.err and "(the file was altered)" in r.err


def test_write_rows_parquet_is_deterministic(tmp_path):
    from tests.verdict_helpers import rows_frame

    vf = make_verdict_file([R(f"q{i}", s, "correct" if (i + s) % 3 else "incorrect", answer="A",
                              detail={"seed": 1, "draw": i}) for i in range(50) for s in range(3)])
    df = rows_frame(vf.items)
    from audit.verdicts import write_rows_parquet

    a = write_rows_parquet(df, tmp_path / "a.parquet")
    b = write_rows_parquet(df.sample(frac=1, random_state=3), tmp_path / "b.parquet")
    assert a.sha256 == b.sha256 and a.rows == 150
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


# --------------------------------------------------------------------------- the changed set, checked independently


@pytest.mark.parametrize("parquet", [False, True])
def test_lists_exactly_the_changed_rows(tmp_path, parquet):
    rng = random.Random(20240601)
    verdicts = ["correct", "incorrect", "ungraded"]
    old_rows, new_rows = [], []
    for i in range(400):
        for s in range(3):
            v = rng.choice(verdicts)
            a = rng.choice("ABCD")
            row = R(f"item-{i:04d}", s, v, answer=a, reference="A")
            if rng.random() < 0.03:
                old_rows.append(row)  # OLD only
                continue
            old_rows.append(row)
            nv, na = v, a
            if rng.random() < 0.2:
                nv = rng.choice(verdicts)
            if rng.random() < 0.2:
                na = rng.choice("ABCD")
            new_rows.append(R(f"item-{i:04d}", s, nv, answer=na, reference="A"))
        if rng.random() < 0.02:
            new_rows.append(R(f"item-{i:04d}", 3, "correct"))  # NEW only
    rng.shuffle(new_rows)
    write_verdict_file(tmp_path / "o.json", make_verdict_file(old_rows), parquet=parquet)
    # Another extractor, grader and policy: each may explain a change (with the same ones, none could).
    write_verdict_file(tmp_path / "n.json", make_verdict_file(
        new_rows, extractor=component("test.extractor", "2"), grader=component("test.grader", "2"),
        policies=Policies(truncation="exclude")), parquet=parquet)

    old_by = {(r["item_id"], r["sample"]): r for r in old_rows}
    new_by = {(r["item_id"], r["sample"]): r for r in new_rows}
    expect_changed = sorted(k for k in old_by.keys() & new_by.keys() if old_by[k]["verdict"] != new_by[k]["verdict"])
    # Ungraded rows get status `excluded` (verdict_helpers): a policy decision, ranked before the answer.
    expect_causes = {k: "policy" if "ungraded" in (old_by[k]["verdict"], new_by[k]["verdict"])
                     else "extractor" if old_by[k]["answer"] != new_by[k]["answer"] else "grader"
                     for k in expect_changed}

    res = diff_files(tmp_path / "o.json", tmp_path / "n.json")
    got = [(r["item_id"], r["sample"]) for r in res.changed_rows()]
    assert got == expect_changed and len(got) > 100
    assert {(r["item_id"], r["sample"]): r["cause"] for r in res.changed_rows()} == expect_causes
    assert [(r["item_id"], r["sample"]) for r in res.one_sided_rows("old")] == sorted(old_by.keys() - new_by.keys())
    assert [(r["item_id"], r["sample"]) for r in res.one_sided_rows("new")] == sorted(new_by.keys() - old_by.keys())
    overall = {f.name: f for f in res.figures}["accuracy_all"]
    both = old_by.keys() & new_by.keys()
    b = sum(1 for k in both if old_by[k]["verdict"] != "correct" and new_by[k]["verdict"] == "correct")
    c = sum(1 for k in both if old_by[k]["verdict"] == "correct" and new_by[k]["verdict"] != "correct")
    assert (overall.to_correct, overall.to_incorrect) == (b, c)
    assert overall.mcnemar_p == pytest.approx(stats.mcnemar_exact(b, c))
    assert overall.new.correct == sum(1 for r in new_rows if r["verdict"] == "correct")
    assert render_markdown(res).count("\n| item-") <= 20 * len(CAUSES) + 40


# --------------------------------------------------------------------------- real data

# The MMLU-Pro gold-change test that graded with a private letter regex here now runs on real `audit grade`
# output (the official extractor, 2024 vs 2026 items packages) in tests/test_diff_real.py, with what it checked:
# exactly the independently computed rows, all with cause `reference`, old/new references equal to the 2024/2026
# golds, the flips on real responses (now pinned: 43 rows on 5 questions) and all 202 gold changes answered.
