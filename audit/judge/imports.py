"""What the importers of judged outputs share (`audit.importers.alpaca_eval`, `arena_hard`, `hle_judged`,
`inspect_judged`): the rows they read and how they become a judge-calls package. Each importer records what its
source did not keep:

- AlpacaEval `annotations.json` (tatsu-lab/alpaca_eval at cd543a1): every preference re-derived from
  `raw_completion`'s first-token top logprobs (`alpaca_eval.logprob@cd543a1`), the swap bit recomputed by the
  evaluator's seeded rule (`audit.judge.pairwise.swap_bit`, not stored upstream); a row without a completion is a
  judge failure (`judge_error`), never a draw, unless its two outputs are identical (upstream's draw without a
  call). The recorded preference is kept beside the re-derived one.
- Arena-Hard `model_judgment/JUDGE/MODEL.jsonl`: both games of each question, the verdict regex of the judge that
  wrote the file re-run on the raw judgment text (`arena_hard.verdict@196f6b8` for `uid` rows, lmarena at 196f6b8;
  `arena_hard.verdict@4ce0f00` for the older `question_id` rows), the recorded score beside; a game kept as a
  score alone (an ensemble's) is imported as that score, raw response not recorded.
- HLE judged JSON (`judged_*.json` of centerforaisafety/hle's `run_judge_results.py`): the parsed fields only,
  marked "raw response not recorded" (`raw_recorded` false); questions without a judge response are judge errors.
- inspect_ai logs with model-graded scores: each sample's grader call (the model event whose completion is the
  score's explanation) with its input, model, config, usage and time; the grade pattern re-run on the completion.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from audit.errors import AuditError
from audit.importers.sources import Record, SourceFile, iter_json_records
from audit.judge import rules
from audit.judge.models import ComponentKey, JudgeCallRow


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rule_key(spec: str) -> ComponentKey:
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


def records(sf: SourceFile) -> Iterator[tuple[int, dict[str, Any]]]:
    for rec in iter_json_records(sf):
        yield _object(rec)


def _object(rec: Record) -> tuple[int, dict[str, Any]]:
    if rec.obj is None:
        raise AuditError(rec.error or "unreadable record", path=rec.label, row=rec.row)
    return rec.row, rec.obj


def need(obj: dict[str, Any], key: str, types: type | tuple[type, ...], where: dict[str, Any]) -> Any:
    if key not in obj:
        raise AuditError("missing", field=key, **where)
    v = obj[key]
    if not isinstance(v, types):
        raise AuditError(f"expected {getattr(types, '__name__', 'a valid value')}", field=key, **where)
    return v




def write_imported(imp: Imported, out: str, *, questions: int | None = None, force: bool = False) -> Any:
    """Write the rows as a judge-calls package: the source file by sha256 in the provenance."""
    from audit.judge.kind import JudgeCallsExtra, write_calls
    from audit.models import Provenance

    extra = JudgeCallsExtra(source_files=[imp.source.as_json()], questions=questions, **imp.extra)
    prov = Provenance(model=imp.model, engine=imp.engine, source=f"{imp.source.name} sha256:{imp.source.sha256}",
                      extra=extra.model_dump(exclude_none=True))
    return write_calls(out, imp.rows, benchmark=imp.benchmark, provenance=prov, overwrite=force)
