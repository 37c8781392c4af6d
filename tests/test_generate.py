"""`audit generate` against the fake vLLM server (tests/fake_openai_server.py): no GPU needed.

Items come from the real MATH-500 and MMLU-Pro files in ../shared/data.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.errors import AuditError
from audit.fileio import dumps
from audit.generate import pool
from audit.generate.config import Sampling
from audit.generate.journal import read_journal
from audit.generate.model_info import apply_model_defaults
from audit.generate.progress import Progress
from audit.generate.vllm_server import KEPT_LOG_BYTES
from audit.models import ItemRow, ResponseRow
from audit.pack import SourceRow, Table, build_package
from audit.packages import open_package
from audit.prompts import chat_messages
from audit.specs import lookup
from tests.attacks import attack
from tests.conftest import REPO, shared_path
from tests.fake_openai_server import FakeOpenAIServer, chat_template, count_tokens

FAKE = str(REPO / "tests" / "fake_openai_server.py")
AUDIT = [sys.executable, "-c", "import sys; from audit.cli import main; sys.exit(main(sys.argv[1:]))"]
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
                 "frequency_penalty", "min_tokens", "stop", "seed", "n")

pytestmark = pytest.mark.shared_data


# --------------------------------------------------------------------------- items


def _math_items(n: int) -> list[dict]:
    out = []
    with open(shared_path("math500/test.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            out.append({"item_id": r["unique_id"], "reference": r["answer"], "question": r["problem"],
                        "subject": r["subject"]})
            if len(out) == n:
                break
    return out


def _mmlu_items(n: int) -> list[dict]:
    out = []
    with open(shared_path("mmlu_pro/mmlu_pro_test_questions.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            out.append({"item_id": str(r["question_id"]), "reference": r["answer"], "choices": r["options"],
                        "subject": r["category"], "question": r["question"]})
            if len(out) == n:
                break
    return out


def items_package(path: Path, rows: list[dict], benchmark: str) -> Path:
    src = [SourceRow("test", i + 1, r) for i, r in enumerate(rows)]
    build_package(path, kind="items", benchmark=benchmark, tables=[Table("items.jsonl", "item_row.v1", src)])
    return path


@pytest.fixture(scope="module")
def math_items(tmp_path_factory) -> Path:
    return items_package(tmp_path_factory.mktemp("items") / "math", _math_items(4), "math500")


@pytest.fixture(scope="module")
def mmlu_items(tmp_path_factory) -> Path:
    return items_package(tmp_path_factory.mktemp("items") / "mmlu", _mmlu_items(12), "mmlu_pro")


def rows_of(pkg_path: Path) -> list[ResponseRow]:
    with open_package(pkg_path, kind="responses") as pkg:
        return list(pkg.iter_rows("response_row.v1"))


def manifest_of(pkg_path: Path):
    with open_package(pkg_path) as pkg:
        return pkg.manifest


def base_args(items: Path, out: Path, *extra: str, benchmark: str = "math500") -> list[str]:
    return ["generate", "--benchmark", benchmark, "--items", str(items), "--model", "fake-model", "-o", str(out),
            "--max-tokens", "40", "--temperature", "0.7", "--retry-backoff", "0", *extra]


# --------------------------------------------------------------------------- a whole run


def test_chat_run_records_what_was_sent_and_what_came_back(cli, tmp_path, math_items):
    log = tmp_path / "server.log"
    with FakeOpenAIServer(max_model_len=300, log_path=str(log)) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--server-log", str(log),
                           "--samples", "2", "--seed", "100"))
        bodies = srv.state.generate_requests
    assert r.code == 0, r.err
    assert r.out.startswith(f"wrote {tmp_path / 'out'}: responses package responses-math500-")
    rows = rows_of(tmp_path / "out")
    assert len(rows) == 8 == len(bodies)
    assert not (tmp_path / "out.work").exists()
    template = lookup("prompt template", "math.boxed")
    items = {it["item_id"]: ItemRow.model_validate(it) for it in _math_items(4)}
    assert [r.item_id for r in rows[::2]] == list(items)
    for row in rows:
        text = template.render(items[row.item_id])
        messages = chat_messages(text)
        assert row.prompt_sha256 == hashlib.sha256(dumps(messages).encode()).hexdigest()
        n_prompt = count_tokens(chat_template(messages))
        assert row.prompt_tokens == n_prompt
        assert row.max_tokens == min(40, 300 - n_prompt)
        assert row.seed == 100 + row.sample and row.attempt == 0
        assert row.finish_reason in ("stop", "length")
        if row.finish_reason == "length":
            assert row.completion_tokens == row.max_tokens
        assert row.started_at <= row.finished_at
        if row.response:
            assert 0 <= row.first_token_s <= row.finished_at - row.started_at
        assert row.excluded is None and row.error is None
        assert row.extra["request_id"].endswith(f"-s{row.sample}-a0-t0")
    for body in bodies:
        assert all(k in body for k in SAMPLING_KEYS), body.keys()
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        assert body["temperature"] == 0.7 and body["top_p"] == 1.0 and body["top_k"] == 0
        assert "max_completion_tokens" in body and "max_tokens" not in body
    m = manifest_of(tmp_path / "out")
    assert m.kind == "responses" and m.benchmark == "math500"
    assert m.provenance.engine == "vllm" and m.provenance.engine_version == "0.26.0-fake"
    assert m.provenance.sampling["temperature"] == 0.7 and m.provenance.sampling["max_tokens_cap"] == 40
    assert m.provenance.extra["prompt"]["template"] == "math.boxed@1"
    assert m.provenance.extra["context_window"] == 300
    assert m.provenance.extra["sampling_check"]["method"] == "server log"
    assert m.provenance.extra["sampling_check"]["requests_verified"] == 8
    assert {f.path for f in m.files} == {"responses.jsonl", "items.jsonl"}
    assert "attempt 0: 8/8 rows" in r.err  # the plain progress line (stderr is not a terminal here)


def test_completion_mode_hashes_the_prompt_text(cli, tmp_path, math_items):
    with FakeOpenAIServer(max_model_len=300, dev_mode=True) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--mode", "completion", "--limit", "2"))
        bodies = srv.state.generate_requests
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    assert len(rows) == 2
    for row, body in zip(rows, bodies, strict=True):
        assert row.prompt_sha256 == hashlib.sha256(body["prompt"].encode()).hexdigest()
        assert row.prompt_tokens == count_tokens(body["prompt"]) + 1  # the BOS the server adds
        assert body["max_tokens"] == row.max_tokens and "max_completion_tokens" not in body
    m = manifest_of(tmp_path / "out")
    assert m.provenance.extra["sampling_check"]["method"] == "replies only"
    server = m.provenance.extra["sessions"][0]["servers"][0]
    assert server["server_config"]["generation_config"] == "auto"  # recorded from /server_info (dev mode)
    assert m.provenance.sampling["mode"] == "completion"


def test_items_that_do_not_fit_are_excluded_with_their_token_count(cli, tmp_path, mmlu_items):
    with FakeOpenAIServer(max_model_len=150) as srv:
        r = cli(*base_args(mmlu_items, tmp_path / "out", "--server", srv.url, "--samples", "2",
                           "--max-tokens", "100000", benchmark="mmlu_pro"))
        sent = [b["messages"][0]["content"] for b in srv.state.generate_requests]
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    assert len(rows) == 24
    excluded = [r for r in rows if r.excluded]
    kept = [r for r in rows if not r.excluded]
    assert excluded and kept
    for row in excluded:
        assert row.response is None and row.prompt_tokens >= 150
        assert row.excluded == (f"prompt does not fit the context window: {row.prompt_tokens} prompt tokens, "
                                "window 150")
        assert not any(f"Question: {_mmlu_question(row.item_id)}" in s for s in sent)
    for row in kept:
        # The budget fills the window exactly: the fake rejects one token more, like vLLM.
        assert row.max_tokens == 150 - row.prompt_tokens and row.error is None
    assert len(sent) == len(kept)
    assert {(r.item_id, r.sample) for r in excluded} == {(r.item_id, s) for r in excluded for s in (0, 1)}


def _mmlu_question(item_id: str) -> str:
    return next(r["question"] for r in _mmlu_items(12) if r["item_id"] == item_id)


def test_mmlu_pro_prompt_is_sent_as_one_user_message(cli, tmp_path, mmlu_items):
    with FakeOpenAIServer(max_model_len=400) as srv:
        r = cli(*base_args(mmlu_items, tmp_path / "out", "--server", srv.url, "--limit", "1", benchmark="mmlu_pro"))
        body = srv.state.generate_requests[0]
    assert r.code == 0, r.err
    assert body["messages"] == [{"role": "user", "content": lookup("prompt template", "mmlu_pro.cot").render(
        ItemRow.model_validate(_mmlu_items(1)[0]))}]
    assert body["messages"][0]["content"].startswith(
        "The following are multiple choice questions (with answers) about business. Think step by step")


def test_truncated_responses_are_resampled_with_the_larger_budget(cli, tmp_path, math_items):
    with FakeOpenAIServer(max_model_len=300, stop_prob=0.03) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--samples", "2",
                           "--max-tokens", "8", "--resample-truncated", "2", "--resample-budget", "30"))
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    by_key = {(r.item_id, r.sample, r.attempt): r for r in rows}
    first = [r for r in rows if r.attempt == 0]
    assert len(first) == 8
    assert any(r.finish_reason == "length" for r in first)
    for row in rows:
        prev = by_key.get((row.item_id, row.sample, row.attempt - 1))
        if row.attempt:
            assert prev is not None and prev.finish_reason == "length"  # re-run only what was cut
            assert row.max_tokens == min(30, 300 - row.prompt_tokens)
        nxt = by_key.get((row.item_id, row.sample, row.attempt + 1))
        if row.finish_reason == "length" and row.attempt < 2:
            assert nxt is not None  # every cut response got its re-run
        elif row.finish_reason != "length":
            assert nxt is None
        assert row.seed == row.attempt * 2 + row.sample
    seeds = {(r.item_id, r.seed) for r in rows}
    assert len(seeds) == len(rows)
    assert "re-sample (attempt 1)" in r.err
    assert manifest_of(tmp_path / "out").provenance.sampling["resample_budget"] == 30


def test_a_responses_package_with_item_rows_serves_as_items(cli, tmp_path, math_items):
    with FakeOpenAIServer(max_model_len=300) as srv:
        assert cli(*base_args(math_items, tmp_path / "first", "--server", srv.url, "--limit", "2")).code == 0
        r = cli(*base_args(tmp_path / "first", tmp_path / "second", "--server", srv.url))
    assert r.code == 0, r.err
    assert len(rows_of(tmp_path / "second")) == 2


# --------------------------------------------------------------------------- server faults


@pytest.mark.parametrize("kind, times, tries", [("500", 2, 3), ("drop", 1, 2), ("truncate", 1, 2),
                                                ("error_event", 1, 2)])
def test_transient_faults_are_retried(cli, tmp_path, math_items, kind, times, tries):
    item = _math_items(1)[0]
    with FakeOpenAIServer(max_model_len=300, stop_prob=0.02,
                          faults=[{"kind": kind, "match": item["question"][:40], "times": times}]) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--limit", "2"))
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    assert all(r.error is None and r.response is not None for r in rows)
    assert rows[0].extra["tries"] == tries and rows[0].extra["request_id"].endswith(f"-t{tries - 1}")
    assert "tries" not in rows[1].extra


@pytest.mark.parametrize("kind, message", [("badjson", "stream event is not JSON"),
                                           ("no_usage", "the stream carried no usage")])
def test_a_malformed_reply_is_an_error_on_its_row(cli, tmp_path, math_items, kind, message):
    item = _math_items(1)[0]
    with FakeOpenAIServer(max_model_len=300, stop_prob=0.02,
                          faults=[{"kind": kind, "match": item["question"][:40], "times": 99}]) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--limit", "2"))
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    assert rows[0].response is None and message in rows[0].error and rows[0].max_tokens is not None
    assert rows[1].error is None and rows[1].response is not None
    assert "errors 1" in r.out


def test_persistent_server_errors_end_in_an_error_row_after_bounded_retries(cli, tmp_path, math_items):
    item = _math_items(1)[0]
    with FakeOpenAIServer(max_model_len=300, faults=[{"kind": "500", "match": item["question"][:40],
                                                      "times": 99}]) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--limit", "2", "--retries", "2"))
        n_requests = len(srv.state.generate_requests)
    assert r.code == 0, r.err
    row = rows_of(tmp_path / "out")[0]
    assert row.error == "POST /v1/chat/completions: HTTP 500: injected server error (after 3 tries)"
    assert n_requests == 3 + 1


def test_servers_share_the_work_and_a_dead_one_hands_its_requests_over(cli, tmp_path, math_items):
    with FakeOpenAIServer(max_model_len=300) as a, FakeOpenAIServer(max_model_len=300) as b:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", a.url, "--server", b.url, "--samples", "2",
                           "--concurrency", "2"))
        assert r.code == 0, r.err
        assert a.state.generate_requests and b.state.generate_requests
        rows = rows_of(tmp_path / "out")
        assert {r.extra["server"] for r in rows} == {0, 1} and len(rows) == 8

        with FakeOpenAIServer(max_model_len=300) as c:
            dying = FakeOpenAIServer(max_model_len=300, faults=[{"kind": "die", "times": 1}]).start()
            r = cli(*base_args(math_items, tmp_path / "out2", "--server", c.url, "--server", dying.url,
                               "--samples", "2", "--retries", "1"))
            dying.httpd.server_close()
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out2")
    assert len(rows) == 8 and all(r.error is None for r in rows)
    assert {r.extra["server"] for r in rows} == {0}
    assert "stopped answering" in r.err and "its requests go to the other servers" in r.err


# --------------------------------------------------------------------------- refusals


def test_refuses_when_the_server_applied_other_sampling_parameters(cli, tmp_path, math_items):
    log = tmp_path / "server.log"
    with FakeOpenAIServer(max_model_len=300, log_path=str(log), apply={"top_p": 0.95}) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--server-log", str(log)))
    assert r.code == 2
    assert "the server applied other sampling parameters than were sent" in r.err
    assert "top_p: sent 1.0, applied 0.95" in r.err
    assert not (tmp_path / "out").exists()
    assert (tmp_path / "out.work" / "journal.jsonl").read_text() == ""


def test_refuses_a_server_side_output_ceiling(cli, tmp_path, math_items):
    with FakeOpenAIServer(max_model_len=300, max_tokens_cap=10, stop_prob=0.0) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url))
    assert r.code == 2
    assert "stopped for length after 10 tokens but max_tokens was 40" in r.err
    assert not (tmp_path / "out").exists()


def test_refuses_when_the_server_counts_the_prompt_differently(cli, tmp_path, math_items):
    with FakeOpenAIServer(max_model_len=300, prompt_tokens_delta=1) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url))
    assert r.code == 2 and "prompt tokens but /tokenize counted" in r.err


def test_refuses_when_the_log_does_not_show_the_request(cli, tmp_path, math_items, monkeypatch):
    monkeypatch.setattr(pool, "LOG_WAIT_S", 0.3)
    log = tmp_path / "server.log"
    with FakeOpenAIServer(max_model_len=300, log_path=str(log), log_requests=False) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--server-log", str(log)))
        assert r.code == 2 and "no 'Received request audit-" in r.err and "--no-log-check" in r.err
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--server-log", str(log),
                           "--no-log-check", "--force"))
    assert r.code == 0, r.err
    assert manifest_of(tmp_path / "out").provenance.extra["sampling_check"]["disabled"] == "--no-log-check"


@pytest.mark.parametrize("args, message", [
    (["--temperature", "0", "--top-p", "0.9"], "at temperature 0 vLLM resets top_p to 1.0"),
    (["--temperature", "0.005"], "would be raised to 0.01 by vLLM"),
    (["--seed", "-1"], "--seed must be >= 0"),
    (["--resample-truncated", "1"], "--resample-truncated needs --resample-budget larger than --max-tokens"),
])
def test_refuses_settings_vllm_would_change(cli, tmp_path, math_items, args, message):
    r = cli(*base_args(math_items, tmp_path / "out", "--server", "http://127.0.0.1:9", *args))
    assert r.code == 2 and message in r.err
    assert not (tmp_path / "out.work").exists()


def test_command_line_errors(cli, tmp_path, math_items):
    r = cli("generate", "--benchmark", "math500", "--items", str(math_items), "--model", "m", "-o",
            str(tmp_path / "o"), "--max-tokens", "8", "--server", "http://x")
    assert (r.code, r.err) == (2, "audit: error: give --temperature (or --use-model-defaults): nothing is left "
                                  "to server defaults\n")
    r = cli(*base_args(math_items, tmp_path / "o", "--server", "http://x", "--launch", "--enforce-eager"))
    assert (r.code, r.err) == (2, "audit: error: give --server or --launch, not both\n")
    r = cli(*base_args(math_items, tmp_path / "o", "--server", "http://x", benchmark="nope"))
    assert r.code == 2 and "no default prompt for benchmark 'nope'; give --prompt" in r.err
    r = cli("generate", "--resume", str(tmp_path / "nothing"))
    assert r.code == 2 and "no unfinished run to resume" in r.err


def test_use_model_defaults_sends_the_generation_config_values(cli, tmp_path, math_items):
    model = tmp_path / "model"
    model.mkdir()
    (model / "generation_config.json").write_text(json.dumps({"temperature": 0.6, "top_p": 0.95, "top_k": 20,
                                                              "eos_token_id": 2}))
    (model / "config.json").write_text("{}")
    with FakeOpenAIServer(model=str(model), max_model_len=300) as srv:
        r = cli("generate", "--benchmark", "math500", "--items", str(math_items), "--model", str(model), "-o",
                str(tmp_path / "out"), "--max-tokens", "8", "--use-model-defaults", "--top-k", "5",
                "--server", srv.url, "--limit", "1")
        body = srv.state.generate_requests[0]
        assert r.code == 0, r.err
        assert (body["temperature"], body["top_p"], body["top_k"]) == (0.6, 0.95, 5)
        m = manifest_of(tmp_path / "out")
        assert m.provenance.extra["generation_config"]["top_p"] == 0.95
        assert set(m.provenance.extra["model_files"]["sha256"]) == {"config.json", "generation_config.json"}

        r = cli("generate", "--benchmark", "math500", "--items", str(math_items), "--model", str(model), "-o",
                str(tmp_path / "out2"), "--max-tokens", "8", "--temperature", "0", "--server", srv.url, "--limit", "1")
    assert r.code == 0, r.err
    assert ("note: the model's generation_config.json has temperature=0.6, top_p=0.95, top_k=20; sending "
            "temperature=0.0, top_p=1.0, top_k=0 explicitly") in r.err


# --------------------------------------------------------------------------- crash safety


def test_journal_drops_a_torn_last_line_and_refuses_a_damaged_one(tmp_path):
    row = ResponseRow(item_id="a", response="x")
    p = tmp_path / "journal.jsonl"
    good = dumps(row.model_dump(mode="json")) + "\n"
    p.write_text(good + good.replace('"a"', '"b"') + '{"item_id": "c", "resp')
    assert [r.item_id for r in read_journal(p, repair=True)] == ["a", "b"]
    assert p.read_text() == good + good.replace('"a"', '"b"')
    p.write_text(good + "not json\n" + good)
    with pytest.raises(AuditError, match="row 2: unreadable journal line"):
        read_journal(p)


def _journal_rows(work: Path) -> int:
    p = work / "journal.jsonl"
    return p.read_bytes().count(b"\n") if p.exists() else 0


def _wait_for(cond, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_loses_and_repeats_nothing(cli, tmp_path, math_items):
    out, work = tmp_path / "out", tmp_path / "out.work"
    with FakeOpenAIServer(max_model_len=300, token_delay=0.004, stop_prob=0.0) as srv:
        proc = subprocess.Popen([*AUDIT, *base_args(math_items, out, "--server", srv.url, "--samples", "3",
                                                    "--concurrency", "2")],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            _wait_for(lambda: _journal_rows(work) >= 3 or proc.poll() is not None)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()
        before = read_journal(work / "journal.jsonl")
        assert 3 <= len(before) < 12 and not out.exists()
        r = cli("generate", "--resume", str(out), "--concurrency", "2")
        n_requests = len(srv.state.generate_requests)
    assert r.code == 0, r.err
    assert f"resuming with {len(before)} rows already done" in r.err
    rows = rows_of(out)
    keys = [(r.item_id, r.sample, r.attempt) for r in rows]
    assert len(keys) == len(set(keys)) == 12
    kept = {(r.item_id, r.sample, r.attempt): r for r in rows}
    for old in before:  # rows from before the kill are kept as they were, not redone
        assert kept[(old.item_id, old.sample, old.attempt)] == old
    assert n_requests <= 12 + 2  # at most the requests in flight at the kill were sent twice
    assert not work.exists()
    sessions = manifest_of(out).provenance.extra["sessions"]
    assert [s["index"] for s in sessions] == [0, 1]


def test_resume_keeps_the_recorded_settings(cli, tmp_path, math_items, monkeypatch):
    with FakeOpenAIServer(max_model_len=300, max_tokens_cap=10, stop_prob=0.0) as srv:
        assert cli(*base_args(math_items, tmp_path / "out", "--server", srv.url)).code == 2
    r = cli("generate", "--resume", str(tmp_path / "out"), "--temperature", "0.2")
    assert (r.code, r.err) == (2, "audit: error: --resume continues a run with its recorded settings; drop "
                                  "--temperature\n")
    r = cli(*base_args(math_items, tmp_path / "out", "--server", "http://127.0.0.1:9"))
    assert r.code == 2 and "an unfinished run is in" in r.err and "--resume" in r.err
    with FakeOpenAIServer(max_model_len=300) as srv:  # the server was fixed: continue on its new address
        r = cli("generate", "--resume", str(tmp_path / "out"), "--server", srv.url)
    assert r.code == 0, r.err
    assert len(rows_of(tmp_path / "out")) == 4
    r = cli("generate", "--resume", str(tmp_path / "out"))
    assert r.code == 2 and "is already finished" in r.err


def test_resume_refuses_a_different_server_setup(cli, tmp_path, math_items):
    with FakeOpenAIServer(max_model_len=300, max_tokens_cap=10, stop_prob=0.0) as srv:
        assert cli(*base_args(math_items, tmp_path / "out", "--server", srv.url)).code == 2
    with FakeOpenAIServer(max_model_len=400) as srv:
        r = cli("generate", "--resume", str(tmp_path / "out"), "--server", srv.url)
    assert r.code == 2 and "max_model_len 300 -> 400" in r.err


# --------------------------------------------------------------------------- launching the server


def _launch_args(items: Path, out: Path, model: Path, fake_config: dict | None = None, *extra: str) -> list[str]:
    launch = "--max-model-len 300 --gpu-memory-utilization 0.2"
    if fake_config:
        launch += f" --fake-config '{json.dumps(fake_config)}'"
    return ["generate", "--benchmark", "math500", "--items", str(items), "--model", str(model), "-o", str(out),
            "--max-tokens", "40", "--temperature", "0.7", "--retry-backoff", "0", "--launch", launch,
            "--launch-program", f"{{python}} {FAKE}", "--launch-timeout", "30", *extra]


@pytest.fixture
def model_dir(tmp_path) -> Path:
    model = tmp_path / "tiny-model"
    model.mkdir()
    (model / "config.json").write_text('{"max_position_embeddings": 2048}')
    (model / "generation_config.json").write_text('{"bos_token_id": 0, "eos_token_id": 1, "temperature": 0.9}')
    return model


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_launch_starts_checks_and_stops_the_server(cli, tmp_path, math_items, model_dir):
    r = cli(*_launch_args(math_items, tmp_path / "out", model_dir, None, "--samples", "2"))
    assert r.code == 0, r.err
    assert "starting the server:" in r.err and "server ready at http://127.0.0.1:" in r.err
    m = manifest_of(tmp_path / "out")
    assert {f.path for f in m.files} == {"responses.jsonl", "items.jsonl", "logs/server-0.log"}
    session = m.provenance.extra["sessions"][0]
    assert session["launch"]["exit_code"] == 0  # SIGINT: a clean shutdown
    assert "--enable-log-requests" in session["launch"]["command"]
    assert not _alive(session["launch"]["pid"])
    assert session["server_default_sampling"]["defaults"] == {"temperature": 0.9}
    assert m.provenance.extra["sampling_check"] == {
        "method": "server log", "requests_verified": 8,
        "detail": "every kept row's `Received request ... SamplingParams(...)` line in the server log matched what "
                  "was sent"}
    assert m.provenance.engine_version == "0.26.0-fake"
    assert m.provenance.extra["generation_config"]["temperature"] == 0.9
    log = (tmp_path / "out" / "logs" / "server-0.log").read_text()
    assert log.count("Received request chatcmpl-audit-") == 8 and "Shutting down" in log


def test_a_launched_server_that_dies_is_reported_with_its_log_then_resumed(cli, tmp_path, math_items, model_dir):
    once = tmp_path / "died-once"
    item = _math_items(4)[2]
    fake = {"faults": [{"kind": "die", "match": item["question"][:40], "once_file": str(once)}]}
    r = cli(*_launch_args(math_items, tmp_path / "out", model_dir, fake))
    assert r.code == 2
    assert "the server exited with code 3; last lines of" in r.err
    assert "EngineCore died unexpectedly (injected)" in r.err
    assert len(read_journal(tmp_path / "out.work" / "journal.jsonl")) == 2
    r = cli("generate", "--resume", str(tmp_path / "out"))
    assert r.code == 0, r.err
    m = manifest_of(tmp_path / "out")
    assert {f.path for f in m.files} >= {"logs/server-0.log", "logs/server-1.log"}
    assert [s["launch"]["exit_code"] for s in m.provenance.extra["sessions"]] == [3, 0]
    assert len(rows_of(tmp_path / "out")) == 4


@pytest.mark.slow
def test_ctrl_c_stops_the_launched_server_and_the_run_resumes(cli, tmp_path, math_items, model_dir):
    out, work = tmp_path / "out", tmp_path / "out.work"
    fake = {"token_delay": 0.003, "stop_prob": 0.0}
    proc = subprocess.Popen([*AUDIT, *_launch_args(math_items, out, model_dir, fake, "--samples", "3")], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: _journal_rows(work) >= 2 or proc.poll() is not None)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    err = err.decode()
    assert "interrupted;" in err and f"audit generate --resume {out}" in err
    state = json.loads((work / "run.json").read_text())
    assert state["sessions"][0]["launch"]["exit_code"] == 0
    assert not _alive(state["sessions"][0]["launch"]["pid"])
    r = cli("generate", "--resume", str(out))
    assert r.code == 0, r.err
    assert len(rows_of(out)) == 12


def test_a_run_started_with_sigint_ignored_stops_its_server_cleanly(tmp_path, math_items, model_dir):
    # Issue 33: as a background job of a script (`bash -c 'audit generate --launch ... &'`) or nohup starts it,
    # audit and so the server it launched inherited SIGINT ignored: the server never saw audit's SIGINT, was
    # SIGTERMed after 30 s and recorded exit -15.
    from tests.test_procs import ignoring_sigint

    out = tmp_path / "out"
    r = subprocess.run(ignoring_sigint([*AUDIT, *_launch_args(math_items, out, model_dir, None, "--samples", "2")]),
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    session = manifest_of(out).provenance.extra["sessions"][0]
    assert session["launch"]["exit_code"] == 0  # SIGINT: a clean shutdown
    assert "Shutting down" in (out / "logs" / "server-0.log").read_text()


def test_kill_int_stops_a_run_started_with_sigint_ignored_and_it_resumes(cli, tmp_path, math_items, model_dir):
    # audit's own Ctrl-C path does not rest on the inherited disposition: `kill -INT` still stops the run.
    from tests.test_procs import ignoring_sigint

    out, work = tmp_path / "out", tmp_path / "out.work"
    fake = {"token_delay": 0.003, "stop_prob": 0.0}
    argv = ignoring_sigint([*AUDIT, *_launch_args(math_items, out, model_dir, fake, "--samples", "3")])
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: _journal_rows(work) >= 2 or proc.poll() is not None)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    state = json.loads((work / "run.json").read_text())
    assert state["sessions"][0]["launch"]["exit_code"] == 0
    assert not _alive(state["sessions"][0]["launch"]["pid"])
    r = cli("generate", "--resume", str(out))
    assert r.code == 0, r.err
    assert len(rows_of(out)) == 12


@pytest.mark.slow
def test_sigterm_stops_the_run_like_ctrl_c(tmp_path, math_items):
    out, work = tmp_path / "out", tmp_path / "out.work"
    with FakeOpenAIServer(max_model_len=300, token_delay=0.004, stop_prob=0.0) as srv:
        proc = subprocess.Popen([*AUDIT, *base_args(math_items, out, "--server", srv.url, "--samples", "3")],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            _wait_for(lambda: _journal_rows(work) >= 2 or proc.poll() is not None)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err.decode()
    assert "interrupted;" in err.decode() and not out.exists()
    assert 2 <= len(read_journal(work / "journal.jsonl")) < 12


def test_a_server_that_does_not_answer_is_named(cli, tmp_path, math_items):
    r = cli(*base_args(math_items, tmp_path / "out", "--server", "http://127.0.0.1:9"))
    assert r.code == 2
    assert "audit: error: http://127.0.0.1:9/health does not answer 200" in r.err
    assert not (tmp_path / "out").exists()


def test_progress_bar_on_a_terminal():
    import io

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    p = Progress("attempt 0", 4, stream=stream)
    for _ in range(4):
        p.update(tokens=10)
    p.close()
    text = stream.getvalue()
    assert text.startswith("\rattempt 0 [") and "4/4 rows" in text and "tok/s" in text and text.endswith("\n")
    assert "[" + "#" * 24 + "]" in text


# --------------------------------------------------------------------------- hostile streams (issue 19)


@attack("gen.endless-stream")
@pytest.mark.parametrize("fault, spec, timeout, message", [
    ("endless", {}, "30", "cut: POST /v1/chat/completions: the stream carried more than 40 chunks of text, "
                          "over max_tokens 40"),
    ("endless_empty", {}, "2", "cut: POST /v1/chat/completions: no complete reply within 2 s (the request timeout)"),
])
@pytest.mark.slow
def test_an_endless_stream_is_cut_and_the_run_goes_on(cli, tmp_path, math_items, fault, spec, timeout, message):
    item = _math_items(1)[0]
    with FakeOpenAIServer(max_model_len=300, stop_prob=0.02,
                          faults=[{"kind": fault, "match": item["question"][:40], "times": 99, "seconds": 20,
                                   **spec}]) as srv:
        t = time.monotonic()
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--limit", "2",
                           "--request-timeout", timeout))
        wall = time.monotonic() - t
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    assert rows[0].response is None and rows[0].error == message
    assert rows[1].error is None and rows[1].response is not None
    assert wall < 10  # the stream goes on for 20 s


@pytest.mark.slow
@attack("gen.drip")
def test_a_one_byte_at_a_time_stream_is_cut_at_the_request_timeout(cli, tmp_path, math_items):
    item = _math_items(1)[0]
    with FakeOpenAIServer(max_model_len=300, stop_prob=0.02,
                          faults=[{"kind": "drip", "match": item["question"][:40], "times": 99, "seconds": 20,
                                   "interval": 0.05}]) as srv:
        t = time.monotonic()
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--limit", "2",
                           "--request-timeout", "2"))
        wall = time.monotonic() - t
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    assert rows[0].error == "cut: POST /v1/chat/completions: no complete reply within 2 s (the request timeout)"
    assert rows[1].error is None
    assert wall < 10


@attack("gen.huge-line")
def test_a_huge_stream_line_is_cut_at_the_line_limit(cli, tmp_path, math_items):
    item = _math_items(1)[0]
    with FakeOpenAIServer(max_model_len=300, stop_prob=0.02,
                          faults=[{"kind": "huge_line", "match": item["question"][:40], "times": 99, "seconds": 20,
                                   "bytes": 64 << 20}]) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--limit", "2"))
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    assert rows[0].error == "cut: POST /v1/chat/completions: a stream line is over the 8,388,608-byte limit"
    assert rows[1].error is None


@attack("gen.huge-reply")
def test_a_stream_and_a_reply_are_cut_at_their_byte_limits():
    from audit.generate.openai_http import Cut, OpenAIServer

    with FakeOpenAIServer(max_model_len=300, stop_prob=0.0,
                          faults=[{"kind": "endless_empty", "times": 1, "seconds": 20}]) as srv:
        client = OpenAIServer(srv.url, timeout=5, deadline=30, max_reply_bytes=1 << 20)
        body = {"model": "fake-model", "prompt": "hi", "max_tokens": 5, "stream": True,
                "stream_options": {"include_usage": True}}
        with pytest.raises(Cut, match="^cut: POST /v1/completions: the stream is over the 1,048,576-byte limit$"):
            client.generate("/v1/completions", body, chat=False)
        client = OpenAIServer(srv.url, timeout=5, deadline=30, max_reply_bytes=100)
        with pytest.raises(Cut, match="^cut: GET /v1/models: reply is over the 100-byte limit$"):
            client.models()


@attack("gen.lying-usage")
def test_usage_counting_fewer_tokens_than_the_stream_carried_is_an_error(cli, tmp_path, math_items):
    item = _math_items(1)[0]
    with FakeOpenAIServer(max_model_len=300, stop_prob=0.0,
                          faults=[{"kind": "lying_usage", "match": item["question"][:40], "times": 99,
                                   "completion_tokens": 3}]) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--limit", "2"))
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    assert rows[0].error == ("POST /v1/chat/completions: usage.completion_tokens is 3, fewer than the 40 chunks of "
                             "text the stream carried")
    assert rows[1].error is None


@pytest.mark.slow
@attack("gen.drip")
def test_headers_sent_one_byte_at_a_time_are_cut_at_the_deadline():
    import socket
    import threading

    from audit.generate.openai_http import Cut, OpenAIServer

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not stop.wait(0.05):
                try:
                    conn.sendall(b"x")
                except OSError:
                    return

    threading.Thread(target=drip, daemon=True).start()
    client = OpenAIServer(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=30, deadline=1)
    t = time.monotonic()
    try:
        with pytest.raises(Cut, match=r"^cut: GET /v1/models: no complete reply within 1 s \(the request timeout\)$"):
            client.models()
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - t < 3


@attack("gen.at-budget")
def test_a_stop_at_exactly_max_tokens_is_recorded_as_at_budget(cli, tmp_path, math_items):
    item = _math_items(1)[0]
    with FakeOpenAIServer(max_model_len=300, stop_prob=0.0,
                          faults=[{"kind": "at_budget", "match": item["question"][:40], "times": 99}]) as srv:
        r = cli(*base_args(math_items, tmp_path / "out", "--server", srv.url, "--limit", "2"))
    assert r.code == 0, r.err
    rows = rows_of(tmp_path / "out")
    assert (rows[0].finish_reason, rows[0].completion_tokens, rows[0].max_tokens, rows[0].at_budget) == \
        ("stop", 40, 40, True)
    assert (rows[1].finish_reason, rows[1].at_budget) == ("length", None)


# --------------------------------------------------------------------------- non-ASCII digits (issue 19)


@attack("fmt.unicode-digits-generate")
@pytest.mark.parametrize("option, value, kind", [
    ("--max-tokens", "٣", "an integer"), ("--samples", "１", "an integer"), ("--seed", "1_000", "an integer"),
    ("--temperature", "٠.٧", "a number"), ("--top-p", "０.９", "a number"), ("--request-timeout", "٥", "a number"),
])
def test_numeric_options_in_other_digits_are_refused(cli, tmp_path, math_items, option, value, kind):
    args = base_args(math_items, tmp_path / "out", "--server", "http://127.0.0.1:9")
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    r = cli(*args)
    assert (r.code, r.err) == (2, f"audit: error: Invalid value for '{option}': '{value}' is not {kind} in ASCII "
                                  "digits\n")
    assert not (tmp_path / "out").exists()


@attack("fmt.unicode-digits-generate")
def test_a_launch_port_or_a_generation_config_in_other_digits_is_refused(tmp_path):
    from audit.errors import AuditError
    from audit.generate.vllm_server import LaunchedServer

    with pytest.raises(AuditError, match=r"^--launch: --port '٨١٢٣' is not a port number in ASCII digits$"):
        LaunchedServer(program=["python3"], model="m", args=["--port", "٨١٢٣"], log_path=tmp_path / "log")
    sampling = Sampling(temperature=1.0)
    with pytest.raises(AuditError, match=r"^generation_config.json: top_k is '٣', not an integer$"):
        apply_model_defaults(sampling, set(), {"top_k": "٣"})
    with pytest.raises(AuditError, match=r"^generation_config.json: temperature is '0.6', not a number$"):
        apply_model_defaults(sampling, set(), {"temperature": "0.6"})
    assert apply_model_defaults(sampling, set(), {"top_k": 20, "temperature": 0.6}).top_k == 20


@attack("fmt.unicode-digits-generate")
def test_source_date_epoch_in_other_digits_is_not_read(monkeypatch):
    from audit.packages.write import created_now

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "٣")
    assert created_now() != "1970-01-01T00:00:03Z"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "3")
    assert created_now() == "1970-01-01T00:00:03Z"


@pytest.mark.slow
@attack("gen.huge-log-at-stop")
def test_a_server_log_padded_at_shutdown_is_not_read_whole(tmp_path, math_items, model_dir):
    from tests.attack_tools import audit_jailed

    # The fake server grows its log by 1 GiB (sparse) as it stops: the defaults line is read from its start
    # (it was read whole: a MemoryError under this 1.2 GB jail; a real log of weeks of requests is larger).
    setup = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1200 << 20, 1200 << 20))"
    r = audit_jailed(*_launch_args(math_items, tmp_path / "out", model_dir, {"pad_log_bytes": 1 << 30}),
                     setup=setup, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    session = manifest_of(tmp_path / "out").provenance.extra["sessions"][0]
    assert session["server_default_sampling"]["defaults"] == {"temperature": 0.9}
    # The package keeps the log's first and last 8 MiB, saying how much it left out (it kept the 1 GiB whole).
    log = (tmp_path / "out" / session["launch"]["log"]).read_bytes()
    half = KEPT_LOG_BYTES // 2
    left_out = re.match(rb"\n\[audit: ([0-9,]+) bytes left out here\]\n", log[half:])
    assert left_out and int(left_out.group(1).replace(b",", b"")) > (1 << 30) - KEPT_LOG_BYTES
    assert len(log) < KEPT_LOG_BYTES + 80 and log[-half:] == b"\0" * half
