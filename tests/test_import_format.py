"""`--format EXT` (issue 31 item 8): a file whose name has no extension, or another one, is read as the format
given, by every import that tells a format by its name, and gives the same rows as the file with its extension.

The files are the real ones under tests/data (an lm-eval samples file, gzip'd too; an inspect_ai log scored by
model_graded_fact; the grader replies of two inspect_ai logs as a JSONL, CSV and Parquet table), copied to a name
without an extension."""

from __future__ import annotations

import gzip
import shutil

import pytest

from audit.packages import open_package
from tests.conftest import REPO

DATA = REPO / "tests" / "data"
ARC = DATA / "lm_eval" / "samples_arc_easy_2026-09-24T03-05-32.831346.jsonl"
GSM8K = DATA / "lm_eval" / "samples_gsm8k_2025-04-30T18-24-41.082644.jsonl"
INSPECT = DATA / "judge" / "inspect_input-task_model_graded_fact.json"
REPLIES = DATA / "judge" / "inspect_grader_replies.jsonl"
TABLE = ("--kind", "responses", "--map", "item_id={log}-{sample}", "--map", "response=reply")


def _rows(pkg):
    with open_package(pkg) as p:
        return [r.model_dump() for r in p.iter_rows("response_row.v1")]


def _replies_as(path, fmt: str) -> None:
    import pandas as pd

    df = pd.read_json(REPLIES, lines=True)
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)


CASES = [  # (name, command and arguments before the file, source, how the extension-less copy is made, --format)
    ("lm-eval jsonl", ("lm-eval", "--benchmark", "selected_choice"), ARC, "copy", "jsonl"),
    ("lm-eval jsonl.gz", ("lm-eval", "--benchmark", "gsm8k"), GSM8K, "gzip", "jsonl.gz"),
    ("inspect json", ("inspect",), INSPECT, "copy", "json"),
    ("table jsonl", ("table", *TABLE), REPLIES, "copy", "jsonl"),
    ("table csv", ("table", *TABLE), REPLIES, "csv", "csv"),
    ("table parquet", ("table", *TABLE), REPLIES, "parquet", "parquet"),
]


@pytest.mark.parametrize("name,command,src,make,fmt", CASES, ids=[c[0] for c in CASES])
def test_a_file_without_an_extension_reads_as_the_format_given(cli, here, name, command, src, make, fmt):
    plain = here / f"source.{fmt}"
    bare = here / "source"
    if make == "copy":
        shutil.copyfile(src, plain)
    elif make == "gzip":
        plain.write_bytes(gzip.compress(src.read_bytes(), mtime=0))
    else:
        _replies_as(plain, make)
    shutil.copyfile(plain, bare)
    cmd, *args = command
    r = cli("import", cmd, bare, *args, "-o", "pkg")
    assert r.code == 2 and r.err.startswith(f"audit: error: {bare}: unknown file type: expected ") \
        and r.err.endswith(" (or give --format)\n"), r.err
    assert cli("import", cmd, plain, *args, "-o", "with-extension").code == 0
    r = cli("import", cmd, bare, *args, "-o", "pkg", "--format", fmt)
    assert r.code == 0, r.err
    assert _rows(here / "pkg") == _rows(here / "with-extension")
    with open_package(here / "pkg") as p:
        files = p.manifest.provenance.extra["source_files"]
    assert [(f["name"], f["format"]) for f in files] == [("source", fmt)]  # the format given is recorded


def test_the_judge_calls_imports_take_format_too(cli, here):
    shutil.copyfile(INSPECT, here / "log")
    r = cli("import", "inspect-judged", "log", "-o", "calls", "--format", "json")
    assert (r.code, r.out) == (0, "wrote calls: 1 judge calls from log (correct=1)\n"), r.err


def test_a_format_the_command_does_not_read_is_one_line(cli, here):
    shutil.copyfile(ARC, here / "samples")
    r = cli("import", "lm-eval", "samples", "--benchmark", "selected_choice", "-o", "pkg", "--format", "csv")
    assert (r.code, r.err) == (2, "audit: error: samples: --format csv: expected one of jsonl, jsonl.gz, json, "
                                  "parquet\n")
    r = cli("import", "inspect", "samples", "-o", "pkg", "--format", "jsonl")
    assert (r.code, r.err) == (2, "audit: error: samples: --format jsonl: expected one of eval, json\n")
    r = cli("import", "lm-eval", DATA / "lm_eval", "-o", "pkg", "--format", "jsonl")
    assert (r.code, r.err) == (2, "audit: error: --format takes a file: a folder's files are told by their names\n")
    assert not (here / "pkg").exists()


def test_the_wrong_importer_hint_keeps_the_format(cli, here):
    # A name without an extension needs --format in the command the hint names, too.
    shutil.copyfile(ARC, here / "samples")
    r = cli("import", "mmlu-pro", "samples", "-o", "pkg", "--format", "jsonl")
    assert (r.code, r.err) == (2, "audit: error: samples: this looks like an lm-evaluation-harness --log_samples file "
                                  "(doc_id, doc, resps); use `audit import lm-eval samples --format jsonl --benchmark "
                                  "NAME -o OUT [--recorded RECORDED.json]`\n")
    r = cli("import", "verdicts", "samples", "--benchmark", "gsm8k", "-o", "v.json", "--format", "jsonl")
    assert r.code == 2 and "`audit import lm-eval samples --format jsonl --benchmark NAME" in r.err, r.err


def test_format_name_is_the_one_place_a_format_is_told_by_a_name():
    # A reader that looked at the name itself would ignore --format: every importer asks sources.format_name.
    # (task_runs tells a harness's folder or file by its own --format, which names the harness, not a suffix.)
    import re

    found = sorted(f"{p.name}:{n}" for p in (REPO / "audit" / "importers").glob("*.py")
                   for n, line in enumerate(p.read_text().splitlines(), 1)
                   if re.search(r"\.name\.lower\(\)|\.suffix\b", line))
    assert [f.split(":")[0] for f in found] == ["sources.py", "task_runs.py", "task_runs.py"], found
