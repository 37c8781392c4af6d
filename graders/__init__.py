"""Versioned graders: `grade(answer, reference) -> Verdict`, never a silent False.

    >>> import graders
    >>> graders.get("math.equiv").grade("x = 4", "4")
    Verdict(correct=True, status='correct', reason=...)

A Verdict separates "not gradable" (correct is None, with a status saying why)
from "wrong". Registered versions are immutable, like the extractors'.
Graders may use `extractors`; they know nothing of `audit` or the CLI.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extractors.registry import Registry, RegistryError, code_fingerprint

LOCK_FILE = Path(__file__).with_name("lock.json")

STATUSES = ("correct", "incorrect", "no_answer", "parse_error_answer", "parse_error_reference", "timeout",
            "error")
"""Every status a grader may return; only `correct` and `incorrect` are graded."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A grader's decision on one answer."""

    correct: bool | None
    """True or False when graded; None when not gradable (see `status`)."""
    status: str
    """One of STATUSES."""
    reason: str = ""
    """Short explanation: which rule decided, or why grading was impossible."""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown verdict status {self.status!r}")
        expected = {"correct": True, "incorrect": False}.get(self.status)
        if self.correct is not expected:
            raise ValueError(f"status {self.status!r} needs correct={expected}, got {self.correct}")


GradeFn = Callable[..., Verdict]


@dataclass(frozen=True)
class Grader:
    """A registered grader version: `grade(answer, reference, num_choices=...) -> Verdict`."""

    name: str
    version: str
    description: str
    source: str
    fn: GradeFn = field(repr=False)
    config: Any = None

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    @functools.cached_property
    def fingerprint(self) -> str:
        return code_fingerprint(self.fn, config=self.config)

    def grade(self, answer: str | None, reference: str, *, num_choices: int | None = None) -> Verdict:
        if answer is None:
            return Verdict(None, "no_answer", "no answer was extracted")
        kwargs: dict[str, Any] = {"num_choices": num_choices}
        if self.config is not None:
            kwargs["config"] = self.config
        return self.fn(answer, reference, **kwargs)


REGISTRY: Registry[Grader] = Registry("grader")


def register(name: str, version: str, *, description: str, source: str = "audit",
             config: Any = None) -> Callable[[GradeFn], GradeFn]:
    """Register `fn(answer, reference, *, num_choices=None[, config]) -> Verdict` as `name@version`."""

    def deco(fn: GradeFn) -> GradeFn:
        REGISTRY.add(Grader(name, version, description, source, fn, config))
        return fn

    return deco


def get(spec: str) -> Grader:
    """The grader `name@version`, or the latest version of `name`."""
    _load_families()
    return REGISTRY.get(spec)


def all_graders() -> list[Grader]:
    _load_families()
    return list(REGISTRY)


FAMILIES: tuple[str, ...] = ()
"""Modules that register graders, one per family."""


@functools.cache
def _load_families() -> None:
    import importlib

    for mod in FAMILIES:
        importlib.import_module(f"graders.{mod}")


__all__ = ["Verdict", "Grader", "REGISTRY", "RegistryError", "STATUSES", "register", "get", "all_graders"]
