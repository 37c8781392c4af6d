"""`audit extract`, `audit extractors`, `audit lock`: exact output and exit codes."""

from __future__ import annotations

import gzip
import json

import pytest

from audit import extractors
from tests.conftest import REPO


@pytest.fixture
def responses(tmp_path):
    p = tmp_path / "r.jsonl"
    rows = [
        {"item_id": "q1", "sample": 0, "response": "So the answer is (C).", "finish_reason": "stop"},
        {"item_id": "q1", "sample": 1, "response": "Answer: **B**", "model": "ignored"},
        {"item_id": "q2", "response": None},
        {"item_id": "q3", "sample": 0, "response": "Answer: D", "finish_reason": "length"},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


@pytest.mark.parametrize("extractor, key, rows, answers", [
    ("mmlu_pro.official@f418b11", "mmlu_pro.official@f418b11", [
        '{"item_id":"q1","sample":0,"answer":"C","rule":"L1","span":[7,20]}',
        '{"item_id":"q1","sample":1,"answer":"B","rule":"L3","span":[10,11]}',
        '{"item_id":"q2","sample":0,"answer":null,"rule":"no_response","span":null}',
        '{"item_id":"q3","sample":0,"answer":"D","rule":"L2","span":[8,9]}'], 3),
    # the latest version where none is named; a finish_reason of `length` is read as truncated
    ("gpqa.final_line", "gpqa.final_line@1", [
        '{"item_id":"q1","sample":0,"answer":null,"rule":"no_final_line","span":null}',
        '{"item_id":"q1","sample":1,"answer":"B","rule":"final_line","span":[10,11]}',
        '{"item_id":"q2","sample":0,"answer":null,"rule":"no_response","span":null}',
        '{"item_id":"q3","sample":0,"answer":null,"rule":"truncated","span":null}'], 1),
], ids=["one_row_per_response", "latest_version_and_finish_reason"])
def test_extract_writes_one_row_per_response(cli, responses, extractor, key, rows, answers):
    r = cli("extract", "--extractor", extractor, responses)
    assert r.code == 0
    assert r.out == "".join(row + "\n" for row in rows)
    fp = extractors.get(key).fingerprint[:12]
    assert r.err == f"{key} (fingerprint {fp}): {answers} answers from 4 rows\n"


def test_extract_reads_gzip(cli, responses, tmp_path):
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(gzip.compress(responses.read_bytes()))
    assert cli("extract", "--extractor", "boxed", gz).out == cli("extract", "--extractor", "boxed", responses).out


def test_extract_bad_rows_name_file_row_and_field_and_write_nothing(cli, tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"item_id": "ok", "response": "x"}\n'
                 '{"item_id": 7, "sample": -1, "response": 3}\n'
                 '\n'
                 'not json\n'
                 '{"sample": true, "response": "x", "finish_reason": 1}\n'
                 '{"item_id": "q"}\n'
                 '[1]\n', encoding="utf-8")
    r = cli("extract", "--extractor", "boxed@1", p)
    assert r.code == 2
    assert r.out == ""
    assert r.err == (
        f"audit: error: {p}: row 2: field item_id: expected a non-empty string, found the number 7\n"
        f"audit: error: {p}: row 2: field sample: expected an integer >= 0, found the number -1\n"
        f"audit: error: {p}: row 2: field response: expected a string or null, found the number 3\n"
        f"audit: error: {p}: row 4: malformed JSON: Expecting value at column 1\n"
        f"audit: error: {p}: row 5: field item_id: missing\n"
        f"audit: error: {p}: row 5: field sample: expected an integer >= 0, found a boolean\n"
        f"audit: error: {p}: row 5: field finish_reason: expected a string or null, found the number 1\n"
        f"audit: error: {p}: row 6: field response: missing (use null for no response)\n"
        f"audit: error: {p}: row 7: expected a JSON object, found list\n")


def test_extract_caps_the_number_of_problems_shown(cli, tmp_path):
    p = tmp_path / "many.jsonl"
    p.write_text('{"response": "x"}\n' * 25, encoding="utf-8")
    r = cli("extract", "--extractor", "boxed@1", p)
    assert r.code == 2
    lines = r.err.splitlines()
    assert len(lines) == 21
    assert lines[0] == f"audit: error: {p}: row 1: field item_id: missing"
    assert lines[-1] == f"audit: error: {p}: 5 more problems not shown"


def test_extract_unknown_extractor_and_missing_file(cli, responses, tmp_path):
    r = cli("extract", "--extractor", "mmlu_pro.official@0000000", responses)
    assert (r.code, r.out) == (2, "")
    assert r.err.startswith("audit: error: unknown extractor 'mmlu_pro.official@0000000' (known: boxed.choice@1, ")
    r = cli("extract", "--extractor", "boxed", tmp_path / "nope.jsonl")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {tmp_path / 'nope.jsonl'}: no such file\n")
    r = cli("extract", responses)
    assert (r.code, r.err) == (2, "audit: error: Missing option '--extractor'.\n")


def test_extractors_lists_every_version(cli):
    lock = json.loads(extractors.LOCK_FILE.read_text(encoding="utf-8"))
    # The listed fingerprint is the registered code's: the last one its lock entry accepts.
    current = {key: entry["fingerprints"][-1] for key, entry in lock.items()}
    assert all(extractors.get(key).fingerprint == fp for key, fp in current.items())
    r = cli("extractors")
    assert r.code == 0
    rows = [
        ("boxed", "1", "Content of the last \\boxed{...} or \\fbox{...} (balanced braces)"),
        ("boxed.choice", "1", "Option letter A-J in the last box: \\boxed{G}, \\boxed{\\text{G. ...}}, (G)"),
        ("boxed.choice", "2", "Option letter A-J in the last box; a box naming several letters gives none"),
        ("choice.freeform", "1",
         "Option letter A-D from a free-form response's last answer statement; conflicts give none"),
        ("gpqa.final_line", "1",
         "GPQA: the letter on the response's final 'Answer: X' line only; cut responses give none"),
        ("gpqa.simple_evals", "ee3b031",
         "openai/simple-evals GPQA: first '(?i)Answer: X' anywhere (X may come back lowercase)"),
        ("gsm8k.answer", "1", "GSM8K: the '#### N' line, else the last number"),
        ("gsm8k.answer", "2", "GSM8K: the whole number on the '####' line (2/3, -3, 1,000.5), else the last number"),
        ("gsm8k.flexible_extract", "b733598", "lm-eval gsm8k flexible-extract: the last number-like token"),
        ("gsm8k.strict_match", "b733598", "lm-eval gsm8k strict-match: the first '#### N'"),
        ("hle.choice_answer", "1", "HLE multiple choice: the letter on the last 'Answer:' line; cut responses give none"),
        ("hle.choice_answer", "2",
         "HLE multiple choice: the letter that is the whole last 'Answer:' value; cut responses give none"),
        ("hle.exact_answer", "1", "HLE: the value on the last 'Exact Answer:' line; cut responses give none"),
        ("hle.exact_answer", "2", "HLE: the value on the last 'Exact Answer:' line (any case); cut responses give none"),
        ("math.final", "1", "Final answer of a free-form math response: last box(es), a final-answer statement, "
                            "the last math environment or number"),
        ("mmlu_pro.lmeval", "325f168", "lm-evaluation-harness mmlu_pro filter: first 'answer is (X)', no fallback"),
        ("mmlu_pro.official", "f418b11",
         "MMLU-Pro official cascade: 'answer is (X)', then 'Answer: X', then the last standalone A-J"),
        ("mmlu_pro.official_x", "7535b16",
         "MMLU-Pro evaluate_from_apiX.py: last 'answer is (X)', else last 'Answer: X', else last A-J"),
        ("mmlu_pro.options", "1",
         "MMLU-Pro's official cascade over the item's own letters (A-L for MMLU-Pro+'s twelve options)"),
        ("mmlu_pro.options", "2", "MMLU-Pro's official cascade over the item's own letters; an item without an option "
                                  "count is not read (no A-J fallback)"),
        ("mmlu_pro.statements", "1",
         "MMLU-Pro answer statements only: the official 'answer is (X)', then 'Answer: X'; no fallback"),
        ("raw", "1", "The whole response, stripped (for packages of pre-extracted answers)"),
    ]
    width = max(len(name) for name, _, _ in rows)  # the NAME column fits the longest name
    expected = f"{'NAME':<{width}}  VERSION  FINGERPRINT   DESCRIPTION\n" + "".join(
        f"{name:<{width}}  {version:<7}  {current[f'{name}@{version}'][:12]}  {desc}\n" for name, version, desc in rows)
    assert r.out == expected


@pytest.mark.slow
def test_lock_check(cli):
    r = cli("lock")
    assert r.code == 0
    n = len(extractors.all_extractors())
    assert r.out.splitlines()[0] == f"extractors/lock.json: {n} versions in sync"


@pytest.mark.parametrize("command", ["extract", "extractors", "lock"])
def test_help(cli, command):
    r = cli(command, "--help")
    assert r.code == 0
    assert r.out.startswith(f"Usage: audit {command} [OPTIONS]")


def test_lock_migrate_names_what_it_did(cli):
    if not (REPO / ".git").exists():
        pytest.skip("needs the git checkout (the baseline is a git ref)")
    fp = extractors.get("boxed@1").fingerprint
    r = cli("lock", "--migrate", "boxed@1")
    assert r.code == 0
    assert r.out.splitlines()[0] == f"extractors/lock.json: boxed@1: fingerprint {fp[:12]} is already accepted"
    r = cli("lock", "--migrate", "nope@1")
    assert (r.code, r.err) == (2, "audit: error: --migrate 'nope@1': not a registered extractor or grader "
                                  "name@version\n")
