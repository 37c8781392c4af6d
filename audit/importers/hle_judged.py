"""HLE's judged JSON (`judged_*.json` of centerforaisafety/hle `run_judge_results.py` at a590489) -> a
judge-calls package of the parsed fields only: upstream keeps no raw reply, no prompt, no sampling, so each row
is marked "raw response not recorded" (`raw_recorded` false) and its verdict rests on the parsed `correct`
(upstream's `"yes" in correct`). A question without a judge response is a judge error. Upstream copies the gold
answer into the file (`correct_answer`): it is kept in the row's `extra`, and every row is protected.
"""

from __future__ import annotations

from typing import Any

from audit.errors import AuditError
from audit.importers.formats import Format, Importer, register_importer
from audit.importers.sources import check_pinned, source_file
from audit.judge.imports import Imported, rule_key, sha
from audit.judge.models import ComponentKey, JudgeCallRow


def import_hle_judged(path: str, fmt: str | None = None) -> Imported:
    """HLE's `judged_*.json` -> one row per question, the parsed fields only ("raw response not recorded")."""
    from audit.fileio import JsonError, document_bytes, loads_strict

    sf = source_file(path, (".json",), fmt)
    data = document_bytes(sf.path, 1 << 30, what="an HLE judged file")
    check_pinned(sf, data)
    try:
        obj = loads_strict(data)
    except JsonError as e:
        raise AuditError(str(e), path=str(sf.path)) from None
    if not isinstance(obj, dict):
        raise AuditError("expected an object of question id -> prediction", path=str(sf.path))
    key = rule_key("hle.substring@a590489")
    rows: list[JudgeCallRow] = []
    models: set[str] = set()
    for qid, pred in obj.items():
        where: dict[str, Any] = {"path": str(sf.path), "field": qid}
        if not isinstance(pred, dict):
            raise AuditError("expected a prediction object", **where)
        response = pred.get("response")
        models.add(str(pred.get("model")))
        base: dict[str, Any] = dict(item_id=qid, response_sha256=sha(response) if isinstance(response, str) else None,
                    template=ComponentKey(name="hle.official", version="a590489",
                                          fingerprint=_template_fp("hle.official@a590489")),
                    rule=key, raw_recorded=False, protected=True,
                    not_recorded=["raw", "messages", "sampling", "usage", "model_served"])
        jr = pred.get("judge_response")
        if jr is None:
            rows.append(JudgeCallRow(**base, status="judge_error",
                                     reason="no judge response (upstream: rerun the judge)"))
            continue
        if not isinstance(jr, dict) or not isinstance(jr.get("correct"), str):
            raise AuditError("judge_response.correct: expected a string", **where)
        conf = jr.get("confidence")
        if conf is not None and (isinstance(conf, bool) or not isinstance(conf, int)):
            raise AuditError("judge_response.confidence: expected an integer", **where)
        ok = "yes" in jr["correct"]
        parsed = {"extracted_final_answer": jr.get("model_answer"), "reasoning": jr.get("reasoning"),
                  "correct": jr["correct"], "confidence": conf}
        rows.append(JudgeCallRow(**base, parsed=parsed, status="correct" if ok else "incorrect",
                                 reason="raw response not recorded: upstream's parsed fields, 'yes' "
                                        f"{'in' if ok else 'not in'} correct",
                                 extra={"correct_answer": jr.get("correct_answer")}))
    rows.sort(key=lambda r: r.item_id)
    return Imported(sf, "centerforaisafety/hle", "hle", rows,
                    {"import": "hle judged json", "raw_recorded": False, "models": sorted(models)})


def _template_fp(spec: str) -> str:
    from audit.judge import templates

    return templates.get(spec).fingerprint


def _is_judged(obj: dict[str, Any]) -> bool:
    values = list(obj.values())[:20]
    return bool(values) and all(isinstance(v, dict) and isinstance(v.get("judge_response"), dict)
                                for v in values[:1]) and all(isinstance(v, dict) for v in values)


register_importer(Importer(
    "hle-judged", "audit.cli.imports.hle_judged",
    (Format("hle-judged", "HLE's judged JSON (question id -> response and judge_response)",
            "audit import hle-judged FILE -o CALLS", "hle-judged", order=25, document=_is_judged,
            tabular=False),)), __name__)
