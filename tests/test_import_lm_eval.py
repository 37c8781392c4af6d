"""`audit import lm-eval` on real MMLU-Pro responses converted into the harness's `--log_samples` shape.

No real lm-eval samples file is in ../shared/data, so the fixtures are real
responses (mmlu_pro_responses_sample.jsonl) written exactly as
EleutherAI/lm-evaluation-harness writes them: the `example` dict of
`lm_eval/evaluator.py::evaluate` (doc_id, doc, target, arguments, resps,
filtered_resps, filter, metrics, doc_hash, prompt_hash, target_hash, then the
metric values), serialised by `lm_eval/loggers/evaluation_tracker.py::
save_results_samples` (arguments as {"gen_args_i": {"arg_j": ...}}, resps and
filtered_resps stringified by `sanitize_list`, `json.dumps(ensure_ascii=False)`),
at v0.4.9.2 (ad3f4d0c) and HEAD 4e7e0d47. The task config is the harness's
`lm_eval/tasks/mmlu_pro` (generate_until, filter "custom-extract", metric
exact_match); the prompt is built with its `format_cot_example`, zero-shot.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from audit.packages import open_package

pytestmark = pytest.mark.shared_data
GEN_KWARGS = {"until": ["Question:"], "max_gen_toks": 2048, "do_sample": False, "temperature": 0.0}


def _hash(text: str) -> str:  # lm_eval.utils.hash_string
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _prompt(doc: dict) -> str:
    # lm_eval/tasks/mmlu_pro: description + utils.format_cot_example(including_answer=False)
    text = (f"The following are multiple choice questions (with answers) about {doc['category']}. Think step by "
            f"step and then finish your answer with \"the answer is (X)\" where X is the correct letter choice.\n")
    text += "Question:\n" + doc["question"] + "\nOptions:\n"
    for letter, opt in zip("ABCDEFGHIJ", doc["options"]):
        text += f"{letter}. {opt.strip()}\n"
    return text + "Answer: Let's think step by step."


def lm_eval_record(doc_id: int, doc: dict, texts: list[str], pred: str | None, filter_key="custom-extract"):
    """One logged sample, key order and serialisation as the harness writes it."""
    target = doc["answer"]
    filtered = pred if pred is not None else "[invalid]"
    example = {
        "doc_id": doc_id,
        "doc": doc,
        "target": target,
        "arguments": [(_prompt(doc), dict(GEN_KWARGS))],
        "resps": [texts],
        "filtered_resps": [filtered],
        "filter": filter_key,
        "metrics": ["exact_match"],
        "doc_hash": _hash(json.dumps(doc, indent=2, ensure_ascii=False)),
        "prompt_hash": _hash(_prompt(doc)),
        "target_hash": _hash(str(target)),
        "exact_match": 1.0 if filtered == target else 0.0,
    }
    # evaluation_tracker.save_results_samples
    arguments = {}
    for i, arg in enumerate(example["arguments"]):
        arguments[f"gen_args_{i}"] = {f"arg_{j}": tmp for j, tmp in enumerate(arg)}
    example["resps"] = [[str(t) for t in r] for r in example["resps"]]
    example["filtered_resps"] = [str(f) for f in example["filtered_resps"]]
    example["arguments"] = arguments
    example["target"] = str(example["target"])
    return example


@pytest.fixture(scope="module")
def runs():
    """Real records per run: (doc as the HF dataset row, text, upstream pred), in the sample's order."""
    from tests.conftest import shared_path

    questions = {}
    for line in shared_path("mmlu_pro/mmlu_pro_test_questions.jsonl").open():
        q = json.loads(line)
        questions[q["question_id"]] = q
    out: dict[str, list] = {}
    for line in shared_path("mmlu_pro/mmlu_pro_responses_sample.jsonl").open():
        s = json.loads(line)
        q = questions[s["question_id"]]
        doc = {"question_id": q["question_id"], "question": q["question"], "options": q["options"],
               "answer": q["answer"], "answer_index": q["answer_index"], "cot_content": "",
               "category": q["category"], "src": q["src"]}
        out.setdefault(s["run_id"], []).append((doc, s["response"], s["source_pred"]))
    return out


def write_samples(path: Path, records: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def _rows(path, schema="response_row.v1"):
    with open_package(path) as pkg:
        return list(pkg.iter_rows(schema))


def test_generate_until_samples(cli, runs, tmp_path):
    run = runs["Meta-Llama-3_1-8B-Instruct_5shots"]
    records = [lm_eval_record(i, doc, [text], pred) for i, (doc, text, pred) in enumerate(run)]
    src = write_samples(tmp_path / "samples_mmlu_pro_2025-01-01T00-00-00.jsonl", records)
    out, items = tmp_path / "responses", tmp_path / "items"
    r = cli("import", "lm-eval", src, "-o", out, "--benchmark", "mmlu_pro", "--items-out", items,
            "--item-id", "{doc[question_id]}", "--model", "meta-llama/Llama-3.1-8B-Instruct")
    assert r.code == 0, r.err
    assert [line.split(" package ")[1].split(", ")[1] for line in r.out.splitlines()] == ["1000 rows and 1000 items", "1000 rows"]
    assert cli("validate", out).code == 0 and cli("validate", items).code == 0

    rows = _rows(out)
    assert len(rows) == 1000
    for row, rec, (doc, text, pred) in zip(rows, records, run):
        assert row.item_id == str(doc["question_id"]) and row.sample == 0
        assert row.response == text
        assert row.max_tokens == 2048
        assert row.prompt_sha256 == hashlib.sha256(_prompt(doc).encode()).hexdigest()
        assert row.extra == {"doc_id": rec["doc_id"], "filter": "custom-extract",
                             "filtered_resp": pred if pred is not None else "[invalid]",
                             "metrics": {"exact_match": rec["exact_match"]}}
    # The upstream letters scored against today's gold: README's 483/1000 for this run was scored
    # against the gold stored in the run, and 5 of its items had their gold letter corrected since.
    assert sum(r.extra["metrics"]["exact_match"] for r in rows) == sum(p == d["answer"] for d, _, p in run) == 485
    prov = json.loads((out / "manifest.json").read_text())["provenance"]
    assert prov["engine"] == "EleutherAI/lm-evaluation-harness"
    assert prov["sampling"] == GEN_KWARGS
    assert prov["extra"]["import"]["filters_in_file"] == {"custom-extract": 1000}
    gold = {str(doc["question_id"]): doc["answer"] for doc, _, _ in run}
    assert {it.item_id: it.reference for it in _rows(items, "item_row.v1")} == gold


def test_repeats_become_samples(cli, runs, tmp_path):
    # Three runs' real texts stand in for three repeats of one model (`repeats: 3` in a task config).
    names = ["gpt4o_2024-05", "deepseek_2024-05", "jamba-1.5-large_5shots"]
    docs = [d for d, _, _ in runs[names[0]]][:100]
    texts = [[runs[n][i][1] for n in names] for i in range(100)]
    src = write_samples(tmp_path / "s.jsonl", [lm_eval_record(i, d, t, None) for i, (d, t) in
                                               enumerate(zip(docs, texts))])
    out = tmp_path / "pkg"
    r = cli("import", "lm-eval", src, "-o", out, "--benchmark", "mmlu_pro", "--gzip")
    assert r.code == 0, r.err
    assert cli("validate", out).code == 0
    rows = _rows(out)
    assert len(rows) == 300
    assert [(r.item_id, r.sample) for r in rows[:4]] == [("0", 0), ("0", 1), ("0", 2), ("1", 0)]
    assert all(row.response == texts[int(row.item_id)][row.sample] for row in rows)


def test_one_filter_is_imported(cli, runs, tmp_path):
    # Tasks with two filters (gsm8k's strict-match / flexible-extract) log every document twice.
    run = runs["deepseek_2024-05"][:30]
    records = [lm_eval_record(i, d, [t], p, "strict-match") for i, (d, t, p) in enumerate(run)]
    records += [lm_eval_record(i, d, [t], "A", "flexible-extract") for i, (d, t, p) in enumerate(run)]
    src = write_samples(tmp_path / "s.jsonl", records)
    r = cli("import", "lm-eval", src, "-o", tmp_path / "a", "--benchmark", "mmlu_pro")
    assert r.code == 0, r.err
    rows = _rows(tmp_path / "a")
    assert len(rows) == 30 and {r.extra["filter"] for r in rows} == {"strict-match"}
    r = cli("import", "lm-eval", src, "-o", tmp_path / "b", "--benchmark", "mmlu_pro", "--filter", "flexible-extract")
    assert r.code == 0, r.err
    assert {r.extra["filtered_resp"] for r in _rows(tmp_path / "b")} == {"A"}
    r = cli("import", "lm-eval", src, "-o", tmp_path / "c", "--benchmark", "mmlu_pro", "--filter", "none")
    assert (r.code, r.err) == (2, f"audit: error: {src}: no samples to import for filter 'none' (filters in the "
                                  f"file: strict-match, flexible-extract)\n")
    assert not (tmp_path / "c").exists()


def test_refusals_name_file_row_and_field(cli, runs, tmp_path):
    doc, text, pred = runs["gpt4o_2024-05"][0]
    good = lm_eval_record(0, doc, [text], pred)
    loglik = {**good, "resps": [[["-1.25", "False"]], [["-0.5", "True"]]], "filtered_resps": [["-1.25", "False"]]}
    altered = {**good, "doc": {**doc, "answer": "Z"}}
    bad_prompt = {**good, "arguments": {"gen_args_0": {"arg_0": "another prompt", "arg_1": GEN_KWARGS}}}
    cases = [
        # Log-probabilities under generate_until arguments: neither kind of sample (real multiple-choice
        # samples are read: tests/test_import_lm_eval_mc.py).
        (loglik, "field arguments: expected one (context, continuation) pair per option"),
        (altered, "field doc_hash: doc_hash does not match the logged doc (altered after the run?)"),
        (bad_prompt, "field prompt_hash: prompt_hash does not match the logged prompt (altered after the run?)"),
        ({k: v for k, v in good.items() if k != "doc_id"}, "field doc_id: missing required field"),
    ]
    for record, message in cases:
        src = write_samples(tmp_path / "s.jsonl", [lm_eval_record(1, doc, [text], pred), record])
        r = cli("import", "lm-eval", src, "-o", tmp_path / "pkg", "--benchmark", "mmlu_pro")
        assert (r.code, r.err) == (2, f"audit: error: {src}: row 2: {message}\n")
        assert not (tmp_path / "pkg").exists()
        # The same line with --recorded, which reads the records first (it was an AttributeError's traceback).
        r = cli("import", "lm-eval", src, "-o", tmp_path / "pkg", "--benchmark", "mmlu_pro",
                "--recorded", tmp_path / "r.json")
        assert (r.code, r.err) == (2, f"audit: error: {src}: row 2: {message}\n")
        assert not (tmp_path / "pkg").exists() and not (tmp_path / "r.json").exists()
    # The hash checks can be waived (a file whose docs were legitimately rewritten).
    src = write_samples(tmp_path / "s.jsonl", [altered])
    r = cli("import", "lm-eval", src, "-o", tmp_path / "pkg", "--benchmark", "mmlu_pro", "--no-hash-check")
    assert r.code == 0, r.err
    r = cli("import", "lm-eval", src, "-o", tmp_path / "pkg2", "--benchmark", "mmlu_pro",
            "--item-id", "{doc[qid]}")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field item_id: --item-id: template '{{doc[qid]}}': "
                                  f"missing key 'qid'\n")
    r = cli("import", "lm-eval", src, "-o", tmp_path / "pkg2")
    assert r.code == 2 and r.err == "audit: error: --benchmark is required for a samples file\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_older_list_arguments_without_hashes(cli, runs, tmp_path):
    # Before 2024-05 the harness logged `arguments` as a list of argument lists and no hashes.
    doc, text, pred = runs["gpt4o_2024-05"][0]
    rec = lm_eval_record(0, doc, [text], pred)
    old = {"doc_id": 0, "doc": doc, "target": rec["target"], "arguments": [[_prompt(doc), GEN_KWARGS]],
           "resps": rec["resps"], "filtered_resps": rec["filtered_resps"], "exact_match": rec["exact_match"]}
    src = write_samples(tmp_path / "s.jsonl", [old])
    r = cli("import", "lm-eval", src, "-o", tmp_path / "pkg", "--benchmark", "mmlu_pro")
    assert r.code == 0, r.err
    (row,) = _rows(tmp_path / "pkg")
    assert (row.response, row.max_tokens, row.prompt_sha256) == (text, 2048, None)
    assert row.extra == {"doc_id": 0, "filter": "(none)", "filtered_resp": rec["filtered_resps"][0],
                         "metrics": {"exact_match": rec["exact_match"]}}
