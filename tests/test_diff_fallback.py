"""Issue 20: verdict changes that rest on fallback reads, on the upstream MMLU-Pro zip of Meta-Llama-3-70B.

Upstream stored `pred: null` for rows where its cascade (at the time of that run) read nothing; the official
cascade's last rule (L3, the last standalone capital A-J anywhere) reads a letter in 345 of them, 44 of which
match the gold letter: `audit diff recorded regraded` used to report "+0.37 points, 44 to correct, McNemar
p = 1e-13" and nothing else. Every expectation is computed here from the verdict files' rows and the
package's texts (plain json), not from the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

ZIP = "mmlu_pro/upstream_zips/model_outputs_Meta-Llama-3-70B_5shots.zip"
MID_SENTENCE_ENDS = ".!?…。！？)]}>*$`\"'”’»|"


def _mid_sentence(text: str) -> bool:
    """The heuristic, written out: the last character ends no sentence, and the text does not close on a
    short plain line ending in a lone capital (`Answer: C`)."""
    tail = text.rstrip()
    if tail[-1] in MID_SENTENCE_ENDS:
        return False
    last = tail.split("\n")[-1]
    lone = len(last) <= 39 and all(c.isalpha() and c.isascii() or c in " \t*:()'’-" for c in last[:-1])
    return not (lone and tail[-1].isupper() and tail[-1].isascii() and (len(tail) == 1 or tail[-2] in " \t\n:(*"))


def _rows(path: Path) -> dict[tuple[str, int], dict]:
    return {(r["item_id"], r["sample"]): r for r in json.loads(path.read_text(encoding="utf-8"))["items"]}


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from audit.cli import main
    from tests.conftest import shared_path

    src = shared_path(ZIP)
    d = tmp_path_factory.mktemp("llama70b")

    def audit(*args: object) -> None:
        assert main([str(a) for a in args]) == 0, args

    audit("import", "mmlu-pro", src, "-o", d / "pkg", "--items-out", d / "items", "--recorded", d / "recorded.json")
    common = ("--items", d / "items", "-q")
    audit("grade", d / "pkg", *common, "--benchmark", "mmlu_pro", "-o", d / "official.json")
    audit("grade", d / "pkg", *common, "--benchmark", "mmlu_pro", "--policy", "no_answer=random-guess",
          "-o", d / "guess.json")
    audit("grade", d / "pkg", *common, "--benchmark", "mmlu_pro_strict", "-o", d / "strict.json")
    texts = {r["item_id"]: r["response"] for r in map(json.loads, (d / "pkg" / "responses.jsonl").open(encoding="utf-8"))}
    return d, texts


def test_random_guess_still_gives_the_upstream_figure(llama):
    from audit.verdicts import load_verdict_file

    d, _ = llama
    fig = {f.name: f for f in load_verdict_file(d / "guess.json").summary.figures}["accuracy_all"]
    assert (fig.correct, fig.total, f"{fig.value:.2%}") == (6351, 12032, "52.78%")


def test_a_revision_resting_on_fallback_reads_alone_says_so_with_their_hit_rate(llama, cli):
    d, texts = llama
    old, new = _rows(d / "recorded.json"), _rows(d / "official.json")
    changed = [k for k in old if old[k]["verdict"] != new[k]["verdict"]]
    reads = [k for k in old if new[k]["rule"] == "L3" and old[k]["answer"] is None]
    hits = [k for k in reads if new[k]["verdict"] == "correct"]
    assert (len(changed), len(reads), len(hits)) == (44, 345, 44)
    assert all(new[k]["rule"] == "L3" and old[k]["answer"] is None for k in changed)

    r = cli("diff", d / "recorded.json", d / "official.json", "--format", "json")
    assert r.code == 1
    doc = json.loads(r.out)
    assert doc["fallback"] == {"side": "new", "extractor": "mmlu_pro.official@f418b11", "rules": ["L3"],
                               "changed": 44, "reads": 345, "hits": 44, "hit_rate": 44 / 345, "letters": 10,
                               "chance": 0.1, "p_value": pytest.approx(0.0573, abs=5e-4)}
    assert doc["strengths"] == [{"side": "new", "strength": "fallback", "rows": 44, "to_correct": 44,
                                 "to_incorrect": 0}]
    # possibly cut: no finish reason (upstream keeps none) and the text's last character ends no sentence
    cut = sorted(f"{k[0]}:{k[1]}" for k in changed if _mid_sentence(texts[k[0]]))
    assert len(cut) == 37
    assert doc["possibly_cut"] == {"checked": 44, "rows": 37, "items": sorted(cut, key=lambda s: int(s.split(":")[0])),
                                   "note": None}

    md = cli("diff", d / "recorded.json", d / "official.json").out
    assert ("**Every changed verdict rests on fallback reads alone**: NEW read each of the 44 changed rows with a "
            "fallback rule (`L3` of mmlu_pro.official@f418b11) where OLD read no answer. Over all 345 such reads, "
            "not only the changed ones, 44 are correct: a hit rate of 12.75%; chance for 10 letters is 10.00% "
            "(one-sided exact binomial p = 0.057).") in md
    assert "- possibly cut (a heuristic, not a verdict): 37 of the 44 changed rows" in md


def test_the_strict_spec_shows_the_figure_s_sensitivity_to_fallback_reads(llama, cli):
    d, _ = llama
    official, strict = _rows(d / "official.json"), _rows(d / "strict.json")
    assert {r["rule"] for r in strict.values()} == {"L1", "none"}
    l3 = [k for k, r in official.items() if r["rule"] == "L3"]
    assert all(strict[k]["status"] == "no_answer" for k in l3)
    doc = json.loads(cli("diff", d / "official.json", d / "strict.json", "--format", "json").out)
    # official's 44 lucky L3 letters are all that the strict reading takes away
    assert doc["causes"] == [{"cause": "extractor", "rows": 44, "transitions": {"correct->incorrect": 44}}]
    assert (doc["fallback"]["side"], doc["fallback"]["reads"], doc["fallback"]["hits"]) == ("old", 345, 44)
    assert [(s["side"], s["strength"], s["rows"]) for s in doc["strengths"]] == [("old", "fallback", 44),
                                                                                   ("new", "no read", 44)]


def test_grade_prints_reads_by_strength_and_possibly_cut_rows(llama, cli):
    d, texts = llama
    r = cli("grade", d / "pkg", "--items", d / "items", "--benchmark", "mmlu_pro", "-o", d / "again.json")
    assert r.code == 0
    rows = _rows(d / "again.json")
    cut = {k for k, row in rows.items() if _mid_sentence(texts[k[0]])}
    on_l3 = sum(1 for k in cut if rows[k]["rule"] == "L3")
    on_none = sum(1 for k in cut if rows[k]["rule"] == "none")
    assert "reads by strength: statement 11,218 (93.23%), fallback 345 (2.87%), no answer 469 (3.90%)" in r.out
    assert (f"possibly cut (a heuristic, not a verdict): {len(cut):,} rows have no finish reason and stop "
            f"mid-sentence; {on_l3:,} of the 345 fallback reads and {on_none:,} of the 469 no-answer rows are "
            f"among them") in r.out
    assert "warning:" not in r.out  # the spec fits these responses


def test_an_imported_file_is_not_said_to_have_applied_a_policy(llama, cli):
    """Issue 20: the recorded file's policies are placeholders; `diff` said "policy no_answer: wrong ->
    random-guess" as if upstream had counted null preds wrong by policy."""
    d, _ = llama
    doc = json.loads(cli("diff", d / "recorded.json", d / "guess.json", "--format", "json").out)
    assert doc["notes"] == ["extractor: none (imported) -> mmlu_pro.official@f418b11",
                            "grader: none (imported) -> choice@1"]
