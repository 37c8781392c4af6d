"""The judge run against the local fake judge: recording, resume, repeats and every failure a judge server has."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from audit.errors import AuditError
from audit.generate.openai_http import OpenAIServer
from audit.judge import figures, rules, templates
from audit.judge.run import JudgeRunConfig, plan_calls, read_call_journal, run_calls
from audit.models import ItemRow, ResponseRow
from tests.judge_server import FakeJudge

ITEMS = {f"q{i}": ItemRow(item_id=f"q{i}", reference=str(i), question=f"What is {i} + 0?", protected=True)
         for i in range(6)}
RESPONSES = [ResponseRow(item_id=f"q{i}", response=f"Explanation: easy.\nExact Answer: {i if i % 2 else i + 1}")
             for i in range(6)] + [ResponseRow(item_id="q5", sample=1, response=None, error="server down")]


def _run(tmp: Path, url: str, model: str = "fake-judge", *, repeats: int = 1, seed: int | None = None,
         deadline: float | None = 30, rule: str = "hle.substring@a590489"):
    t, r = templates.get("hle.official"), rules.get(rule)
    cfg = JudgeRunConfig(template=t.key, rule=r.key, model=model, repeats=repeats, seed=seed)
    tasks = plan_calls(RESPONSES, ITEMS, t, cfg)
    server = OpenAIServer(url, timeout=5, deadline=deadline)
    return run_calls(tmp / "calls.work", cfg, tasks, t, r, server, concurrency=3, retries=1)


def test_deterministic_judge_is_recorded_call_by_call(tmp_path: Path) -> None:
    with FakeJudge(served_as="fake-judge-2025-01") as fj:
        out = _run(tmp_path, fj.url)
        sent = fj.requests
    assert out.called == 6 and out.kept == 0  # the row without a response is not judged
    by_item = {r.item_id: r for r in out.rows}
    assert [by_item[f"q{i}"].status for i in range(6)] == ["incorrect", "correct"] * 3
    row = by_item["q1"]
    assert row.model_requested == "fake-judge" and row.model_served == "fake-judge-2025-01"
    assert row.model_revision == "fake/judge-rev1"
    assert row.raw is not None and json.loads(row.raw)["correct"] == "yes"
    assert row.parsed == {"extracted_final_answer": "1", "reasoning": "fake judge", "correct": "yes",
                          "confidence": 90}
    assert row.max_tokens == 4096 and row.temperature is None and row.seed is None and row.protected
    assert row.messages is not None and "[correct_answer]: 1" in row.messages[0].content
    # what was sent is what the row says was sent
    assert all(b["response_format"]["json_schema"]["name"] == "ExtractedAnswer" for b in sent)
    assert all(b["stream"] is True and "temperature" not in b for b in sent)


def test_resume_keeps_journaled_calls_and_retries_failed_ones(tmp_path: Path) -> None:
    with FakeJudge() as fj:
        first = _run(tmp_path, fj.url, "fake-error")
    assert {r.status for r in first.rows} == {"judge_error"}
    assert all(r.error and "HTTP 500" in r.error and r.retries == 1 for r in first.rows)
    with pytest.raises(AuditError, match="another configuration \\(model differs\\)"):
        _run(tmp_path, "http://127.0.0.1:9", "fake-judge")
    journal = tmp_path / "calls.work" / "calls.jsonl"
    with journal.open("ab") as f:
        f.write(b'{"item_id": "q0", "sam')  # torn by a kill mid-write
    assert len(read_call_journal(journal)) == 6


def test_resume_makes_the_failed_calls_again(tmp_path: Path) -> None:
    down = _run(tmp_path, "http://127.0.0.1:9")  # nothing listens: connection refused
    assert down.called == 6 and all(r.status == "judge_error" and r.retries == 1 for r in down.rows)
    with FakeJudge() as fj:
        back = _run(tmp_path, fj.url)
        assert back.called == 6 and len(fj.requests) == 6
    assert [r.status for r in back.rows] == ["incorrect", "correct"] * 3


def test_resume_after_success_makes_no_call(tmp_path: Path) -> None:
    with FakeJudge() as fj:
        _run(tmp_path, fj.url)
        again = _run(tmp_path, fj.url)
        assert again.called == 0 and again.kept == 6 and len(fj.requests) == 6


@pytest.mark.parametrize(("model", "reason"), [
    ("fake-offschema", "not ExtractedAnswer: reply: json_invalid"),
    ("fake-truncated", "not ExtractedAnswer: reply: json_invalid"),
])
def test_replies_that_do_not_parse_are_judge_errors_with_the_raw_text_kept(tmp_path: Path, model: str,
                                                                            reason: str) -> None:
    with FakeJudge() as fj:
        out = _run(tmp_path, fj.url, model)
    assert {(r.status, r.reason) for r in out.rows} == {("judge_error", reason)}
    assert all(r.raw is not None and r.error is None for r in out.rows)
    if model == "fake-truncated":
        assert {r.finish_reason for r in out.rows} == {"length"}


def test_slow_judge_is_cut_at_the_deadline(tmp_path: Path) -> None:
    with FakeJudge() as fj:
        out = _run(tmp_path, fj.url, "fake-slow", deadline=1.5)
    assert {r.status for r in out.rows} == {"judge_error"}
    assert all(r.error and "no complete reply within 1.5 s" in r.error and r.raw is None for r in out.rows)


def test_a_judge_stream_without_tokens_is_cut_at_the_progress_deadline(tmp_path: Path) -> None:
    """Comment lines and empty chunks are no progress: the one stream reader (`read_stream`, generate's too) cuts
    the call when no text came for the server's timeout (here 1 s), long before the 30 s request deadline."""
    t, r = templates.get("hle.official"), rules.get("hle.substring@a590489")
    cfg = JudgeRunConfig(template=t.key, rule=r.key, model="fake-keepalive", repeats=1, seed=None)
    tasks = plan_calls(RESPONSES[:2], ITEMS, t, cfg)
    with FakeJudge() as fj:
        t0 = time.monotonic()
        out = run_calls(tmp_path / "calls.work", cfg, tasks, t, r, OpenAIServer(fj.url, timeout=1, deadline=30),
                        concurrency=2, retries=0)
        wall = time.monotonic() - t0
    assert {row.status for row in out.rows} == {"judge_error"} and wall < 10
    assert all(row.error and row.error.startswith("stalled: POST /v1/chat/completions: no token for ") and
               "progress deadline 1 s" in row.error and row.raw is None for row in out.rows)


def test_repeats_with_seeds_measure_the_flip_rate(tmp_path: Path) -> None:
    with FakeJudge() as fj:
        out = _run(tmp_path, fj.url, "fake-flaky", repeats=3, seed=7)
    assert len(out.rows) == 18 and {r.seed for r in out.rows} == {7, 8, 9}
    fr = figures.flip_rates((r.item_id, r.sample, r.attempt, r.status) for r in out.rows)
    assert fr.compared == 6 and 0 < fr.flipped <= 6
    with FakeJudge() as fj:
        steady = _run(tmp_path / "b", fj.url, "fake-judge", repeats=3, seed=7)
    assert figures.flip_rates((r.item_id, r.sample, r.attempt, r.status) for r in steady.rows).flipped == 0
