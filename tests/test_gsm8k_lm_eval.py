"""GSM8K from lm-evaluation-harness `--log_samples` files: imported, graded with the `gsm8k` spec, and
scored as lm-eval scored them (a samples file used to import and then grade 0/10 where lm-eval said 7/10:
the math specs read no `\\boxed{}` and compared against the whole solution).

Files: the real samples file in tests/data/lm_eval (see its README), and a faithful ten-record file
written here in the harness's shape from real GSM8K items, whose `exact_match` values come from
lm-eval's filters and metric applied literally (tests/reference_extractors.py).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from audit.packages import open_package
from audit.verdicts import load_verdict_file
from tests.reference_extractors import (
    literal_lmeval_gsm8k_exact_match,
    literal_lmeval_gsm8k_flexible,
    literal_lmeval_gsm8k_strict,
)

REAL = Path(__file__).parent / "data" / "lm_eval" / "samples_gsm8k_2025-04-30T18-24-41.082644.jsonl"
GEN_KWARGS = {"until": ["Question:", "</s>", "<|im_end|>"], "do_sample": False, "temperature": 0.0}
FILTERS = {"strict-match": literal_lmeval_gsm8k_strict, "flexible-extract": literal_lmeval_gsm8k_flexible}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _grade(cli, tmp_path: Path, src: Path, *args: str, name: str = "v.json", filt: str | None = None):
    """Import `src` (for filter `filt`) once, grade it into `name`; the verdict file and lm-eval's scores."""
    tag = filt or "default"
    resp, items = tmp_path / f"resp-{tag}", tmp_path / f"items-{tag}"
    if not resp.exists():
        extra = ("--filter", filt) if filt else ()
        r = cli("import", "lm-eval", src, "-o", resp, "--benchmark", "gsm8k", "--items-out", items, *extra)
        assert r.code == 0, r.err
    out = tmp_path / name
    bench = () if "--benchmark" in args else ("--benchmark", "gsm8k")
    r = cli("grade", resp, "--items", items, "-o", out, "-q", *bench, *args)
    assert r.code == 0, r.err
    vf = load_verdict_file(out)
    with open_package(resp) as p:
        lm_eval = {row.item_id: row.extra["metrics"]["exact_match"] for row in p.iter_rows("response_row.v1")}
    return vf, lm_eval


def test_the_real_samples_file_scores_what_lm_eval_scored(tmp_path, cli):
    vf, lm_eval = _grade(cli, tmp_path, REAL)
    assert (vf.extractor.name, vf.grader.name) == ("gsm8k.answer", "gsm8k.numeric")
    assert lm_eval == {"0": 0.0, "1": 0.0, "2": 0.0}
    ours = {r.item_id: float(r.verdict == "correct") for r in vf.items}
    assert ours == lm_eval
    # no number anywhere in these responses: nothing is read, nothing credited
    assert {(r.status, r.rule) for r in vf.items} == {("no_answer", "none")}
    references = {r.item_id: r.reference for r in vf.items}
    assert references["0"].endswith("#### 18")


# --------------------------------------------------------------------------- a faithful ten-record file


def _docs() -> list[tuple[dict, str]]:
    """(doc, prompt): the real file's three test documents with their 5-shot prompts, then seven of the
    few-shot exemplars in those prompts (GSM8K train items) as documents, asked zero-shot."""
    rows = [json.loads(line) for line in REAL.read_text(encoding="utf-8").splitlines()]
    out = [(r["doc"], r["arguments"]["gen_args_0"]["arg_0"]) for r in rows]
    shots = re.findall(r"Question: (.*?)\nAnswer: (.*?)\n\n", rows[0]["arguments"]["gen_args_0"]["arg_0"] +
                       rows[1]["arguments"]["gen_args_0"]["arg_0"], re.S)
    for q, a in shots[:7]:
        doc = {"question": q, "answer": a}
        out.append((doc, f"Question: {q}\nAnswer:"))
    return out


def _responses(docs: list[tuple[dict, str]]) -> list[str]:
    """Seven solved the way GSM8K solutions are written, three wrong (written for audit)."""
    out = []
    for i, (doc, _) in enumerate(docs):
        solution = re.sub(r"<<.*?>>", "", doc["answer"])
        value = doc["answer"].rsplit("#### ", 1)[1]
        if i in (1, 4, 8):  # wrong: another '####' value, or no '####' and another last number
            wrong = str(int(value.replace(",", "")) + 7)
            out.append(solution.rsplit("#### ", 1)[0] + f"#### {wrong}" if i != 8 else
                       f"I think the answer is {wrong} in total.")
        else:
            out.append(" " + solution)
    return out


def _record(doc_id: int, doc: dict, prompt: str, text: str, filt: str) -> dict:
    filtered = FILTERS[filt](text)
    target = doc["answer"]
    return {"doc_id": doc_id, "doc": doc, "target": target,
            "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": dict(GEN_KWARGS)}},
            "resps": [[text]], "filtered_resps": [filtered], "filter": filt, "metrics": ["exact_match"],
            "doc_hash": _sha(json.dumps(doc, indent=2, ensure_ascii=False)), "prompt_hash": _sha(prompt),
            "target_hash": _sha(target), "exact_match": literal_lmeval_gsm8k_exact_match(filtered, target)}


@pytest.fixture(scope="module")
def faithful(tmp_path_factory) -> Path:
    docs = _docs()
    texts = _responses(docs)
    path = tmp_path_factory.mktemp("lm_eval") / "samples_gsm8k_2026-01-01T00-00-00.000000.jsonl"
    lines = [json.dumps(_record(i, doc, prompt, text, filt), ensure_ascii=False)
             for i, ((doc, prompt), text) in enumerate(zip(docs, texts)) for filt in FILTERS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_faithful_file_grades_seven_of_ten_as_lm_eval_does(faithful, tmp_path, cli):
    for filt in FILTERS:
        vf, lm_eval = _grade(cli, tmp_path, faithful, name=f"{filt}.json", filt=filt)
        assert sum(lm_eval.values()) == 7.0 and len(lm_eval) == 10
        ours = {r.item_id: float(r.verdict == "correct") for r in vf.items}
        assert ours == lm_eval, filt
        assert vf.summary.figures[0].correct == 7
    # what the math spec did with it: no box, and a whole solution as the reference
    vf, _ = _grade(cli, tmp_path, faithful, "--benchmark", "math", name="math.json", filt="strict-match")
    assert sum(r.verdict == "correct" for r in vf.items) == 0


@pytest.mark.parametrize("filt, extractor", [("strict-match", "gsm8k.strict_match@b733598"),
                                             ("flexible-extract", "gsm8k.flexible_extract@b733598")])
def test_the_lm_eval_reproductions_agree_item_by_item_where_the_filters_differ(tmp_path, cli, filt, extractor):
    # responses on which strict-match and flexible-extract disagree (written for audit)
    docs = _docs()[:4]
    texts = [" She sells 9 eggs.\n#### 18\nThat is her income over 2 days.",  # strict 18, flexible 2
             " So it takes 3 bolts in total.",  # no '####': strict invalid, flexible 3
             " #### $70,000",  # a dollar after the marks: strict invalid, flexible $70,000
             " #### 12\n#### 13"]  # strict the first (12, right), flexible the last (13)
    path = tmp_path / "samples_gsm8k_x.jsonl"
    path.write_text("".join(json.dumps(_record(i, doc, prompt, text, f), ensure_ascii=False) + "\n"
                            for i, ((doc, prompt), text) in enumerate(zip(docs, texts)) for f in FILTERS),
                    encoding="utf-8")
    vf, lm_eval = _grade(cli, tmp_path, path, "--extractor", extractor, "--grader", "gsm8k.exact_match@b733598",
                         filt=filt)
    assert {r.item_id: float(r.verdict == "correct") for r in vf.items} == lm_eval
    assert lm_eval == ({"0": 1.0, "1": 0.0, "2": 0.0, "3": 1.0} if filt == "strict-match" else
                       {"0": 0.0, "1": 1.0, "2": 1.0, "3": 0.0})
    # the spec's own reading: the whole number on the '####' line (a `$` before it allowed), else the last number
    spec, _ = _grade(cli, tmp_path, path, name="spec.json", filt=filt)
    assert {r.item_id: (r.rule, r.answer, r.verdict) for r in spec.items} == {
        "0": ("hash_line", "18", "correct"), "1": ("last_number", "3", "correct"),
        "2": ("hash_line", "70,000", "correct"), "3": ("hash_line", "12", "correct")}
    assert (spec.extractor.key, spec.grader.key) == ("gsm8k.answer@3", "gsm8k.numeric@2")


def test_a_fraction_is_read_whole_and_never_credited_for_its_numerator(tmp_path, cli):
    """Issue 20: `#### 2/3` against a gold of 2. lm-eval's strict-match reads `2` and credits it; so did
    gsm8k.answer@1 with gsm8k.numeric@1. The spec's @2 pair reads `2/3` and compares exactly."""
    doc = {"question": "Tom ate 1/3 of a cake. How much is left?", "answer": "He has 1 - 1/3 = 2/3 left.\n#### 2"}
    prompt = f"Question: {doc['question']}\nAnswer:"
    texts = {"0": " 1 - 1/3 = 2/3 of the cake is left.\n#### 2/3", "1": " So 6/3 cakes remain.\n#### 6/3",
             "2": " #### -3", "3": " That is 1,000.5 dollars.\n#### 1,000.5"}
    golds = {"0": "#### 2", "1": "#### 2", "2": "#### -3", "3": "#### 1000.5"}
    path = tmp_path / "samples_gsm8k_fractions.jsonl"
    path.write_text("".join(json.dumps(_record(int(i), {**doc, "answer": doc["answer"].rsplit("#### ", 1)[0] + golds[i]},
                                               prompt, t, "strict-match"), ensure_ascii=False) + "\n"
                            for i, t in texts.items()), encoding="utf-8")
    spec, lm_eval = _grade(cli, tmp_path, path, filt="strict-match")
    assert lm_eval == {"0": 1.0, "1": 0.0, "2": 1.0, "3": 1.0}  # lm-eval credits 2/3 as 2 (and misses 6/3 == 2)
    assert {r.item_id: (r.answer, r.verdict) for r in spec.items} == {
        "0": ("2/3", "incorrect"), "1": ("6/3", "correct"), "2": ("-3", "correct"), "3": ("1,000.5", "correct")}
    old, _ = _grade(cli, tmp_path, path, "--extractor", "gsm8k.answer@1", "--grader", "gsm8k.numeric@1",
                    name="v1.json", filt="strict-match")
    assert {r.item_id: (r.answer, r.verdict) for r in old.items}["0"] == ("2", "correct")  # the false credit @1 kept


def test_a_hash_line_holding_an_equation_is_a_weak_read(tmp_path, cli):
    """Issue 31 item 7: `#### 220 + 90 + 60 = 370` is read 220, as lm-eval's strict match reads it, but was marked
    as strong as a plain `#### N`. gsm8k.answer@3 reads the same under its own rule, of strength `fallback`, so
    `audit grade` says the figure rests on it."""
    doc = {"question": "How many tickets in all?", "answer": "220 + 90 + 60 = 370\n#### 370"}
    prompt = f"Question: {doc['question']}\nAnswer:"
    path = tmp_path / "samples_gsm8k_equation.jsonl"
    path.write_text(json.dumps(_record(0, doc, prompt, " They sold 220, 90 and 60.\n#### 220 + 90 + 60 = 370",
                                       "strict-match"), ensure_ascii=False) + "\n", encoding="utf-8")
    spec, lm_eval = _grade(cli, tmp_path, path, filt="strict-match")
    assert lm_eval == {"0": 0.0}  # strict-match reads 220 too
    (row,) = spec.items
    assert (row.answer, row.rule, row.verdict) == ("220", "hash_line_equation", "incorrect")
    from audit import extractors

    assert extractors.get("gsm8k.answer@3").strength("hash_line_equation") == "fallback"
