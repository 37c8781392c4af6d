"""`audit grade` policies, each tested with stand-in components so only the policy logic is exercised.

The stand-ins: an extractor reading `ANSWER=X` and a grader comparing strings.
"""

from __future__ import annotations

import json
import re

import pytest

from audit.grade import AttemptMeta, choose_attempt, grade_package
from audit.grade import reproduction as grade_module
from audit import specs
from audit.specs import GradeConfig, ResolvedConfig, parse_policy_overrides
from audit.errors import AuditError
from audit.verdicts import Policies, load_verdict_file
from audit.extractors import Extraction
from audit.graders import Judgment
from tests.builders import make_package


class FakeExtractor:
    name, version, fingerprint = "fake.answer", "1", "f" * 64

    def extract(self, text, *, finish_reason=None):
        if text is None:
            return Extraction(None, "no_response")
        m = re.search(r"ANSWER=(\S+)", text)
        return Extraction(m.group(1), "answer=", m.span(1)) if m else Extraction(None, "none")


class FakeGrader:
    name, version, fingerprint = "fake.equal", "1", "e" * 64
    key = "fake.equal@1"

    def grade(self, answer, reference, *, num_choices=None):
        if answer is None:
            return Judgment(None, "no_answer", "none")
        if answer == "TIMEOUT":
            return Judgment(None, "timeout", "budget of 5 s exceeded")
        if num_choices and len(answer) == 1 and ord(answer) - 65 >= num_choices:
            return Judgment(False, "incorrect", f"letter {answer} outside the {num_choices} options")
        return Judgment(answer == reference, "correct" if answer == reference else "incorrect", "string compare")


ITEMS = [{"item_id": f"q{i}", "reference": "B", "num_choices": 4} for i in range(1, 5)]


def config(**policies):
    """The stand-ins as resolved components: grade_package runs what it is given."""
    return ResolvedConfig(GradeConfig(benchmark="test", extractor="fake.answer@1", grader="fake.equal@1",
                                      policies=Policies(**policies)), FakeExtractor(), FakeGrader())


def rows_by_key(vf):
    return {(r.item_id, r.sample): r for r in vf.items}


def test_truncated_is_never_credited_and_policy_decides_how_it_counts(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[
        {"item_id": "q1", "response": "ANSWER=B", "finish_reason": "stop"},
        {"item_id": "q2", "response": "so far ANSWER=B and then", "finish_reason": "length", "max_tokens": 64},
        {"item_id": "q3", "response": "ANSWER=C", "finish_reason": "stop"},
        {"item_id": "q4", "response": "ANSWER=B"},
    ])
    wrong = rows_by_key(grade_package(pkg, config()))
    assert (wrong["q2", 0].verdict, wrong["q2", 0].status) == ("incorrect", "truncated")
    assert wrong["q2", 0].answer == "B"  # what was read is shown, but not credited
    assert wrong["q2", 0].reason == "cut at the output ceiling (max_tokens=64); never credited"
    excl = grade_package(pkg, config(truncation="exclude"))
    row = rows_by_key(excl)["q2", 0]
    assert (row.verdict, row.status) == ("ungraded", "truncated")
    figs = {f.name: f for f in excl.summary.figures}
    assert (figs["accuracy"].correct, figs["accuracy"].total) == (2, 3)
    assert (figs["accuracy_all"].correct, figs["accuracy_all"].total) == (2, 4)
    assert excl.summary.excluded == [{"item_id": "q2", "sample": 0, "status": "truncated",
                                      "reason": "cut at the output ceiling (max_tokens=64); excluded by policy"}]


def test_longer_only_keeps_a_rerun_only_when_longer_than_the_cut(tmp_path):
    responses = [
        # q1: cut at 100 tokens; re-run longer and finished -> graded attempt 1
        {"item_id": "q1", "attempt": 0, "response": "ANSWER=C ...", "finish_reason": "length", "completion_tokens": 100},
        {"item_id": "q1", "attempt": 1, "response": "ANSWER=B done", "finish_reason": "stop", "completion_tokens": 180},
        # q2: the re-run stopped shorter than the original cut -> original stays
        {"item_id": "q2", "attempt": 0, "response": "ANSWER=C ...", "finish_reason": "length", "completion_tokens": 100},
        {"item_id": "q2", "attempt": 1, "response": "ANSWER=B", "finish_reason": "stop", "completion_tokens": 40},
        {"item_id": "q3", "response": "ANSWER=B", "finish_reason": "stop"},
        {"item_id": "q4", "response": "ANSWER=B", "finish_reason": "stop"},
    ]
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=responses)
    orig = rows_by_key(grade_package(pkg, config()))
    assert orig["q1", 0].attempt == 0 and orig["q1", 0].status == "truncated"
    longer = rows_by_key(grade_package(pkg, config(resampling="longer-only")))
    assert (longer["q1", 0].attempt, longer["q1", 0].verdict) == (1, "correct")
    assert longer["q1", 0].detail == {"attempts": [0, 1]}
    assert (longer["q2", 0].attempt, longer["q2", 0].status) == (0, "truncated")


def test_longer_only_compares_lengths_in_one_unit_when_token_counts_are_missing(tmp_path):
    # `length` was completion_tokens where given and characters where not, so a re-run without a
    # token count was compared in characters against the original's tokens.
    cut = "ANSWER=C " + "x" * 2000
    responses = [
        # q1: cut at 500 tokens (2,009 characters); the re-run, 1,009 characters, no token count: shorter
        {"item_id": "q1", "attempt": 0, "response": cut, "finish_reason": "length", "completion_tokens": 500},
        {"item_id": "q1", "attempt": 1, "response": "ANSWER=B " + "z" * 1000, "finish_reason": "stop"},
        # q2: cut at 2,009 characters, no token count; the re-run, 3,009 characters in 800 tokens: longer
        {"item_id": "q2", "attempt": 0, "response": cut, "finish_reason": "length"},
        {"item_id": "q2", "attempt": 1, "response": "ANSWER=B " + "y" * 3000, "finish_reason": "stop",
         "completion_tokens": 800},
        {"item_id": "q3", "response": "ANSWER=B", "finish_reason": "stop"},
        {"item_id": "q4", "response": "ANSWER=B", "finish_reason": "stop"},
    ]
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=responses)
    longer = rows_by_key(grade_package(pkg, config(resampling="longer-only")))
    assert (longer["q1", 0].attempt, longer["q1", 0].status) == (0, "truncated")
    assert (longer["q2", 0].attempt, longer["q2", 0].verdict) == (1, "correct")


def test_choose_attempt_prefers_first_finished_then_longest():
    a = [AttemptMeta(0, "length", 100, True, None, None, 100),
         AttemptMeta(1, "length", 300, True, None, None, 300),
         AttemptMeta(2, "length", 250, True, None, None, 300)]
    assert choose_attempt(a, "longer-only")[0].attempt == 1
    a.append(AttemptMeta(3, "stop", 120, True, None, None, 300))
    assert choose_attempt(a, "longer-only")[0].attempt == 3


def test_no_answer_wrong_or_seeded_guess_recorded_per_item(tmp_path):
    items = [{"item_id": f"q{i}", "reference": "C", "num_choices": 4} for i in range(20)]
    responses = [{"item_id": f"q{i}", "response": "I am not sure."} for i in range(20)]
    pkg = make_package(tmp_path / "p", items=items, responses=responses)
    wrong = grade_package(pkg, config())
    assert {r.status for r in wrong.items} == {"no_answer"}
    assert {r.verdict for r in wrong.items} == {"incorrect"}
    guess = grade_package(pkg, config(no_answer="random-guess", guess_seed=7))
    again = grade_package(pkg, config(no_answer="random-guess", guess_seed=7))
    assert [r.detail for r in guess.items] == [r.detail for r in again.items]
    for r in guess.items:
        assert r.status == "random_guess" and r.answer is None
        assert r.detail["seed"] == 7 and r.detail["options"] == 4 and 0 <= r.detail["draw"] < 4
        assert r.verdict == ("correct" if r.detail["guess"] == "C" else "incorrect")
    assert 0 < sum(r.verdict == "correct" for r in guess.items) < 20
    other = grade_package(pkg, config(no_answer="random-guess", guess_seed=8))
    assert [r.detail["draw"] for r in other.items] != [r.detail["draw"] for r in guess.items]


def test_exclusions_are_listed_and_both_figures_reported(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[
        {"item_id": "q1", "response": "ANSWER=B"},
        {"item_id": "q2", "response": None, "excluded": "prompt of 3000 tokens does not fit the 2048-token context"},
        {"item_id": "q3", "response": "ANSWER=TIMEOUT"},
        {"item_id": "q4", "response": "ANSWER=B"},
    ])
    vf = grade_package(pkg, config(exclude=["q4"]))
    rows = rows_by_key(vf)
    assert rows["q2", 0].status == "excluded"
    assert rows["q2", 0].reason == "not sent: prompt of 3000 tokens does not fit the 2048-token context"
    assert (rows["q3", 0].verdict, rows["q3", 0].status) == ("ungraded", "timeout")
    assert (rows["q4", 0].verdict, rows["q4", 0].status) == ("ungraded", "excluded")
    figs = {f.name: f for f in vf.summary.figures}
    assert (figs["accuracy"].correct, figs["accuracy"].total) == (1, 1)
    assert (figs["accuracy_all"].correct, figs["accuracy_all"].total) == (1, 4)
    assert [e["item_id"] for e in vf.summary.excluded] == ["q2", "q3", "q4"]


def test_missing_items_never_vanish_from_the_denominator(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[
        {"item_id": "q1", "sample": 0, "response": "ANSWER=B"},
        {"item_id": "q1", "sample": 1, "response": "ANSWER=B"},
        {"item_id": "q2", "sample": 0, "response": "ANSWER=B"},
    ])
    vf = grade_package(pkg, config())
    rows = rows_by_key(vf)
    assert len(vf.items) == 8  # 4 items x 2 samples
    assert (rows["q2", 1].status, rows["q2", 1].attempt) == ("missing", None)
    assert rows["q2", 1].reason == "no response for this item in sample 1"
    figs = {f.name: f for f in vf.summary.figures}
    assert figs["accuracy_all[sample=1]"].total == 4
    scoped = grade_package(pkg, config(scope="responses"))
    assert len(scoped.items) == 4  # q1, q2 x 2 samples


def test_unknown_item_in_responses_is_a_one_line_error(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[{"item_id": "zz", "response": "ANSWER=B"}])
    with pytest.raises(AuditError) as e:
        grade_package(pkg, config())
    assert str(e.value) == f"{pkg}/responses.jsonl: row 1: field item_id: item 'zz' is not in the items package"


def test_same_inputs_give_byte_identical_files(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[
        {"item_id": f"q{i}", "sample": s, "response": f"ANSWER={'B' if (i + s) % 2 else 'A'}"}
        for i in range(1, 5) for s in range(3)])
    grade_package(pkg, config(), out=tmp_path / "a.json")
    grade_package(pkg, config(), out=tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    vf = load_verdict_file(tmp_path / "a.json")
    assert vf.responses_package.path == "p"
    doc = json.loads((tmp_path / "a.json").read_text())
    assert list(doc)[0] == "schema_version" and list(doc)[-1] == "items"
    methods = {iv.method for f in vf.summary.figures if f.sample is None for iv in f.intervals}
    assert methods == {"runs_2se", "runs_t", "clustered_t"}


def test_policy_overrides_parse_and_fail_in_one_line():
    p = parse_policy_overrides(Policies(), ["truncation=exclude", "exclude=a,b", "guess_seed=3"])
    assert (p.truncation, p.exclude, p.guess_seed) == ("exclude", ["a", "b"], 3)
    # A library call's error names no CLI flag (issue 20); `audit grade` puts `--policy` in front.
    with pytest.raises(AuditError, match=r"^policy truncation: Input should be 'wrong' or 'exclude' \(got 'maybe'\)$"):
        parse_policy_overrides(Policies(), ["truncation=maybe"])
    with pytest.raises(AuditError, match=r"^policy 'colour=red': expected KEY=VALUE"):
        parse_policy_overrides(Policies(), ["colour=red"])


def test_the_cli_names_the_policy_flag(tmp_path, cli):
    r = cli("grade", tmp_path, "--benchmark", "mmlu_pro", "--policy", "truncation=maybe", "-o", tmp_path / "r.json")
    assert (r.code, r.err) == (2, "audit: error: --policy truncation: Input should be 'wrong' or 'exclude' "
                                  "(got 'maybe')\n")


def test_reproduce_identical_then_refuses_a_changed_package(tmp_path, cli):
    # Through the CLI: the registered components of the `math` spec (boxed@1, math.equiv@2).
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[
        {"item_id": "q1", "response": "so \\boxed{B}"}, {"item_id": "q2", "response": "so \\boxed{A}"}])
    out = tmp_path / "results.json"
    r = cli("grade", pkg, "--benchmark", "math", "-o", out, "--quiet")
    assert (r.code, r.out, r.err) == (0, f"wrote {out}\n", "")
    r = cli("reproduce", out)
    assert (r.code, r.out.splitlines()[0]) == (0, f"identical: {out}")
    assert [line.split(":")[0] for line in r.out.splitlines()[1:]] == ["not re-derived"]  # the producer

    # A verdict edited by hand is caught.
    text = out.read_text()
    out.write_text(text.replace('"verdict":"incorrect","status":"incorrect"', '"verdict":"correct","status":"correct"', 1))
    r = cli("reproduce", out)
    assert r.code == 1
    assert r.out.splitlines()[0] == f"differs: {out} (1 differences)"

    # Another package (content differs) is refused.
    other = make_package(tmp_path / "p2", items=ITEMS, responses=[{"item_id": "q1", "response": "ANSWER=C"}])
    r = cli("reproduce", out, "--package", other)
    assert r.code == 2
    assert r.err.startswith(f"audit: error: {other}: package content differs from the one graded")


def test_reproduce_names_rows_that_differ_only_by_a_timeout_as_environment_dependent(tmp_path, cli, monkeypatch):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[
        {"item_id": "q1", "response": "ANSWER=B"}, {"item_id": "q2", "response": "ANSWER=A"}])
    out = tmp_path / "results.json"
    real = FakeGrader.grade

    def loaded(self, answer, reference, *, num_choices=None):  # a busy machine: q1's grading hit the budget
        if answer == "B":
            return Judgment(None, "timeout", "over the 5 s budget, and over 20 s when retried alone")
        return real(self, answer, reference, num_choices=num_choices)

    # The CLI resolves the `math` spec, then the recorded names, through the one resolver: give it the stand-ins.
    table = {"extractor": FakeExtractor(), "grader": FakeGrader()}
    for module in (specs, grade_module):
        monkeypatch.setattr(module, "lookup", lambda kind, spec: table[kind])
    with monkeypatch.context() as m:
        m.setattr(FakeGrader, "grade", loaded)
        assert cli("grade", pkg, "--benchmark", "math", "-o", out, "--quiet").code == 0
    r = cli("reproduce", out)
    assert r.code == 1
    assert r.out.splitlines()[:-1] == [
        f"differs only in environment-dependent rows: {out} (1 rows where a grading timed out in one run and not "
        f"in the other)",
        "  environment-dependent (timeout): q1 sample 0: recorded ('ungraded', 'timeout', 'B'), "
        "now ('correct', 'correct', 'B')"]

    # A timeout row whose answer also changed is a plain difference, not the machine's doing.
    text = out.read_text()
    out.write_text(text.replace('"answer":"B","rule":"answer=","span":[7,8],"verdict":"ungraded"',
                                '"answer":"C","rule":"answer=","span":[7,8],"verdict":"ungraded"', 1))
    r = cli("reproduce", out)
    assert r.code == 1 and r.out.splitlines()[0] == f"differs: {out} (1 differences)"


def test_grade_refuses_to_overwrite_and_writes_nothing_on_error(tmp_path, cli):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[{"item_id": "zz", "response": "ANSWER=B"}])
    out = tmp_path / "results.json"
    r = cli("grade", pkg, "--benchmark", "math", "-o", out)
    assert r.code == 2 and not out.exists()
    out.write_text("keep me")
    r = cli("grade", pkg, "--benchmark", "math", "-o", out)
    assert (r.code, r.err) == (2, f"audit: error: {out}: already exists (use --force to replace it)\n")
    assert out.read_text() == "keep me"


def test_grade_into_a_missing_directory_fails_before_grading(tmp_path, cli):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[{"item_id": "q1", "response": "ANSWER=B"}])
    r = cli("grade", pkg, "--benchmark", "math", "-o", tmp_path / "nope" / "r.json")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {tmp_path / 'nope'}: parent directory does not exist\n")


def test_partial_texts_are_not_graded_as_complete(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[
        {"item_id": "q1", "response": "ANSWER=B so far", "finish_reason": "abort"},
        {"item_id": "q2", "response": "ANSWER=B", "error": "stream ended without [DONE]"},
        {"item_id": "q3", "response": "ANSWER=B", "finish_reason": "stop"},
        {"item_id": "q4", "response": "ANSWER=B", "finish_reason": "content_filter"},
    ])
    rows = rows_by_key(grade_package(pkg, config()))
    assert (rows["q1", 0].verdict, rows["q1", 0].status) == ("ungraded", "error")
    assert rows["q1", 0].reason == "generation ended with finish_reason 'abort': the text is partial"
    assert rows["q2", 0].reason == "the response carries an error: stream ended without [DONE]"
    assert rows["q3", 0].verdict == "correct"
    assert rows["q4", 0].status == "error"


def test_random_guess_without_option_count_says_why_it_counts_wrong(tmp_path):
    pkg = make_package(tmp_path / "p", items=[{"item_id": "q1", "reference": "42"}],
                       responses=[{"item_id": "q1", "response": "no idea"}])
    row = grade_package(pkg, config(no_answer="random-guess")).items[0]
    assert (row.verdict, row.status) == ("incorrect", "no_answer")
    assert row.reason.endswith("the random-guess policy needs the item's option count, which is unknown: counted wrong")


def test_excluding_an_id_that_is_not_an_item_is_an_error(tmp_path):
    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[{"item_id": "q1", "response": "ANSWER=B"}])
    with pytest.raises(AuditError, match=r"^the exclude policy names 1 id\(s\) that are not items \(first: 'q9'\)$"):
        grade_package(pkg, config(exclude=["q1", "q9"]))


def test_an_item_in_two_items_files_is_refused(tmp_path):
    from audit.pack import Table, build_package
    from tests.builders import rows_source

    build_package(tmp_path / "p", kind="responses", tables=[
        Table("responses.jsonl", "response_row.v1", rows_source([{"item_id": "q1", "response": "ANSWER=B"}])),
        Table("items-a.jsonl", "item_row.v1", rows_source([{"item_id": "q1", "reference": "B"}])),
        Table("items-b.jsonl", "item_row.v1", rows_source([{"item_id": "q1", "reference": "C"}]))])
    with pytest.raises(AuditError, match="item 'q1' appears in more than one items file"):
        grade_package(tmp_path / "p", config())


def test_json_rows_edited_beside_a_parquet_copy_are_caught(tmp_path, cli):
    from audit.verdicts import read_verdicts

    pkg = make_package(tmp_path / "p", items=ITEMS, responses=[
        {"item_id": "q1", "response": "ANSWER=B"}, {"item_id": "q2", "response": "ANSWER=A"}])
    out = tmp_path / "r.json"
    grade_package(pkg, config(), out=out, parquet=True)
    assert read_verdicts(out).source == "parquet"
    text = out.read_text()
    out.write_text(text.replace('"verdict":"incorrect","status":"incorrect"', '"verdict":"correct","status":"correct"'))
    r = cli("diff", out, out)
    assert (r.code, r.err) == (2, f"audit: error: {out}: field items: its rows differ from the ones recorded beside "
                                  "its Parquet copy (the JSON rows were edited after grading)\n")


def test_a_rows_decision_is_a_named_record():
    from audit.grade import AttemptMeta, Decision, ItemInfo, decide

    meta = AttemptMeta(attempt=0, finish_reason="length", length=9, has_text=True, excluded=None, error=None,
                       max_tokens=9)
    d = decide(meta, None, None, ItemInfo("B", 4), "q1", 0, Policies(), frozenset())
    assert d == Decision("incorrect", "truncated", "cut at the output ceiling (max_tokens=9); never credited")
    assert (d.verdict, d.status, d.detail) == ("incorrect", "truncated", {})
    missing = decide(None, None, None, ItemInfo("B", 4), "q1", 2, Policies(), frozenset())
    assert (missing.verdict, missing.status, missing.reason) == ("ungraded", "missing",
                                                                 "no response for this item in sample 2")
