"""Typed rows of a `judge-calls` package: one row per call of an LLM judge, and the package's provenance.

A row holds everything needed to re-derive the judge's verdict without calling the judge again: the
request as sent (messages, response format, sampling), the model as requested and as served, the raw
reply text (and logprobs when given), usage, timings, retries and error, and the parse rule's
`name@version` with the fields it read. A parse-rule change is then a re-parse of the recorded text
(`audit reproduce`), never a new call.

Rows imported from tools that kept less (HLE's judged JSON keeps the parsed fields only) say so in
`raw_recorded` and `not_recorded`; nothing is invented for them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from audit.models import Count, Int64, Record

JUDGE_CALL_SCHEMA = "judge_call_row.v1"
"""Schema id of a judge call row."""

JudgeStatus = Literal["correct", "incorrect", "judge_error", "preference"]
"""What the parse rule made of a call: a verdict on the answer, a pairwise preference (AlpacaEval, Arena-Hard),
or `judge_error`: the call failed, or its reply did not parse under the rule."""


class ComponentKey(Record):
    """A versioned judge component (template or parse rule) as recorded in a row."""

    name: str
    """Registered name, e.g. `hle.official`."""
    version: str
    """Registered version, e.g. `a590489` (the upstream commit it copies)."""
    fingerprint: str
    """sha256 of the version's prompt bytes and code (see `audit.judge.templates`, `audit.judge.rules`)."""


class ChatMessage(Record):
    """One message of the request, as sent."""

    role: str
    """`system`, `user` or `assistant`."""
    content: str
    """The message text, exactly as sent."""


class JudgeCallRow(Record):
    """One call of the judge on one (item, sample) response: a row of a `judge-calls` package."""

    item_id: str = Field(min_length=1)
    """The judged item's id."""
    sample: Count = 0
    """The judged response's sample index (its run)."""
    attempt: Count = 0
    """The judged response's attempt index."""
    repeat: Count = 0
    """Index of the judge's own repetition on the same response (`--repeats K`: 0..K-1)."""
    position: Count = 0
    """For pairwise judges, which ordering of the two outputs this call judged (Arena-Hard's two games: 0 with
    the baseline as A, 1 with it as B); 0 otherwise."""
    response_sha256: str | None = None
    """sha256 of the judged response text (UTF-8); null when the source did not keep the response."""
    template: ComponentKey | None
    """The judge template; null for imported calls of a template audit does not register."""
    template_source: str | None = None
    """For imported calls, the upstream's own name of the template or annotator."""
    prompt_sha256: str | None = None
    """sha256 of the request's messages as canonical JSON (the bytes the prompt was built of); null when not
    recorded."""
    messages: list[ChatMessage] | None = None
    """The request's messages as sent (they hold the question and the gold answer); null when not recorded."""
    response_format: dict[str, Any] | None = None
    """The request's `response_format` (a JSON schema for structured output), when one was sent."""
    model_requested: str | None = None
    """The judge model as asked for (`--judge-model`, or the upstream's configured model)."""
    model_served: str | None = None
    """The model id the server answered with (the stream's `model`)."""
    model_revision: str | None = None
    """The served model's revision or root, when the server reports one (`/v1/models` `root`)."""
    temperature: float | None = None
    """Temperature sent; null when none was (the provider's default applied)."""
    top_p: float | None = None
    """top_p sent; null when none was."""
    seed: Int64 | None = None
    """Seed sent; null when none was."""
    max_tokens: Count | None = None
    """Output ceiling sent; null when none was."""
    raw_recorded: bool = True
    """False when the source kept no raw reply (HLE's judged JSON): then `raw` is null and the verdict rests on
    `parsed` alone, which no re-parse can check."""
    raw: str | None = None
    """The judge's reply text exactly as received (the content of the assistant message); null when the call
    failed or the source did not record it."""
    raw_sha256: str | None = None
    """sha256 of `raw` (UTF-8)."""
    logprobs: list[dict[str, Any]] | None = None
    """Per-token logprobs of the reply with their top alternatives, as the server gave them; null when none."""
    finish_reason: str | None = None
    """Why the judge's reply ended (`stop`, `length`: cut at max_tokens)."""
    prompt_tokens: Count | None = None
    """Judge prompt length in tokens, from the server's usage."""
    completion_tokens: Count | None = None
    """Judge reply length in tokens, from the server's usage."""
    started_at: float | None = None
    """Request start, seconds since the Unix epoch."""
    latency_s: float | None = Field(default=None, ge=0)
    """Seconds from the request to the end of the reply."""
    retries: Count = 0
    """Transient failures retried before this outcome."""
    error: str | None = None
    """Why the call gave no usable reply (server error, cut at a bound); null when it did."""
    rule: ComponentKey | None
    """The parse rule that read `raw` (or, imported, the upstream's own reading)."""
    parsed: dict[str, Any] | None = None
    """The fields the rule read (HLE: `extracted_final_answer`, `reasoning`, `correct`, `confidence`); null when
    nothing parsed."""
    status: JudgeStatus
    """What the rule made of the call: `correct`, `incorrect`, `preference` (pairwise) or `judge_error`."""
    reason: str
    """One line saying why (the rule's step, or what failed), in closed vocabulary: never the reply's text."""
    preference: float | None = None
    """Pairwise judges: the preference for output 2 over output 1 on AlpacaEval's scale (1 = output 1 wins, 2 =
    output 2 wins, 1.5 a draw), after undoing any swap; null otherwise."""
    swapped: bool | None = None
    """Pairwise judges: whether the two outputs were shown in swapped order (recomputed by the evaluator's
    seeded rule where the source did not keep it); null otherwise."""
    protected: bool = False
    """True for calls on protected items (HLE, GPQA): the prompt holds the question and gold answer, so the
    package is never released and the leak check covers its text."""
    not_recorded: list[str] = Field(default_factory=list)
    """Fields the source did not keep (e.g. `raw`, `messages`, `sampling`), so a reader knows what is missing
    rather than assuming it."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Importer-specific fields with no place above (e.g. AlpacaEval's recorded preference)."""


CALL_KEY = ("item_id", "sample", "attempt", "repeat", "position")
"""Fields unique together in one file of judge call rows."""


def call_key(row: JudgeCallRow) -> tuple[str, int, int, int, int]:
    """The row's key: (item_id, sample, attempt, repeat, position)."""
    return row.item_id, row.sample, row.attempt, row.repeat, row.position
