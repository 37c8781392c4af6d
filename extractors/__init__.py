"""Versioned answer extractors: pure functions from a response's text to an answer.

    >>> from audit import extractors
    >>> ex = extractors.get("mmlu_pro.official@f418b11")
    >>> ex.extract("... so the answer is (C).")
    Extraction(answer='C', rule='L1', span=(...))

This folder is the package `audit.extractors` (see `audit/__init__.py`). Each benchmark
family has its own module, registering its versions with `@register(..., rules=...)`: every
public module here is loaded on first lookup. Each registered `name@version` is immutable
(see `audit.registry` and `audit.lock`). Nothing here imports from graders, nor from audit
but its neutral registry.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __name__ != "audit.extractors":  # the folder imported under its bare name, e.g. from the repository root
    raise ImportError(f"import the extractors as `audit.extractors`, not `{__name__}`")

from audit.registry import Registry, RegistryError, code_fingerprint, table

LOCK_FILE = Path(__file__).with_name("lock.json")

RULE_NO_RESPONSE = "no_response"
"""Rule reported when there is no response text at all."""
RULE_NONE = "none"
"""Rule reported when no step of the extractor matched."""
RULE_NO_OPTIONS = "no_options"
"""Rule reported by an extractor that reads only the item's own option letters when the item records no option
count: nothing is read, and grading makes the row an `error` (never a guess at A-J counted wrong)."""
STRENGTHS = ("statement", "format", "fallback")
"""How much a rule's read says about the answer, strongest first: `statement`, the response states its answer
("the answer is (C)", "Answer: C"); `format`, the text matches the answer format the prompt asked for (`#### 18`,
`\\boxed{C}`, a final `Answer:` line); `fallback`, a read of last resort from text that states no answer (the last
standalone capital, the last number). Rules that read no answer have none."""


@dataclass(frozen=True, slots=True)
class Extraction:
    """What an extractor read from a response."""

    answer: str | None
    """The extracted answer, or None when nothing was found."""
    rule: str
    """Which step fired (e.g. `L1`, `final_line`, `boxed`), or why none did (`none`, `truncated`)."""
    span: tuple[int, int] | None = None
    """Character offsets [start, end) of the matched evidence in the response."""


ExtractFn = Callable[..., Extraction]


@dataclass(frozen=True)
class Extractor:
    """A registered extractor version: `extract(text, finish_reason=...) -> Extraction`."""

    name: str
    version: str
    description: str
    source: str
    """Where the behaviour comes from: repository, path and commit, or `audit` for our own."""
    fn: ExtractFn = field(repr=False)
    config: Any = None
    """Frozen configuration passed to `fn` as `config=` when not None; part of the fingerprint."""
    rules: tuple[str, ...] = ()
    """Every rule `fn` can report (what fired, or why nothing did); `no_response` comes on top for
    every extractor. The golden rows must reach each one."""
    takes_options: bool = False
    """`fn` also takes `options=` (the item's option count, or None): its alphabet is the item's own."""

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    @functools.cached_property
    def fingerprint(self) -> str:
        return code_fingerprint(self.fn, config=self.config)

    def explain(self, rule: str) -> str | None:
        """The rule in words: from the `RULE_WORDS` table beside the extractor's code, else None.

        The words are documentation, not behaviour: they sit outside the registered function and
        its fingerprint, so rewording them changes no version.
        """
        if rule == RULE_NO_RESPONSE:
            return "no response text"
        words = getattr(sys.modules.get(self.fn.__module__), "RULE_WORDS", {})
        return words.get(self.name, {}).get(rule)

    def strength(self, rule: str | None) -> str | None:
        """How strong a read the rule is (one of `STRENGTHS`), from the `RULE_STRENGTH` table beside the
        extractor's code; None for rules that read no answer, and for extractors that declare no table.

        Like `RULE_WORDS`, the table sits outside the registered function and its fingerprint: it classifies
        what the rules read for reports (`audit diff`, `audit grade`) and decides no verdict, so declaring or
        refining it changes no version and no verdict file.
        """
        if rule is None:
            return None
        table = getattr(sys.modules.get(self.fn.__module__), "RULE_STRENGTH", {})
        return table.get(self.name, {}).get(rule)

    @property
    def letters(self) -> str | None:
        """The option letters a multiple-choice extractor can read (`ABCDEFGHIJ` for MMLU-Pro's cascades),
        from the `LETTERS_READ` table beside its code; None for extractors that do not read letters, or read
        as many as the item has. An item whose options run past them cannot be graded with it."""
        return getattr(sys.modules.get(self.fn.__module__), "LETTERS_READ", {}).get(self.name)

    def extract(self, text: str | None, *, finish_reason: str | None = None,
                options: int | None = None) -> Extraction:
        """What `text` answers; `options` (the item's option count) reaches only extractors that take it."""
        if text is None:
            return Extraction(None, RULE_NO_RESPONSE)
        kw: dict[str, Any] = {"options": options} if self.takes_options else {}
        if self.config is not None:
            return self.fn(text, finish_reason=finish_reason, config=self.config, **kw)
        return self.fn(text, finish_reason=finish_reason, **kw)


REGISTRY: Registry[Extractor] = table("extractor", home=__name__)
"""Every registered extractor; each public module of this package registers its family on import."""


def register(name: str, version: str, *, description: str, rules: tuple[str, ...], source: str = "audit",
             config: Any = None, takes_options: bool = False) -> Callable[[ExtractFn], ExtractFn]:
    """Register `fn(text, *, finish_reason=None[, config][, options]) -> Extraction` as `name@version`, with
    every rule it can report (`takes_options`: it reads the item's option count)."""
    if not rules or len(set(rules)) != len(rules) or RULE_NO_RESPONSE in rules:
        raise RegistryError(f"extractor {name}@{version}: `rules` must list each rule `fn` reports once "
                            f"({RULE_NO_RESPONSE!r} is added for every extractor)")

    def deco(fn: ExtractFn) -> ExtractFn:
        REGISTRY.add(Extractor(name, version, description, source, fn, config, tuple(rules), takes_options))
        return fn

    return deco


get = REGISTRY.get
"""`get(spec)`: the extractor `name@version`, or the latest version of `name` (RegistryError otherwise)."""

all_extractors = REGISTRY.all
"""`all_extractors()`: every registered extractor version, in registration order."""


__all__ = ["Extraction", "Extractor", "REGISTRY", "RegistryError", "STRENGTHS", "register", "get", "all_extractors"]
