"""Versioned graders: `grade(answer, reference) -> Judgment`, never a silent False.

    >>> from audit import graders
    >>> graders.get("math.equiv").grade("x = 4", "4")
    Judgment(correct=True, status='correct', reason=...)

A Judgment separates "not gradable" (correct is None, with a status saying why)
from "wrong". Registered versions are immutable, like the extractors'.
This folder is the package `audit.graders` (see `audit/__init__.py`). Graders may use
`audit.extractors`; they know nothing of the rest of audit or the CLI.

Graders shipped (one module per family, the math family a package; every public module here is loaded
on first lookup):

    math.equiv@1            audit.graders.math.v1     symbolic equivalence on sympy + latex2sympy2_extended
    math.equiv@2            audit.graders.math.v2     @1 with assignments by variable, decimals to their stated
                                                      precision
    math.equiv@3            audit.graders.math.v3     exact numbers, labels, word-joined lists
                            (each a small subclass of audit.graders.math.engine.MathEngine + a frozen config)
    math.hendrycks@985bdc1  audit.graders.hendrycks   hendrycks/math `is_equiv` string normalizer, bugs included
    math.mathverify@0.9.0   audit.graders.mathverify  second opinion through the pinned math-verify package
    exact.hle@1             audit.graders.exact       HLE-style strict exact match, numbers to stated precision
    choice@1                audit.graders.choice      multiple-choice letters
    gsm8k.exact_match@b733598 audit.graders.gsm8k     lm-eval's gsm8k exact_match (reference: the solution's #### value)
    gsm8k.numeric@1         audit.graders.gsm8k       the same normalisation, exact numbers

Bounded time
------------
A grader registered with `isolated=True` (the symbolic ones) never runs its
symbolic step in the caller's process: `Grader.grade` first tries the grader's
cheap `fast` function in-process (normalized strings equal, plain numbers), and
only when that cannot decide sends the item to a persistent worker process
(`audit.graders.budget`). Each item has a hard wall-clock budget (the grader config's
`budget_s`, default 5 s): a soft SIGALRM inside the worker's main thread first,
then, if sympy is stuck in C code, the parent kills that worker and starts a
new one. An item over its budget is graded once more, alone, under RETRY_FACTOR
(4) times the budget when its batch is done; only a hit then too is the judgment
`timeout`, never `incorrect` (so a loaded machine does not change verdicts). This works
from any thread of the caller and from inside daemonic worker processes (the
workers are plain subprocesses, not multiprocessing children).

Batch API
---------
    graders.grade_many(grader, rows, workers=None, budget_s=None) -> list[Judgment]
    graders.grade_many_timed(...) -> list[Timed]      # Judgment plus seconds spent

`grader` is a Grader or a `name[@version]` spec; `rows` is an iterable of
mappings `{answer, reference[, num_choices]}` or tuples `(answer, reference[,
num_choices])`. Results come back in input order. The fast path runs in the
caller's process; only the items it cannot decide go to a pool of
`workers` processes (default: the CPUs this process may use), which stays alive
between calls (`audit.graders.shared_pool()`), so per-call overhead after the
first call is a pipe round-trip per undecided item. Only a worker that overruns
its budget is killed and replaced.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

if __name__ != "audit.graders":  # the folder imported under its bare name, e.g. from the repository root
    raise ImportError(f"import the graders as `audit.graders`, not `{__name__}`")

from audit.graders.budget import BudgetExceeded, in_worker, shared_pool
from audit.graders.judgment import STATUSES, Judgment

from audit.registry import Registry, RegistryError, code_fingerprint, table

LOCK_FILE = Path(__file__).with_name("lock.json")

DEFAULT_BUDGET_S = 5.0
"""Per-item wall-clock budget of an isolated grader whose config names none."""


GradeFn = Callable[..., Judgment]
FastFn = Callable[..., "Judgment | None"]


@dataclass(frozen=True)
class Grader:
    """A registered grader version: `grade(answer, reference, num_choices=...) -> Judgment`."""

    name: str
    version: str
    description: str
    source: str
    fn: GradeFn = field(repr=False)
    config: Any = None
    fast: FastFn | None = field(default=None, repr=False)
    """Cheap in-process pre-check: a Judgment when it can decide, else None. `fn` must agree with it."""
    isolated: bool = False
    """Run `fn` in a worker process under a hard budget (anything that calls sympy)."""

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    @functools.cached_property
    def fingerprint(self) -> str:
        roots = (self.fn,) if self.fast is None else (self.fn, self.fast)
        return code_fingerprint(*roots, config=self.config)

    @property
    def budget_s(self) -> float:
        """Per-item wall-clock budget for isolated graders (from the config when it names one)."""
        return float(getattr(self.config, "budget_s", DEFAULT_BUDGET_S))

    def _kwargs(self, num_choices: int | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"num_choices": num_choices}
        if self.config is not None:
            kwargs["config"] = self.config
        return kwargs

    def try_fast(self, answer: str | None, reference: str, *, num_choices: int | None = None) -> Judgment | None:
        """The judgment when it is decidable without the symbolic step (or without isolation), else None."""
        if answer is None:
            return Judgment(None, "no_answer", "no answer was extracted")
        if self.fast is not None:
            try:
                v = self.fast(answer, reference, **self._kwargs(num_choices))
            except Exception as e:  # a grader never raises: report it
                return Judgment(None, "error", f"{type(e).__name__} in fast path: {_short(e)}")
            if v is not None:
                return v
        if not self.isolated or in_worker():
            return self.grade_inline(answer, reference, num_choices=num_choices)
        return None

    def grade_inline(self, answer: str, reference: str, *, num_choices: int | None = None) -> Judgment:
        """Run `fn` in this process with no budget of its own (workers call this under their alarm)."""
        try:
            return self.fn(answer, reference, **self._kwargs(num_choices))
        except BudgetExceeded:
            raise
        except RecursionError:
            return Judgment(None, "error", "expression nested too deeply (RecursionError)")
        except MemoryError:
            return Judgment(None, "error", "out of memory while grading")
        except Exception as e:
            return Judgment(None, "error", f"{type(e).__name__}: {_short(e)}")

    def grade(self, answer: str | None, reference: str, *, num_choices: int | None = None,
              budget_s: float | None = None) -> Judgment:
        """Grade one answer. Never raises for any answer/reference strings."""
        v = self.try_fast(answer, reference, num_choices=num_choices)
        if v is not None:
            return v
        assert answer is not None
        return shared_pool().run_one(
            self.key, answer, reference, num_choices, self.budget_s if budget_s is None else budget_s).judgment


@functools.cache
def installed_version(dist: str) -> str | None:
    """The installed version of a distribution, or None (cached: graders check pins on every item)."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _short(e: BaseException, limit: int = 160) -> str:
    s = " ".join(str(e).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


REGISTRY: Registry[Grader] = table("grader", home=__name__)
"""Every registered grader; each public module of this package registers its family on import."""


def register(name: str, version: str, *, description: str, source: str = "audit", config: Any = None,
             fast: FastFn | None = None, isolated: bool = False) -> Callable[[GradeFn], GradeFn]:
    """Register `fn(answer, reference, *, num_choices=None[, config]) -> Judgment` as `name@version`.

    `fast` (same signature, returns Judgment or None) is tried first in the caller's process;
    `isolated=True` sends everything `fast` leaves undecided to a worker under a hard budget.
    """

    def deco(fn: GradeFn) -> GradeFn:
        REGISTRY.add(Grader(name, version, description, source, fn, config, fast, isolated))
        return fn

    return deco


get = REGISTRY.get
"""`get(spec)`: the grader `name@version`, or the latest version of `name` (RegistryError otherwise)."""

all_graders = REGISTRY.all
"""`all_graders()`: every registered grader version, in registration order."""


class Timed(NamedTuple):
    """A judgment with the seconds spent on it (fast path: in this process; else: in the worker)."""

    judgment: Judgment
    seconds: float


def _row_fields(row: Any, i: int) -> tuple[str | None, str, int | None]:
    if isinstance(row, Mapping):
        return row.get("answer"), row["reference"], row.get("num_choices")
    if isinstance(row, (tuple, list)) and len(row) in (2, 3):
        return row[0], row[1], (row[2] if len(row) == 3 else None)
    raise TypeError(f"row {i}: expected a mapping {{answer, reference[, num_choices]}} or a tuple, "
                    f"got {type(row).__name__}")


def grade_many_timed(grader: Grader | str, rows: Iterable[Any], *, workers: int | None = None,
                     budget_s: float | None = None) -> list[Timed]:
    """Grade many rows; results in input order, each with its time. See the module docstring."""
    g = get(grader) if isinstance(grader, str) else grader
    budget = g.budget_s if budget_s is None else float(budget_s)
    out: list[Timed | None] = []
    pending: list[tuple[int, str, str, int | None]] = []
    for i, row in enumerate(rows):
        answer, reference, num_choices = _row_fields(row, i)
        t0 = time.perf_counter()
        v = g.try_fast(answer, reference, num_choices=num_choices)
        if v is None:
            assert answer is not None
            pending.append((i, answer, reference, num_choices))
            out.append(None)
        else:
            out.append(Timed(v, time.perf_counter() - t0))
    if pending:
        pool = shared_pool()
        results = pool.run_many(g.key, [p[1:] for p in pending], budget, workers=workers)
        for (i, *_), timed in zip(pending, results, strict=True):
            out[i] = Timed(timed.judgment, timed.seconds)
    return [t for t in out if t is not None]


def grade_many(grader: Grader | str, rows: Iterable[Any], *, workers: int | None = None,
               budget_s: float | None = None) -> list[Judgment]:
    """Grade many rows across a process pool; judgments in input order. See the module docstring."""
    return [t.judgment for t in grade_many_timed(grader, rows, workers=workers, budget_s=budget_s)]


__all__ = ["Judgment", "Grader", "Timed", "REGISTRY", "RegistryError", "STATUSES", "DEFAULT_BUDGET_S", "register",
           "get", "all_graders", "grade_many", "grade_many_timed"]
