"""lighteval per-sample details (`details_<task>_<date>.parquet`), in the three layouts lighteval has written.

The tables are built as lighteval's `EvaluationTracker.save` builds them (huggingface/lighteval
`logging/evaluation_tracker.py`: `Dataset.from_list([asdict(detail) ...])`, columns sorted, `to_parquet`; before
v0.8 every value `str()`-ed first), with `datasets` itself, offline, from real content: the GSM8K and COPA samples
in tests/data/lm_eval (their questions, responses, options and log-likelihoods). The results file is written as
lighteval writes it, its `hash_examples` computed here as lighteval computes it (xxh64 of the sorted xxh64 of each
query)."""

from __future__ import annotations

import hashlib
import json

import pytest
import xxhash

from audit.packages import open_package
from tests.attacks import attack
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "lm_eval"
COPA = DATA / "sshleifer__tiny-gpt2" / "samples_copa_2026-10-01T23-15-32.942677.jsonl"
GSM8K = DATA / "samples_gsm8k_2025-04-30T18-24-41.082644.jsonl"
DATE = "2025-06-01T10-11-12.123456"
GSM_TASK = "lighteval|gsm8k|5"
COPA_TASK = "lighteval|copa|0"


def _records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _gsm8k_docs():
    """(query, gold solution, response, 0/1) per real GSM8K sample; the verdict is lm-eval's strict match."""
    return [(r["doc"]["question"], r["target"], r["resps"][0][0], int(r["exact_match"]) if "exact_match" in r
             else int(next(v for k, v in r.items() if k.startswith("exact_match")))) for r in _records(GSM8K)]


def _copa_docs():
    """(query, options, log-likelihoods, gold index, acc) per real COPA sample."""
    out = []
    for r in _records(COPA):
        args = r["arguments"]
        options = [args[f"gen_args_{i}"]["arg_1"][1:] for i in range(len(args))]
        lls = [float(p[0]) for p in r["filtered_resps"]]
        out.append((args["gen_args_0"]["arg_0"], options, lls, options.index(r["target"]), int(r["acc"])))
    return out


def _rows(layout, task):
    """The details rows of `task` as lighteval's Detail of that layout, asdict()-ed."""
    rows = []
    if task == GSM_TASK:
        for query, gold, resp, ok in _gsm8k_docs():
            if layout == "nested":
                rows.append({"doc": {"query": query, "choices": [gold], "gold_index": 0, "id": "", "task_name": task,
                                     "instruction": ""},
                             "model_response": {"text": [resp], "logprobs": [], "input_tokens": [1, 2]},
                             "metric": {"extractive_match": float(ok)}})
            else:
                rows.append({"example": query, "full_prompt": query, "instruction": "", "predictions": [resp],
                             "gold": [gold], "choices": [], "gold_index": [], "metrics": {"extractive_match": ok},
                             "specifics": None})
        return rows
    for query, options, lls, gold, ok in _copa_docs():
        if layout == "nested":
            rows.append({"doc": {"query": query, "choices": [" " + o for o in options], "gold_index": gold, "id": "",
                                 "task_name": task, "instruction": ""},
                         "model_response": {"text": [], "logprobs": lls, "input_tokens": [1]},
                         "metric": {"acc": ok}})
        else:
            rows.append({"example": query, "full_prompt": query, "instruction": "",
                         "predictions": [(ll, False) for ll in lls], "gold": [], "choices": [" " + o for o in options],
                         "gold_index": [gold], "metrics": {"acc": ok}, "specifics": None})
    return rows


def _save(root, layout, task, rows=None, model="org/model"):
    """Write the details table as lighteval does; return its path."""
    import datasets

    rows = rows if rows is not None else _rows(layout, task)
    if layout == "text":  # lighteval v0.3-v0.7: "we force cast to str to avoid formatting problems"
        rows = [{k: str(v) for k, v in r.items()} for r in rows]
    ds = datasets.Dataset.from_list(rows)
    ds = ds.select_columns(sorted(c for c in ds.column_names if c != "id"))
    folder = root / "details" / model / DATE
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"details_{task}_{DATE}.parquet"
    ds.to_parquet(str(path))
    return path


def _hash_examples(queries):
    return xxhash.xxh64("".join(sorted(xxhash.xxh64(q.encode()).hexdigest() for q in queries)).encode()).hexdigest()


def _save_results(root, task, figures, queries, model="org/model"):
    folder = root / "results" / model
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"config_general": {"lighteval_sha": "test", "model_name": model},
           "results": {task: figures, "all": figures},
           "summary_tasks": {task: {"hashes": {"hash_examples": _hash_examples(queries)}, "truncated": 0,
                                    "non_truncated": 0, "padded": 0, "non_padded": 0}}}
    (folder / f"results_{DATE}.json").write_text(json.dumps(doc, indent=2))


@pytest.mark.parametrize("layout", ["nested", "flat", "text"])
def test_generative_details_import_and_grade_in_every_layout(cli, here, layout):
    path = _save(here, layout, GSM_TASK)
    docs = _gsm8k_docs()
    mean = sum(d[3] for d in docs) / len(docs)
    _save_results(here, GSM_TASK, {"extractive_match": mean, "extractive_match_stderr": 0.1}, [d[0] for d in docs])
    r = cli("import", "lighteval", path, "--benchmark", "gsm8k", "-o", "pkg")
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines()[1] == (f"  checked against the results file: examples hash "
                                     f"{_hash_examples([d[0] for d in docs])} = the 3 queries; extractive_match "
                                     f"{mean:g} = the mean of 3 samples")
    with open_package(here / "pkg") as pkg:
        responses = [x.model_dump() for x in pkg.iter_rows("response_row.v1")]
        items = [x.model_dump() for x in pkg.iter_rows("item_row.v1")]
        config = pkg.manifest.provenance.extra["import"]
        source_files = pkg.manifest.provenance.extra["source_files"]
    assert [x["response"] for x in responses] == [d[2] for d in docs]
    assert [x["reference"] for x in items] == [d[1] for d in docs]
    assert [x["item_id"] for x in items] == ["0", "1", "2"]
    assert (config["layout"], config["item_id"], config["task"]) == (layout, "row", GSM_TASK)
    results = next((here / "results").rglob("results_*.json"))
    assert [f["sha256"] for f in source_files] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in (path, results)]
    r = cli("grade", "pkg", "--benchmark", "gsm8k", "-o", "g.json")
    assert r.code == 0, r.err


@pytest.mark.parametrize("layout", ["nested", "flat", "text"])
def test_loglikelihood_details_choose_as_lighteval_and_reproduce_its_verdicts(cli, here, layout):
    path = _save(here, layout, COPA_TASK)
    docs = _copa_docs()
    r = cli("import", "lighteval", path, "--benchmark", "selected_choice", "-o", "pkg", "--recorded", "rec.json")
    assert r.code == 0, r.err
    assert "checked against the results file: results: not checked (no results file given or found beside the " \
           "details)" in r.out
    with open_package(here / "pkg") as pkg:
        responses = [x.model_dump() for x in pkg.iter_rows("response_row.v1")]
        items = [x.model_dump() for x in pkg.iter_rows("item_row.v1")]
    chosen = ["AB"[max(range(2), key=d[2].__getitem__)] for d in docs]
    assert [x["response"] for x in responses] == chosen
    assert [x["reference"] for x in items] == ["AB"[d[3]] for d in docs]
    r = cli("grade", "pkg", "--benchmark", "selected_choice", "-o", "g.json")
    assert r.code == 0, r.err
    r = cli("diff", "rec.json", "g.json")
    assert r.code == 0 and "0 changed" in r.out.replace("no verdict changed", "0 changed"), r.out


def test_acc_norm_divides_by_the_choice_length(cli, here):
    rows = _rows("nested", COPA_TASK)[:1]
    rows[0]["doc"]["choices"] = [" a", " a much longer choice"]
    rows[0]["model_response"]["logprobs"] = [-3.0, -10.0]  # per character: -1.0 and about -0.45
    path = _save(here, "nested", COPA_TASK, rows)
    for rule, letter in (("acc", "A"), ("acc_norm", "B")):
        r = cli("import", "lighteval", path, "--choice-by", rule, "-o", rule)
        assert r.code == 0, r.err
        with open_package(here / rule) as pkg:
            assert [x.response for x in pkg.iter_rows("response_row.v1")] == [letter]


def test_a_mean_metric_that_the_details_do_not_give_is_a_mismatch(cli, here):
    path = _save(here, "nested", GSM_TASK)
    docs = _gsm8k_docs()
    queries = [d[0] for d in docs] + ["a fourth question the details do not hold"]
    _save_results(here, GSM_TASK, {"extractive_match": 0.75}, queries)
    r = cli("import", "lighteval", path, "--benchmark", "gsm8k", "-o", "pkg")
    assert r.code == 1
    assert "MISMATCH examples hash: the results file records" in r.out
    assert f"MISMATCH extractive_match: {path.parent.parent.parent.parent / 'results' / 'org' / 'model'}" not in r.out
    assert "MISMATCH extractive_match: results_" in r.out
    assert r.err == "the results file's figures do not come from these details (see MISMATCH above)\n"


def _refused_then_recorded(cli, here, path, *args: str) -> tuple[str, str]:
    """`audit import lighteval PATH ARGS -o pkg` refused, writing nothing, then imported with `--on-bad-row
    record`: the refusal's stderr and the import's stdout."""
    r = cli("import", "lighteval", path, *args, "-o", "pkg")
    assert r.code == 2 and not (here / "pkg").exists()
    refusal = r.err
    r = cli("import", "lighteval", path, *args, "-o", "pkg", "--on-bad-row", "record")
    assert r.code == 0, r.err
    return refusal, r.out


def test_several_gold_choices_are_refused_or_recorded_ungraded(cli, here):
    rows = _rows("flat", COPA_TASK)[:3]
    rows[1]["gold_index"] = [0, 1]
    path = _save(here, "flat", COPA_TASK, rows)
    refusal, out = _refused_then_recorded(cli, here, path, "--benchmark", "selected_choice")
    assert refusal == (f"audit: error: {path}: row 2: field gold_index: 2 gold choices [0, 1]: no one gold letter "
                       f"(--on-bad-row record imports it ungraded)\n")
    assert (f"  recorded ungraded (bad_input): {path.name}: row 2: item 1: 2 gold choices [0, 1]: no one gold "
            f"letter") in out.splitlines()
    r = cli("grade", "pkg", "--benchmark", "selected_choice", "-o", "g.json")
    assert r.code == 0 and "bad_input" in r.out


@pytest.mark.parametrize("cell,why", [
    ("[__import__('os').system('echo owned')]", "not a Python literal as lighteval writes it (Call)"),
    ("{'acc': 1} if True else 0", "not a Python literal as lighteval writes it (IfExp)"),
    ("[" * 5000 + "]" * 5000, "not a Python literal as lighteval writes it: "),
    ("['" + "x" * (16 << 20) + "']", "a cell of 16,777,220 characters (more than 16,777,216)"),
    ("{[1]: 2}", "not a Python literal as lighteval writes it (a list as a dict key)"),
    ("{'acc': 1, 'acc': 0}", "the key 'acc' appears twice"),
])
@attack("import.lighteval-literal")
def test_a_text_layout_cell_is_read_as_a_literal_never_run(cli, here, cell, why):
    rows = [{k: str(v) for k, v in r.items()} for r in _rows("flat", GSM_TASK)[:1]]
    rows[0]["predictions"] = cell
    path = _save(here, "flat", GSM_TASK, rows)  # already text: _save("flat") keeps it as given
    r = cli("import", "lighteval", path, "--benchmark", "gsm8k", "-o", "pkg")
    assert r.code == 2 and not (here / "pkg").exists()
    assert r.err.startswith(f"audit: error: {path}: row 1: field predictions: {why}")
    assert r.err.count("\n") == 1


def test_a_table_that_is_not_lighteval_details_is_named(cli, here):
    path = _save(here, "flat", GSM_TASK, [{"question": "q", "answer": "a"}])
    r = cli("import", "lighteval", path, "-o", "pkg")
    assert r.code == 2
    assert r.err == (f"audit: error: {path}: not a lighteval details table: columns answer, question (expected doc, "
                     f"model_response, metric or example, predictions, metrics)\n")


def test_reference_boxed_reads_the_answer_of_a_logged_solution(cli, here):
    rows = _rows("nested", GSM_TASK)[:2]  # math_500 logs `ANSWER: <solution>` as its gold choice
    rows[0]["doc"]["choices"] = ["ANSWER: Thus the sum is $540 - 342 = \\boxed{198\\%}$."]
    rows[1]["doc"]["choices"] = ["ANSWER: the solution without a box"]
    path = _save(here, "nested", GSM_TASK, rows)
    refusal, _ = _refused_then_recorded(cli, here, path, "--reference", "boxed")
    assert refusal == (f"audit: error: {path}: row 2: field gold: no \\boxed{{...}} answer in the gold text (none) "
                       f"(--on-bad-row record imports it ungraded)\n")
    with open_package(here / "pkg") as pkg:
        items = [x.model_dump() for x in pkg.iter_rows("item_row.v1")]
        config = pkg.manifest.provenance.extra["import"]
    assert [x["reference"] for x in items] == ["198\\%", "ANSWER: the solution without a box"]
    assert items[0]["extra"]["golds"] == [rows[0]["doc"]["choices"][0]]
    assert config["reference_from"]["extractor"] == "boxed@1"


def test_log_probabilities_that_do_not_fit_the_choices_are_one_line_with_or_without_recorded(cli, here):
    rows = _rows("nested", COPA_TASK)[:2]
    rows[1]["model_response"]["logprobs"] = [-1.0, -2.0, -3.0]  # three for two choices
    path = _save(here, "nested", COPA_TASK, rows)
    for extra in ((), ("--recorded", "rec.json")):
        r = cli("import", "lighteval", path, "--benchmark", "selected_choice", "-o", "pkg", *extra)
        assert (r.code, r.out) == (2, "")
        assert r.err == f"audit: error: {path}: row 2: field predictions: 3 log-probabilities for 2 choices\n"
        assert not (here / "pkg").exists() and not (here / "rec.json").exists()


@attack("import.parquet-swap")
@pytest.mark.parametrize("importer", ["lighteval", "lm-eval"])
def test_a_parquet_table_replaced_after_it_was_hashed_is_refused(cli, here, monkeypatch, importer):
    """The Parquet readers (lighteval details, lm-eval's leaderboard details) decode the bytes they hashed, not
    the file as it is when `datasets` gets to it: a table swapped in between is refused, nothing is written."""
    import audit.importers.lighteval as lighteval_mod
    import audit.importers.lm_eval as lm_eval_mod

    if importer == "lighteval":
        path = _save(here, "nested", COPA_TASK)
        other = _save(here / "other", "nested", COPA_TASK, _rows("nested", COPA_TASK)[:3])
    else:  # lm-eval's own records as a Parquet table (the Open LLM Leaderboard's details)
        import datasets

        records = _records(COPA)
        path, other = here / "samples_copa.parquet", here / "other.parquet"
        datasets.Dataset.from_list(records).to_parquet(str(path))
        datasets.Dataset.from_list(records[:3]).to_parquet(str(other))
    mod = lighteval_mod if importer == "lighteval" else lm_eval_mod
    real = mod.source_file

    def hashed_then_swapped(p, *args):
        pinned = real(p, *args)
        path.write_bytes(other.read_bytes())  # after the hash, before the read
        return pinned

    monkeypatch.setattr(mod, "source_file", hashed_then_swapped)
    r = cli("import", importer, path, "--benchmark", "selected_choice", "-o", "pkg")
    assert r.code != 0 and not (here / "pkg").exists()
    assert "the file changed since it was hashed: run again" in r.err


def test_a_details_table_without_its_extension_reads_with_format_parquet(cli, here):
    # issue 31 item 8: the real GSM8K samples as lighteval's details, the file renamed without `.parquet`.
    path = _save(here, "nested", GSM_TASK)
    bare = path.with_name("details")
    path.rename(bare)
    r = cli("import", "lighteval", bare, "--benchmark", "gsm8k", "-o", "pkg")
    assert (r.code, r.err) == (2, f"audit: error: {bare}: unknown file type: expected .parquet (or give --format)\n")
    r = cli("import", "lighteval", bare, "--benchmark", "gsm8k", "-o", "pkg", "--format", "parquet")
    assert r.code == 0, r.err
    with open_package(here / "pkg") as pkg:
        assert [x.response for x in pkg.iter_rows("response_row.v1")] == [d[2] for d in _gsm8k_docs()]
