"""Arena-Hard judgment files (`data/*/model_judgment/JUDGE/MODEL.jsonl`, lmarena/arena-hard-auto at 196f6b8) ->
a judge-calls package: both games of each question (game 0 with the baseline as A, game 1 with the model as A),
the verdict regex (`arena_hard.verdict@196f6b8`) re-run on the raw judgment text, the recorded score beside.
"""

from __future__ import annotations

from typing import Any

from audit.errors import AuditError
from audit.importers.formats import Format, Importer, register_importer
from audit.importers.sources import source_file
from audit.judge import rules
from audit.judge.imports import Imported, need, records, rule_key, sha
from audit.judge.models import ChatMessage, JudgeCallRow
from audit.judge.rules import Reply


def import_arena_hard(path: str, fmt: str | None = None) -> Imported:
    """Arena-Hard judgment JSONL -> two call rows per question (game 0: baseline as A; game 1: the model as A)."""
    sf = source_file(path, (".jsonl", ".json"), fmt)
    rule = rules.get("arena_hard.verdict@196f6b8")
    key = rule_key(rule.key)
    rows: list[JudgeCallRow] = []
    judges: set[str] = set()
    models: set[str] = set()
    seen: dict[str, int] = {}
    for n, obj in records(sf):
        where: dict[str, Any] = {"path": str(sf.path), "row": n}
        uid = need(obj, "uid", str, where)
        if uid in seen:
            raise AuditError(f"question repeated (first on row {seen[uid]})", field="uid", **where)
        seen[uid] = n
        games = need(obj, "games", list, where)
        if len(games) != 2:
            raise AuditError(f"expected two games, got {len(games)}", field="games", **where)
        judges.add(str(obj.get("judge")))
        models.add(str(obj.get("model")))
        for pos, g in enumerate(games):
            extra: dict[str, Any] = {"row": n, "baseline": obj.get("baseline"), "model": obj.get("model")}
            base: dict[str, Any] = dict(item_id=uid, position=pos, template=None,
                                        template_source=str(obj.get("category")),
                        rule=key, model_requested=obj.get("judge") if isinstance(obj.get("judge"), str) else None,
                        swapped=pos == 1, extra=extra)
            if g is None:
                rows.append(JudgeCallRow(**base, raw_recorded=False, status="judge_error",
                                         reason="game not recorded", not_recorded=["raw"]))
                continue
            if not isinstance(g, dict):
                raise AuditError("expected a game object or null", field=f"games[{pos}]", **where)
            judgment = g.get("judgment")
            text = judgment.get("answer") if isinstance(judgment, dict) else judgment
            extra["recorded_score"] = g.get("score")
            msgs: list[ChatMessage] | None = None
            if isinstance(g.get("prompt"), list):
                msgs = [ChatMessage(role=str(m.get("role")), content=str(m.get("content")))
                        for m in g["prompt"] if isinstance(m, dict)]
            elif isinstance(g.get("user_prompt"), str):
                msgs = [ChatMessage(role="user", content=g["user_prompt"])]
            if not isinstance(text, str):
                rows.append(JudgeCallRow(**base, messages=msgs, raw_recorded=False, status="judge_error",
                                         reason="no judgment text recorded", not_recorded=["raw"]))
                continue
            p = rule.parse(Reply(text))
            if p.parsed and p.parsed.get("score") != g.get("score"):
                extra["differs_from_recorded"] = True
            rows.append(JudgeCallRow(**base, messages=msgs, raw=text, raw_sha256=sha(text), parsed=p.parsed,
                                     status=p.status, reason=p.reason,
                                     not_recorded=(["system prompt", "sampling"] if msgs and len(msgs) == 1
                                                   else ["sampling"])))
    return Imported(sf, "lmarena/arena-hard-auto", "arena_hard", rows,
                    {"import": "arena-hard model_judgment", "judges": sorted(judges), "models": sorted(models)},
                    model=next(iter(judges)) if len(judges) == 1 else None)


def _is_judgment(fields: set[str]) -> bool:
    return {"uid", "games"} <= fields and ("judge" in fields or "model" in fields)


register_importer(Importer(
    "arena-hard", "audit.cli.imports.arena_hard",
    (Format("arena-hard-judgment", "an Arena-Hard model_judgment file (uid, games with judgment and score)",
            "audit import arena-hard FILE -o CALLS", "arena-hard", order=25, record=_is_judgment,
            tabular=False),)), __name__)
