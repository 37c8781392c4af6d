"""packages/evidence-h100-judge (issue 30): the judged path on one H100 with a vLLM-served judge of random weights.

Every call is recorded with what the judge served, the grading is re-derived from the recorded calls with no
server, and the error statuses are what random weights give: the HLE replies are cut inside the JSON schema."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from audit.packages import open_package, validate_package

REPO = Path(__file__).resolve().parent.parent
EVIDENCE = REPO / "packages" / "evidence-h100-judge"
SHAPE = REPO / "scripts" / "shapes" / "llama-3.1-8b.config.json"

# (calls, statuses, finish reasons, the parse rule's reason) as the device recorded them
CALLS = {
    "calls-hle": (24, {"judge_error": 24}, {"length": 24}, "not ExtractedAnswer: reply: json_invalid"),
    "calls-inspect": (12, {"judge_error": 12}, {"length": 12}, "no 'GRADE:' in the reply"),
    "calls-equality": (12, {"incorrect": 12}, {"length": 12}, "reply is not 'yes'"),
}


def _rows(name: str) -> list[dict]:
    return [json.loads(x) for x in (EVIDENCE / name / "calls.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_call_is_recorded_with_the_judge_served(name: str) -> None:
    assert validate_package(EVIDENCE / name) == []
    with open_package(EVIDENCE / name) as pkg:
        m = pkg.manifest
    s = m.provenance.subject
    assert s is not None and m.schema_version == 3
    assert (s.model, s.engine, s.engine_version, s.weights, s.run) == (
        "meta-llama/Llama-3.1-8B", "vllm", "0.26.0", "random", "h100-20261207-judge")
    assert s.hardware == "1x NVIDIA H100 80GB HBM3"
    assert s.model_config_sha256 == hashlib.sha256(SHAPE.read_bytes()).hexdigest()  # the committed shape
    n, statuses, finishes, reason = CALLS[name]
    rows = _rows(name)
    assert len(rows) == n and Counter(r["status"] for r in rows) == statuses
    assert Counter(r.get("finish_reason") for r in rows) == finishes
    assert {r["reason"] for r in rows} == {reason}
    assert all(r["raw_recorded"] and r["protected"] for r in rows)  # the prompts hold the gold answers


def test_the_hle_repeats_are_seeded_and_the_flip_rate_is_not_invented(cli) -> None:
    rows = _rows("calls-hle")
    assert Counter((r["repeat"], r["seed"]) for r in rows) == {(0, 0): 12, (1, 1): 12}
    s = cli("show", EVIDENCE / "calls-hle")
    assert s.code == 0, s.err
    assert "flip rate  none measured: no response has two calls without a judge error" in s.out
    assert "over the judged: none (every call is a judge error)" in s.out
    assert "random weights (--load-format dummy" in s.out and "run h100-20261207-judge" in s.out


def test_the_grading_reproduces_from_the_recorded_calls_with_no_server(cli, tmp_path: Path) -> None:
    r = cli("reproduce", EVIDENCE / "graded.json")
    assert r.code == 0, r.err
    assert r.out.startswith("identical: ") and "no judge called" in r.out
    # graded again here, from the committed calls: the same verdicts, every judge error counted wrong
    g = cli("grade", EVIDENCE / "responses", "--items", EVIDENCE / "items", "--benchmark", "hle", "--judge-calls",
            EVIDENCE / "calls-hle", "-o", tmp_path / "v.json")
    assert g.code == 0, g.err
    assert "judge_error 12 rows: counted wrong 0.00% (0/12); left out: none judged" in g.out
    assert "exact match 66.67% (audit's hle spec, no judge) beside the judged 0.00%" in g.out
    ours, theirs = (json.loads(p.read_text()) for p in (tmp_path / "v.json", EVIDENCE / "graded.json"))
    assert ours["items"] == theirs["items"] and ours["summary"] == theirs["summary"]


def test_the_first_runs_failure_is_kept() -> None:
    log = (EVIDENCE / "logs" / "run1-server.log").read_text()
    assert "ModuleNotFoundError: No module named 'lmformatenforcer'" in log
    assert "judge_error=24" in (EVIDENCE / "logs" / "run1-judge-hle.txt").read_text()
