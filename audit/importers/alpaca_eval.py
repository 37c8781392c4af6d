"""AlpacaEval `annotations.json` (tatsu-lab/alpaca_eval at cd543a1) -> a judge-calls package.

Every preference is re-derived from `raw_completion`'s first-token top logprobs (`alpaca_eval.logprob@cd543a1`),
the swap bit recomputed by the evaluator's seeded rule (`audit.judge.pairwise.swap_bit`; upstream does not store
it); a row without a completion is a judge failure (`judge_error`), never a draw, unless its two outputs are
identical (upstream's draw without a call). The recorded preference is kept beside the re-derived one; `audit show`
prints the win rate and SE as the leaderboard computes them, from both.
"""

from __future__ import annotations

import math
from typing import Any

from audit.errors import AuditError
from audit.importers.formats import Format, Importer, register_importer
from audit.importers.sources import source_file
from audit.judge import pairwise, rules
from audit.judge.imports import Imported, need, records, rule_key, sha
from audit.judge.models import JudgeCallRow
from audit.judge.rules import Reply


def import_alpaca_eval(path: str, *, seed: int = pairwise.ALPACA_DEFAULT_SEED, fmt: str | None = None) -> Imported:
    """AlpacaEval `annotations.json` -> one call row per instruction (the judged model is `generator_2`)."""
    sf = source_file(path, (".json",), fmt)
    rule = rules.get("alpaca_eval.logprob@cd543a1")
    key = rule_key(rule.key)
    rows: list[JudgeCallRow] = []
    seen: dict[str, int] = {}
    generators: set[tuple[str, str]] = set()
    annotators: set[str] = set()
    for n, obj in records(sf):
        where: dict[str, Any] = {"path": str(sf.path), "row": n}
        instruction = need(obj, "instruction", str, where)
        out1, out2 = need(obj, "output_1", str, where), need(obj, "output_2", str, where)
        recorded = obj.get("preference")
        if recorded is not None and (isinstance(recorded, bool) or not isinstance(recorded, (int, float))):
            raise AuditError("expected a number or null", field="preference", **where)
        item_id = "alpaca_eval/" + sha(instruction)[:16]
        if item_id in seen:
            raise AuditError(f"instruction repeated (first on row {seen[item_id]})", field="instruction", **where)
        seen[item_id] = n
        generators.add((str(obj.get("generator_1")), str(obj.get("generator_2"))))
        annotators.add(str(obj.get("annotator")))
        swapped = pairwise.swap_bit(instruction, seed)
        rc = obj.get("raw_completion")
        extra: dict[str, Any] = {"row": n, "recorded_preference": recorded}
        base: dict[str, Any] = dict(item_id=item_id, response_sha256=sha(out2), template=None,
                    template_source=str(obj.get("annotator")), rule=key, swapped=swapped, extra=extra)
        if rc is None:
            if out1 == out2:
                rows.append(JudgeCallRow(**base, raw_recorded=False, status="preference", preference=1.5,
                                         reason="identical outputs: a draw without a judge call",
                                         not_recorded=["call"]))
            else:
                rows.append(JudgeCallRow(**base, raw_recorded=False, status="judge_error",
                                         reason="no raw_completion recorded: a judge failure, not a draw",
                                         not_recorded=["raw", "logprobs"]))
            continue
        if not isinstance(rc, dict):
            raise AuditError("expected the completion object or null", field="raw_completion", **where)
        lp = rc.get("logprobs")
        content = lp.get("content") if isinstance(lp, dict) else None
        msg = rc.get("message")
        raw = msg.get("content") if isinstance(msg, dict) else rc.get("text")
        p = rule.parse(Reply(raw if isinstance(raw, str) else None,
                             content if isinstance(content, list) else None, swapped))
        if p.preference is not None and recorded is not None and not math.isclose(p.preference, float(recorded),
                                                                                   abs_tol=1e-6):
            extra["differs_from_recorded"] = True
        rows.append(JudgeCallRow(
            **base, raw=raw if isinstance(raw, str) else None, raw_sha256=sha(raw) if isinstance(raw, str) else None,
            logprobs=content if isinstance(content, list) else None,
            finish_reason=rc.get("finish_reason") if isinstance(rc.get("finish_reason"), str) else None,
            parsed=p.parsed, status=p.status, reason=p.reason, preference=p.preference,
            not_recorded=["messages", "sampling", "swap bit (recomputed)"]))
    return Imported(sf, "tatsu-lab/alpaca_eval", "alpaca_eval", rows, {
        "import": "alpaca_eval annotations.json", "swap_rule": f"random.Random('is_switched_outputs' + instruction + "
        f"'{seed}').choices([False, True])[0]", "seed": seed, "generators": sorted(map(list, generators)),
        "annotators": sorted(annotators)}, model=None)


def _is_annotation(fields: set[str]) -> bool:
    return {"instruction", "output_1", "output_2", "preference"} <= fields and ("annotator" in fields
                                                                              or "raw_completion" in fields)


register_importer(Importer(
    "alpaca-eval", "audit.cli.imports.alpaca_eval",
    (Format("alpaca-eval-annotations", "an AlpacaEval annotations.json (instruction, output_1, output_2, "
            "preference, raw_completion)", "audit import alpaca-eval FILE -o CALLS", "alpaca-eval", order=25,
            record=_is_annotation, tabular=False),)), __name__)
