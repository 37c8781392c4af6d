"""What agentic harnesses write, read into trial and run rows: pure functions from bytes to `Parsed`.

One function per format; none opens a file (the importer pins and reads the bytes, bounded, and passes
them with the label its errors name). Each returns every row it could read and a `BadRow` for each it
could not (file, row, field, why), so the caller decides between one clear error and `--on-bad-row record`.

- `terminal_bench`: a Terminal-Bench run folder's `results.json` (trials with `is_resolved`, `failure_mode`
  and timestamps) and `run_metadata.json` (dataset, agent, concurrency, attempts, wall clock);
- `swe_bench_report`: a SWE-bench (or Multi-SWE-bench) harness run report: id lists by outcome, with
  `total_instances`, the benchmark's task count;
- `swe_bench_instance`: one per-instance `report.json` of the SWE-bench harness;
- `tau_bench`: a τ-bench results file (a list of trials with `task_id`, `trial` and `reward`);
- `table`: any table's records through a column map (`--map FIELD=COLUMN`).

What each harness leaves unmeasured stays null: Terminal-Bench writes 0 tokens for an agent that reports
none, and those zeros are read as nulls, with a note saying how many.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pydantic

from audit.fileio import JsonError, loads_strict
from audit.taskruns.models import EXCLUSIONS, OUTCOMES, RunRow, TrialRow

TAU_SUCCESS_TOLERANCE = 1e-6
"""τ-bench counts a trial successful when its reward is within 1e-6 of 1 (`display_metrics` in its run.py)."""

TB_CENSORED = frozenset({"agent_timeout"})
"""Terminal-Bench failure modes that mean the agent hit its time limit (its duration is a lower bound)."""

TB_ERRORS = frozenset({"unknown_agent_error", "agent_installation_failed", "fatal_llm_parse_error", "unknown"})
"""Terminal-Bench failure modes that are the harness's or agent's failure rather than a failed test."""


@dataclass(frozen=True, slots=True)
class BadRow:
    """A record that could not be read as a trial or run: where, which field, and why."""

    label: str
    """The file (or `file:member`) it came from."""
    row: int
    """1-based element, line or data-row number; 0 for the file as a whole."""
    field: str | None
    """The field at fault, when one is."""
    message: str
    """Why, in one line."""

    def line(self) -> str:
        """One line naming file, row and field: `LABEL: row N: field F: MESSAGE`."""
        where = f"row {self.row}: " if self.row else ""
        what = f"field {self.field}: " if self.field else ""
        return f"{self.label}: {where}{what}{self.message}"


@dataclass
class Parsed:
    """What one source gave: its runs and trials, the records it could not read, and what it noticed."""

    runs: list[RunRow] = field(default_factory=list)
    trials: list[TrialRow] = field(default_factory=list)
    bad: list[BadRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    recorded: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The figures the source itself states, by run id (Terminal-Bench `accuracy`, `pass_at_k`; a SWE-bench
    report's counts), kept so the summary can set its own beside them."""
    origins: list[tuple[str, int]] = field(default_factory=list)
    """Where each trial came from, (file, row), in the order of `trials`."""
    nulled: dict[str, list[int]] = field(default_factory=dict)
    """Per source field, [trials that wrote 0 for "not measured", files they were in]: read as null."""

    def add(self, trial: TrialRow, label: str, row: int) -> None:
        """Keep `trial`, read from row `row` of `label`."""
        self.trials.append(trial)
        self.origins.append((label, row))

    def extend(self, other: Parsed) -> None:
        self.runs.extend(other.runs)
        self.trials.extend(other.trials)
        self.origins.extend(other.origins)
        self.bad.extend(other.bad)
        self.notes.extend(other.notes)
        self.recorded.update(other.recorded)
        for name, (n, files) in other.nulled.items():
            have = self.nulled.setdefault(name, [0, 0])
            have[0] += n
            have[1] += files

    def all_notes(self) -> list[str]:
        """The notes, with one line per field whose zeros were read as nulls."""
        nulls = [f"{n} trials{f' in {files} files' if files > 1 else ''} wrote {name} 0, read as null (not measured)"
                 for name, (n, files) in sorted(self.nulled.items())]
        return [*nulls, *self.notes]


class _Bad(Exception):
    def __init__(self, field_name: str | None, message: str):
        super().__init__(message)
        self.field = field_name
        self.message = message


def _document(data: bytes, label: str, parsed: Parsed) -> Any:
    try:
        return loads_strict(data)  # a key given twice is refused, not read as its last value
    except JsonError as e:
        parsed.bad.append(BadRow(label, 0, e.field, str(e)))
        return None


def _validation_bad(e: pydantic.ValidationError) -> _Bad:
    first = e.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"]) or None
    msg = str(first["msg"]).removeprefix("Value error, ")
    return _Bad(where, msg)


_R = TypeVar("_R", bound=pydantic.BaseModel)


def _row(model: type[_R], values: dict[str, Any]) -> _R:
    try:
        return model.model_validate(values)
    except pydantic.ValidationError as e:
        raise _validation_bad(e) from None


def timestamp(value: Any, name: str) -> float | None:
    """An ISO 8601 time with a zone (or Unix seconds) as Unix seconds; null for null. A time without a zone
    is refused: its instant is unknown."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise _Bad(name, f"expected a time, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise _Bad(name, f"expected a time, got {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise _Bad(name, f"expected a time, got {type(value).__name__}")
    try:
        t = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        try:
            return float(value)
        except ValueError:
            raise _Bad(name, f"not an ISO 8601 time: {value!r}") from None
    if t.tzinfo is None:
        raise _Bad(name, f"time {value!r} has no time zone")
    return t.timestamp()


def _count_or_null(value: Any, name: str, zeros: dict[str, int]) -> int | None:
    # A 0 where the harness writes 0 for "not measured" is read as null (and counted for the note).
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Bad(name, f"expected a non-negative integer, got {value!r}")
    if value == 0:
        zeros[name] = zeros.get(name, 0) + 1
        return None
    return value




# --------------------------------------------------------------------------- Terminal-Bench

_TB_ATTEMPT = re.compile(r"\.(\d+)-of-(\d+)(?:\.|$)")


def terminal_bench(results: bytes, metadata: bytes | None, label: str, metadata_label: str | None = None) -> Parsed:
    """A Terminal-Bench run: `results.json` (its bytes, named `label`) and `run_metadata.json` (or None)."""
    parsed = Parsed()
    doc = _document(results, label, parsed)
    meta: dict[str, Any] = {}
    if metadata is not None:
        m = _document(metadata, metadata_label or "run_metadata.json", parsed)
        if isinstance(m, dict):
            meta = m
        elif m is not None:
            parsed.bad.append(BadRow(metadata_label or "run_metadata.json", 0, None, "expected a JSON object"))
    if doc is None:
        return parsed
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        parsed.bad.append(BadRow(label, 0, "results", "expected a JSON object with a list of trials"))
        return parsed
    run_id = str(meta.get("run_id") or doc.get("id") or "run")
    workers = meta.get("n_concurrent_trials")
    workers = workers if isinstance(workers, int) and not isinstance(workers, bool) and workers >= 0 else None
    zeros: dict[str, int] = {}
    for i, obj in enumerate(doc["results"], start=1):
        try:
            parsed.add(_tb_trial(obj, run_id, workers, zeros), label, i)
        except _Bad as e:
            parsed.bad.append(BadRow(label, i, e.field, e.message))
    parsed.nulled = {name: [n, 1] for name, n in zeros.items()}
    try:
        started = timestamp(meta.get("start_time"), "start_time")
        ended = timestamp(meta.get("end_time"), "end_time")
        run = _row(RunRow, {
            "run_id": run_id, "benchmark": meta.get("dataset_name"), "benchmark_version": meta.get("dataset_version"),
            "task_count": meta.get("dataset_size"), "attempts": meta.get("n_attempts"),
            "agent": meta.get("agent_name"), "agent_version": meta.get("commit_hash"), "model": meta.get("model_name"),
            "workers": workers, "started_at": started, "ended_at": ended, "source": label})
        parsed.runs.append(run)
    except _Bad as e:
        parsed.bad.append(BadRow(metadata_label or label, 0, e.field, e.message))
    recorded: dict[str, Any] = {}
    for key in ("accuracy", "n_resolved", "n_unresolved", "pass_at_k"):
        if key in doc:
            recorded[key] = doc[key]
    parsed.recorded[run_id] = recorded
    return parsed


def _tb_trial(obj: Any, run_id: str, workers: int | None, zeros: dict[str, int]) -> TrialRow:
    if not isinstance(obj, dict):
        raise _Bad(None, f"expected a JSON object, found {type(obj).__name__}")
    task = obj.get("task_id")
    if not isinstance(task, str) or not task:
        raise _Bad("task_id", "missing task id")
    name = obj.get("trial_name")
    m = _TB_ATTEMPT.search(name) if isinstance(name, str) else None
    attempt = int(m.group(1)) if m else 1
    resolved = obj.get("is_resolved")
    mode = obj.get("failure_mode")
    mode = mode if isinstance(mode, str) else None
    if resolved is True:
        outcome = "resolved"
    elif resolved is False:
        outcome = "error" if mode in TB_ERRORS else "unresolved"
    elif resolved is None:
        outcome = "error"  # no verdict: the harness counts it as not resolved
    else:
        raise _Bad("is_resolved", f"expected true, false or null, got {resolved!r}")
    times = {k: timestamp(obj.get(src), src) for k, src in (
        ("started_at", "trial_started_at"), ("ended_at", "trial_ended_at"),
        ("agent_started_at", "agent_started_at"), ("agent_ended_at", "agent_ended_at"),
        ("test_started_at", "test_started_at"), ("test_ended_at", "test_ended_at"))}
    start, end = times["started_at"], times["ended_at"]
    duration = end - start if start is not None and end is not None and end >= start else None
    return _row(TrialRow, {
        "task_id": task, "run_id": run_id, "attempt": attempt, "outcome": outcome,
        "failure_mode": None if mode in (None, "unset", "none") else mode, "censored": mode in TB_CENSORED,
        **times, "duration_s": duration,
        "tokens_in": _count_or_null(obj.get("total_input_tokens"), "total_input_tokens", zeros),
        "tokens_out": _count_or_null(obj.get("total_output_tokens"), "total_output_tokens", zeros),
        "workers": workers})


# --------------------------------------------------------------------------- SWE-bench

SWE_LISTS: tuple[tuple[str, str, str | None], ...] = (
    ("resolved_ids", "resolved", None),
    ("resolved", "resolved", None),  # Multi-SWE-bench names the list `resolved`
    ("unresolved_ids", "unresolved", None),
    ("empty_patch_ids", "unresolved", "empty_patch"),
    ("error_ids", "error", "error"),
    ("incomplete_ids", "excluded", "incomplete"),
)
"""A run report's id lists, the outcome each gives and the failure-mode word kept with it. An empty patch
is a failure, as the harness counts it; an evaluation error is an error; `incomplete_ids` are the instances
with no prediction (the harness's make_run_report), excluded as `not_submitted`, which no denominator
policy leaves out."""

SWE_COUNTS = {"resolved_instances": ("resolved_ids", "resolved"), "unresolved_instances": ("unresolved_ids",),
              "empty_patch_instances": ("empty_patch_ids",), "error_instances": ("error_ids",),
              "submitted_instances": ("submitted_ids",), "completed_instances": ("completed_ids",)}
"""Counts a run report states beside its lists (each must equal its list's length)."""


def swe_bench_report(data: bytes, label: str, run_id: str, benchmark: str | None = None) -> Parsed:
    """A SWE-bench harness run report (`{model}.{run_id}.json`, or Multi-SWE-bench's `results.json`)."""
    parsed = Parsed()
    doc = _document(data, label, parsed)
    if doc is None:
        return parsed
    if not isinstance(doc, dict) or "total_instances" not in doc:
        parsed.bad.append(BadRow(label, 0, "total_instances", "not a SWE-bench run report (no total_instances)"))
        return parsed
    seen: dict[str, str] = {}
    for key, outcome, mode in SWE_LISTS:
        ids = doc.get(key)
        if ids is None or isinstance(ids, int):  # Multi-SWE-bench writes counts under some *_ids keys
            continue
        if not isinstance(ids, list):
            parsed.bad.append(BadRow(label, 0, key, "expected a list of instance ids"))
            continue
        for i, iid in enumerate(ids, start=1):
            if not isinstance(iid, str) or not iid:
                parsed.bad.append(BadRow(label, i, key, f"expected an instance id, got {iid!r}"))
                continue
            if iid in seen:
                parsed.bad.append(BadRow(label, i, key, f"instance {iid!r} is also listed in {seen[iid]}"))
                continue
            seen[iid] = key
            parsed.add(TrialRow(task_id=iid, run_id=run_id, outcome=outcome,  # type: ignore[arg-type]
                                failure_mode=None if outcome == "excluded" else mode,
                                exclusion="not_submitted" if outcome == "excluded" else None,
                                exclusion_source=mode if outcome == "excluded" else None), label, i)
    for count, lists in SWE_COUNTS.items():
        n = doc.get(count)
        listed = next((doc[k] for k in lists if isinstance(doc.get(k), list)), None)
        if isinstance(n, int) and listed is not None and n != len(listed):
            parsed.bad.append(BadRow(label, 0, count, f"says {n} but {lists[0]} lists {len(listed)}"))
    total = doc.get("total_instances")
    try:
        parsed.runs.append(_row(RunRow, {"run_id": run_id, "benchmark": benchmark, "task_count": total,
                                         "source": label}))
    except _Bad as e:
        parsed.bad.append(BadRow(label, 0, "total_instances" if e.field == "task_count" else e.field, e.message))
    submitted = doc.get("submitted_ids")
    n_sub = len(submitted) if isinstance(submitted, list) else doc.get("submitted_instances")
    parsed.recorded[run_id] = {k: doc[k] for k in ("total_instances", "submitted_instances", "completed_instances",
                                                  "resolved_instances") if k in doc}
    if isinstance(n_sub, int) and isinstance(total, int) and n_sub < total:
        parsed.notes.append(f"{label}: submitted {n_sub} of {total} instances; the {total - n_sub} not submitted "
                            f"have no trial and count as failures")
    return parsed


def swe_bench_instance(data: bytes, label: str, run_id: str) -> Parsed:
    """One per-instance `report.json` of the SWE-bench harness: `{instance_id: {resolved, patch_exists, ...}}`."""
    parsed = Parsed()
    doc = _document(data, label, parsed)
    if doc is None:
        return parsed
    if not isinstance(doc, dict) or len(doc) != 1:
        parsed.bad.append(BadRow(label, 0, None, "expected one instance id mapped to its report"))
        return parsed
    ((iid, rep),) = doc.items()
    try:
        if not isinstance(rep, dict):
            raise _Bad(iid, "expected a JSON object")
        resolved = rep.get("resolved")
        if not isinstance(resolved, bool):
            raise _Bad(f"{iid}.resolved", f"expected true or false, got {resolved!r}")
        mode = None
        if not resolved:
            if rep.get("patch_is_None") is True or rep.get("patch_exists") is False:
                mode = "empty_patch"
            elif rep.get("patch_successfully_applied") is False:
                mode = "patch_failed_to_apply"
            else:
                mode = "tests_failed"
        parsed.add(_row(TrialRow, {"task_id": iid, "run_id": run_id,
                                   "outcome": "resolved" if resolved else "unresolved", "failure_mode": mode}),
                   label, 1)
    except _Bad as e:
        parsed.bad.append(BadRow(label, 1, e.field, e.message))
    return parsed


# --------------------------------------------------------------------------- τ-bench


def tau_bench(data: bytes, label: str, run_id: str, benchmark: str | None = None) -> Parsed:
    """A τ-bench results file: a JSON list of `{task_id, trial, reward, info, traj}`. Success is a reward
    within 1e-6 of 1, as τ-bench's own `display_metrics` counts it."""
    parsed = Parsed()
    doc = _document(data, label, parsed)
    if doc is None:
        return parsed
    if not isinstance(doc, list):
        parsed.bad.append(BadRow(label, 0, None, "expected a JSON list of trials"))
        return parsed
    for i, obj in enumerate(doc, start=1):
        try:
            if not isinstance(obj, dict):
                raise _Bad(None, f"expected a JSON object, found {type(obj).__name__}")
            task, trial, reward = obj.get("task_id"), obj.get("trial", 0), obj.get("reward")
            if isinstance(task, bool) or not isinstance(task, (int, str)) or task == "":
                raise _Bad("task_id", f"missing task id, got {task!r}")
            if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
                raise _Bad("trial", f"expected a non-negative integer, got {trial!r}")
            if isinstance(reward, bool) or not isinstance(reward, (int, float)):
                raise _Bad("reward", f"expected a number, got {reward!r}")
            if not (math.isfinite(reward) and 0.0 <= reward <= 1.0):
                raise _Bad("reward", f"must be in [0, 1], got {reward!r}")
            success = abs(reward - 1.0) <= TAU_SUCCESS_TOLERANCE
            traj = obj.get("traj")
            turns = sum(1 for m in traj if isinstance(m, dict) and m.get("role") == "assistant") \
                if isinstance(traj, list) and traj else None
            parsed.add(_row(TrialRow, {"task_id": str(task), "run_id": run_id, "attempt": trial,
                                       "outcome": "resolved" if success else "unresolved",
                                       "reward": float(reward), "turns": turns}), label, i)
        except _Bad as e:
            parsed.bad.append(BadRow(label, i, e.field, e.message))
    parsed.runs.append(RunRow(run_id=run_id, benchmark=benchmark, source=label))
    return parsed


# --------------------------------------------------------------------------- a generic table

TABLE_FIELDS = tuple(f for f in TrialRow.model_fields)
"""The trial fields a `--map` may fill."""

OUTCOME_WORDS: Mapping[str, str] = {**{w: w for w in OUTCOMES}, "pass": "resolved", "passed": "resolved",
                                    "fail": "unresolved", "failed": "unresolved"}
"""Outcome words a table may use (any case); any other word is a bad row, never a guess."""


def table(records: Iterable[tuple[int, dict[str, Any]]], label: str, maps: Mapping[str, str],
          run: Mapping[str, Any] | None = None) -> Parsed:
    """Trials from a table's records `(row, object)` through `maps` (trial field -> source column; a field
    not mapped is read from the column of its own name). Each run id seen gets a run row built from `run`
    (the run fields the command gives: benchmark, task count, workers, times)."""
    parsed = Parsed()
    bad_field = next((f for f in maps if f not in TABLE_FIELDS), None)
    if bad_field is not None:
        parsed.bad.append(BadRow(label, 0, bad_field, f"not a trial field (fields: {', '.join(TABLE_FIELDS)})"))
        return parsed
    runs: dict[str, None] = {}
    columns: dict[str, list[str]] = {}
    for f in TABLE_FIELDS:  # a column may fill several fields
        columns.setdefault(maps.get(f, f), []).append(f)
    for row, obj in records:
        try:
            values = {f: v for k, v in obj.items() if k in columns for f in columns[k]}
            parsed.add(_row(TrialRow, _table_values(values)), label, row)
            runs.setdefault(str(values.get("run_id")), None)
        except _Bad as e:
            column = maps.get(e.field, e.field) if e.field else None
            parsed.bad.append(BadRow(label, row, column, e.message))
    for run_id in runs:
        try:
            parsed.runs.append(_row(RunRow, {**(run or {}), "run_id": run_id, "source": label}))
        except _Bad as e:
            parsed.bad.append(BadRow(label, 0, e.field, e.message))
    return parsed




def _table_values(values: dict[str, Any]) -> dict[str, Any]:
    out = dict(values)
    for k, v in values.items():
        convert = _CONVERT.get(k)
        if convert is not None and v is not None:
            out[k] = convert(k, v)
    if out.get("duration_s") is None and out.get("started_at") is not None and out.get("ended_at") is not None:
        if out["ended_at"] >= out["started_at"]:
            out["duration_s"] = out["ended_at"] - out["started_at"]
    return out


def _id(k: str, v: Any) -> Any:
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


def _outcome(k: str, v: Any) -> Any:
    if not isinstance(v, str):
        return v
    word = v.strip().lower()
    if word not in OUTCOME_WORDS:
        raise _Bad("outcome", f"unknown outcome {v!r} (expected {', '.join(OUTCOMES)})")
    return OUTCOME_WORDS[word]


def _exclusion(k: str, v: Any) -> Any:
    if isinstance(v, str) and v not in EXCLUSIONS:
        raise _Bad("exclusion", f"unknown exclusion reason {v!r} (expected {', '.join(EXCLUSIONS)})")
    return v


def _int(k: str, v: Any) -> Any:
    if isinstance(v, str):
        if not v.strip().isdigit():
            raise _Bad(k, f"expected a non-negative integer, got {v!r}")
        return int(v)
    return v


def _float(k: str, v: Any) -> Any:
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            raise _Bad(k, f"expected a number, got {v!r}") from None
    return v


def _time(k: str, v: Any) -> Any:
    return timestamp(v, k)


def _bool(k: str, v: Any) -> Any:
    if isinstance(v, str):
        if v.strip().lower() not in ("true", "false", "1", "0"):
            raise _Bad(k, f"expected true or false, got {v!r}")
        return v.strip().lower() in ("true", "1")
    return v


_CONVERT: dict[str, Any] = {
    "task_id": _id, "run_id": _id, "outcome": _outcome, "exclusion": _exclusion, "censored": _bool,
    **{k: _int for k in ("attempt", "turns", "tokens_in", "tokens_out", "workers")},
    **{k: _float for k in ("reward", "duration_s")},
    **{k: _time for k in ("started_at", "ended_at", "agent_started_at", "agent_ended_at", "test_started_at",
                              "test_ended_at")},
}
"""How a table's cell becomes a trial field's value (CSV gives text): ids as text, outcome words from the closed
list, numbers read losslessly, times as Unix seconds; anything else is left to the row schema to refuse."""


# --------------------------------------------------------------------------- checks over every format


def check_keys(parsed: Parsed) -> None:
    """Add a bad row for each trial that repeats a (task, run, attempt), each run id given twice, and each
    trial naming a run no run row has; keep the first of each."""
    seen: dict[tuple[str, str, int], tuple[str, int]] = {}
    kept: list[TrialRow] = []
    where: list[tuple[str, int]] = []
    for t, (label, row) in zip(parsed.trials, parsed.origins, strict=True):
        key = (t.task_id, t.run_id, t.attempt)
        if key in seen:
            first = seen[key]
            at = f"row {first[1]}" if first[0] == label else f"{first[0]} row {first[1]}"
            parsed.bad.append(BadRow(label, row, "task_id", f"trial (task {t.task_id!r}, run {t.run_id!r}, "
                                                            f"attempt {t.attempt}) repeats {at}"))
            continue
        seen[key] = (label, row)
        kept.append(t)
        where.append((label, row))
    parsed.trials, parsed.origins = kept, where
    runs: dict[str, RunRow] = {}
    for r in parsed.runs:
        if r.run_id in runs:
            parsed.bad.append(BadRow(r.source or r.run_id, 0, "run_id", f"run {r.run_id!r} is given twice"))
            continue
        runs[r.run_id] = r
    parsed.runs = list(runs.values())
