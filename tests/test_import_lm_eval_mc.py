"""`audit import lm-eval` on real multiple-choice (log-likelihood) samples files, and `--recorded`.

The files in tests/data/lm_eval are unedited lm-eval 0.4.13 `--log_samples` output (see its README):
ARC-Easy (5 documents, `--model dummy`, metrics acc and acc_norm, targets logged as option indices) and
COPA (20 documents, `sshleifer/tiny-gpt2` on CPU, metric acc, targets logged as option text) with the
run's results file (acc 0.6). The chosen option is recomputed here from the file alone, by the harness's
rule (`lm_eval/api/task.py` process_results: argmax of the log-likelihoods, or of them per character of
the option for acc_norm), and compared with what the import wrote and with the harness's own metric.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.packages import open_package
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "lm_eval"
ARC = DATA / "samples_arc_easy_2026-09-24T03-05-32.831346.jsonl"
COPA = DATA / "sshleifer__tiny-gpt2" / "samples_copa_2026-10-01T23-15-32.942677.jsonl"
COPA_RESULTS = DATA / "sshleifer__tiny-gpt2" / "results_2026-10-01T23-15-32.942677.json"
GSM8K = DATA / "samples_gsm8k_2025-04-30T18-24-41.082644.jsonl"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _argmax(values: list[float]) -> int:
    return values.index(max(values))


def _expected(rec: dict, norm: bool = False) -> tuple[str, str, list[str]]:
    """(chosen letter, gold letter, options) of one logged sample, by the harness's rule."""
    n = len(rec["filtered_resps"])
    options = [rec["arguments"][f"gen_args_{i}"]["arg_1"][1:] for i in range(n)]  # target_delimiter " "
    lls = [float(pair[0]) for pair in rec["filtered_resps"]]
    scores = [ll / len(o) for ll, o in zip(lls, options)] if norm else lls
    gold = int(rec["target"]) if rec["target"].isdigit() else options.index(rec["target"])
    return "ABCDEFGHIJ"[_argmax(scores)], "ABCDEFGHIJ"[gold], options


def _rows(path, schema="response_row.v1"):
    with open_package(path) as pkg:
        return list(pkg.iter_rows(schema))


def _import_recorded(cli, src: Path, benchmark: str, out: str, *extra: str) -> str:
    """`audit import lm-eval SRC` into OUT, its recorded verdicts to recorded.json; the line naming their figure."""
    r = cli("import", "lm-eval", src, "--benchmark", benchmark, "-o", out, *extra, "--recorded", "recorded.json")
    assert r.code == 0, r.err
    return r.out.splitlines()[-1]


def test_arc_easy_chosen_options_are_imported_and_regraded_as_the_harness_scored_them(cli, here):
    r = cli("import", "lm-eval", ARC, "--benchmark", "selected_choice", "-o", "arc", "--items-out", "arc-items",
            "--recorded", "recorded.json")
    assert (r.code, r.err) == (0, "")
    ids = [json.loads((here / p / "manifest.json").read_text())["package_id"] for p in ("arc", "arc-items")]
    assert r.out == (f"wrote arc: responses package {ids[0]}, 5 rows and 5 items\n"
                     f"wrote arc-items: items package {ids[1]}, 5 rows\n"
                     f"wrote recorded.json: selected_choice, 5 items x 1 samples, recorded accuracy 20.00% (1/5) (acc)\n")
    records = _records(ARC)
    rows, items = _rows(here / "arc"), _rows(here / "arc-items", "item_row.v1")
    for rec, row, item in zip(records, rows, items):
        chosen, gold, options = _expected(rec)
        assert (row.item_id, row.sample, row.response) == (str(rec["doc_id"]), 0, chosen)
        assert row.extra["loglikelihoods"] == [float(p[0]) for p in rec["filtered_resps"]]
        assert row.extra["metrics"] == {"acc": rec["acc"], "acc_norm": rec["acc_norm"]}
        assert (item.reference, item.choices) == (gold, options)
        assert item.choices == rec["doc"]["choices"]["text"]  # the options are the dataset's, delimiter removed
        assert gold == rec["doc"]["answerKey"]
        assert (chosen == gold) == (rec["acc"] == 1.0)
    prov = json.loads((here / "arc" / "manifest.json").read_text())["provenance"]["extra"]["import"]
    assert (prov["choice_by"], prov["target_delimiter"], prov["output_types"]) == ("acc", " ", {"multiple_choice": 5})

    r = cli("grade", "arc", "--items", "arc-items", "--benchmark", "selected_choice", "-o", "regraded.json", "-q")
    assert (r.code, r.out) == (0, "wrote regraded.json\n")
    r = cli("diff", "recorded.json", "regraded.json")
    assert r.code == 0 and r.out.endswith("\nNo figure and no verdict changed.\n")


def test_acc_norm_chooses_by_log_likelihood_per_character(cli, here):
    assert _import_recorded(cli, ARC, "selected_choice", "arc", "--choice-by", "acc_norm") == (
        "wrote recorded.json: selected_choice, 5 items x 1 samples, recorded accuracy 20.00% (1/5) (acc_norm)")
    assert [row.response for row in _rows(here / "arc")] == [_expected(rec, norm=True)[0] for rec in _records(ARC)]


def test_copa_option_text_targets_and_the_results_file_figure(cli, here):
    assert _import_recorded(cli, COPA, "selected_choice", "copa", "--items-out", "items") == (
        "wrote recorded.json: selected_choice, 20 items x 1 samples, recorded accuracy 60.00% (12/20) (acc)")
    records = _records(COPA)
    assert [row.response for row in _rows(here / "copa")] == [_expected(rec)[0] for rec in records]
    # COPA logs the gold as the option's text; its dataset label is the index.
    assert [it.reference for it in _rows(here / "items", "item_row.v1")] == ["AB"[rec["doc"]["label"]]
                                                                               for rec in records]
    r = cli("grade", "copa", "--items", "items", "--benchmark", "selected_choice", "-o", "regraded.json")
    acc = json.loads(COPA_RESULTS.read_text())["results"]["copa"]["acc,none"]
    assert r.out.splitlines()[3] == (f"accuracy                      {100 * acc:.2f}%  (12/20)  "
                                     f"binomial_2se [38.09, 81.91]; wilson [38.66, 78.12]; clopper_pearson [36.05, 80.88]")
    assert cli("diff", "recorded.json", "regraded.json").code == 0


def test_a_logged_metric_that_contradicts_the_log_likelihoods_is_found(cli, here):
    # The hashes cover the document, prompt and target, not the metrics: a file whose `acc` was edited imports,
    # and the regrade (argmax of the logged log-likelihoods) disagrees with it on exactly that row.
    records = _records(COPA)
    assert records[7]["acc"] == 0.0
    records[7]["acc"] = 1.0
    src = here / "samples_copa_edited.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    assert cli("import", "lm-eval", src, "--benchmark", "selected_choice", "-o", "copa", "--items-out", "items",
               "--recorded", "recorded.json").code == 0
    cli("grade", "copa", "--items", "items", "--benchmark", "selected_choice", "-o", "regraded.json", "-q")
    doc = json.loads(cli("diff", "recorded.json", "regraded.json", "--format", "json").out)
    assert [(c["item_id"], c["cause"], c["old"]["verdict"], c["new"]["verdict"]) for c in doc["changed"]] == [
        ("7", "grader", "correct", "incorrect")]


def _mc(doc_id: int, contexts: list[str], options: list[str], lls: list[str], target: str, **extra) -> dict:
    return {"doc_id": doc_id, "doc": {"q": doc_id}, "target": target,
            "arguments": {f"gen_args_{i}": {"arg_0": c, "arg_1": " " + o}
                          for i, (c, o) in enumerate(zip(contexts, options))},
            "resps": [[[ll, "False"]] for ll in lls], "filtered_resps": [[ll, "False"] for ll in lls],
            "filter": "none", "metrics": ["acc"], "acc": 1.0, **extra}


@pytest.mark.parametrize("record,message", [
    (_mc(0, ["The trophy doesn't fit because the", "The suitcase doesn't fit because the"], ["it is big"] * 2,
         ["-1.0", "-2.0"], " it is big"),
     "field arguments: the options are in the contexts (a multiple-input task such as winogrande): the logged "
     "target is the shared continuation, not the gold option"),
    (_mc(0, ["c"], ["x"], ["-1.0"], "0"),
     "field resps: one loglikelihood request: the task scores a continuation, it chooses no option"),
    (_mc(0, ["c", "c"], ["1", "2"], ["-1.0", "-2.0"], "1"),
     "field target: target '1' is ambiguous: an option index and another option's text (--on-bad-row record "
     "imports it ungraded)"),
    (_mc(0, ["c", "c"], ["yes", "no"], ["-1.0", "-2.0"], "maybe"),
     "field target: target 'maybe' is neither an option index nor an option's text (--on-bad-row record "
     "imports it ungraded)"),
    (_mc(0, ["c", "c"], ["yes", "no"], ["-1.0", "nan"], "0"), "field filtered_resps: expected a log-likelihood, "
                                                               "got 'nan'"),
])
def test_multiple_choice_refusals_name_file_row_and_field(cli, here, record, message):
    src = here / "samples_x.jsonl"
    src.write_text(json.dumps(record) + "\n", encoding="utf-8")
    r = cli("import", "lm-eval", src, "--benchmark", "selected_choice", "-o", "pkg", "--no-hash-check")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {src}: row 1: {message}\n")
    assert not (here / "pkg").exists()


def test_acc_mutual_info_requests_are_halved(cli, here):
    # With acc_mutual_info the harness appends each option's unconditional request (empty context).
    rec = _mc(0, ["q", "q", "", ""], ["yes", "no", "yes", "no"], ["-3.0", "-1.0", "-0.5", "-0.1"], "1")
    src = here / "samples_x.jsonl"
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    assert cli("import", "lm-eval", src, "--benchmark", "selected_choice", "-o", "pkg", "--items-out", "items",
               "--no-hash-check").code == 0
    (row,) = _rows(here / "pkg")
    (item,) = _rows(here / "items", "item_row.v1")
    assert (row.response, row.extra["loglikelihoods"], item.reference, item.choices) == ("B", [-3.0, -1.0], "B",
                                                                                         ["yes", "no"])


def test_generate_until_recorded_verdicts_from_a_real_file(cli, here):
    assert _import_recorded(cli, GSM8K, "gsm8k", "gsm", "--items-out", "items") == (
        "wrote recorded.json: gsm8k, 3 items x 1 samples, recorded accuracy 0.00% (0/3) (exact_match)")
    doc = json.loads((here / "recorded.json").read_text(encoding="utf-8"))
    assert doc["responses_package"]["path"] == "gsm"
    assert [(r["item_id"], r["answer"], r["verdict"], r["status"], r["reason"]) for r in doc["items"]] == [
        (str(rec["doc_id"]), None if rec["filtered_resps"][0] == "[invalid]" else rec["filtered_resps"][0],
         "incorrect", "no_answer" if rec["filtered_resps"][0] == "[invalid]" else "incorrect",
         "recorded by lm-eval: exact_match = 0 (filter strict-match)") for rec in _records(GSM8K)
        if rec["filter"] == "strict-match"]
    cli("grade", "gsm", "--items", "items", "--benchmark", "gsm8k", "-o", "regraded.json", "-q")
    assert cli("diff", "recorded.json", "regraded.json").code == 0
    r = cli("import", "lm-eval", GSM8K, "--benchmark", "gsm8k", "-o", "gsm2", "--recorded", "r2.json",
            "--metric", "nope")
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {GSM8K}: row 1: field nope: metric nope is None, not 0 or 1: not a verdict\n"
    assert not (here / "gsm2").exists() and not (here / "r2.json").exists()


def test_recorded_is_never_overwritten_without_force(cli, here):
    (here / "recorded.json").write_text("mine", encoding="utf-8")
    r = cli("import", "lm-eval", ARC, "--benchmark", "selected_choice", "-o", "arc", "--recorded", "recorded.json")
    assert (r.code, r.err) == (2, "audit: error: recorded.json: already exists (use --force to replace it)\n")
    assert not (here / "arc").exists() and (here / "recorded.json").read_text(encoding="utf-8") == "mine"


def test_recorded_answer_is_the_option_the_metrics_rule_chose(cli, here):
    # Options of very different lengths: acc (raw log-likelihood) and acc_norm (per character) choose differently.
    rec = _mc(0, ["q", "q"], ["a very long option text", "b"], ["-6.0", "-2.0"], "0", acc=0.0, acc_norm=1.0,
              metrics=["acc", "acc_norm"])
    src = here / "samples_x.jsonl"
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    for metric, letter, verdict in (("acc", "B", "incorrect"), ("acc_norm", "A", "correct")):
        r = cli("import", "lm-eval", src, "--benchmark", "selected_choice", "-o", f"pkg-{metric}", "--no-hash-check",
                "--recorded", f"{metric}.json", "--metric", metric)
        assert r.code == 0, r.err
        (row,) = json.loads((here / f"{metric}.json").read_text(encoding="utf-8"))["items"]
        assert (row["answer"], row["verdict"], row["reference"]) == (letter, verdict, "A")
    r = cli("import", "lm-eval", src, "--benchmark", "selected_choice", "-o", "pkg", "--no-hash-check", "--recorded", "r.json",
            "--metric", "brier_score")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field brier_score: metric brier_score is None, not 0 "
                                  f"or 1: not a verdict\n")
    rec["exact_match"] = 1
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    r = cli("import", "lm-eval", src, "--benchmark", "selected_choice", "-o", "pkg", "--no-hash-check", "--recorded", "r.json",
            "--metric", "exact_match")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field exact_match: metric exact_match does not score "
                                  f"a chosen option (give --metric one of acc, acc_norm, acc_bytes)\n")


def test_a_target_that_names_no_option_is_recorded_as_bad_input(cli, here):
    good = _mc(0, ["c", "c"], ["yes", "no"], ["-1.0", "-2.0"], "0")
    bad = _mc(1, ["c", "c"], ["yes", "no"], ["-1.0", "-2.0"], "maybe")
    src = here / "samples_x.jsonl"
    src.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    r = cli("import", "lm-eval", src, "--benchmark", "selected_choice", "-o", "pkg", "--no-hash-check", "--on-bad-row", "record",
            "--recorded", "recorded.json")
    assert r.code == 0, r.err
    assert r.out.splitlines()[1] == ("  recorded ungraded (bad_input): samples_x.jsonl: row 2: item 1: target 'maybe' "
                                     "is neither an option index nor an option's text")
    assert r.out.splitlines()[2] == ("wrote recorded.json: selected_choice, 2 items x 1 samples, recorded accuracy 50.00% (1/2) "
                                     "(acc)")
    r = cli("grade", "pkg", "--benchmark", "selected_choice", "-o", "g.json")
    assert r.code == 0, r.err
    assert "statuses: bad_input=1, correct=1" in r.out
    rows = {x["item_id"]: x for x in json.loads((here / "g.json").read_text())["items"]}
    assert (rows["1"]["verdict"], rows["1"]["status"]) == ("ungraded", "bad_input")
