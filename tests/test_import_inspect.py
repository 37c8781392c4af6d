"""`audit import inspect`: logs that inspect_ai itself writes here, offline, with its `mockllm` model.

Three questions, two epochs, inspect's own `match()` scorer; one output is cut at `max_tokens`. The logs are
written in both formats (`.eval`, a zip, and `.json`) by `inspect_ai.eval`, so the test reads what the tool
writes, not a hand-made imitation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.packages import open_package
from tests.attacks import attack


def _write_log(log_dir, fmt: str) -> str:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    def out(text: str, stop: str = "stop") -> ModelOutput:
        o = ModelOutput.from_content(model="mockllm/model", content=text, stop_reason=stop)
        # Usage given: mockllm would otherwise count tokens with tiktoken, which downloads its vocabulary.
        o.usage = ModelUsage(input_tokens=5, output_tokens=3, total_tokens=8)
        return o

    outputs = [out("The answer is 2"), out("4"), out("I don't know", "max_tokens")] * 2
    task = Task(dataset=[Sample(input="1+1?", target="2", id="q1"), Sample(input="2+2?", target="4", id="q2"),
                         Sample(input="3+3?", target="6", id="q3")],
                solver=generate(), scorer=match(), name="arith", epochs=2)
    (log,) = eval(task, model=get_model("mockllm/model", custom_outputs=outputs), log_dir=str(log_dir),
                  log_format=fmt, display="none", max_tokens=64, temperature=0.0, max_samples=1)
    assert log.status == "success"
    return log.location


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inspect-logs")
    return {fmt: _write_log(d / fmt, fmt) for fmt in ("eval", "json")}


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_a_log_inspect_wrote_imports_with_its_items_and_recorded_verdicts(cli, here, logs, fmt):
    # The task `arith` is not a benchmark spec: a verdict file needs one named.
    r = cli("import", "inspect", logs[fmt], "-o", "pkg", "--recorded", "recorded.json")
    assert (r.code, r.err) == (2, "audit: error: --recorded needs --benchmark NAME: the log's task 'arith' is not a "
                                  "benchmark spec (see `audit benchmarks`)\n")
    assert not (here / "pkg").exists() and not (here / "recorded.json").exists()
    r = cli("import", "inspect", logs[fmt], "-o", "pkg", "--recorded", "recorded.json", "--benchmark", "exact")
    assert r.code == 0, r.err
    pid = json.loads((here / "pkg" / "manifest.json").read_text())["package_id"]
    assert r.out.splitlines() == [
        f"wrote pkg: responses package {pid}, 6 rows and 3 items",
        "  checked against the log's results: 6 samples; match accuracy 0.666667 = the mean of 6 samples",
        "wrote recorded.json: exact, 3 items x 2 samples, recorded accuracy 66.67% (4/6) (match)",
    ]
    with open_package(here / "pkg") as pkg:
        prov = pkg.manifest.provenance
        rows = list(pkg.iter_rows("response_row.v1"))
        items = {i.item_id: i for i in pkg.iter_rows("item_row.v1")}
    assert (prov.model, prov.engine, prov.sampling) == ("mockllm/model", "UKGovernmentBEIS/inspect_ai",
                                                        {"max_tokens": 64, "temperature": 0.0})
    assert prov.extra["import"]["task"] == "arith" and prov.extra["import"]["scorer"] == "match"
    assert [(x.item_id, x.sample, x.response, x.finish_reason) for x in rows] == [
        (i, s, t, f) for s in (0, 1) for i, t, f in (("q1", "The answer is 2", "stop"), ("q2", "4", "stop"),
                                                    ("q3", "I don't know", "length"))]
    assert {k: (v.reference, v.question) for k, v in items.items()} == {
        "q1": ("2", "1+1?"), "q2": ("4", "2+2?"), "q3": ("6", "3+3?")}
    recorded = json.loads((here / "recorded.json").read_text())
    assert [(x["item_id"], x["sample"], x["verdict"]) for x in recorded["items"]] == [
        ("q1", 0, "correct"), ("q1", 1, "correct"), ("q2", 0, "correct"), ("q2", 1, "correct"),
        ("q3", 0, "incorrect"), ("q3", 1, "incorrect")]
    # The package grades with nothing else; the cut response is never credited.
    r = cli("grade", "pkg", "--benchmark", "exact", "-o", "graded.json", "-q")
    assert r.code == 0, r.err
    graded = {(x["item_id"], x["sample"]): x for x in json.loads((here / "graded.json").read_text())["items"]}
    assert graded[("q3", 0)]["status"] == "truncated" and graded[("q2", 1)]["verdict"] == "correct"


def test_both_formats_give_the_same_rows(cli, here, logs):
    rows = {}
    for fmt in ("eval", "json"):
        assert cli("import", "inspect", logs[fmt], "-o", fmt).code == 0
        with open_package(here / fmt) as pkg:
            rows[fmt] = ([x.model_dump() for x in pkg.iter_rows("response_row.v1")],
                         [x.model_dump() for x in pkg.iter_rows("item_row.v1")])
    assert rows["eval"] == rows["json"]


def test_a_logged_accuracy_the_samples_do_not_give_is_flagged(cli, here, logs):
    doc = json.loads(open(logs["json"], encoding="utf-8").read())
    doc["results"]["scores"][0]["metrics"]["accuracy"]["value"] = 0.9
    edited = here / "edited.json"
    edited.write_text(json.dumps(doc), encoding="utf-8")
    r = cli("import", "inspect", edited, "-o", "pkg")
    assert r.code == 1
    assert r.out.splitlines()[1] == ("  checked against the log's results: 6 samples; MISMATCH match accuracy: the "
                                     "log reports 0.9, the mean of 6 samples is 0.666667")
    assert r.err == "the log's figures do not come from its samples (see MISMATCH above)\n"


def test_refusals(cli, here, logs):
    r = cli("import", "inspect", logs["eval"], "-o", "pkg", "--scorer", "choice")
    assert (r.code, r.err) == (2, f"audit: error: {logs['eval']}: --scorer choice: the log's scorers are match\n")
    bad = here / "x.json"
    bad.write_text('{"not": "a log"}')
    r = cli("import", "inspect", bad, "-o", "pkg")
    assert r.code == 2 and r.err.startswith(f"audit: error: {bad}: not a readable inspect_ai log: ")
    assert r.err.count("\n") == 1 and not (here / "pkg").exists()


def test_a_log_given_to_another_importer_names_import_inspect(cli, here, logs):
    for fmt in ("eval", "json"):
        for args in (("table", logs[fmt], "--kind", "responses"), ("lm-eval", logs[fmt], "--benchmark", "exact")):
            r = cli("import", *args, "-o", "out")
            assert (r.code, r.err) == (2, f"audit: error: {logs[fmt]}: this looks like an inspect_ai evaluation log "
                                          f"(samples, scores, model); use `audit import inspect {logs[fmt]} -o OUT "
                                          f"[--recorded RECORDED.json]`\n"), args


def _write_unscored_log(log_dir, fmt: str) -> str:
    """A log of a task with no scorer, as inspect_ai writes it: samples and outputs, no scores."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate

    def out(text: str) -> ModelOutput:
        o = ModelOutput.from_content(model="mockllm/model", content=text, stop_reason="stop")
        o.usage = ModelUsage(input_tokens=5, output_tokens=3, total_tokens=8)
        return o

    task = Task(dataset=[Sample(input="1+1?", target="2", id="q1"), Sample(input="2+2?", target="4", id="q2")],
                solver=generate(), name="arith")
    (log,) = eval(task, model=get_model("mockllm/model", custom_outputs=[out("2"), out("5")]), log_dir=str(log_dir),
                  log_format=fmt, display="none")
    assert log.status == "success" and log.results is not None and not log.results.scores
    return log.location


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_an_unscored_log_with_recorded_says_what_can_be_done_and_it_can(cli, here, fmt):
    # issue 31 item 8: "give --scorer" was the advice for a log that has no scorer to give.
    import subprocess
    import sys

    log = _write_unscored_log(here / "logs", fmt)
    advice = ("the log holds no scores (its task ran without a scorer, or with --no-score), so there are no recorded "
              "verdicts to write: import it without --recorded and grade the package (`audit grade OUT --benchmark "
              f"NAME`), or score it first (`inspect score {log} --scorer NAME --output-file SCORED.json`) and import "
              "SCORED.json with --recorded")
    for extra in ((), ("--scorer", "match")):
        r = cli("import", "inspect", log, "-o", "pkg", "--recorded", "rec.json", "--benchmark", "exact", *extra)
        assert (r.code, r.err) == (2, f"audit: error: {log}: {'--scorer match: ' if extra else ''}{advice}\n")
        assert not (here / "pkg").exists() and not (here / "rec.json").exists()
    r = cli("import", "verdicts", log, "--benchmark", "exact", "-o", "v.json")
    assert (r.code, r.err) == (2, f"audit: error: {log}: this looks like an inspect_ai evaluation log without scores "
                                  f"(samples, model); it holds no scores, so no recorded verdicts: `audit import "
                                  f"inspect {log} -o OUT` and grade the package, or `inspect score {log} --scorer NAME "
                                  f"--output-file SCORED.json` first\n")
    # Both ways on work as written: import and grade; score with inspect, then import with --recorded.
    assert cli("import", "inspect", log, "-o", "pkg").code == 0
    assert cli("grade", "pkg", "--benchmark", "exact", "-o", "graded.json", "-q").code == 0
    scored = here / f"scored.{fmt}"
    done = subprocess.run([str(Path(sys.executable).parent / "inspect"), "score", log, "--scorer", "match",
                           "--output-file", str(scored), "--display", "none"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    r = cli("import", "inspect", scored, "-o", "pkg2", "--recorded", "rec.json", "--benchmark", "exact")
    assert r.code == 0, r.err
    assert r.out.splitlines()[-1] == ("wrote rec.json: exact, 2 items x 1 samples, recorded accuracy 50.00% (1/2) "
                                      "(match)")


@attack("import.inspect-swap")
@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_a_log_replaced_after_its_hash_is_refused_and_nothing_is_written(cli, here, logs, monkeypatch, fmt):
    """inspect_ai reads a private copy whose digest is the pin: a log replaced after the hash (another run's log)
    is refused, never imported under the digest of the first."""
    import shutil

    import audit.importers.inspect_ai as mod
    from tests.attack_tools import swap_after_hash

    src = here / f"log.{fmt}"
    shutil.copy(logs[fmt], src)
    other = Path(_write_log(here / "other", fmt)).read_bytes()
    swap_after_hash(monkeypatch, mod, src, other)
    r = cli("import", "inspect", src.name, "-o", "pkg", "--recorded", "rec.json", "--benchmark", "exact")
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {src.name}: the file changed since it was hashed: run again\n"
    assert not (here / "pkg").exists() and not (here / "rec.json").exists()


MODEL_GRADED_LOG = Path(__file__).parent / "data" / "judge" / "inspect_input-task_model_graded_fact.json"
JUDGE_NOTE = ("the recorded verdicts came from a model-graded scorer (model_graded_fact); exact.hle@1 is not the same "
              "grader: a verdict it changes may be the judge and the rule disagreeing, not a retraction by itself")


def test_a_model_graded_score_regraded_by_a_rule_is_labelled_in_grade_and_diff(cli, here):
    # issue 31 item 8: a real inspect_ai log scored by model_graded_fact (gpt-4o-mini said C), regraded with
    # `exact`, showed as a -100 point retraction with no word that the recorded grader was a judge.
    r = cli("import", "inspect", MODEL_GRADED_LOG, "-o", "pkg", "--recorded", "rec.json", "--benchmark", "exact")
    assert r.code == 0, r.err
    env = json.loads((here / "rec.json").read_text())["environment"]
    assert {k: env[k] for k in ("recorded_scorer", "recorded_scorer_kind", "recorded_scorer_function")} == {
        "recorded_scorer": "model_graded_fact", "recorded_scorer_kind": "model-graded",
        "recorded_scorer_function": "model_graded_fact"}
    with open_package(here / "pkg") as pkg:
        imported = pkg.manifest.provenance.extra["import"]
    assert (imported["scorer_kind"], imported["scorer_function"]) == ("model-graded", "model_graded_fact")
    r = cli("grade", "pkg", "--benchmark", "exact", "-o", "graded.json")
    assert r.code == 0 and r.out.splitlines()[-1] == f"note: {JUDGE_NOTE}", r.out
    r = cli("diff", "rec.json", "graded.json")
    assert f"- note: OLD: {JUDGE_NOTE}" in r.out.splitlines()
    assert "Δ -100.00 points" in r.out  # the figure is still shown; the note says what it is


def test_a_rule_scorer_gets_no_judge_note(cli, here, logs):
    r = cli("import", "inspect", logs["json"], "-o", "pkg", "--recorded", "rec.json", "--benchmark", "exact")
    assert r.code == 0, r.err
    assert json.loads((here / "rec.json").read_text())["environment"]["recorded_scorer_kind"] == "rule"
    r = cli("grade", "pkg", "--benchmark", "exact", "-o", "graded.json")
    assert r.code == 0 and "model-graded" not in r.out
    assert "model-graded" not in cli("diff", "rec.json", "graded.json").out


@pytest.mark.parametrize("function,by_model,kind", [
    ("model_graded_qa", False, "model-graded"), ("inspect_ai/model_graded_fact", False, "model-graded"),
    ("my_task/llm_judge", True, "model-graded"), ("match", False, "rule"), ("inspect_ai/includes", False, "rule"),
    ("my_task/custom", False, "unknown"), (None, False, "unknown")])
def test_scorer_kind(function, by_model, kind):
    from audit.importers.inspect_ai import scorer_kind

    assert scorer_kind(function, by_model) == kind
