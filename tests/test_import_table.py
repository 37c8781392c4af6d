"""`audit import table`: the generic column-mapping importer, proven on the three real response sets.

GPQA rule: its text is never printed, so comparisons of GPQA text go through sha256
digests (a failing assert would otherwise show the text).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from audit.packages import open_package

MMLU = "mmlu_pro/mmlu_pro_responses_sample.jsonl"
GPQA = "gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz"
MATH = "qwen25_math_rm_maj_example/math_cot_100.jsonl"


def _sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def _rows(path: Path, schema: str = "response_row.v1") -> list:
    with open_package(path) as pkg:
        return list(pkg.iter_rows(schema))


def _manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


def _read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _nothing_written(tmp_path: Path, *names: str) -> None:
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".") or p.name in names)
    assert left == [], left


def _import_valid(cli, src: Path, out: Path, *args: object) -> str:
    """`audit import table SRC -o OUT ARGS`, which must succeed and write a package `audit validate` passes;
    its stdout."""
    r = cli("import", "table", src, "-o", out, *args)
    assert r.code == 0, (src, r.err)
    assert cli("validate", out).code == 0
    return r.out


# --------------------------------------------------------------------------- (a) MMLU-Pro responses sample


@pytest.mark.slow
@pytest.mark.shared_data
def test_mmlu_sample_whole_file_samples_numbered_by_run(cli, shared, tmp_path):
    src = shared(MMLU)
    out = tmp_path / "all"
    r = cli("import", "table", src, "-o", out, "--kind", "responses", "--benchmark", "mmlu_pro",
            "--map", "item_id=question_id", "--sample-from", "run_id",
            "--map", "extra.source_pred=source_pred", "--map", "extra.response_field=response_field")
    assert (r.code, r.err) == (0, "")
    assert r.out.startswith(f"wrote {out}: responses package responses-mmlu_pro-")
    assert r.out.endswith(", 13000 rows (13000 read)\n")
    v = cli("validate", out)
    assert v.code == 0 and v.out.startswith("valid: responses package"), v.out

    source = _read_jsonl(src)
    runs = list(dict.fromkeys(s["run_id"] for s in source))
    assert len(runs) == 13
    prov = _manifest(out)["provenance"]
    imp = prov["extra"]["import"]
    assert imp["sample_from"] == {"column": "run_id", "samples": {run: i for i, run in enumerate(runs)}}
    assert prov["extra"]["source_files"] == [{"name": src.name, "bytes": src.stat().st_size,
                                             "sha256": hashlib.sha256(src.read_bytes()).hexdigest()}]
    want = {(str(s["question_id"]), runs.index(s["run_id"])): s for s in source}
    rows = _rows(out)
    assert len(rows) == 13000 and len({r.item_id for r in rows}) == 1000
    for row in rows:
        s = want.pop((row.item_id, row.sample))
        assert row.response == s["response"]
        assert row.extra == {"source_pred": s["source_pred"], "response_field": s["response_field"]}
    assert want == {}


@pytest.mark.shared_data
def test_mmlu_sample_one_package_per_run_with_where(cli, shared, tmp_path):
    src = shared(MMLU)
    for run, nulls in (("deepseek_2024-05", 164), ("Qwen1.5-7B-Chat_5shots", 207)):
        out = tmp_path / run
        assert _import_valid(cli, src, out, "--kind", "responses", "--where", f"run_id={run}", "--map",
                             "item_id=question_id", "--map", "extra.source_pred=source_pred", "--model", run
                             ).endswith(", 1000 rows (13000 read, 12000 filtered out)\n")
        rows = _rows(out)
        assert {r.sample for r in rows} == {0}
        # The README's count of failed upstream extractions for this run.
        assert sum(r.extra["source_pred"] is None for r in rows) == nulls
        prov = _manifest(out)["provenance"]
        assert prov["model"] == run
        assert prov["extra"]["import"]["rows"] == {"read": 13000, "filtered_out": 12000,
                                                   "duplicates_dropped": 0, "written": 1000}


@pytest.mark.shared_data
def test_mmlu_sample_where_any_of_and_not_equal(cli, shared, tmp_path):
    src = shared(MMLU)
    r = cli("import", "table", src, "-o", tmp_path / "two", "--kind", "responses",
            "--where", "run_id=gpt4o_2024-05", "--where", "run_id=deepseek_2024-05",
            "--where", "category!=law", "--map", "item_id=question_id", "--sample-from", "run_id")
    assert r.code == 0, r.err
    rows = _rows(tmp_path / "two")
    law = sum(1 for s in _read_jsonl(src) if s["run_id"] == "gpt4o_2024-05" and s["category"] == "law")
    assert law > 0
    assert len(rows) == 2 * (1000 - law)
    assert Counter(r.sample for r in rows) == {0: 1000 - law, 1: 1000 - law}


@pytest.mark.shared_data
def test_mmlu_sample_duplicate_items_without_sample_numbering_are_refused(cli, shared, tmp_path):
    src = shared(MMLU)
    out = tmp_path / "dup"
    r = cli("import", "table", src, "-o", out, "--kind", "responses", "--map", "item_id=question_id")
    assert r.code == 2
    lines = r.err.splitlines()
    # Row 1001 is the second run's first row: same question, sample 0 again.
    assert lines[0] == (f"audit: error: {src}: row 1001: field item_id: duplicate (item_id='84', sample=0, "
                        f"attempt=0); first seen in row 1")
    assert lines[-1] == f"audit: error: {src}: stopped reading after 20 problems"
    assert not out.exists()
    _nothing_written(tmp_path, "dup")


# --------------------------------------------------------------------------- (b) GPQA Diamond (gzip'd, protected)


GPQA_ID = "item_id=gpqa-{item_index:03d}-v{version}"


@pytest.mark.slow
@pytest.mark.shared_data
def test_gpqa_responses_stay_gzipped(cli, shared, tmp_path):
    src = shared(GPQA)
    out = tmp_path / "gpqa"
    assert _import_valid(cli, src, out, "--kind", "responses", "--gzip", "--benchmark", "gpqa_diamond",
                         "--map", GPQA_ID, "--sample-from", "model", "--map", "extra.source_extracted=source_extracted",
                         "--map", "extra.source_correct=source_correct").endswith(", 6336 rows (6336 read)\n")
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "responses.jsonl.gz"]
    assert (out / "responses.jsonl.gz").read_bytes()[:2] == b"\x1f\x8b"

    source = _read_jsonl(src)
    models = list(dict.fromkeys(s["model"] for s in source))
    rows = _rows(out)
    assert len(rows) == 6336 and len({r.item_id for r in rows}) == 792
    assert Counter(r.sample for r in rows) == {i: 792 for i in range(8)}
    want = {(f"gpqa-{s['item_index']:03d}-v{s['version']}", models.index(s["model"])): s for s in source}
    for row in rows:
        s = want[(row.item_id, row.sample)]
        assert _sha(row.response) == _sha(s["response"])
        assert row.extra == {"source_extracted": s["source_extracted"], "source_correct": s["source_correct"]}
    # The source README's accuracy for gpt-4o, recomputed from the package.
    gpt4o = [r for r in rows if r.sample == models.index("gpt-4o")]
    assert round(100 * sum(r.extra["source_correct"] for r in gpt4o) / len(gpt4o), 2) == 53.16


@pytest.mark.shared_data
def test_gpqa_items_protected_and_deduplicated(cli, shared, tmp_path):
    src = shared(GPQA)
    out = tmp_path / "items"
    assert _import_valid(cli, src, out, "--kind", "items", "--gzip", "--dedupe",
                         "--map", GPQA_ID, "--map", "reference=gold_letter", "--const", "protected=true",
                         "--const", "num_choices=4").endswith(", 792 rows (6336 read, 5544 duplicates dropped)\n")
    items = _rows(out, "item_row.v1")
    assert len(items) == 792
    assert all(it.protected and it.num_choices == 4 and it.question is None for it in items)
    # By construction version k puts the correct option at the k-th letter.
    assert all(it.reference == "ABCD"[int(it.item_id[-1]) - 1] for it in items)


@pytest.mark.shared_data
def test_gpqa_template_typo_is_one_line_and_writes_nothing(cli, shared, tmp_path):
    src = shared(GPQA)
    out = tmp_path / "typo"
    r = cli("import", "table", src, "-o", out, "--kind", "responses", "--gzip",
            "--map", "item_id=gpqa-{item_idx:03d}-v{version}")
    assert r.code == 2
    assert r.err == (f"audit: error: {src}: row 1: field item_id: template 'gpqa-{{item_idx:03d}}-v{{version}}' "
                     f"refers to missing column 'item_idx'\n")
    assert r.out == ""
    _nothing_written(tmp_path, "typo")


# --------------------------------------------------------------------------- (c) Qwen2.5-Math CoT, 100 x 8


@pytest.mark.shared_data
def test_math_cot_explode_and_items(cli, shared, tmp_path):
    src = shared(MATH)
    out = tmp_path / "math"
    assert _import_valid(cli, src, out, "--kind", "responses", "--benchmark", "math",
                         "--map", "item_id=idx", "--explode", "response,pred,score",
                         "--map", "extra.pred=pred", "--map", "extra.qwen_score=score"
                         ).endswith(", 800 rows (100 read)\n")
    rows = _rows(out)
    assert Counter(r.sample for r in rows) == {i: 100 for i in range(8)}
    # The README's grader tally: 728 True, 72 False.
    assert Counter(r.extra["qwen_score"] for r in rows) == {True: 728, False: 72}
    source = {s["idx"]: s for s in _read_jsonl(src)}
    for row in rows:
        s = source[int(row.item_id)]
        assert row.response == s["code"][row.sample] == s["response"][row.sample]
        assert row.extra["pred"] == s["pred"][row.sample]

    items = tmp_path / "math_items"
    _import_valid(cli, src, items, "--kind", "items", "--map", "item_id=idx",
                  "--map", "reference=answer", "--map", "subject=level", "--map", "extra.qwen_gt=gt")
    got = {it.item_id: it for it in _rows(items, "item_row.v1")}
    assert len(got) == 100
    assert got["0"].reference == source[0]["answer"] and got["0"].question == source[0]["question"]
    # `answer` and Qwen's normalised `gt` differ for 13 problems (README).
    assert sum(it.reference != it.extra["qwen_gt"] for it in got.values()) == 13


@pytest.mark.shared_data
def test_math_cot_explode_errors(cli, shared, tmp_path):
    src = shared(MATH)
    r = cli("import", "table", src, "-o", tmp_path / "x", "--kind", "responses", "--map", "item_id=idx",
            "--explode", "response,pred_score,level")
    assert r.code == 2
    assert r.err == f"audit: error: {src}: row 1: field level: --explode: column 'level' is str, not a list\n"
    r = cli("import", "table", src, "-o", tmp_path / "x", "--kind", "responses", "--map", "item_id=idx",
            "--explode", "response,history")
    assert r.err == (f"audit: error: {src}: row 1: field history: --explode: lists differ in length "
                     f"(response: 8, history: 0)\n")
    r = cli("import", "table", src, "-o", tmp_path / "x", "--kind", "responses", "--map", "item_id=idx")
    assert r.code == 2
    assert r.err.startswith(f"audit: error: {src}: row 1: field response: Input should be a valid string (got [")
    _nothing_written(tmp_path, "x")


# --------------------------------------------------------------------------- formats and options (small files)


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_csv_cells_are_converted_to_field_types(cli, tmp_path):
    # Text becomes int where the field wants one; an empty cell is null.
    src = tmp_path / "runs.csv"
    src.write_text('qid,rep,text,finish,ptok\n'
                   '7,0,"The answer is (B).\nDone.",stop,120\n'
                   '7,1,"Line one, with a comma",,\n'
                   '8,0,,length,007\n', encoding="utf-8")
    out = tmp_path / "pkg"
    _import_valid(cli, src, out, "--kind", "responses", "--map", "item_id=q{qid:03d}",
                  "--map", "sample=rep", "--map", "response=text", "--map", "finish_reason=finish",
                  "--map", "prompt_tokens=ptok")
    rows = [(r.item_id, r.sample, r.response, r.finish_reason, r.prompt_tokens) for r in _rows(out)]
    assert rows == [("q007", 0, "The answer is (B).\nDone.", "stop", 120),
                    ("q007", 1, "Line one, with a comma", None, None),
                    ("q008", 0, None, "length", 7)]


@pytest.mark.shared_data
def test_parquet_and_json_array_sources(cli, shared, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = _read_jsonl(shared(MMLU))[:300]
    pq.write_table(pa.Table.from_pylist(source), tmp_path / "s.parquet", row_group_size=64)
    (tmp_path / "s.json").write_text(json.dumps(source, indent=1), encoding="utf-8")
    for name in ("s.parquet", "s.json"):
        out = tmp_path / f"pkg_{name}"
        _import_valid(cli, tmp_path / name, out, "--kind", "responses",
                      "--map", "item_id=question_id", "--keep-extra", "--drop", "response_field,source_path,model")
        rows = _rows(out)
        assert [r.response for r in rows] == [s["response"] for s in source]
        # question_id went to item_id: what a field took is not repeated in extra.
        assert sorted(rows[0].extra) == ["category", "gold_answer", "gold_answer_index",
                                         "gold_matches_questions_file", "run_id", "source_commit",
                                         "source_correct", "source_pred"]


def test_mapping_errors_are_one_line(cli, tmp_path):
    src = _write_jsonl(tmp_path / "r.jsonl", [{"id": "a", "text": "x", "n": None}, {"id": "b", "text": "y"}])
    out = tmp_path / "pkg"
    cases = [
        (["--map", "nonsense=id"],
         "--map nonsense: not a field of response_row.v1 (fields: item_id, sample, attempt, response, "
         "finish_reason, prompt_tokens, completion_tokens, max_tokens, seed, prompt_sha256, started_at, "
         "first_token_s, finished_at, excluded, error, at_budget, extra.KEY)"),
        (["--map", "item_id=id"],
         f"{src}: row 1: field response: required field response is not mapped and the source has no column "
         f"'response' (use --map response=COLUMN)"),
        (["--map", "item_id={id.__class__}", "--map", "response=text"],
         "--map item_id: bad template '{id.__class__}': attribute access (id.__class__) is not allowed; "
         "index with [key]"),
        (["--map", "item_id={id}-{n}", "--map", "response=text"],
         f"{src}: row 1: field item_id: template field {{n}} is null"),
        (["--map", "item_id=id", "--map", "response=text", "--where", "split=test"],
         f"{src}: row 1: field split: --where refers to missing column 'split'"),
        (["--map", "item_id=id", "--map", "response=text", "--where", "id=zzz"],
         f"{src}: no rows to import (2 of 2 filtered out by --where)"),
        (["--map", "item_id=id", "--map", "response=text", "--sample-from", "id", "--explode", "text"],
         "--sample-from and --explode both number samples; map sample explicitly (e.g. --map sample=_index) "
         "to combine them"),
        (["--map", "item_id=id", "--const", "item_id=x"], "--const item_id: the field is already given"),
        (["--map", "item_id"], "--map 'item_id': expected NAME=VALUE"),
    ]
    for args, message in cases:
        r = cli("import", "table", src, "-o", out, "--kind", "responses", *args)
        assert (r.code, r.err) == (2, f"audit: error: {message}\n"), args
        assert not out.exists()
    _nothing_written(tmp_path, "pkg")


def test_schema_errors_name_source_row_and_field(cli, tmp_path):
    src = _write_jsonl(tmp_path / "r.jsonl", [{"item_id": "a", "response": "x", "sample": "first"},
                                              {"item_id": "b", "response": 3}])
    r = cli("import", "table", src, "-o", tmp_path / "pkg", "--kind", "responses")
    assert r.code == 2
    assert r.err.splitlines() == [
        f"audit: error: {src}: row 1: field sample: Input should be a valid integer (got 'first')",
        f"audit: error: {src}: row 2: field response: Input should be a valid string (got 3)",
    ]
    assert not (tmp_path / "pkg").exists()


def test_source_errors(cli, tmp_path):
    r = cli("import", "table", tmp_path / "missing.jsonl", "-o", tmp_path / "pkg", "--kind", "items")
    assert (r.code, r.err) == (2, f"audit: error: {tmp_path / 'missing.jsonl'}: no such file\n")
    bad = tmp_path / "r.txt"
    bad.write_text("x")
    r = cli("import", "table", bad, "-o", tmp_path / "pkg", "--kind", "items")
    assert r.code == 2 and r.err.startswith(f"audit: error: {bad}: unknown file type: expected .json, ")
    trunc = tmp_path / "t.json"
    trunc.write_text('[{"item_id": "a", "reference": "B"}, {"item_id": "b", "refer')
    r = cli("import", "table", trunc, "-o", tmp_path / "pkg", "--kind", "items")
    assert r.err == (f"audit: error: {trunc}: row 2: malformed JSON: Unterminated string starting at\n")\
        or r.err.startswith(f"audit: error: {trunc}: row 2: malformed JSON: ")
    assert r.code == 2
    csv = tmp_path / "r.csv"
    csv.write_bytes(b"item_id,reference\na,B\nb,\xff\n")
    r = cli("import", "table", csv, "-o", tmp_path / "pkg", "--kind", "items")
    assert r.code == 2 and r.err.startswith(f"audit: error: {csv}: row ") and "not valid UTF-8" in r.err
    _nothing_written(tmp_path, "pkg")


def test_existing_output_needs_force(cli, tmp_path):
    src = _write_jsonl(tmp_path / "r.jsonl", [{"item_id": "a", "reference": "B"}])
    out = tmp_path / "pkg"
    assert cli("import", "table", src, "-o", out, "--kind", "items").code == 0
    r = cli("import", "table", src, "-o", out, "--kind", "items")
    assert (r.code, r.err) == (2, f"audit: error: {out}: already exists (use --force to replace it)\n")
    assert cli("import", "table", src, "-o", out, "--kind", "items", "--force", "--const", "subject=s").code == 0
    assert _rows(out, "item_row.v1")[0].subject == "s"


def test_same_input_gives_same_package(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    src = _write_jsonl(tmp_path / "r.jsonl", [{"q": i, "t": f"text {i}"} for i in range(50)])
    for name in ("a", "b"):
        r = cli("import", "table", src, "-o", tmp_path / name, "--kind", "responses", "--map", "item_id=q",
                "--map", "response=t", "--map", "extra.row=_row")
        assert r.code == 0, r.err
    for f in ("manifest.json", "responses.jsonl"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


@pytest.mark.parametrize("command", [(), ("mmlu-pro",), ("lm-eval",), ("table",)])
def test_every_import_command_has_help(cli, command):
    r = cli("import", *command, "--help")
    assert r.code == 0 and r.out.startswith(f"Usage: audit import {' '.join(command)}".rstrip())
