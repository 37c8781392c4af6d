"""Reading vLLM's log and command line (formats of vLLM v0.26.0; see audit/generate/vllm_server.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.attacks import attack

from audit.errors import AuditError
from audit.generate.vllm_server import (
    LaunchedServer,
    LogWatcher,
    parse_default_overrides,
    parse_launch_args,
    parse_received,
)

# Built from vllm/entrypoints/serve/utils/request_logger.py (the message) and
# vllm/sampling_params.py SamplingParams.__repr__ (the fields, in order), v0.26.0.
RECEIVED = (
    "(APIServer pid=4242) INFO 11-29 12:00:01 [request_logger.py:70] Received request "
    "chatcmpl-audit-1a2b3c4d-0-7-s1-a0-t0: params: SamplingParams(n=1, presence_penalty=0.0, "
    "frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.6, top_p=0.95, top_k=20, min_p=0.0, "
    "seed=3, stop=['x, top_k=5', '\\n\\n'], stop_token_ids=[], bad_words=[], thinking_token_budget=None, "
    "include_stop_str_in_output=False, ignore_eos=False, max_tokens=1187, min_tokens=0, logprobs=None, "
    "prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, "
    "structured_outputs=None, extra_args=None), lora_request: None."
)
# vllm/config/model.py get_diff_sampling_param, v0.26.0.
DEFAULTS = (
    "(APIServer pid=4242) WARNING 11-29 12:00:00 [model.py:1546] Default vLLM sampling parameters have been "
    "overridden by the model's `generation_config.json`: `{'temperature': 0.6, 'top_k': 20, 'top_p': 0.95}`. "
    "If this is not intended, please relaunch vLLM instance with `--generation-config vllm`."
)


def test_received_request_line_gives_the_applied_parameters():
    rid, p = parse_received(RECEIVED)
    assert rid == "chatcmpl-audit-1a2b3c4d-0-7-s1-a0-t0"
    assert (p["temperature"], p["top_p"], p["top_k"], p["min_p"], p["seed"]) == (0.6, 0.95, 20, 0.0, 3)
    assert p["stop"] == ["x, top_k=5", "\n\n"]  # a stop string that looks like a field stays a stop string
    assert (p["max_tokens"], p["min_tokens"], p["repetition_penalty"], p["n"]) == (1187, 0, 1.0, 1)
    assert parse_received("INFO Received request x: something else") is None


def test_startup_defaults_warning_is_read():
    assert parse_default_overrides("a\n" + DEFAULTS + "\nb") == {
        "source": "the model's `generation_config.json`",
        "defaults": {"temperature": 0.6, "top_k": 20, "top_p": 0.95}}
    assert parse_default_overrides("INFO nothing here") is None


def test_log_watcher_reads_a_growing_file_line_by_line(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("start\n" + RECEIVED[:80])
    w = LogWatcher(log)
    w.poll()
    assert w.lookup("audit-1a2b3c4d-0-7-s1-a0-t0") is None  # half a line is not read yet
    with open(log, "a") as f:
        f.write(RECEIVED[80:] + "\n" + RECEIVED.replace("chatcmpl-audit-1a2b3c4d", "cmpl-audit-9").replace(
            "-t0:", "-t0-0:") + "\n")
    w.poll()
    assert w.lookup("audit-1a2b3c4d-0-7-s1-a0-t0")["seed"] == 3
    assert w.lookup("audit-9-0-7-s1-a0-t0")["top_k"] == 20  # completions ids end in -0


@attack("gen.huge-log")
def test_log_watcher_reads_a_huge_log_in_bounded_pieces_and_skips_over_long_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(LogWatcher, "CHUNK", 4096)
    monkeypatch.setattr(LogWatcher, "MAX_LINE", 10_000)
    forged = RECEIVED.replace("chatcmpl-audit-1a2b3c4d", "chatcmpl-audit-forged")
    log = tmp_path / "server.log"
    # A line over the limit (its end holds a whole request line), then a real one.
    log.write_text("x" * 50_000 + forged + "\n" + RECEIVED + "\n")
    w = LogWatcher(log)
    w.poll()
    assert w.lookup("audit-1a2b3c4d-0-7-s1-a0-t0")["seed"] == 3
    assert w.lookup("audit-forged-0-7-s1-a0-t0") is None
    assert len(w._partial) == 0


def test_launch_arguments():
    assert parse_launch_args("--max-model-len 1024 --enforce-eager", "m") == ["--max-model-len", "1024",
                                                                               "--enforce-eager"]
    assert parse_launch_args("vllm serve .dev/tiny-llama --max-model-len 1024", ".dev/tiny-llama") == [
        "--max-model-len", "1024"]
    with pytest.raises(AuditError, match="--launch names model 'other' but --model is 'm'"):
        parse_launch_args("vllm serve other", "m")
    with pytest.raises(AuditError, match="leave --host out"):
        parse_launch_args("--host 0.0.0.0", "m")


def test_launch_command(tmp_path):
    srv = LaunchedServer(program=["python3", "-m", "vllm.entrypoints.openai.api_server"], model="m",
                         args=["--port", "8123", "--max-model-len", "1024"], log_path=Path(tmp_path / "log"))
    assert srv.url == "http://127.0.0.1:8123"
    assert srv.command == ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--host",
                           "127.0.0.1", "--enable-log-requests", "--port", "8123", "--max-model-len", "1024"]
