"""Judge templates: versioned components that turn (question, response, gold answer) into the judge's request.

A registered `name@version` never changes the bytes it sends. Each template's prompt text lives in its own
file under `prompts/`, copied byte for byte from its upstream at a pinned commit, and the template pins the
file's sha256: a prompt file whose bytes do not match is refused in one line before any call. The fingerprint
covers the prompt bytes, the renderer's source, the response format and the sampling defaults; `lock.json`
here pins every fingerprint (`audit lock`), as for extractors.

Sources (prompt text is data copied with its commit named; no upstream code is copied):

- `hle.official@a590489`: centerforaisafety/hle `hle_eval/run_judge_results.py` at
  a59048963171c5b9cfe89fbcb97ddde39b540897 (unchanged to 87c92ead95bdd49d0598a3e16e926932bb0d12cc):
  `JUDGE_PROMPT.format(question=, correct_answer=, response=)` as the one user message, with the pydantic
  model `ExtractedAnswer` (extracted_final_answer, reasoning, correct yes/no, confidence, strict) sent as a
  strict JSON schema (openai-python's `beta.chat.completions.parse`), `max_completion_tokens=4096`, no
  temperature and no seed (upstream sets neither).
- `simple_evals.equality@ee3b031`: openai/simple-evals `common.py` at ee3b0318d8d1d9d72755a4120879be65f7c07e9e,
  `EQUALITY_TEMPLATE % {"expression1": gold, "expression2": extracted answer}` (`check_equality`), sampled by
  `ChatCompletionSampler`'s defaults: temperature 0.5, max_tokens 1024 (model `gpt-4-turbo-preview`, a moving alias).
- `inspect.model_graded_qa@499e615` and `inspect.model_graded_fact@499e615`: UKGovernmentBEIS/inspect_ai
  `src/inspect_ai/scorer/_model.py` at 499e6152e7b8fc8cbd8ac5283536572aa6e4ab17: the default templates with
  `default_instructions(partial_credit=False)`, `[BEGIN DATA]`/`[END DATA]` in the inputs neutralized to
  `[BEGIN-DATA]` as `model_scoring_prompt` does, the provider's default sampling (inspect sets none).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.registry import Registry, table

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
LOCK_FILE = Path(__file__).resolve().parent / "templates.lock.json"


@dataclass(frozen=True)
class JudgeInput:
    """What a template may put in the judge's prompt."""

    question: str
    """The item's question text."""
    response: str
    """The judged response, whole."""
    reference: str
    """The gold answer."""
    answer: str | None = None
    """The answer an extractor read from the response (simple-evals' equality checker compares it)."""


@dataclass(frozen=True)
class JudgeTemplate:
    """One judge prompt, its response format and sampling defaults, copied from an upstream at a commit."""

    name: str
    version: str
    description: str
    source: str
    """Repository, file and commit the prompt bytes come from."""
    prompt_file: str
    """File under `prompts/` holding the prompt bytes."""
    prompt_sha256: str
    """sha256 of those bytes, pinned: a file that differs is refused."""
    render_fn: Callable[[JudgeTemplate, JudgeInput], list[dict[str, str]]] = field(repr=False)
    default_rule: str = ""
    """The parse rule upstream applies (`name@version`)."""
    response_format: dict[str, Any] | None = None
    """The `response_format` sent with the request (structured output), or None."""
    sampling: tuple[tuple[str, Any], ...] = ()
    """Upstream's sampling, as sent (temperature, max_tokens, ...); what is not listed is not sent."""
    needs_answer: bool = False
    """The prompt compares an extracted answer, not the whole response (simple-evals)."""
    extra_files: tuple[tuple[str, str, str], ...] = ()
    """Further fixed texts: (part name, file under `prompts/`, its pinned sha256)."""

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    def prompt(self) -> str:
        """The prompt text, its bytes checked against the pinned sha256 (AuditError in one line otherwise)."""
        return _checked(self.key, self.prompt_file, self.prompt_sha256)

    def part(self, name: str) -> str:
        """A further fixed text of the template (checked like the prompt)."""
        for part, file, digest in self.extra_files:
            if part == name:
                return _checked(self.key, file, digest)
        raise KeyError(name)

    @property
    def fingerprint(self) -> str:
        """sha256 over the key, the renderer's source, the pinned prompt digests, response format and sampling."""
        try:
            code = inspect.getsource(self.render_fn)
        except (OSError, TypeError):
            code = self.render_fn.__qualname__
        blob = json.dumps({"key": self.key, "renderer": code, "prompt_sha256": self.prompt_sha256,
                           "extra": [list(x) for x in self.extra_files], "response_format": self.response_format,
                           "sampling": [list(s) for s in self.sampling]}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def render(self, inp: JudgeInput) -> list[dict[str, str]]:
        """The request's messages for `inp`."""
        return self.render_fn(self, inp)

    def body(self, messages: list[dict[str, str]], model: str, overrides: dict[str, Any]) -> dict[str, Any]:
        """The chat request body: messages, upstream's sampling (overridden by `overrides`, None removes a key),
        and the response format."""
        body: dict[str, Any] = {"model": model, "messages": messages}
        sampling = {**dict(self.sampling), **overrides}
        body.update({k: v for k, v in sampling.items() if v is not None})
        if self.response_format is not None:
            body["response_format"] = self.response_format
        return body


def _checked(key: str, file: str, digest: str) -> str:
    return _read_prompt(key, file, digest)


@cache
def _read_prompt(key: str, file: str, digest: str) -> str:
    path = PROMPT_DIR / file
    try:
        data = path.read_bytes()
    except OSError as e:
        raise AuditError(f"judge template {key}: cannot read its prompt: {e.strerror or e}", path=str(path)) from None
    got = hashlib.sha256(data).hexdigest()
    if got != digest:
        raise AuditError(f"judge template {key}: prompt bytes have sha256 {got[:12]}, its fingerprint pins "
                         f"{digest[:12]}: the prompt file was edited (a changed prompt is a new version)",
                         path=str(path))
    return data.decode("utf-8")


REGISTRY: Registry[JudgeTemplate] = table("judge template", home=__name__)
"""Every registered judge template."""


# --------------------------------------------------------------------------- HLE

HLE_SCHEMA: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "ExtractedAnswer",
        "strict": True,
        "schema": {
            "type": "object",
            "title": "ExtractedAnswer",
            "properties": {
                "extracted_final_answer": {"title": "Extracted Final Answer", "type": "string"},
                "reasoning": {"title": "Reasoning", "type": "string"},
                "correct": {"title": "Correct", "type": "string", "enum": ["yes", "no"]},
                "confidence": {"title": "Confidence", "type": "integer"},
                "strict": {"title": "Strict", "type": "boolean", "const": True},
            },
            "required": ["extracted_final_answer", "reasoning", "correct", "confidence", "strict"],
            "additionalProperties": False,
        },
    },
}
"""Upstream's `ExtractedAnswer` as openai-python's `parse` sends it: pydantic's JSON schema made strict
(every property required, no additional properties)."""


def _render_hle(t: JudgeTemplate, inp: JudgeInput) -> list[dict[str, str]]:
    prompt = t.prompt().format(question=inp.question, correct_answer=inp.reference, response=inp.response)
    return [{"role": "user", "content": prompt}]


REGISTRY.add(JudgeTemplate(
    "hle.official", "a590489",
    "HLE's official judge: extract the final answer, compare with the gold answer, report yes/no and confidence",
    "centerforaisafety/hle hle_eval/run_judge_results.py@a59048963171c5b9cfe89fbcb97ddde39b540897 JUDGE_PROMPT",
    "hle.official@a590489.txt", "0f0023ee579b8c134f1834ed8952778b9e01460e31d47c242ee3629da9d44835",
    _render_hle, default_rule="hle.substring@a590489", response_format=HLE_SCHEMA,
    sampling=(("max_completion_tokens", 4096),)))


# --------------------------------------------------------------------------- simple-evals


def _render_equality(t: JudgeTemplate, inp: JudgeInput) -> list[dict[str, str]]:
    # check_equality(sampler, row["Answer"], extracted_answer): expression 1 is the gold answer.
    answer = "" if inp.answer is None else inp.answer
    return [{"content": t.prompt() % {"expression1": inp.reference, "expression2": answer}, "role": "user"}]


REGISTRY.add(JudgeTemplate(
    "simple_evals.equality", "ee3b031",
    "simple-evals' math equality checker: are two expressions equivalent after trivial simplifications (Yes/No)",
    "openai/simple-evals common.py@ee3b0318d8d1d9d72755a4120879be65f7c07e9e EQUALITY_TEMPLATE",
    "simple_evals.equality@ee3b031.txt", "c9385e2f8120f01b098ea7c3b265535f797a65d8d7b37df4833fa38b51f50d2f",
    _render_equality, default_rule="simple_evals.yes@ee3b031",
    sampling=(("temperature", 0.5), ("max_tokens", 1024)), needs_answer=True))


# --------------------------------------------------------------------------- inspect_ai

_DELIMITER = re.compile(r"\[(BEGIN|END) DATA\]", re.IGNORECASE)
INSPECT_INSTRUCTIONS = ("instructions", "inspect.instructions@499e615.txt",
                        "7c6cdf15888e0f2173e623fb52ba2d0b75aeb575a9937b0e3e66c9f4370afd5a")


def _neutralize(text: str) -> str:
    """inspect's `neutralize_structural_delimiters`: `[END DATA]` in an input becomes `[END-DATA]`."""
    return _DELIMITER.sub(lambda m: m.group(0).replace(" ", "-"), text)


def _render_inspect(t: JudgeTemplate, inp: JudgeInput) -> list[dict[str, str]]:
    prompt = t.prompt().format(question=_neutralize(inp.question), answer=_neutralize(inp.response),
                               criterion=_neutralize(inp.reference), instructions=t.part("instructions"))
    return [{"role": "user", "content": prompt}]


_INSPECT = "UKGovernmentBEIS/inspect_ai src/inspect_ai/scorer/_model.py@499e6152e7b8fc8cbd8ac5283536572aa6e4ab17"
REGISTRY.add(JudgeTemplate(
    "inspect.model_graded_qa", "499e615",
    "inspect_ai's model_graded_qa default: does the submission meet the criterion (GRADE: C or I)",
    f"{_INSPECT} DEFAULT_MODEL_GRADED_QA_TEMPLATE, default_instructions(False)",
    "inspect.model_graded_qa@499e615.txt", "f07b32e50b33596a2db845ab8dfd11f64a17270a9162c828a42b8ed1d566d02a",
    _render_inspect, default_rule="inspect.grade@499e615", extra_files=(INSPECT_INSTRUCTIONS,)))
REGISTRY.add(JudgeTemplate(
    "inspect.model_graded_fact", "499e615",
    "inspect_ai's model_graded_fact default: does the submission contain the expert answer's content (GRADE: C or I)",
    f"{_INSPECT} DEFAULT_MODEL_GRADED_FACT_TEMPLATE, default_instructions(False)",
    "inspect.model_graded_fact@499e615.txt", "384298b3a412e9cee138ef7bbdb21c9a3e669fc9416eecdbb7c26fe24e13dda5",
    _render_inspect, default_rule="inspect.grade@499e615", extra_files=(INSPECT_INSTRUCTIONS,)))


def get(spec: str) -> JudgeTemplate:
    """The template `name[@version]`; UnknownError listing the registered ones otherwise."""
    return REGISTRY.get(spec)
