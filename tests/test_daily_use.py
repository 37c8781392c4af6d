"""What a new user reads every day (issue 12, "Daily use"), as exact CLI output: per-subject figures in `grade`,
`show` and `diff`, item ids in natural order, retractions only for figures that fell, rule labels in words,
the guessed letter of random-guess rows, and the zero-failure bound said in words."""

from __future__ import annotations

import json

import pytest
from tests.builders import make_package
from tests.conftest import REPO

from audit.packages import open_package
from audit.producer import producer

OPTIONS = ["a", "b", "c", "d"]
ITEMS = [
    {"item_id": "q1", "reference": "A", "choices": OPTIONS, "subject": "physics"},
    {"item_id": "q2", "reference": "B", "choices": OPTIONS, "subject": "biology"},
    {"item_id": "q10", "reference": "C", "choices": OPTIONS, "subject": "physics"},
    {"item_id": "q11", "reference": "D", "choices": OPTIONS, "subject": "biology"},
]
# The official MMLU-Pro cascade reads q1 at L1, q2 at L3 and q10 at L2; lm-eval's filter reads q1 only.
RESPONSES = [
    {"item_id": "q1", "sample": 0, "response": "The answer is (A)."},
    {"item_id": "q2", "sample": 0, "response": "I pick B"},
    {"item_id": "q10", "sample": 0, "response": "Answer: C"},
    {"item_id": "q11", "sample": 0, "response": "no idea"},
]


@pytest.fixture
def graded(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    make_package(tmp_path / "pkg", responses=RESPONSES, items=ITEMS, benchmark="mmlu_pro", package_id="subjects")
    out = {}
    for name, extra in (("official", []), ("lmeval", ["--extractor", "mmlu_pro.lmeval@325f168"]),
                        ("guess", ["--policy", "no_answer=random-guess"])):
        r = cli("grade", "pkg", "--benchmark", "mmlu_pro", "-o", f"{name}.json", *extra)
        assert (r.code, r.err) == (0, ""), r.err
        out[name] = r.out
    with open_package(tmp_path / "pkg") as pkg:
        out["digest"] = pkg.digest[:12]
    return out


# The per-subject table and the rules that fired, as both `grade` and `show` print them.
SUBJECTS_AND_RULES = """\
per subject (2):
  subject  items  accuracy              accuracy_all
  biology      2  50.00% (1/2)          50.00% (1/2)
  physics      2  100.00% (2/2)         100.00% (2/2)
rules that fired (mmlu_pro.official@f418b11):
  L1          1  the first 'answer is (X)' (case-sensitive)
  L2          1  'Answer: X' on the first line that has one (the last on that line)
  L3          1  fallback: the last standalone capital A-J anywhere in the text
  none        1  no letter found (upstream then scores a seeded random guess)
"""

GRADE_OUTPUT = """\
wrote official.json
mmlu_pro: 4 rows, 4 items x 1 samples; extractor mmlu_pro.official@f418b11, grader choice@1
accuracy[sample=0]            75.00%  (3/4)  binomial_2se [31.70, 100.00]; wilson [30.06, 95.44]; clopper_pearson [19.41, 99.37]
accuracy                      75.00%  (3/4)  binomial_2se [31.70, 100.00]; wilson [30.06, 95.44]; clopper_pearson [19.41, 99.37]
accuracy_all[sample=0]        75.00%  (3/4)  binomial_2se [31.70, 100.00]; wilson [30.06, 95.44]; clopper_pearson [19.41, 99.37]
accuracy_all                  75.00%  (3/4)  binomial_2se [31.70, 100.00]; wilson [30.06, 95.44]; clopper_pearson [19.41, 99.37]
statuses: correct=3, no_answer=1
""" + SUBJECTS_AND_RULES + """\
reads by strength: statement 2 (50.00%), fallback 1 (25.00%), no answer 1 (25.00%)
  1 row rests on a fallback read (L3): a read of last resort from text that states no answer
possibly cut (a heuristic, not a verdict): 1 row has no finish reason and stops mid-sentence; 0 of the 1 fallback reads and 1 of the 1 no-answer rows are among them
"""


def test_grade_prints_figures_per_subject_and_the_rules_that_fired_in_words(graded):
    assert graded["official"] == GRADE_OUTPUT


def test_the_verdict_file_records_the_subjects_with_their_items_in_natural_order(graded, tmp_path):
    doc = json.loads((tmp_path / "official.json").read_text(encoding="utf-8"))
    assert doc["schema_version"] == 3
    subjects = doc["summary"]["subjects"]
    assert [(s["subject"], s["items"]) for s in subjects] == [("biology", ["q2", "q11"]), ("physics", ["q1", "q10"])]
    assert [(f["name"], f["correct"], f["total"]) for f in subjects[1]["figures"]] == [("accuracy", 2, 2),
                                                                                     ("accuracy_all", 2, 2)]
    # The rows themselves stay in code-point order (what readers check and what reproduces byte for byte).
    assert [r["item_id"] for r in doc["items"]] == ["q1", "q10", "q11", "q2"]


def test_show_summarises_a_verdict_file(graded, cli):
    r = cli("show", "official.json")
    prod = producer()
    commit = f" {prod.git_commit[:12]}{'+dirty' if prod.git_dirty else ''}" if prod.git_commit else ""
    assert (r.code, r.err) == (0, "")
    assert r.out == f"""\
verdicts   official.json (verdict file, schema version 3)
benchmark  mmlu_pro: 4 rows, 4 items x 1 samples
responses  subjects (digest {graded["digest"]}…) at pkg
extractor  mmlu_pro.official@f418b11 (fingerprint 4e4f5e6f85e5…)
grader     choice@1 (fingerprint af31de8356d3…)
policies   truncation=wrong, resampling=original, no_answer=wrong, guess_seed=12345, scope=items
producer   {prod.tool} {prod.version}{commit}
figures (one run: the run's figures are the overall ones)
  accuracy                      75.00%  (3/4)  binomial_2se [31.70, 100.00]; wilson [30.06, 95.44]; clopper_pearson [19.41, 99.37]
  accuracy_all                  75.00%  (3/4)  binomial_2se [31.70, 100.00]; wilson [30.06, 95.44]; clopper_pearson [19.41, 99.37]
statuses   correct=3, no_answer=1
""" + SUBJECTS_AND_RULES


def test_show_names_what_a_file_that_is_neither_package_nor_verdict_file_looks_like(cli, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    r = cli("show", tmp_path / "notes.txt")
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {tmp_path / 'notes.txt'}: not a package or a verdict file: expected a package "
                     f"directory, a .tar.gz or a verdict file\n")


def test_a_rise_is_an_upward_revision_listed_in_natural_order_with_subjects_and_rules(graded, cli):
    r = cli("diff", "lmeval.json", "official.json")
    d = graded["digest"]
    assert (r.code, r.err) == (1, "")
    assert r.out == f"""\
# audit diff

- OLD: `lmeval.json` — mmlu_pro, 4 rows (json-stream); extractor mmlu_pro.lmeval@325f168, grader choice@1; responses subjects {d}
- NEW: `official.json` — mmlu_pro, 4 rows (json-stream); extractor mmlu_pro.official@f418b11, grader choice@1; responses subjects {d}
- rows: 4 compared, 2 verdicts changed, 0 only in OLD, 0 only in NEW
- note: extractor: mmlu_pro.lmeval@325f168 -> mmlu_pro.official@f418b11

## Upward revisions

Figures that rose: the rows support more than OLD recorded (not retractions).

**accuracy** = **accuracy_all** (all runs, both denominators: nothing ungraded): recorded 25.00% (1/4), recomputed 75.00% (3/4), Δ +50.00 points. 2 verdicts changed: 2 extractor. Paired over 4 rows: 2 to correct, 0 to incorrect; McNemar exact p = 0.500.

## What the changed verdicts rest on

- OLD read them as: no read 2 (2 to correct, 0 to incorrect)
- NEW read them as: statement 1 (1 to correct, 0 to incorrect), fallback 1 (1 to correct, 0 to incorrect)
- possibly cut (a heuristic, not a verdict): 0 of the 2 changed rows whose text was read have no finish reason and stop mid-sentence

(`statement`: the response states its answer; `format`: it matches the format asked for; `fallback`: a read of last resort from text that states no answer; `no read`: no answer read.)

## By subject

accuracy_all: every row counts, ungraded rows counted wrong.

| subject | items | OLD | NEW | Δ points | changed | to correct | to incorrect |
| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |
| biology | 2 | 0.00% (0/2) | 50.00% (1/2) | +50.00 | 1 | 1 | 0 |
| physics | 2 | 50.00% (1/2) | 100.00% (2/2) | +50.00 | 1 | 1 | 0 |

## Changed verdicts by cause

| cause | rows | transitions |
| --- | ---: | --- |
| extractor | 2 | incorrect → correct 2 |

### extractor (2)

| item_id | sample | old answer | new answer | old rule | new rule | old verdict | new verdict | note |
| --- | ---: | --- | --- | --- | --- | --- | --- | --- |
| q2 | 0 | — | B | none | L3 | incorrect (no_answer) | correct |  |
| q10 | 0 | — | C | none | L2 | incorrect (no_answer) | correct |  |

Rules in the changed rows, in words:

- `none` (mmlu_pro.lmeval@325f168): no 'answer is (X)' (lm-eval logs [invalid])
- `L2` (mmlu_pro.official@f418b11): 'Answer: X' on the first line that has one (the last on that line)
- `L3` (mmlu_pro.official@f418b11): fallback: the last standalone capital A-J anywhere in the text
"""
    doc = json.loads(cli("diff", "lmeval.json", "official.json", "--format", "json").out)
    assert [r["item_id"] for r in doc["changed"]] == ["q2", "q10"]
    assert [(s["subject"], s["items"], s["changed"]) for s in doc["subjects"]] == [("biology", 2, 1),
                                                                                   ("physics", 2, 1)]


def test_a_fall_is_a_retraction(graded, cli):
    r = cli("diff", "official.json", "lmeval.json")
    assert r.code == 1
    assert "## Upward revisions" not in r.out
    assert r.out.split("\n## ")[1].split("\n\n")[:2] == [
        "Retractions", "Figures that fell: the rows support less than OLD recorded."]
    assert "| physics | 2 | 100.00% (2/2) | 50.00% (1/2) | -50.00 | 1 | 0 | 1 |" in r.out


def test_a_random_guess_row_shows_the_guessed_letter(graded, cli):
    r = cli("diff", "official.json", "guess.json")
    assert r.code == 1
    assert ("| q11 | 0 | — | — (guessed D) | none | none | incorrect (no_answer) | correct (random_guess) |  |"
            in r.out.splitlines())


def test_no_correct_row_names_the_bound_in_words(cli, tmp_path):
    # `zero_failure_upper` was printed for 0 correct: here it is an upper bound on accuracy, said so.
    wrong = [{**r, "response": "The answer is (J)."} for r in RESPONSES]
    make_package(tmp_path / "pkg", responses=wrong, items=ITEMS, benchmark="mmlu_pro")
    r = cli("grade", tmp_path / "pkg", "--benchmark", "mmlu_pro", "-o", tmp_path / "r.json")
    assert r.code == 0
    assert r.out.splitlines()[3] == ("accuracy                       0.00%  (0/4)  binomial_2se [0.00, 0.00]; wilson "
                                     "[0.00, 48.99]; clopper_pearson [0.00, 60.24]; no row correct: accuracy ≤ 52.71% "
                                     "(exact one-sided 95% upper bound)")
    right = [{**r, "response": f"The answer is ({i['reference']})."} for r, i in zip(RESPONSES, ITEMS)]
    make_package(tmp_path / "right", responses=right, items=ITEMS, benchmark="mmlu_pro")
    r = cli("grade", tmp_path / "right", "--benchmark", "mmlu_pro", "-o", tmp_path / "all.json")
    assert r.out.splitlines()[3] == ("accuracy                     100.00%  (4/4)  binomial_2se [100.00, 100.00]; wilson "
                                     "[51.01, 100.00]; clopper_pearson [39.76, 100.00]; no row wrong: accuracy ≥ 47.29% "
                                     "(exact one-sided 95% lower bound)")


def test_reproduce_lists_the_rows_that_differ_in_natural_order(graded, cli, tmp_path):
    path = tmp_path / "official.json"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = [line.replace('"status":"correct"', '"status":"incorrect"').replace('"verdict":"correct"',
                                                                                   '"verdict":"incorrect"')
              if line.startswith(('    {"item_id":"q2"', '    {"item_id":"q10"')) else line for line in lines]
    path.write_text("".join(edited), encoding="utf-8")
    r = cli("reproduce", "official.json")
    assert r.code == 1
    assert r.out.splitlines()[:-1] == [
        "differs: official.json (2 differences)",
        "  q2 sample 0: recorded ('incorrect', 'incorrect', 'B'), now ('correct', 'correct', 'B')",
        "  q10 sample 0: recorded ('incorrect', 'incorrect', 'C'), now ('correct', 'correct', 'C')"]


def test_show_says_what_a_release_holds(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("demo", "--out", "out").code == 0
    r = cli("show", "out/release-gpqa_diamond")
    assert (r.code, r.err) == (0, "")
    assert r.out.split("B  sha256 ")[-1].splitlines()[1:] == [
        "release    6 rows: 6 items x 1 samples; 6 protected items published as verdict and status only",
        "graded by  gpqa.final_line@1 + choice@1",
        "statuses   correct=3, incorrect=1, truncated=2",
        "figures",
        "  accuracy[sample=0]            50.00%  (3/6)  binomial_2se [9.18, 90.82]; wilson [18.76, 81.24]; "
        "clopper_pearson [11.81, 88.19]",
        "  accuracy                      50.00%  (3/6)  binomial_2se [9.18, 90.82]; wilson [18.76, 81.24]; "
        "clopper_pearson [11.81, 88.19]",
        "  accuracy_all[sample=0]        50.00%  (3/6)  binomial_2se [9.18, 90.82]; wilson [18.76, 81.24]; "
        "clopper_pearson [11.81, 88.19]",
        "  accuracy_all                  50.00%  (3/6)  binomial_2se [9.18, 90.82]; wilson [18.76, 81.24]; "
        "clopper_pearson [11.81, 88.19]"]


EVIDENCE = REPO / "packages"


@pytest.mark.parametrize("package,tail", [
    ("evidence-h200-trace/profile-decode-tp1", [
        "steps       33 complete (31 selected by /_context_0\\(0\\)_generation_[1-9]/); GPU events launched before the "
        "first marker: 0, after the last (a step without an end): 0",
        "kernels     per step: median 436, 436 to 437; by stream 7: median 436, 436 to 437",
        "step time   median 4.817 ms (marker to marker), GPU window median 4.832 ms",
        "main stream 7 (most kernels): busy 93.84% of 151.277 ms (the selected steps' GPU windows); 13,628 gaps, "
        "median 0.417 µs, longest 677.407 µs",
        "cuda graphs 31 launches ran 12,958 kernels; kernels per launch: 418 (constant); launches per step: 1 "
        "(constant)",
        "note: kernels per step vary from 436 to 437 across 31 steps",
        "note: 31 CUDA-graph launches ran 12,958 kernels (each kernel counted in the step of its graph's launch)"]),
    ("evidence-h200-bench/ngram", [
        "tok/s      481.8 ± 17.5 (2·se) over 3 valid windows, 472.8 to 499.3 by window (audit bench report for all "
        "figures)"]),
    ("evidence-h200-floor/floor-qwen3-30b-a3b.tar.gz", [
        "bytes/token by dtype: BF16 6,146,654,208",
        "floor: 6,146,654,208 bytes/token / (1 GPU x 4.814 TB/s from NVML (NVIDIA H200: 6016-bit bus x 3201 MHz x "
        "2)) = 1.277 ms/token, 783.2 tok/s (context 640)"]),
])
def test_show_says_what_a_measurement_package_holds(cli, package, tail):
    r = cli("show", EVIDENCE / package)
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines()[-len(tail):] == tail
