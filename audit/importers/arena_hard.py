"""Arena-Hard judgment files (`data/*/model_judgment/JUDGE/MODEL.jsonl`) -> a judge-calls package: both games of
each question (game 0 with the baseline as A, game 1 with the model as A), the verdict regex of the judge that
wrote the file re-run on the raw judgment text, the recorded score beside.

Two layouts are read, told apart by the question key:

- `uid` (lmarena/arena-hard-auto at 196f6b8, from 2025-04; rows also name `category` and `baseline`): the rule is
  `arena_hard.verdict@196f6b8`, and `audit show` scores as that `show_result.py` does (a question with either game
  unparsed is dropped).
- `question_id` (`gen_judgment.py` from the release until 2025-04, and the forks that kept it): no baseline or
  category in the row; the rule is `arena_hard.verdict@4ce0f00`, and each game is scored on its own, as that
  era's `show_result.py` does.

A row with one game (game 1 never recorded) imports game 1 as a judge error, "game not recorded".
A game that kept its score but no judgment text (an ensemble of judges, as ko-arena-hard-auto writes) is imported
with the recorded score alone, marked "raw response not recorded", like HLE's parsed fields.
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

RULE_BY_LAYOUT = {"uid": "arena_hard.verdict@196f6b8", "question_id": "arena_hard.verdict@4ce0f00"}
"""The judge's regex for each layout of judgment row (the key that names the question)."""


def import_arena_hard(path: str, fmt: str | None = None) -> Imported:
    """Arena-Hard judgment JSONL -> two call rows per question (game 0: baseline as A; game 1: the model as A)."""
    sf = source_file(path, (".jsonl", ".json"), fmt)
    rows: list[JudgeCallRow] = []
    judges: set[str] = set()
    models: set[str] = set()
    seen: dict[str, int] = {}
    layout: str | None = None
    for n, obj in records(sf):
        where: dict[str, Any] = {"path": str(sf.path), "row": n}
        id_key = "uid" if "uid" in obj or "question_id" not in obj else "question_id"
        if layout is None:
            layout = id_key
        elif id_key != layout:
            raise AuditError(f"a {id_key} row in a file of {layout} rows", field=id_key, **where)
        uid = need(obj, id_key, str, where)
        if uid in seen:
            raise AuditError(f"question repeated (first on row {seen[uid]})", field=id_key, **where)
        seen[uid] = n
        games = need(obj, "games", list, where)
        if len(games) not in (1, 2):
            raise AuditError(f"expected two games, got {len(games)}", field="games", **where)
        if len(games) == 1:  # a real file has such a row; its game 1 was never recorded
            games = [games[0], None]
        judges.add(str(obj.get("judge")))
        models.add(str(obj.get("model")))
        rows.extend(_game_rows(obj, uid, n, games, RULE_BY_LAYOUT[id_key], where))
    extra: dict[str, Any] = {"import": "arena-hard model_judgment", "judges": sorted(judges),
                             "models": sorted(models)}
    if layout is not None:
        extra["layout"] = layout
    return Imported(sf, "lmarena/arena-hard-auto", "arena_hard", rows, extra,
                    model=next(iter(judges)) if len(judges) == 1 else None)


def _game_rows(obj: dict[str, Any], uid: str, n: int, games: list[Any], rule_spec: str,
               where: dict[str, Any]) -> list[JudgeCallRow]:
    rule = rules.get(rule_spec)
    key = rule_key(rule.key)
    category = obj.get("category")
    judge = obj.get("judge")
    out: list[JudgeCallRow] = []
    for pos, g in enumerate(games):
        extra: dict[str, Any] = {"row": n, "baseline": obj.get("baseline"), "model": obj.get("model")}
        base: dict[str, Any] = dict(item_id=uid, position=pos, template=None,
                                    template_source=category if isinstance(category, str) else None,
                                    rule=key, model_requested=judge if isinstance(judge, str) else None,
                                    swapped=pos == 1, extra=extra)
        missing = [] if "baseline" in obj else ["baseline"]
        if g is None:
            out.append(JudgeCallRow(**base, raw_recorded=False, status="judge_error", reason="game not recorded",
                                    not_recorded=["raw", *missing]))
            continue
        if not isinstance(g, dict):
            raise AuditError("expected a game object or null", field=f"games[{pos}]", **where)
        judgment = g.get("judgment")
        text = judgment.get("answer") if isinstance(judgment, dict) else judgment
        score = g.get("score")
        extra["recorded_score"] = score
        msgs: list[ChatMessage] | None = None
        if isinstance(g.get("prompt"), list):
            msgs = [ChatMessage(role=str(m.get("role")), content=str(m.get("content")))
                    for m in g["prompt"] if isinstance(m, dict)]
        elif isinstance(g.get("user_prompt"), str):
            msgs = [ChatMessage(role="user", content=g["user_prompt"])]
        if not isinstance(text, str):
            if isinstance(score, str) and "judgment" not in g:
                out.append(_score_only(base, msgs, score, missing))
            else:
                out.append(JudgeCallRow(**base, messages=msgs, raw_recorded=False, status="judge_error",
                                        reason="no judgment text recorded", not_recorded=["raw", *missing]))
            continue
        p = rule.parse(Reply(text))
        if (p.parsed or {}).get("score") != score and (p.status == "preference" or score is not None):
            extra["differs_from_recorded"] = True
        out.append(JudgeCallRow(**base, messages=msgs, raw=text, raw_sha256=sha(text), parsed=p.parsed,
                                status=p.status, reason=p.reason,
                                not_recorded=(["system prompt", "sampling"] if msgs and len(msgs) == 1
                                              else ["sampling"]) + missing))
    return out


def _score_only(base: dict[str, Any], msgs: list[ChatMessage] | None, score: str,
                missing: list[str]) -> JudgeCallRow:
    """A game whose score was kept without the judgment it was read from: the recorded label, marked so."""
    ok = score in rules.ARENA_LABELS
    return JudgeCallRow(**base, messages=msgs, raw_recorded=False,
                        parsed={"score": score}, status="preference" if ok else "judge_error",
                        reason="raw response not recorded: upstream's recorded score" + (
                            "" if ok else ", a label show_result cannot score"),
                        not_recorded=["raw", "messages", "sampling", *missing] if msgs is None
                        else ["raw", "sampling", *missing])


def _is_judgment(fields: set[str]) -> bool:
    return "games" in fields and bool(fields & {"uid", "question_id"}) and ("judge" in fields or "model" in fields)


register_importer(Importer(
    "arena-hard", "audit.cli.imports.arena_hard",
    (Format("arena-hard-judgment",
            "an Arena-Hard model_judgment file (uid or question_id, games with judgment and score)",
            "audit import arena-hard FILE -o CALLS", "arena-hard", order=25, record=_is_judgment,
            tabular=False),)), __name__)
