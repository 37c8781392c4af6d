"""A grader's judgment of one answer: graded (correct or incorrect) or not gradable, with why.

Kept apart from the package's registry so that the worker pool (`audit.graders.budget`)
and the graders all use it without importing each other. A judgment is what `grade`
returns; a verdict file's row turns it into a verdict under the run's policies.
"""

from __future__ import annotations

from dataclasses import dataclass

STATUSES = ("correct", "incorrect", "no_answer", "parse_error_answer", "parse_error_reference", "timeout",
            "error")
"""Every status a grader may return; only `correct` and `incorrect` are graded."""


@dataclass(frozen=True, slots=True)
class Judgment:
    """A grader's decision on one answer."""

    correct: bool | None
    """True or False when graded; None when not gradable (see `status`)."""
    status: str
    """One of STATUSES."""
    reason: str = ""
    """Short explanation: which rule decided, or why grading was impossible."""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown judgment status {self.status!r}")
        expected = {"correct": True, "incorrect": False}.get(self.status)
        if self.correct is not expected:
            raise ValueError(f"status {self.status!r} needs correct={expected}, got {self.correct}")
