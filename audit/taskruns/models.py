"""The records of agentic task runs: one row per trial, one row per run (its provenance as data).

A trial is one attempt of one task in one run. Its outcome is a closed word (`resolved`, `unresolved`,
`excluded`, `error`); an excluded trial names why from a closed list and keeps the source's own word
beside it, so a denominator policy can be applied and re-applied without reading the harness's logs.
Null is never a stand-in zero: a field the harness did not measure is null (an importer that reads a 0
written for "not measured" says how many it turned into nulls, in the package's notes).

Rows carry no version of their own: the schema id (`task_trial_row.v1`) does, as for every row of a package.
Times are Unix seconds (UTC). A run's serving setup is recorded per trial, so a run that mixed two
setups shows it in one line.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from audit.models import Count, Int64, Record

TRIAL_SCHEMA = "task_trial_row.v1"
RUN_SCHEMA = "task_run_row.v1"

Outcome = Literal["resolved", "unresolved", "excluded", "error"]
"""How a trial ended: `resolved` (the task's tests passed), `unresolved` (they ran and failed), `excluded`
(left out by a recorded reason, see `exclusion`), `error` (the harness or agent failed; counted as a failure)."""

OUTCOMES: tuple[str, ...] = ("resolved", "unresolved", "excluded", "error")

Exclusion = Literal["context_overflow", "time_limit", "infrastructure", "harness_error", "not_submitted"]
"""Why a trial is left out of a denominator: its history outgrew the context window, it hit its time limit,
the infrastructure failed under it, the harness failed, or nothing was submitted for grading."""

EXCLUSIONS: tuple[str, ...] = ("context_overflow", "time_limit", "infrastructure", "harness_error", "not_submitted")

Name = Annotated[str, Field(min_length=1, max_length=512)]
"""An id (task, run): non-empty, at most 512 characters."""

Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""A non-negative, finite number of seconds."""

Time = Annotated[float, Field(allow_inf_nan=False)]
"""A point in time, Unix seconds (UTC)."""


class TrialRow(Record):
    """One trial (one attempt of one task in one run): a row of a `task-runs` package."""

    task_id: Name
    """The benchmark's task id (a SWE-bench instance id, a Terminal-Bench task, a τ-bench task index as text)."""
    run_id: Name
    """The run it belongs to (a `task_run_row.v1` of the package names it)."""
    attempt: Count = 0
    """Which attempt of the task within its run, as the source numbers it (Terminal-Bench's `N-of-K` as N,
    τ-bench's `trial` from 0); 0 when the source runs each task once and numbers nothing."""
    outcome: Outcome
    """`resolved`, `unresolved`, `excluded` (see `exclusion`) or `error` (counted as a failure)."""
    reward: float | None = None
    """The harness's reward in [0, 1] where it gives a fraction (τ-bench); null where it gives none."""
    failure_mode: str | None = None
    """The harness's own word for how the trial failed (Terminal-Bench `failure_mode`, e.g. `agent_timeout`),
    kept as written; null when it gives none."""
    exclusion: Exclusion | None = None
    """Why the trial is excluded, from the closed list; set exactly when `outcome` is `excluded`."""
    exclusion_source: str | None = None
    """The source's own word for the exclusion (e.g. `context_length_exceeded`), kept beside `exclusion`."""
    censored: bool = False
    """The trial hit its time limit: its duration is a lower bound (a paired ratio that kept it would lean
    toward 1)."""
    started_at: Time | None = None
    """When the trial began (Unix seconds); null when not recorded."""
    ended_at: Time | None = None
    """When the trial ended; null when not recorded."""
    agent_started_at: Time | None = None
    """When the agent began working."""
    agent_ended_at: Time | None = None
    """When the agent stopped."""
    test_started_at: Time | None = None
    """When the task's tests began."""
    test_ended_at: Time | None = None
    """When the task's tests ended."""
    duration_s: Seconds | None = None
    """The trial's duration in seconds: as the source recorded it, else `ended_at − started_at`; null when
    neither is known."""
    turns: Count | None = None
    """Agent turns (model calls) the trial took; null when not recorded."""
    tokens_in: Count | None = None
    """Prompt tokens over the trial; null when not measured (never a stand-in 0)."""
    tokens_out: Count | None = None
    """Generated tokens over the trial; null when not measured."""
    engine: str | None = None
    """The serving engine of this trial (e.g. `vllm 0.26.0`), when recorded per trial."""
    speculative: str | None = None
    """Speculative decoding of this trial (e.g. `mtp k=3`, `none`); null when not recorded."""
    workers: Count | None = None
    """How many trials ran at once when this one ran (the harness's concurrency)."""

    @field_validator("reward")
    @classmethod
    def _fraction(cls, v: float | None) -> float | None:
        if v is not None and not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ValueError(f"reward must be in [0, 1], got {v!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> TrialRow:
        if (self.outcome == "excluded") != (self.exclusion is not None):
            raise ValueError("exclusion must be set exactly when outcome is 'excluded'")
        for start, end, name in ((self.started_at, self.ended_at, ""), (self.agent_started_at, self.agent_ended_at,
                                 "agent_"), (self.test_started_at, self.test_ended_at, "test_")):
            if start is not None and end is not None and end < start:
                raise ValueError(f"{name}ended_at is before {name}started_at")
        return self

    def setup(self) -> tuple[str | None, str | None, int | None]:
        """The serving setup of the trial: (engine, speculative decoding, workers)."""
        return self.engine, self.speculative, self.workers


class RunRow(Record):
    """One run of a system over a benchmark (its provenance as data): a row of a `task-runs` package."""

    run_id: Name
    """The run's id, unique in the package (trials name it)."""
    benchmark: str | None = None
    """The benchmark's name (`terminal-bench-core`, `swe-bench-verified`, `tau-bench-airline`)."""
    benchmark_version: str | None = None
    """The benchmark's version (`0.1.1`), when the source names one."""
    task_count: Count | None = None
    """How many tasks the benchmark has: the denominator of every rate (a run that submitted 1 of 91
    instances reads 1/91). Null when the source does not say; the tasks seen in the package then stand in,
    and the summary says so."""
    attempts: Count | None = None
    """Attempts of each task the run made (Terminal-Bench `n_attempts`); null when not recorded."""
    time_limit_s: Seconds | None = None
    """The per-task time limit, when one limit applies to every task."""
    time_limits_s: dict[str, float] | None = None
    """Per-task time limits by task id, when they differ."""
    agent: str | None = None
    """The agent scaffold (`Factory Droid`, `SWE-agent`, `tool-calling`)."""
    agent_version: str | None = None
    """The scaffold's version or commit."""
    model: str | None = None
    """The model the agent called."""
    workers: Count | None = None
    """How many trials the run ran at once."""
    started_at: Time | None = None
    """The run's wall-clock start (Unix seconds)."""
    ended_at: Time | None = None
    """The run's wall-clock end."""
    seed: Int64 | None = None
    """The seed given to the run, when one was."""
    seed_ignored: bool = False
    """The agent ignores the seed (sampling at T > 0 with no seed reaching it): repetitions are independent
    draws, not replays."""
    source: str | None = None
    """Which file the run was read from (its name; the sha256 is in the manifest's provenance)."""

    @model_validator(mode="after")
    def _ordered(self) -> RunRow:
        if self.started_at is not None and self.ended_at is not None and self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        if self.time_limits_s is not None:
            bad = next((k for k, v in self.time_limits_s.items() if not (math.isfinite(v) and v >= 0)), None)
            if bad is not None:
                raise ValueError(f"time_limits_s[{bad!r}] must be a non-negative number of seconds")
        return self

    @property
    def wall_s(self) -> float | None:
        """The run's recorded wall clock, seconds; null without both ends."""
        if self.started_at is None or self.ended_at is None:
            return None
        return self.ended_at - self.started_at
