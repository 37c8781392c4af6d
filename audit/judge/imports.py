"""Existing judged outputs as judge call rows, each recording what its source did not keep.

- AlpacaEval `annotations.json` (tatsu-lab/alpaca_eval at cd543a1): every preference re-derived from
  `raw_completion`'s first-token top logprobs (`alpaca_eval.logprob@cd543a1`), the swap bit recomputed by the
  evaluator's seeded rule (`audit.judge.pairwise.swap_bit`, not stored upstream); a row without a completion is a
  judge failure (`judge_error`), never a draw, unless its two outputs are identical (upstream's draw without a
  call). The recorded preference is kept beside the re-derived one.
- Arena-Hard `model_judgment/JUDGE/MODEL.jsonl` (lmarena/arena-hard-auto at 196f6b8): both games of each question,
  the verdict regex (`arena_hard.verdict@196f6b8`) re-run on the raw judgment text, the recorded score beside.
- HLE judged JSON (`judged_*.json` of centerforaisafety/hle's `run_judge_results.py`): the parsed fields only,
  marked "raw response not recorded" (`raw_recorded` false); questions without a judge response are judge errors.
- inspect_ai logs with model-graded scores: each sample's grader call (the model event whose completion is the
  score's explanation) with its input, model, config, usage and time; the grade pattern re-run on the completion.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from audit.errors import AuditError
from audit.importers.sources import Record, SourceFile, check_pinned, iter_json_records, source_file
from audit.judge import pairwise, rules
from audit.judge.models import ChatMessage, ComponentKey, JudgeCallRow
from audit.judge.rules import Reply


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rule_key(spec: str) -> ComponentKey:
    r = rules.get(spec)
    return ComponentKey(name=r.name, version=r.version, fingerprint=r.fingerprint)


@dataclass
class Imported:
    """Rows read from one source file, with what the package's provenance and `audit show` need."""

    source: SourceFile
    engine: str
    """The upstream tool that wrote the file."""
    benchmark: str
    rows: list[JudgeCallRow]
    extra: dict[str, Any] = field(default_factory=dict)
    """provenance.extra: how the file was read and what it did not keep."""
    model: str | None = None


def _records(sf: SourceFile) -> Iterator[tuple[int, dict[str, Any]]]:
    for rec in iter_json_records(sf):
        yield _object(rec)


def _object(rec: Record) -> tuple[int, dict[str, Any]]:
    if rec.obj is None:
        raise AuditError(rec.error or "unreadable record", path=rec.label, row=rec.row)
    return rec.row, rec.obj


def _need(obj: dict[str, Any], key: str, types: type | tuple[type, ...], where: dict[str, Any]) -> Any:
    if key not in obj:
        raise AuditError("missing", field=key, **where)
    v = obj[key]
    if not isinstance(v, types):
        raise AuditError(f"expected {getattr(types, '__name__', 'a valid value')}", field=key, **where)
    return v


# --------------------------------------------------------------------------- AlpacaEval


def import_alpaca_eval(path: str, *, seed: int = pairwise.ALPACA_DEFAULT_SEED) -> Imported:
    """AlpacaEval `annotations.json` -> one call row per instruction (the judged model is `generator_2`)."""
    sf = source_file(path, (".json",))
    rule = rules.get("alpaca_eval.logprob@cd543a1")
    key = _rule_key(rule.key)
    rows: list[JudgeCallRow] = []
    seen: dict[str, int] = {}
    generators: set[tuple[str, str]] = set()
    annotators: set[str] = set()
    for n, obj in _records(sf):
        where = {"path": str(sf.path), "row": n}
        instruction = _need(obj, "instruction", str, where)
        out1, out2 = _need(obj, "output_1", str, where), _need(obj, "output_2", str, where)
        recorded = obj.get("preference")
        if recorded is not None and (isinstance(recorded, bool) or not isinstance(recorded, (int, float))):
            raise AuditError("expected a number or null", field="preference", **where)
        item_id = "alpaca_eval/" + _sha(instruction)[:16]
        if item_id in seen:
            raise AuditError(f"instruction repeated (first on row {seen[item_id]})", field="instruction", **where)
        seen[item_id] = n
        generators.add((str(obj.get("generator_1")), str(obj.get("generator_2"))))
        annotators.add(str(obj.get("annotator")))
        swapped = pairwise.swap_bit(instruction, seed)
        rc = obj.get("raw_completion")
        extra: dict[str, Any] = {"row": n, "recorded_preference": recorded}
        base = dict(item_id=item_id, response_sha256=_sha(out2), template=None,
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
            **base, raw=raw if isinstance(raw, str) else None, raw_sha256=_sha(raw) if isinstance(raw, str) else None,
            logprobs=content if isinstance(content, list) else None,
            finish_reason=rc.get("finish_reason") if isinstance(rc.get("finish_reason"), str) else None,
            parsed=p.parsed, status=p.status, reason=p.reason, preference=p.preference,
            not_recorded=["messages", "sampling", "swap bit (recomputed)"]))
    return Imported(sf, "tatsu-lab/alpaca_eval", "alpaca_eval", rows, {
        "import": "alpaca_eval annotations.json", "swap_rule": f"random.Random('is_switched_outputs' + instruction + "
        f"'{seed}').choices([False, True])[0]", "seed": seed, "generators": sorted(map(list, generators)),
        "annotators": sorted(annotators)}, model=None)


# --------------------------------------------------------------------------- Arena-Hard


def import_arena_hard(path: str) -> Imported:
    """Arena-Hard judgment JSONL -> two call rows per question (game 0: baseline as A; game 1: the model as A)."""
    sf = source_file(path, (".jsonl", ".json"))
    rule = rules.get("arena_hard.verdict@196f6b8")
    key = _rule_key(rule.key)
    rows: list[JudgeCallRow] = []
    judges: set[str] = set()
    models: set[str] = set()
    seen: dict[str, int] = {}
    for n, obj in _records(sf):
        where = {"path": str(sf.path), "row": n}
        uid = _need(obj, "uid", str, where)
        if uid in seen:
            raise AuditError(f"question repeated (first on row {seen[uid]})", field="uid", **where)
        seen[uid] = n
        games = _need(obj, "games", list, where)
        if len(games) != 2:
            raise AuditError(f"expected two games, got {len(games)}", field="games", **where)
        judges.add(str(obj.get("judge")))
        models.add(str(obj.get("model")))
        for pos, g in enumerate(games):
            extra: dict[str, Any] = {"row": n, "baseline": obj.get("baseline"), "model": obj.get("model")}
            base = dict(item_id=uid, position=pos, template=None, template_source=str(obj.get("category")),
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
            rows.append(JudgeCallRow(**base, messages=msgs, raw=text, raw_sha256=_sha(text), parsed=p.parsed,
                                     status=p.status, reason=p.reason,
                                     not_recorded=(["system prompt", "sampling"] if msgs and len(msgs) == 1
                                                   else ["sampling"])))
    return Imported(sf, "lmarena/arena-hard-auto", "arena_hard", rows,
                    {"import": "arena-hard model_judgment", "judges": sorted(judges), "models": sorted(models)},
                    model=next(iter(judges)) if len(judges) == 1 else None)


# --------------------------------------------------------------------------- HLE judged JSON


def import_hle_judged(path: str) -> Imported:
    """HLE's `judged_*.json` -> one row per question, the parsed fields only ("raw response not recorded")."""
    from audit.fileio import JsonError, document_bytes, loads_strict

    sf = source_file(path, (".json",))
    data = document_bytes(sf.path, 1 << 30, what="an HLE judged file")
    check_pinned(sf, data)
    try:
        obj = loads_strict(data)
    except JsonError as e:
        raise AuditError(str(e), path=str(sf.path)) from None
    if not isinstance(obj, dict):
        raise AuditError("expected an object of question id -> prediction", path=str(sf.path))
    key = _rule_key("hle.substring@a590489")
    rows: list[JudgeCallRow] = []
    models: set[str] = set()
    for qid, pred in obj.items():
        where = {"path": str(sf.path), "field": qid}
        if not isinstance(pred, dict):
            raise AuditError("expected a prediction object", **where)
        response = pred.get("response")
        models.add(str(pred.get("model")))
        base = dict(item_id=qid, response_sha256=_sha(response) if isinstance(response, str) else None,
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


# --------------------------------------------------------------------------- inspect_ai


def import_inspect_judged(path: str) -> Imported:
    """An inspect_ai log with model-graded scores -> one call row per graded sample."""
    from audit.importers.inspect_ai import read_log

    sf, log = read_log(path)
    rule = rules.get("inspect.grade@499e615")
    key = _rule_key(rule.key)
    rows: list[JudgeCallRow] = []
    scorers = [s.name for s in (log.results.scores if log.results else [])]
    for sample in log.samples or []:
        atts = sample.attachments or {}

        def res(text: Any, atts: dict[str, str] = atts) -> Any:
            if isinstance(text, str) and text.startswith("attachment://"):
                return atts.get(text[len("attachment://"):], text)
            return text

        for name, score in (sample.scores or {}).items():
            grading = (score.metadata or {}).get("grading")
            if grading is None:
                continue  # not model-graded
            explanation = res(score.explanation)
            event = next((e for e in reversed(sample.events) if e.event == "model"
                          and res(e.output.completion) == explanation), None)
            sid = str(sample.id)
            base = dict(item_id=sid, sample=max(0, sample.epoch - 1), template=None, template_source=name,
                        rule=key, extra={"recorded": score.value, "scorer": name})
            if event is None:
                rows.append(JudgeCallRow(**base, raw_recorded=False, status="judge_error",
                                         reason="no model event holds the grader's completion",
                                         not_recorded=["raw"]))
                continue
            raw = res(event.output.completion)
            msgs = [ChatMessage(role=m.role, content=res(m.text)) for m in event.input]
            cfg = event.config
            usage = event.output.usage
            p = rule.parse(Reply(raw))
            rows.append(JudgeCallRow(
                **base, messages=msgs, prompt_sha256=None, model_requested=event.model,
                model_served=event.output.model, temperature=cfg.temperature, top_p=cfg.top_p, seed=cfg.seed,
                max_tokens=cfg.max_tokens, raw=raw, raw_sha256=_sha(raw),
                finish_reason=event.output.choices[0].stop_reason if event.output.choices else None,
                prompt_tokens=usage.input_tokens if usage else None,
                completion_tokens=usage.output_tokens if usage else None,
                latency_s=event.working_time if event.working_time is not None and event.working_time >= 0 else None,
                parsed=p.parsed, status=p.status, reason=p.reason))
    rows.sort(key=lambda r: (r.item_id, r.sample))
    return Imported(sf, "UKGovernmentBEIS/inspect_ai", str(log.eval.task), rows,
                    {"import": "inspect_ai log, model-graded scores", "scorers": scorers,
                     "inspect_version": log.eval.packages.get("inspect_ai") if log.eval.packages else None},
                    model=None)
