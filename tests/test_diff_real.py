"""`audit diff` on real `audit grade` output (issue 6, "Tests on real data").

The 13,000 real MMLU-Pro responses (13 runs x 1,000 questions) are imported and graded
with the `audit` commands a user runs, once with `mmlu_pro.lmeval` and once with
`mmlu_pro.official@f418b11`, and against the July-2024 and the Feb-2026 gold answers.
Every expectation on the changed rows is computed here from the two verdict files'
rows (plain `json.load`), not from the diff. Packages and verdict files live under
pytest's tmp; the real data is read in place.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from audit.ids import natural_key

from audit import stats
from audit.schemas import SCHEMA_DIR

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]  # ~6 s in all, ~5 s of it the shared gradings

SYNTHETIC_RUN = "answers-2024-gold"
"""The run of the project-written responses that answer each gold-changed item with its 2024 letter."""


def _audit(*args: object) -> None:
    from audit.cli import main

    code = main([str(a) for a in args])
    assert code == 0, args


def _rows(path: Path) -> dict[tuple[str, int], dict]:
    """A verdict file's rows by (item_id, sample), read with plain json (independent of the diff's readers)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {(r["item_id"], r["sample"]): r for r in doc["items"]}


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def mmlu(tmp_path_factory):
    """Packages and gradings shared by the tests below (about 5 s, once per worker)."""
    from tests.conftest import shared_path

    responses_src = shared_path("mmlu_pro/mmlu_pro_responses_sample.jsonl")
    questions_src = shared_path("mmlu_pro/mmlu_pro_test_questions.jsonl")
    diffs_src = shared_path("mmlu_pro/mmlu_pro_version_diffs.jsonl")
    d = tmp_path_factory.mktemp("mmlu_real")

    with diffs_src.open(encoding="utf-8") as f:  # (not splitlines: texts hold U+2028)
        diffs = [json.loads(x) for x in f]
    gold_changed = {str(x["question_id"]): (x["v2024_07"]["answer"], x["v2026_02"]["answer"]) for x in diffs
                    if x["v2024_07"]["answer"] != x["v2026_02"]["answer"]}
    v2024 = {str(x["question_id"]): x["v2024_07"] for x in diffs}
    # The July-2024 copy: the Feb-2026 questions file with every differing item put back as it was.
    questions_2024 = []
    with questions_src.open(encoding="utf-8") as f:
        questions = [json.loads(x) for x in f]
    for q in questions:
        old = v2024.get(str(q["question_id"]))
        if old is not None:
            q.update({k: old[k] for k in ("question", "options", "answer", "answer_index")})
        questions_2024.append(q)
    _write_jsonl(d / "questions-2024.jsonl", questions_2024)

    _audit("import", "table", responses_src, "-o", d / "responses", "--kind", "responses", "--benchmark", "mmlu_pro",
           "--map", "item_id=question_id", "--sample-from", "run_id", "--keep-extra")
    items_maps = ("--kind", "items", "--benchmark", "mmlu_pro", "--map", "item_id=question_id",
                  "--map", "reference=answer", "--map", "choices=options", "--map", "subject=category")
    _audit("import", "table", questions_src, "-o", d / "items-2026", *items_maps)
    _audit("import", "table", d / "questions-2024.jsonl", "-o", d / "items-2024", *items_maps)

    # Project-written responses (not copied data): each gold-changed item answered with its 2024 letter.
    _write_jsonl(d / "answers-2024.jsonl", [{"question_id": int(k), "run_id": SYNTHETIC_RUN,
                                             "response": f"The answer is ({old})."}
                                            for k, (old, _) in sorted(gold_changed.items(), key=lambda x: int(x[0]))])
    _audit("import", "table", d / "answers-2024.jsonl", "-o", d / "answers-2024", "--kind", "responses",
           "--benchmark", "mmlu_pro", "--map", "item_id=question_id", "--sample-from", "run_id")

    grade = ("--benchmark", "mmlu_pro", "--policy", "scope=responses", "-q")
    _audit("grade", d / "responses", "--items", d / "items-2026", "--extractor", "mmlu_pro.lmeval",
           "-o", d / "lmeval.json", *grade)
    _audit("grade", d / "responses", "--items", d / "items-2026", "--extractor", "mmlu_pro.official@f418b11",
           "-o", d / "official.json", *grade)
    _audit("grade", d / "responses", "--items", d / "items-2024", "-o", d / "official-gold2024.json", *grade)
    _audit("grade", d / "answers-2024", "--items", d / "items-2024", "-o", d / "answers-gold2024.json", *grade)
    _audit("grade", d / "answers-2024", "--items", d / "items-2026", "-o", d / "answers-gold2026.json", *grade)

    manifest = json.loads((d / "responses" / "manifest.json").read_text(encoding="utf-8"))
    samples = manifest["provenance"]["extra"]["import"]["sample_from"]["samples"]
    return {"dir": d, "gold_changed": gold_changed, "run_of": {s: run for run, s in samples.items()},
            "sampled_ids": {k[0] for k in _rows(d / "official.json")}}


def _diff_json(cli, old: Path, new: Path) -> dict:
    r = cli("diff", old, new, "--format", "json")
    assert (r.code, r.err) == (1, "")
    doc = json.loads(r.out)
    jsonschema.validate(doc, json.loads((SCHEMA_DIR / "diff_report.v1.json").read_text(encoding="utf-8")))
    return doc


def _changed_independently(old: dict, new: dict) -> list[tuple[str, int]]:
    assert old.keys() == new.keys()
    return sorted((k for k in old if old[k]["verdict"] != new[k]["verdict"]), key=_natural)


def _natural(key: tuple[str, int]) -> tuple:
    # The report lists rows in natural order of the ids ("894" before "1053"), then by sample.
    return (natural_key(key[0]), key[1])


# --------------------------------------------------------------------------- extractor: lm-eval vs official


def test_extractor_diff_lists_exactly_the_changed_verdicts(mmlu, cli):
    d = mmlu["dir"]
    old, new = _rows(d / "lmeval.json"), _rows(d / "official.json")
    expected = _changed_independently(old, new)
    doc = _diff_json(cli, d / "lmeval.json", d / "official.json")

    changed = doc["changed"]
    assert [(r["item_id"], r["sample"]) for r in changed] == expected
    assert len(expected) == 246
    assert all(r["cause"] == "extractor" and r["causes"] == ["extractor"] for r in changed)
    assert doc["causes"] == [{"cause": "extractor", "rows": 246, "transitions": {"incorrect->correct": 246}}]
    assert (doc["aligned"], doc["unchanged"], doc["only_old"], doc["only_new"]) == (13000, 12754, [], [])
    for r in changed:  # each side as its file has it
        k = (r["item_id"], r["sample"])
        for side, rows in (("old", old), ("new", new)):
            assert {f: r[side][f] for f in ("answer", "rule", "verdict", "status")} == \
                {f: rows[k][f] for f in ("answer", "rule", "verdict", "status")}
    # lm-eval's single 'answer is (X)' read nothing; the official cascade's later steps read the gold letter.
    assert {(r["old"]["status"], r["old"]["answer"]) for r in changed} == {("no_answer", None)}
    assert Counter(r["new"]["rule"] for r in changed) == {"L3": 234, "L2": 12}
    assert all(r["new"]["answer"] == new[(r["item_id"], r["sample"])]["reference"] for r in changed)
    # Rows that kept their verdict but read differently: lm-eval nothing, official a wrong letter.
    other = sum(1 for k in old if old[k]["verdict"] == new[k]["verdict"]
                and (old[k]["answer"], old[k]["status"]) != (new[k]["answer"], new[k]["status"]))
    assert doc["other_changes"] == other == 447

    flips = Counter(mmlu["run_of"][r["sample"]] for r in changed)
    assert flips == {"DeepSeek-Coder-V2_5shots": 95, "deepseek_2024-05": 70, "Qwen1.5-7B-Chat_5shots": 39,
                     "gpt4o_2024-05": 14, "jamba-1.5-large_5shots": 9, "gemini-3.1-pro-preview_2026-02": 5,
                     "Mixtral-8x7B-Instruct-v0.1_5shots": 4, "Phi-3-mini-4k-instruct_5shots": 4,
                     "gemini-1.5-pro-002_5shots": 2, "Meta-Llama-3_1-8B-Instruct_5shots": 2,
                     "Llama-2-7b-hf_5shots": 2}

    figs = {f["name"]: f for f in doc["figures"]}
    # JSON keeps both denominators of every changed scope: 11 runs flipped, plus the overall figure.
    assert len(figs) == 2 * (11 + 1)
    for name in ("accuracy", "accuracy_all"):
        f = figs[name]
        assert (f["old"]["correct"], f["old"]["total"], f["new"]["correct"], f["new"]["total"]) == \
            (6907, 13000, 7153, 13000)
        assert (f["to_correct"], f["to_incorrect"], f["pairs"], f["changed"]) == (246, 0, 13000, 246)
        assert f["mcnemar_p"] == stats.mcnemar_exact(246, 0)
    for sample, n in Counter(r["sample"] for r in changed).items():
        f = figs[f"accuracy[sample={sample}]"]
        assert (f["to_correct"], f["to_incorrect"], f["new"]["correct"] - f["old"]["correct"]) == (n, 0, n)


def test_markdown_of_the_real_diff_is_one_screen_per_figure(mmlu, cli):
    d = mmlu["dir"]
    r = cli("diff", d / "lmeval.json", d / "official.json")
    assert (r.code, r.err) == (1, "")
    # Every figure rose: they are upward revisions, not retractions.
    assert "## Retractions" not in r.out
    rises = r.out.split("## Upward revisions\n\n")[1].split("## What the changed verdicts rest on")[0]
    lead, *paragraphs = rises.strip().split("\n\n")
    assert lead == "Figures that rose: the rows support more than OLD recorded (not retractions)."
    # Nothing is ungraded here, so each scope's two denominators are one paragraph: 1 overall + 11 runs.
    assert len(paragraphs) == 12
    assert paragraphs[0] == (
        "**accuracy** = **accuracy_all** (all runs, both denominators: nothing ungraded): recorded 53.13% "
        "(6,907/13,000), recomputed 55.02% (7,153/13,000), Δ +1.89 points. 246 verdicts changed: 246 extractor. "
        "Paired over 13,000 rows: 246 to correct, 0 to incorrect; McNemar exact p = 1.8e-74.")
    assert paragraphs[1].startswith("**accuracy[sample=0]** = **accuracy_all[sample=0]** (run 0, both denominators")
    assert "- rows: 13,000 compared, 246 verdicts changed, 0 only in OLD, 0 only in NEW\n" in r.out
    assert "| extractor | 246 | incorrect → correct 246 |" in r.out
    assert "| … 226 more (all are in --format json) | | | | | | | | |" in r.out
    # What the changes rest on (issue 20): 234 on L3 fallback reads and 12 on L2 statements, so the revision
    # does not rest on fallback reads alone and no hit-rate paragraph is printed.
    rest = r.out.split("## What the changed verdicts rest on\n\n")[1].split("\n\n## ")[0]
    assert "- OLD read them as: no read 246 (246 to correct, 0 to incorrect)\n" in rest
    assert ("- NEW read them as: statement 12 (12 to correct, 0 to incorrect), fallback 234 (234 to correct, 0 to "
            "incorrect)\n") in rest
    assert "fallback reads alone" not in rest
    # Per MMLU-Pro category (the items' subjects, recorded in NEW's verdict file): 14 rows.
    table = r.out.split("## By subject\n\n")[1].split("\n\n## ")[0].splitlines()
    assert table[:3] == ["accuracy_all: every row counts, ungraded rows counted wrong.", "",
                         "| subject | items | OLD | NEW | Δ points | changed | to correct | to incorrect |"]
    assert len(table) == 4 + 14
    assert "| biology | 74 | 68.30% (657/962) | 71.41% (687/962) | +3.12 | 30 | 30 | 0 |" in table
    assert "- `L3` (mmlu_pro.official@f418b11): fallback: the last standalone capital A-J anywhere in the text" in r.out
    assert len(r.out.splitlines()) < 110  # (8 of them say what the changed verdicts rest on)
    assert all(len(line) < 400 for line in r.out.splitlines())


def test_same_grading_twice_exit_0(mmlu, cli):
    d = mmlu["dir"]
    r = cli("diff", d / "official.json", d / "official.json")
    assert r.code == 0 and r.out.endswith("\nNo figure and no verdict changed.\n")


# --------------------------------------------------------------------------- reference: gold 2024 vs 2026


def test_real_responses_against_2024_and_2026_gold(mmlu, cli):
    d = mmlu["dir"]
    gold_changed = mmlu["gold_changed"]
    assert len(gold_changed) == 202
    # The sample was drawn from questions with identical text and options in every run: few gold changes are in it.
    in_sample = sorted(set(gold_changed) & mmlu["sampled_ids"], key=int)
    assert in_sample == ["6491", "6501", "8110", "8884", "11289"]

    old, new = _rows(d / "official-gold2024.json"), _rows(d / "official.json")
    expected = _changed_independently(old, new)
    doc = _diff_json(cli, d / "official-gold2024.json", d / "official.json")
    changed = doc["changed"]
    assert [(r["item_id"], r["sample"]) for r in changed] == expected
    assert {r["item_id"] for r in changed} <= set(in_sample)
    assert Counter(r["item_id"] for r in changed) == {"6491": 10, "6501": 10, "8110": 8, "8884": 8, "11289": 7}
    # The same rows from the answers alone: a row flips when its letter matches exactly one of the two golds.
    assert expected == sorted((k for k, row in old.items() if k[0] in gold_changed and row["answer"] is not None
                               and (row["answer"] == gold_changed[k[0]][0]) != (row["answer"] == gold_changed[k[0]][1])),
                              key=_natural)
    assert all(r["cause"] == "reference" and r["causes"] == ["reference"] for r in changed)
    for r in changed:
        assert (r["old"]["reference"], r["new"]["reference"]) == gold_changed[r["item_id"]]
        assert r["old"]["answer"] == r["new"]["answer"]
    # Most flips go to correct: more of the 13 models agree with the corrected 2026 gold than with the 2024 one.
    assert doc["causes"] == [{"cause": "reference", "rows": 43,
                              "transitions": {"correct->incorrect": 12, "incorrect->correct": 31}}]
    assert any(n.startswith("items packages differ: OLD items-") for n in doc["notes"])


def test_every_gold_change_shows_with_cause_reference(mmlu, cli):
    d = mmlu["dir"]
    gold_changed = mmlu["gold_changed"]
    old, new = _rows(d / "answers-gold2024.json"), _rows(d / "answers-gold2026.json")
    expected = _changed_independently(old, new)
    doc = _diff_json(cli, d / "answers-gold2024.json", d / "answers-gold2026.json")
    changed = doc["changed"]
    assert [(r["item_id"], r["sample"]) for r in changed] == expected
    assert {r["item_id"] for r in changed} == set(gold_changed) and len(changed) == 202
    assert doc["causes"] == [{"cause": "reference", "rows": 202, "transitions": {"correct->incorrect": 202}}]
    for r in changed:
        assert r["old"]["answer"] == r["new"]["answer"] == r["old"]["reference"] == gold_changed[r["item_id"]][0]
        assert r["new"]["reference"] == gold_changed[r["item_id"]][1]
    acc = {f["name"]: f for f in doc["figures"]}["accuracy"]
    assert (acc["old"]["correct"], acc["new"]["correct"], acc["to_incorrect"]) == (202, 0, 202)
