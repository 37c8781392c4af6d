"""Issue 20, "Errors speak the layer they are raised in": a library call's error names no CLI flag; the CLI
adds its own; `audit grade FILE.jsonl` points to `audit import`; `--benchmark` is a checked spec name."""

from __future__ import annotations

import json

import pytest
from tests.attacks import attack
from tests.builders import make_package

from audit.errors import AuditError

RESPONSES = [{"item_id": "q1", "response": "The answer is (A)."}]
ITEMS = [{"item_id": "q1", "reference": "A", "choices": ["a", "b"]}]


def test_library_error_names_no_flag_and_the_cli_adds_it(tmp_path, cli):
    from audit import grade_package, resolve_config

    pkg = make_package(tmp_path / "pkg", responses=RESPONSES, benchmark="mmlu_pro")
    with pytest.raises(AuditError) as e:
        grade_package(pkg, resolve_config("mmlu_pro"))
    assert str(e.value) == f"{pkg}: holds no item rows, and no items package was given"
    r = cli("grade", pkg, "--benchmark", "mmlu_pro", "-o", tmp_path / "r.json")
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {pkg}: holds no item rows, and no items package was given: give --items ITEMS_PACKAGE\n"
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("override, message", [
    ("truncation", "policy 'truncation': expected KEY=VALUE with KEY one of "),
    ("guess_seed=x", "policy 'guess_seed=x': guess_seed must be an integer"),
    ("truncation=maybe", "policy truncation: "),
])
def test_policy_errors_of_a_library_call_name_no_flag(override, message):
    from audit import resolve_config

    with pytest.raises(AuditError) as e:
        resolve_config("mmlu_pro", policies=[override])
    assert str(e.value).startswith(message) and "--" not in str(e.value)


def test_exclude_naming_unknown_ids_names_no_flag(tmp_path):
    from audit import grade_package, resolve_config

    pkg = make_package(tmp_path / "pkg", responses=RESPONSES, items=ITEMS, benchmark="mmlu_pro")
    with pytest.raises(AuditError, match=r"^the exclude policy names 1 id\(s\) that are not items \(first: 'q9'\)$"):
        grade_package(pkg, resolve_config("mmlu_pro", policies=["exclude=q9"]))


def test_grading_a_jsonl_file_points_to_audit_import(tmp_path, cli):
    src = tmp_path / "responses.jsonl"
    src.write_text(json.dumps({"question_id": 1, "options": ["a"], "pred": "A", "model_outputs": "A"}) + "\n",
                   encoding="utf-8")
    r = cli("grade", src, "--benchmark", "mmlu_pro", "-o", tmp_path / "r.json")
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {src}: is a file, not a responses package: this looks like a TIGER-AI-Lab/MMLU-Pro "
                     f"result file (question_id, options, pred and the model's text); use `audit import mmlu-pro {src} "
                     f"-o OUT [--recorded RECORDED.json]`\n")
    other = tmp_path / "notes.jsonl"
    other.write_text(json.dumps({"a": 1}) + "\n", encoding="utf-8")
    r = cli("grade", other, "--benchmark", "mmlu_pro", "-o", tmp_path / "r.json")
    assert r.code == 2 and "is a file, not a responses package: " in r.err and "audit import table" in r.err


def test_benchmark_is_a_checked_spec_name(tmp_path, cli):
    pkg = make_package(tmp_path / "pkg", responses=RESPONSES, items=ITEMS, benchmark="mmlu_pro")
    r = cli("grade", pkg, "--benchmark", "mmlu-pro", "-o", tmp_path / "r.json")
    assert (r.code, r.err) == (2, UNKNOWN_MMLU_PRO)
    assert not (tmp_path / "r.json").exists()


UNKNOWN_MMLU_PRO = ("audit: error: --benchmark: unknown benchmark 'mmlu-pro' (known: choice, exact, gpqa_diamond, "
                    "gsm8k, hle, math, math500, mmlu_pro, mmlu_pro_plus, mmlu_pro_strict, selected_choice; "
                    "`audit benchmarks` describes them)\n")


@pytest.mark.parametrize("args", [
    ("import", "mmlu-pro", "src.json", "-o", "out"),
    ("import", "lm-eval", "src.jsonl", "-o", "out"),
    ("import", "inspect", "log.eval", "-o", "out"),
    ("import", "table", "src.jsonl", "--kind", "responses", "-o", "out"),
    ("import", "verdicts", "src.jsonl", "-o", "out.json"),
    ("pack", "out", "--responses", "src.jsonl"),
])
def test_every_command_that_records_a_benchmark_checks_it_as_grade_does(tmp_path, cli, args, monkeypatch):
    # `--benchmark` means one thing everywhere: a registered spec, checked before any file is read.
    monkeypatch.chdir(tmp_path)
    r = cli(*args, "--benchmark", "mmlu-pro")
    assert (r.code, r.err, r.out) == (2, UNKNOWN_MMLU_PRO, "")
    assert list(tmp_path.iterdir()) == []


def test_reproduce_without_a_recorded_path_names_the_flag_only_in_the_cli(tmp_path, cli):
    from audit.grade import reproduce

    pkg = make_package(tmp_path / "pkg", responses=RESPONSES, items=ITEMS, benchmark="mmlu_pro")
    assert cli("grade", pkg, "--benchmark", "mmlu_pro", "-o", tmp_path / "r.json", "-q").code == 0
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    doc["responses_package"]["path"] = ""
    (tmp_path / "r.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(AuditError) as e:
        reproduce(tmp_path / "r.json")
    assert str(e.value) == "the verdict file records no path for its responses package, and none was given"
    r = cli("reproduce", tmp_path / "r.json")
    assert r.err == ("audit: error: the verdict file records no path for its responses package, and none was given: "
                     "give --package PATH\n")


@attack("output.lookalike-key")
def test_a_look_alike_policy_key_is_shown_escaped(tmp_path, cli):
    # Cyrillic а (U+0430) in place of a: printed as is, the key looked exactly like `truncation`.
    pkg = make_package(tmp_path / "pkg", responses=RESPONSES, items=ITEMS, benchmark="mmlu_pro")
    r = cli("grade", pkg, "--benchmark", "mmlu_pro", "--policy", "trunc\u0430tion=credit", "-o", tmp_path / "r.json")
    assert r.code == 2
    assert "'trunc\\u0430tion=credit' (not ASCII)" in r.err and "\u0430" not in r.err


@attack("output.long-argument-echo")
def test_a_huge_argument_is_not_echoed_whole(tmp_path, cli):
    pkg = make_package(tmp_path / "pkg", responses=RESPONSES, items=ITEMS, benchmark="mmlu_pro")
    r = cli("grade", pkg, "--benchmark", "mmlu_pro", "--policy", "x" * 100_000, "-o", tmp_path / "r.json")
    assert r.code == 2 and r.err.count("\n") == 1
    assert len(r.err) < 2200 and "characters left out ...]" in r.err and r.err.startswith("audit: error: ")
