"""The whole judged path on the CLI, against the local fake judge: `audit judge --server` records the calls,
`audit show` prints them, `audit grade --judge-calls` grades with no server, `audit reproduce` re-reads the
recorded replies with the server gone, a new parse-rule version is diffed item by item, and bad input is one
line with nothing written."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.builders import make_package
from tests.judge_server import FakeJudge

QUESTIONS = 6


def _packages(tmp: Path) -> tuple[Path, Path]:
    tmp.mkdir(parents=True, exist_ok=True)
    items = [{"item_id": f"q{i}", "reference": str(10 + i), "question": f"What is {10 + i} + 0?", "protected": True}
             for i in range(QUESTIONS)]
    # q0..q2 answered right, q3..q5 wrong; q5's second line is cut at the ceiling (never credited)
    responses = [{"item_id": f"q{i}", "response": f"Explanation: adding zero.\nExact Answer: {10 + i if i < 3 else 0}"
                  + ("\nConfidence: 80%" if i < 3 else ""), "finish_reason": "stop"} for i in range(QUESTIONS - 1)]
    responses.append({"item_id": "q5", "response": "Explanation: adding zero changes noth", "finish_reason": "length"})
    return (make_package(tmp / "resp", responses=responses, benchmark="hle"),
            make_package(tmp / "items", items=items, benchmark="hle"))


@pytest.fixture
def judged(tmp_path: Path, cli):
    resp, items = _packages(tmp_path)
    with FakeJudge(served_as="fake-judge@rev7") as fj:
        r = cli("judge", resp, "--items", items, "--judge", "hle.official", "--server", fj.url, "--judge-model",
                "fake-judge", "-o", tmp_path / "calls")
        assert r.code == 0, r.err
    return tmp_path, resp, items, r


def test_judge_records_and_show_prints_the_figures(judged, cli) -> None:
    tmp, _, _, r = judged
    assert r.out.startswith("wrote ") and "6 calls (6 made now, 0 kept" in r.out
    assert "correct=3, incorrect=3" in r.out
    rows = [json.loads(x) for x in (tmp / "calls" / "calls.jsonl").read_text().splitlines()]
    assert {x["model_served"] for x in rows} == {"fake-judge@rev7"} and all(x["protected"] for x in rows)
    s = cli("show", tmp / "calls")
    assert s.code == 0, s.err
    assert "calls      6: correct=3, incorrect=3" in s.out
    assert "judge      asked fake-judge; served fake-judge@rev7" in s.out
    assert "judged     accuracy 50.00% +/- 40.01 (upstream: Wald, n = 6 questions" in s.out
    assert "upstream's refused (upstream's calibration error needs at least 100 judged predictions" in s.out


def test_grade_from_calls_reproduce_without_server_and_diff_a_new_rule(judged, cli) -> None:
    tmp, resp, items, _ = judged
    v1 = tmp / "v1.json"
    g = cli("grade", resp, "--items", items, "--benchmark", "hle", "--judge-calls", tmp / "calls", "-o", v1)
    assert g.code == 0, g.err
    assert "(no judge called); rule hle.substring@a590489, template hle.official@a590489" in g.out
    assert "exact match" in g.out
    vf = json.loads(v1.read_text())
    assert vf["schema_version"] == 4 and vf["extractor"]["name"] == "hle.substring"
    rows = {r["item_id"]: r for r in vf["items"]}
    assert [rows[f"q{i}"]["verdict"] for i in range(6)] == ["correct"] * 3 + ["incorrect"] * 3
    assert rows["q5"]["status"] == "truncated"  # a cut response never reaches the judge's verdict
    assert rows["q0"]["detail"]["exact_match"] == "correct"
    rep = cli("reproduce", v1)  # the fake judge is gone: nothing may call it
    assert (rep.code, rep.out.splitlines()[0]) == (0, f"identical: {v1}")
    # the strict rule reads the same replies alike here: no verdict changes
    v2 = tmp / "v2.json"
    assert cli("grade", resp, "--items", items, "--benchmark", "hle", "--judge-calls", tmp / "calls",
               "--judge-rule", "hle.strict@1", "-o", v2).code == 0
    d = cli("diff", v1, v2)
    assert d.code == 0, d.out + d.err


def _rewrite_calls(src: Path, dest: Path, edit) -> None:
    """A copy of a calls package whose rows `edit` changed (rows rebuilt through the writer)."""
    from audit.judge.kind import write_calls
    from audit.judge.models import JudgeCallRow
    from audit.packages import open_package

    with open_package(src, kind="judge-calls") as pkg:
        rows = [edit(r) for r in pkg.iter_rows("judge_call_row.v1")]
        prov, bench = pkg.manifest.provenance, pkg.manifest.benchmark
    write_calls(str(dest), [JudgeCallRow.model_validate(r) if isinstance(r, dict) else r for r in rows],
                benchmark=bench, provenance=prov)


def _lax(row):
    # one reply as a lax judge sends it (confidence as a string): the substring rule accepts it, the strict not
    if row.item_id != "q1":
        return row
    raw = json.loads(row.raw)
    raw["confidence"] = str(raw["confidence"])
    text = json.dumps(raw)
    return row.model_copy(update={"raw": text, "raw_sha256": hashlib.sha256(text.encode()).hexdigest()})


def test_a_rule_change_is_listed_item_by_item(judged, cli) -> None:
    tmp, resp, items, _ = judged
    _rewrite_calls(tmp / "calls", tmp / "calls2", _lax)
    v1, v2 = tmp / "v1.json", tmp / "v2.json"
    for out, rule in ((v1, "hle.substring@a590489"), (v2, "hle.strict@1")):
        g = cli("grade", resp, "--items", items, "--benchmark", "hle", "--judge-calls", tmp / "calls2",
                "--judge-rule", rule, "-o", out)
        assert g.code == 0, g.err
    assert "judge_error 1 rows: counted wrong 33.33% (2/6); left out 40.00% (2/5)" in g.out
    rows = {r["item_id"]: r for r in json.loads(v2.read_text())["items"]}
    assert (rows["q1"]["status"], rows["q1"]["verdict"]) == ("judge_error", "incorrect")
    assert "confidence is not an integer from 0 to 100" in rows["q1"]["reason"]
    d = cli("diff", v1, v2, "--format", "json")
    assert d.code == 1
    report = json.loads(d.out)
    changed = report["rows"]["changed"] if "rows" in report else report["changed"]
    assert [(c["item_id"], c["cause"]) for c in changed] == [("q1", "extractor")]
    # left out instead of counted wrong: the other figure
    v3 = tmp / "v3.json"
    assert cli("grade", resp, "--items", items, "--benchmark", "hle", "--judge-calls", tmp / "calls2",
               "--judge-rule", "hle.strict@1", "--policy", "judge_error=exclude", "-o", v3).code == 0
    assert json.loads(v3.read_text())["policies"]["judge_error"] == "exclude"
    assert cli("reproduce", v3).code == 0


def test_bad_input_is_one_line_and_writes_nothing(judged, cli, tmp_path: Path) -> None:
    tmp, resp, items, _ = judged
    other, _ = _packages(tmp / "other")
    other = make_package(tmp / "other" / "resp2", responses=[{"item_id": "q0", "response": "Exact Answer: 1"}],
                         benchmark="hle")
    # calls of another responses package
    r = cli("grade", other, "--items", items, "--benchmark", "hle", "--judge-calls", tmp / "calls", "-o",
            tmp / "x.json")
    assert r.code == 2 and r.err.count("\n") == 1 and "these calls judged the responses package with digest" in r.err
    assert not (tmp / "x.json").exists()
    # a call without its raw reply under a policy that needs it
    _rewrite_calls(tmp / "calls", tmp / "noraw", lambda row: row.model_copy(update={
        "raw": None, "raw_sha256": None, "raw_recorded": False}))
    r = cli("grade", resp, "--items", items, "--benchmark", "hle", "--judge-calls", tmp / "noraw", "-o",
            tmp / "y.json")
    assert r.code == 2 and "has no raw response recorded, which --judge-raw required needs" in r.err
    assert not (tmp / "y.json").exists()
    assert cli("grade", resp, "--items", items, "--benchmark", "hle", "--judge-calls", tmp / "noraw",
               "--judge-raw", "recorded-parse", "-o", tmp / "y.json").code == 0
    # a template whose prompt bytes do not match its fingerprint: refused before any call
    from audit.judge import templates

    shutil.copytree(templates.PROMPT_DIR, tmp_path / "prompts")
    f = tmp_path / "prompts" / "hle.official@a590489.txt"
    f.write_bytes(f.read_bytes() + b" ")
    old = templates.PROMPT_DIR
    templates.PROMPT_DIR = tmp_path / "prompts"
    templates._read_prompt.cache_clear()
    try:
        with FakeJudge() as fj:
            r = cli("judge", resp, "--items", items, "--judge", "hle.official", "--server", fj.url, "-o",
                    tmp / "z")
            assert fj.requests == []
    finally:
        templates.PROMPT_DIR = old
        templates._read_prompt.cache_clear()
    assert r.code == 2 and "prompt bytes have sha256" in r.err and not (tmp / "z").exists()


def test_release_of_a_judged_grading_covers_the_calls_text(judged, cli) -> None:
    """The calls of protected items are never released; their replies join the leak check's protected text."""
    from audit.judge.grading import judge_texts
    from audit.verdicts import load_verdict_file

    tmp, resp, items, _ = judged
    v1 = tmp / "v1.json"
    assert cli("grade", resp, "--items", items, "--benchmark", "hle", "--judge-calls", tmp / "calls", "-o",
               v1).code == 0
    vf = load_verdict_file(v1)
    assert vf.judge is not None
    texts = judge_texts(tmp / "calls", vf.judge.calls_package, {f"q{i}" for i in range(6)})
    # each of the 5 replies, its extracted answer and its reasoning (the cut q5 was still judged: 6 calls)
    assert {t.what.split(":")[0] for t in texts} == {"judge reply (sample 0, repeat 0)"}
    assert len(texts) == 6 * 3
    r = cli("release", v1, "--items", items, "--responses", resp, "-o", tmp / "rel")
    assert r.code == 0, r.err
    published = "".join(p.read_text(errors="replace") for p in (tmp / "rel").rglob("*") if p.is_file())
    assert "fake judge" not in published and "[correct_answer]" not in published
    # a calls package is no verdict file: it cannot be released
    r = cli("release", tmp / "calls", "-o", tmp / "rel2")
    assert r.code == 2 and not (tmp / "rel2").exists()


def test_repeats_print_the_flip_rate_per_item_and_judges_lists_the_components(tmp_path: Path, cli) -> None:
    resp, items = _packages(tmp_path)
    with FakeJudge() as fj:
        r = cli("judge", resp, "--items", items, "--judge", "hle.official", "--server", fj.url, "--judge-model",
                "fake-flaky", "--repeats", "3", "--seed", "1", "-o", tmp_path / "calls")
    assert r.code == 0, r.err
    assert "18 calls (18 made now" in r.out and "flip rate: " in r.out and "items that flipped (" in r.out
    s = cli("show", tmp_path / "calls")
    assert "flip rate  " in s.out and "responses judged more than once changed verdict" in s.out
    j = cli("judges")
    assert j.code == 0
    assert [line.split()[1] for line in j.out.splitlines()] == [
        "hle.official@a590489", "simple_evals.equality@ee3b031", "inspect.model_graded_qa@499e615",
        "inspect.model_graded_fact@499e615", "hle.substring@a590489", "hle.strict@1", "simple_evals.yes@ee3b031",
        "inspect.grade@3ce8aed", "inspect.grade@499e615", "alpaca_eval.logprob@cd543a1", "arena_hard.verdict@4ce0f00",
        "arena_hard.verdict@196f6b8"]
    # --judge options without --judge, and --judge without a server, are usage errors
    assert cli("judge", tmp_path / "x.jsonl", "--grader", "choice", "--repeats", "2").code == 2
    assert "--judge needs --server URL and -o CALLS" in cli("judge", resp, "--judge", "hle.official").err


def test_equality_checker_compares_the_extracted_answer(tmp_path: Path, cli) -> None:
    resp, items = _packages(tmp_path)
    with FakeJudge() as fj:
        r = cli("judge", resp, "--items", items, "--judge", "simple_evals.equality", "--server", fj.url,
                "--judge-model", "fake-judge", "--extractor", "hle.exact_answer", "-o", tmp_path / "calls")
        sent = fj.requests
    assert r.code == 0, r.err
    assert all(b["temperature"] == 0.5 and b["max_tokens"] == 1024 for b in sent)
    rows = [json.loads(x) for x in (tmp_path / "calls" / "calls.jsonl").read_text().splitlines()]
    by = {x["item_id"]: x for x in rows}
    assert by["q0"]["messages"][0]["content"].endswith("Expression 1: 10\n    Expression 2: 10")
    assert (by["q0"]["status"], by["q3"]["status"]) == ("correct", "incorrect")
    assert by["q0"]["raw"] == "Yes" and by["q0"]["rule"]["name"] == "simple_evals.yes"


def test_the_judge_served_is_recorded_as_the_subject_whole_or_not_at_all(tmp_path: Path, cli) -> None:
    resp, items = _packages(tmp_path)
    config = tmp_path / "config.json"
    config.write_text('{"architectures": ["LlamaForCausalLM"]}\n')
    subject = ["--model-name", "meta-llama/Llama-3.1-8B-Instruct", "--model-config", config, "--engine",
               "vllm==0.26.0", "--hardware", "NVIDIA H100 80GB HBM3", "--weights", "random", "--run", "h100-judge"]
    with FakeJudge() as fj:
        part = cli("judge", resp, "--items", items, "--judge", "hle.official", "--server", fj.url,
                   "--judge-model", "fake-judge", "--run", "h100-judge", "-o", tmp_path / "part")
        whole = cli("judge", resp, "--items", items, "--judge", "hle.official", "--server", fj.url,
                    "--judge-model", "fake-judge", *subject, "-o", tmp_path / "calls")
    assert part.code == 2 and not (tmp_path / "part").exists()
    assert part.err.startswith("audit: error: judge-calls package names part of what it measured: give "
                               "--model-name OWNER/NAME, --model-config CONFIG.json, --engine NAME==VERSION")
    assert whole.code == 0, whole.err
    manifest = json.loads((tmp_path / "calls" / "manifest.json").read_text())
    assert manifest["provenance"]["subject"] == {
        "model": "meta-llama/Llama-3.1-8B-Instruct", "model_config_sha256": hashlib.sha256(config.read_bytes()).hexdigest(),
        "engine": "vllm", "engine_version": "0.26.0", "hardware": "NVIDIA H100 80GB HBM3", "weights": "random",
        "run": "h100-judge"}
    assert manifest["provenance"]["engine"] == "vllm==0.26.0"
    # subject flags without --judge are a usage error naming the flag
    r = cli("judge", tmp_path / "x.jsonl", "--grader", "choice", "--run", "r1")
    assert r.code == 2 and "--run needs --judge TEMPLATE" in r.err


def test_an_error_event_without_a_message_is_recorded_as_sent(tmp_path: Path, cli) -> None:
    resp, items = _packages(tmp_path)
    with FakeJudge() as fj:
        r = cli("judge", resp, "--items", items, "--judge", "hle.official", "--server", fj.url, "--judge-model",
                "fake-stream-error", "--retries", "0", "-o", tmp_path / "calls")
    assert r.code == 0, r.err
    assert "judge_error=6" in r.out and "6 calls failed" in r.out
    rows = [json.loads(x) for x in (tmp_path / "calls" / "calls.jsonl").read_text().splitlines()]
    assert {x["error"] for x in rows} == {'POST /v1/chat/completions: error in stream: {"error": {"code": 400, '
                                         '"message": "", "type": "BadRequestError"}}'}


def test_the_error_event_text_is_one_rule_for_every_stream_reader() -> None:
    from audit.bench import client as bench_client
    from audit.generate import openai_http

    assert bench_client.error_event_text is openai_http.error_event_text  # bench, generate and the judge
    assert openai_http.error_event_text({"error": {"message": "engine dead", "code": 500}}) == "engine dead"
    assert openai_http.error_event_text({"error": "plain"}) == "plain"
    assert openai_http.error_event_text({"error": {"message": "", "code": 400}}) == \
        '{"error": {"code": 400, "message": ""}}'
