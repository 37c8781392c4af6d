"""The `judge-calls` package kind: one row per judge call (`calls.jsonl`, schema `judge_call_row.v1`).

Reading a package back re-checks every row that can be re-checked: the raw reply's sha256, and the status the
recorded parse rule gives when it re-reads the recorded reply (the rule at HEAD must be a version whose
fingerprint its lock accepts). `audit show` prints the calls by status, the judge's flip rate across repeats and
the benchmark's figures (HLE's accuracy and calibration error, AlpacaEval's win rate, Arena-Hard's score).

Calls of protected items hold the question and the gold answer in their prompt: a package holding any is never
released (`audit release` reads verdict files only, and its leak check indexes these calls' text).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from audit.errors import AuditError
from audit.judge.models import CALL_KEY, JUDGE_CALL_SCHEMA, JudgeCallRow
from audit.models import Provenance
from audit.packages.kinds import Extra, Kind, register_kind

if TYPE_CHECKING:
    from audit.packages.read import Package

CALLS_FILE = "calls.jsonl"


class JudgeCallsExtra(Extra):
    """`provenance.extra` of a judge-calls package (a run's or an importer's keys; all optional)."""

    responses_package: dict[str, Any] | None = None
    """The judged responses package: {package_id, digest, path}."""
    items_package: dict[str, Any] | None = None
    """The items package the prompts' questions and gold answers came from: {package_id, digest, path}."""
    template: str | None = None
    """Judge template `name@version`."""
    rule: str | None = None
    """Parse rule `name@version` applied when the calls were made."""
    config: dict[str, Any] | None = None
    """The run's configuration (model, repeats, seed, sampling overrides)."""
    server: dict[str, Any] | None = None
    """The server as the run saw it: URL and `/v1/models`' root of the served model."""
    questions: int | None = None
    """Questions of the items (HLE's denominator)."""
    source_files: list[dict[str, Any]] | None = None
    """Imported: the source file by name, sha256 and size."""


@dataclass
class CallsView:
    """What `audit show` prints of a judge-calls package."""

    benchmark: str | None
    rows: int
    statuses: dict[str, int]
    lines: list[str] = field(default_factory=list)


def recheck(row: JudgeCallRow, where: str, n: int) -> None:
    """Refuse a row whose raw digest, or whose status under its recorded rule, is not what it records."""
    from audit import lock
    from audit.judge import rules
    from audit.judge.rules import Reply

    if row.raw is not None and row.raw_sha256 is not None and \
            hashlib.sha256(row.raw.encode("utf-8")).hexdigest() != row.raw_sha256:
        raise AuditError("raw_sha256 is not the sha256 of raw", path=where, row=n, field="raw_sha256")
    if row.rule is None or not row.raw_recorded or row.error is not None:
        return
    key = f"{row.rule.name}@{row.rule.version}"
    if key not in rules.REGISTRY:
        return
    rule = rules.get(key)
    if rule.fingerprint != row.rule.fingerprint and not lock.accepted("judge parse rule", key, row.rule.fingerprint):
        raise AuditError(f"parse rule {key} is recorded with fingerprint {row.rule.fingerprint[:12]}, which its lock "
                         f"does not accept", path=where, row=n, field="rule")
    p = rule.parse(Reply(row.raw, row.logprobs, row.swapped))
    same_pref = (p.preference is None) == (row.preference is None) and (
        p.preference is None or row.preference is None or math.isclose(p.preference, row.preference, abs_tol=1e-12))
    if p.status != row.status or not same_pref:
        raise AuditError(f"status is {row.status!r} but {key} reads the recorded reply as {p.status!r}", path=where,
                         row=n, field="status")


def _read(pkg: Package, label: str) -> CallsView:
    rows = []
    where = f"{label}/{CALLS_FILE}"
    for n, row in enumerate(pkg.iter_rows(JUDGE_CALL_SCHEMA), 1):
        recheck(row, where, n)
        rows.append(row)
    extra = pkg.manifest.provenance.extra
    return CallsView(pkg.manifest.benchmark, len(rows), dict(sorted(Counter(r.status for r in rows).items())),
                     figure_lines(rows, pkg.manifest.benchmark, extra.get("questions")))


def figure_lines(rows: list[JudgeCallRow], benchmark: str | None, questions: int | None) -> list[str]:
    """The figures `audit show` prints for the calls' benchmark."""
    from audit.judge import figures, pairwise

    lines = []
    served = sorted({r.model_served for r in rows if r.model_served})
    asked = sorted({r.model_requested for r in rows if r.model_requested})
    if asked or served:
        lines.append(f"judge      asked {', '.join(asked) or 'not recorded'}; served "
                     f"{', '.join(served) or 'not recorded'}")
    nocall = sum(1 for r in rows if "call" in r.not_recorded)
    if nocall:
        lines.append(f"no call   {nocall:,} rows decided without a judge call (identical outputs: a draw)")
    unrecorded = sum(1 for r in rows if not r.raw_recorded and "call" not in r.not_recorded)
    if unrecorded:
        lines.append(f"raw        {unrecorded:,} of {len(rows):,} calls: raw response not recorded (the verdict rests "
                     f"on the parsed fields alone)")
    if any(r.repeat for r in rows):
        fr = figures.flip_rates((r.item_id, r.sample, r.attempt, r.status) for r in rows)
        lines.append("flip rate  " + figures.flip_text(fr, "responses judged more than once changed verdict "
                                                              "across repeats"))
    if benchmark == "alpaca_eval":
        new = pairwise.win_rate(r.preference if r.status == "preference" else None for r in rows)
        old = pairwise.win_rate(r.extra.get("recorded_preference") for r in rows)
        errors = sum(r.status == "judge_error" for r in rows)
        lines.append(f"win rate   {new.win_rate:.4f} +/- {new.standard_error:.4f} (SE) re-derived from the top "
                     f"logprobs, n = {new.n_total:,}, {errors:,} judge failures left out (never draws)")
        lines.append(f"           {old.win_rate:.4f} +/- {old.standard_error:.4f} from the recorded preferences, as "
                     f"the leaderboard computes it; {sum(bool(r.extra.get('differs_from_recorded')) for r in rows):,} "
                     f"preferences differ")
    elif benchmark == "arena_hard":
        lines.append(_arena_line(rows))
    elif benchmark == "hle" and any(r.rule is not None and r.rule.name.startswith("hle.") for r in rows):
        judged = [(None if r.status == "judge_error" else r.status == "correct",
                   (r.parsed or {}).get("confidence")) for r in rows if r.repeat == 0]
        n = questions or len({r.item_id for r in rows})
        for line in figures.hle_lines(figures.hle_figures(judged, n)):
            lines.append(line)
    else:
        ok = sum(r.status == "correct" for r in rows if r.repeat == 0)
        n_judged = sum(r.status in ("correct", "incorrect") for r in rows if r.repeat == 0)
        if n_judged:
            lines.append(f"verdicts   {ok:,} of {n_judged:,} judged correct ({100 * ok / n_judged:.2f}%)")
    return lines


def _arena_line(rows: list[JudgeCallRow]) -> str:
    """The score re-derived from the re-parsed labels and from the recorded ones, as the show_result.py of the
    judge that wrote the file scores them: a `question_id` file's (rule 4ce0f00) game by game, else by question."""
    from audit.judge import pairwise

    by_q: dict[str, dict[int, str | None]] = {}
    old_q: dict[str, dict[int, Any]] = {}
    for r in rows:
        by_q.setdefault(r.item_id, {})[r.position] = (r.parsed or {}).get("score") if r.status == "preference" \
            else None
        old_q.setdefault(r.item_id, {})[r.position] = r.extra.get("recorded_score")
    per_game = any(r.rule is not None and r.rule.version == "4ce0f00" for r in rows)
    score = pairwise.arena_score_per_game if per_game else pairwise.arena_score
    s = score([(g.get(0), g.get(1)) for g in by_q.values()])
    o = score([(g.get(0), g.get(1)) for g in old_q.values()])
    recorded = "none scorable" if o.battles == 0 else f"{o.score:.2f}"
    if s.battles == 0:
        return f"score      none: no game has a label show_result scores; from the recorded scores {recorded}"
    if per_game:
        return (f"score      {s.score:.2f} over {s.battles:,} battles of {s.questions:,} questions (each game "
                f"scored alone, as show_result.py before 2025-04 does; {s.dropped:,} games without a scorable "
                f"label dropped); from the recorded scores {recorded}")
    return (f"score      {s.score:.2f} over {s.questions:,} questions (both games re-parsed; {s.dropped:,} "
            f"dropped as upstream drops them); from the recorded scores {recorded}")


def _show(view: CallsView) -> list[str]:
    shown = ", ".join(f"{k}={v}" for k, v in view.statuses.items())
    return [f"calls      {view.rows:,}: {shown}", *view.lines]


JUDGE_CALLS: Kind[CallsView] = register_kind(Kind(
    "judge-calls", "LLM judge calls: one row per call, raw reply and parse recorded",
    rows={JUDGE_CALL_SCHEMA: JudgeCallRow}, row_keys={JUDGE_CALL_SCHEMA: CALL_KEY}, extra=JudgeCallsExtra,
    reader=_read, viewer=_show), __name__)


def write_calls(out: str, rows: list[JudgeCallRow], *, benchmark: str | None, provenance: Provenance,
                overwrite: bool = False) -> Any:
    """Write a judge-calls package atomically (rows sorted by key); returns its manifest."""
    from audit.judge.models import call_key
    from audit.packages import PackageWriter

    dup = [k for k, n in Counter(call_key(r) for r in rows).items() if n > 1]
    if dup:
        raise AuditError(f"two calls with the key {dup[0]}")
    with PackageWriter(out, kind="judge-calls", benchmark=benchmark, provenance=provenance,
                       overwrite=overwrite) as w:
        with w.rows(CALLS_FILE, JUDGE_CALL_SCHEMA) as sink:
            for r in sorted(rows, key=call_key):
                sink.write(r)
    return w.manifest
