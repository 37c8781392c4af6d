"""`audit import mmlu-pro` on real responses put back into the upstream file shapes.

`mmlu_pro_responses_sample.jsonl` holds 13 runs' real responses with the upstream
`pred` and the name of the upstream text field; joined with
`mmlu_pro_test_questions.jsonl` they give back the records TIGER-AI-Lab/MMLU-Pro
wrote: per-category `<category>_result.json` arrays (evaluate_from_api.py,
eval_results/gpt4o at ff991b5b, eval_results/merged at 4885ba7d) and the
`eval_results/model_outputs_<run>.zip` files holding one JSON array (964a136e on).
The gold letter is the one stored in that run, as upstream files carry it.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections import defaultdict
from pathlib import Path

import pytest

from audit.packages import open_package

pytestmark = pytest.mark.shared_data
LETTERS = "ABCDEFGHIJ"


@pytest.fixture(scope="module")
def sample_and_questions():
    from tests.conftest import shared_path

    sample = [json.loads(x) for x in shared_path("mmlu_pro/mmlu_pro_responses_sample.jsonl").open()]
    questions = {}
    for line in shared_path("mmlu_pro/mmlu_pro_test_questions.jsonl").open():
        q = json.loads(line)
        questions[q["question_id"]] = q
    return sample, questions


def upstream_records(sample, questions, run_id):
    """The run's records in the upstream shape, in the sample's order."""
    out = []
    for s in sample:
        if s["run_id"] != run_id:
            continue
        q = questions[s["question_id"]]
        out.append({
            "question_id": q["question_id"], "question": q["question"], "options": q["options"],
            "answer": s["gold_answer"], "answer_index": s["gold_answer_index"], "cot_content": "",
            "category": q["category"], "src": q["src"], "pred": s["source_pred"],
            s["response_field"]: s["response"],
        })
    return out


def write_per_category(records, directory: Path) -> list[Path]:
    by_cat = defaultdict(list)
    for r in records:
        by_cat[r["category"]].append(r)
    directory.mkdir()
    paths = []
    for cat, recs in sorted(by_cat.items()):
        p = directory / f"{cat}_result.json"
        p.write_text(json.dumps(recs), encoding="utf-8")  # upstream: fo.write(json.dumps(res))
        paths.append(p)
    return paths


def _rows(path, schema):
    with open_package(path) as pkg:
        return list(pkg.iter_rows(schema))


def _check_import(cli, records, srcs, tmp_path, field):
    out, items = tmp_path / "responses", tmp_path / "items"
    r = cli("import", "mmlu-pro", *srcs, "-o", out, "--items-out", items, "--model", "m")
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        f"wrote {out}: responses package {json.loads((out / 'manifest.json').read_text())['package_id']}, "
        f"{len(records)} rows and {len(records)} items",
        f"wrote {items}: items package {json.loads((items / 'manifest.json').read_text())['package_id']}, "
        f"{len(records)} rows",
    ]
    for p in (out, items):
        v = cli("validate", p)
        assert v.code == 0, v.out
    by_id = {str(r["question_id"]): r for r in records}
    rows = _rows(out, "response_row.v1")
    assert len(rows) == len(records) and {r.sample for r in rows} == {0}
    for row in rows:
        rec = by_id[row.item_id]
        assert row.response == rec[field]
        assert row.extra == {"response_field": field, "pred": rec["pred"]}
    items_rows = _rows(items, "item_row.v1")
    assert len(items_rows) == len(records)
    for it in items_rows:
        rec = by_id[it.item_id]
        assert (it.reference, it.choices, it.subject, it.question) == (
            rec["answer"], rec["options"], rec["category"], rec["question"])
        assert it.extra == {"answer_index": rec["answer_index"], "src": rec["src"]}
    prov = json.loads((out / "manifest.json").read_text())["provenance"]
    assert prov["engine"] == "TIGER-AI-Lab/MMLU-Pro" and prov["model"] == "m"
    assert prov["dataset"]["name"] == "TIGER-Lab/MMLU-Pro"
    assert prov["extra"]["source_files"] == [
        {"name": Path(s).name, "sha256": hashlib.sha256(Path(s).read_bytes()).hexdigest(),
         "bytes": Path(s).stat().st_size} for s in srcs]
    assert prov["extra"]["import"] == {"importer": "mmlu-pro", "records": {field: len(records)}}
    return rows


@pytest.mark.slow
def test_api_run_per_category_response_field(cli, sample_and_questions, tmp_path):
    # gpt-4o, May 2024: evaluate_from_api.py era files keep the text under `response`.
    records = upstream_records(*sample_and_questions, "gpt4o_2024-05")
    srcs = write_per_category(records, tmp_path / "gpt4o")
    assert len(srcs) == 14
    rows = _check_import(cli, records, srcs, tmp_path, "response")
    # README: 47 records of this run where the upstream extractor found no letter.
    assert sum(r.extra["pred"] is None for r in rows) == 47


def test_api_run_per_category_model_outputs_field(cli, sample_and_questions, tmp_path):
    records = upstream_records(*sample_and_questions, "gemini-3.1-pro-preview_2026-02")
    srcs = write_per_category(records, tmp_path / "merged")
    rows = _check_import(cli, records, srcs, tmp_path, "model_outputs")
    assert sum(r.extra["pred"] is None for r in rows) == 29


def test_local_run_zip_generated_text(cli, sample_and_questions, tmp_path):
    # eval_results/model_outputs_<run>.zip: one JSON array with every category, vLLM text.
    records = upstream_records(*sample_and_questions, "Llama-2-7b-hf_5shots")
    z = tmp_path / "model_outputs_Llama-2-7b-hf_5shots.zip"
    with zipfile.ZipFile(z, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("model_outputs_Llama-2-7b-hf_5shots.json", json.dumps(records))
    rows = _check_import(cli, records, [z], tmp_path, "generated_text")
    assert sum(r.extra["pred"] is None for r in rows) == 121


def test_jsonl_records_and_gzip_output(cli, sample_and_questions, tmp_path):
    records = upstream_records(*sample_and_questions, "jamba-1.5-large_5shots")
    src = tmp_path / "jamba.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "pkg"
    r = cli("import", "mmlu-pro", src, "-o", out, "--gzip")
    assert r.code == 0, r.err
    assert sorted(p.name for p in out.iterdir()) == ["items.jsonl.gz", "manifest.json", "responses.jsonl.gz"]
    assert cli("validate", out).code == 0


def test_bad_record_stops_both_outputs(cli, sample_and_questions, tmp_path):
    records = upstream_records(*sample_and_questions, "deepseek_2024-05")[:50]
    records[3] = {**records[3], "answer_index": (records[3]["answer_index"] + 1) % 4}
    del records[7]["question_id"]
    src = tmp_path / "law_result.json"
    src.write_text(json.dumps(records), encoding="utf-8")
    out, items = tmp_path / "responses", tmp_path / "items"
    r = cli("import", "mmlu-pro", src, "-o", out, "--items-out", items)
    a = records[3]
    mismatch = (f"audit: error: {src}: row 4: field answer_index: answer {a['answer']!r} does not match answer_index "
                f"{a['answer_index']} (--on-bad-row record imports it ungraded)\n")
    assert r.code == 2
    # The package holds the items, so the inconsistent row 4 is found too; row 8 is said once for both tables.
    assert r.err == f"audit: error: {src}: row 8: field question_id: missing required field\n" + mismatch
    assert r.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["law_result.json"]

    # Responses are fine without row 8; the items fail on row 4 and take the responses down too.
    del records[7]
    src.write_text(json.dumps(records), encoding="utf-8")
    r = cli("import", "mmlu-pro", src, "-o", out, "--items-out", items)
    assert (r.code, r.err) == (2, mismatch)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["law_result.json"]


def test_duplicates_and_damaged_files(cli, sample_and_questions, tmp_path):
    records = upstream_records(*sample_and_questions, "deepseek_2024-05")[:20]
    a, b = tmp_path / "a_result.json", tmp_path / "b_result.json"
    a.write_text(json.dumps(records[:12]), encoding="utf-8")
    b.write_text(json.dumps(records[10:]), encoding="utf-8")
    r = cli("import", "mmlu-pro", a, b, "-o", tmp_path / "pkg")
    qid = records[10]["question_id"]
    assert r.code == 2
    assert r.err.splitlines()[0] == (f"audit: error: {b}: row 1: field item_id: duplicate (item_id='{qid}', "
                                     f"sample=0, attempt=0); first seen in row 11")
    r = cli("import", "mmlu-pro", a, a, "-o", tmp_path / "pkg")
    assert (r.code, r.err) == (2, f"audit: error: {a}: same content as {a}: given twice\n")

    cut = tmp_path / "cut_result.json"
    cut.write_bytes(a.read_bytes()[:-5000])
    r = cli("import", "mmlu-pro", cut, "-o", tmp_path / "pkg")
    assert r.code == 2 and r.err.startswith(f"audit: error: {cut}: row ") and "malformed JSON" in r.err
    assert len(r.err.splitlines()) == 1

    no_text = tmp_path / "x_result.json"
    no_text.write_text(json.dumps([{k: v for k, v in records[0].items() if k != "response"}]))
    r = cli("import", "mmlu-pro", no_text, "-o", tmp_path / "pkg")
    assert (r.code, r.err) == (2, f"audit: error: {no_text}: row 1: field model_outputs: no model text: none of "
                                  f"model_outputs, response, generated_text is present\n")
    empty = tmp_path / "e_result.json"
    empty.write_text("[]")
    r = cli("import", "mmlu-pro", empty, "-o", tmp_path / "pkg")
    assert (r.code, r.err) == (2, f"audit: error: {empty}: no records to import\n")
    assert not (tmp_path / "pkg").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_null_text_is_kept_as_a_row_with_an_error(cli, sample_and_questions, tmp_path):
    records = upstream_records(*sample_and_questions, "gpt4o_2024-05")[:3]
    records[1]["response"] = None
    src = tmp_path / "b_result.json"
    src.write_text(json.dumps(records))
    out = tmp_path / "pkg"
    assert cli("import", "mmlu-pro", src, "-o", out).code == 0
    rows = _rows(out, "response_row.v1")
    assert (rows[1].response, rows[1].error) == (None, "upstream record has null response")
