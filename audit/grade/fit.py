"""Does the spec fit the responses? When most rows read no answer, which registered extractors would read
more of them (`audit grade` says so after grading)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from audit import extractors
from audit.grade.passes import Grading
from audit.packages import open_package
from audit.specs import GradeConfig, ResolvedConfig, resolve

FIT_THRESHOLD = 0.5
"""`fit_check` speaks when more than this share of the rows with a response read no answer."""
FIT_SAMPLE = 1000
"""At most this many no-answer responses are re-read with the other registered extractors."""


@dataclass(frozen=True)
class FitCheck:
    """Most rows read no answer: the spec's extractor does not fit these responses' format."""

    no_answer: int
    """Rows with a response from which the extractor read no answer."""
    read: int
    """Rows with a response it read (with or without an answer)."""
    extractor: str
    """The extractor `name@version` used, and"""
    expects: str
    """the format it expects, in its own words."""
    sampled: int
    """No-answer responses re-read with the other extractors."""
    better: list[tuple[str, int]]
    """Registered extractors (latest versions; letter readers only when the spec's extractor reads letters)
    that read an answer statement or format match in some of them, with how many, most first (at most 3)."""


def fit_check(grading: Grading, responses: str | os.PathLike[str], config: ResolvedConfig | GradeConfig,
              *, threshold: float = FIT_THRESHOLD, sample: int = FIT_SAMPLE) -> FitCheck | None:
    """None when the spec's extractor reads an answer in most rows; else how many rows read none, and which
    registered extractors read more of them (re-reading at most `sample` of those responses)."""
    if isinstance(config, GradeConfig):
        config = resolve(config)
    statuses = grading.header.summary.statuses
    no_answer = statuses.get("no_answer", 0) + statuses.get("random_guess", 0)
    read = sum(v for k, v in statuses.items() if k not in ("missing", "excluded", "error", "truncated"))
    if not read or no_answer / read <= threshold:
        return None
    cols = grading.columns
    keys = {(i, sm, a) for i, sm, a, ans, st in zip(cols["item_id"], cols["sample"], cols["attempt"], cols["answer"],
                                                      cols["status"], strict=True)
            if ans is None and st in ("no_answer", "random_guess")}
    used = {c.key for c in (config.extractor, config.mc_extractor) if c is not None and hasattr(c, "key")}
    names = dict.fromkeys(e.name for e in extractors.all_extractors())
    others = [extractors.get(n) for n in names if n != "raw"]
    # A letter-reading spec is offered letter readers only (its grader compares letters).
    letters = getattr(config.extractor, "letters", None)
    others = [e for e in others if e.key not in used and (not letters or e.letters)]
    counts = dict.fromkeys((e.key for e in others), 0)
    seen = 0
    with open_package(responses) as rp:
        for _, _, obj in rp.iter_objects("response_row.v1"):
            text = obj.get("response")
            if seen >= sample or not isinstance(text, str):
                continue
            if (obj["item_id"], obj.get("sample", 0), obj.get("attempt", 0)) not in keys:
                continue
            seen += 1
            for e in others:
                got = e.extract(text, finish_reason=obj.get("finish_reason"))
                if got.answer is not None and e.strength(got.rule) in ("statement", "format"):
                    counts[e.key] += 1
    better = sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: (-kv[1], kv[0]))
    main = config.extractor
    return FitCheck(no_answer=no_answer, read=read, extractor=main.key, expects=main.description, sampled=seen,
                    better=better[:3])
