"""Golden tables under tests/golden/extractors/: every row's answer, rule and span, and every rule of every extractor reached."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.reference_extractors import (
    literal_lmeval,
    literal_lmeval_gsm8k_flexible,
    literal_lmeval_gsm8k_strict,
    literal_official_rule,
    literal_official_x,
    literal_simple_evals,
)

from audit import extractors

GOLDEN = Path(__file__).parent / "golden" / "extractors"

ROWS = [(f"{p.name}:{i}", json.loads(line))
        for p in sorted(GOLDEN.glob("*.jsonl"))
        for i, line in enumerate(p.read_text(encoding="utf-8").split("\n"), 1) if line.strip()]

LITERAL = {
    "mmlu_pro.official@f418b11": lambda t: literal_official_rule(t)[0],
    "mmlu_pro.official_x@7535b16": literal_official_x,
    "mmlu_pro.lmeval@325f168": lambda t: (None if (a := literal_lmeval(t)) == "[invalid]" else a),
    "gpqa.simple_evals@ee3b031": literal_simple_evals,
    "gsm8k.strict_match@b733598": lambda t: (None if (a := literal_lmeval_gsm8k_strict(t)) == "[invalid]" else a),
    "gsm8k.flexible_extract@b733598": lambda t: (None if (a := literal_lmeval_gsm8k_flexible(t)) == "[invalid]" else a),
}
"""Reproduction extractors and the upstream regexes applied literally."""


CLEANED = {"math.final@1"}
"""Extractors whose answer may join several parts of the text or drop stray `$` from it."""


def _assert_parts_in(answer: str, evidence: str) -> None:
    """Each joined part's value (after its `label = `) lies in the evidence, `$` and spaces aside."""
    def squeeze(s: str) -> str:
        return re.sub(r"[\s$]", "", s)

    for part in re.split(r", | \\text\{ or \} ", answer):
        assert squeeze(part.split(" = ")[-1]) in squeeze(evidence), (part, evidence)


@pytest.mark.parametrize("where,row", ROWS, ids=[w for w, _ in ROWS])
def test_golden_row(where, row):
    ex = extractors.get(row["extractor"])
    got = ex.extract(row["text"], finish_reason=row["finish_reason"], options=row.get("options"))
    assert (got.answer, got.rule) == (row["answer"], row["rule"]), row["trap"]
    if "span" in row:
        assert got.span == (tuple(row["span"]) if row["span"] else None)
    if got.answer is not None:
        start, end = got.span
        if row["extractor"] in CLEANED:
            _assert_parts_in(got.answer, row["text"][start:end])
        else:
            assert got.answer in row["text"][start:end]
    if row["text"] is not None and row["extractor"] in LITERAL and row["finish_reason"] is None:
        assert got.answer == LITERAL[row["extractor"]](row["text"])


def test_every_row_names_its_source_and_trap():
    for where, row in ROWS:
        assert row["source"] and row["trap"], where
        if "gpqa" in row["source"]:
            assert row["source"].startswith("synthetic"), f"{where}: GPQA rows must be synthetic"


def test_golden_rows_reach_every_rule_of_every_extractor():
    # The rules are the ones each extractor declares at registration (`no_response` is every extractor's).
    declared = {e.key: set(e.rules) for e in extractors.all_extractors()}
    reached: dict[str, set[str]] = {key: set() for key in declared}
    for _, row in ROWS:
        ex = extractors.get(row["extractor"])
        got = ex.extract(row["text"], finish_reason=row["finish_reason"], options=row.get("options"))
        reached[ex.key].add(got.rule)
    missing = {key: sorted(rules - reached[key]) for key, rules in declared.items() if rules - reached[key]}
    assert not missing
    unexpected = {key: sorted(rules - declared[key] - {extractors.RULE_NO_RESPONSE})
                  for key, rules in reached.items() if rules - declared[key] - {extractors.RULE_NO_RESPONSE}}
    assert not unexpected


def test_every_extractor_declares_its_rules():
    for ex in extractors.all_extractors():
        assert ex.rules and len(set(ex.rules)) == len(ex.rules), ex.key
        assert extractors.RULE_NO_RESPONSE not in ex.rules, ex.key
    with pytest.raises(extractors.RegistryError, match="`rules` must list each rule"):
        extractors.register("probe", "1", description="no rules", rules=())


def test_mmlu_pro_official_spans_match_the_literal_cascade():
    for where, row in ROWS:
        if row["extractor"] == "mmlu_pro.official@f418b11" and row["text"] is not None:
            got = extractors.get(row["extractor"]).extract(row["text"])
            assert (got.answer, got.rule, got.span) == literal_official_rule(row["text"]), where
