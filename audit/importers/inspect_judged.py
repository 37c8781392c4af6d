"""inspect_ai logs with model-graded scores -> a judge-calls package: each sample's grader call (the model event
whose completion is the score's explanation) with its input, model as asked and served, config, usage and time;
the 2026 grade pattern (`inspect.grade@499e615`) re-run on the completion, the recorded value beside. Read with
inspect_ai's own reader, as `audit import inspect` reads the same logs' responses.
"""

from __future__ import annotations

from typing import Any

from audit.importers.formats import Format, Importer, register_importer
from audit.judge import rules
from audit.judge.imports import Imported, rule_key, sha
from audit.judge.models import ChatMessage, JudgeCallRow
from audit.judge.rules import Reply


def import_inspect_judged(path: str, fmt: str | None = None) -> Imported:
    """An inspect_ai log with model-graded scores -> one call row per graded sample."""
    from audit.importers.inspect_ai import read_log

    sf, log = read_log(path, fmt)
    rule = rules.get("inspect.grade@499e615")
    key = rule_key(rule.key)
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
            base: dict[str, Any] = dict(item_id=sid, sample=max(0, sample.epoch - 1), template=None,
                                        template_source=name,
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
                max_tokens=cfg.max_tokens, raw=raw, raw_sha256=sha(raw),
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


def _model_graded(obj: dict[str, Any]) -> bool:
    # (after `inspect-log`, order 30: detection names `audit import inspect` for a log; this entry says which
    # logs the judge importer reads)
    results = obj.get("results")
    scores = results.get("scores") if isinstance(results, dict) else None
    return isinstance(obj.get("eval"), dict) and isinstance(scores, list) and any(
        isinstance(s, dict) and str(s.get("name", "")).startswith("model_graded") for s in scores)


register_importer(Importer(
    "inspect-judged", "audit.cli.imports.inspect_judged",
    (Format("inspect-judged", "an inspect_ai log with model-graded scores",
            "audit import inspect-judged FILE -o CALLS", "inspect-judged", order=31, document=_model_graded,
            tabular=False),)), __name__)
