"""Prompt templates for generation, one per benchmark family, versioned like extractors.

A registered `name@version` never changes the text it renders; a change is a new
version beside the old. Each benchmark's default template is named by its spec
(`audit.specs`); `audit.specs.lookup("prompt template", NAME)` finds one. Every
responses row stores the sha256 of the exact prompt that was sent (`prompt_sha256`),
and the manifest names the template and its fingerprint, so a reader can tell which wording produced which response.

Sources (wording reimplemented from these files, not copied code):

- `mmlu_pro.cot@1`: TIGER-AI-Lab/MMLU-Pro `evaluate_from_api.py` at
  f418b116db00b065c2aea046518d8fcf74d39872, `single_request` (the instruction
  "The following are multiple choice questions (with answers) about {category}.
  Think step by step and then output the answer in the format of "The answer is
  (X)" at the end.") followed by `format_example(question, options)`, which always
  ends in "Answer: Let's think step by step." because it replaces an empty
  `cot_content` with that sentence. Options equal to "N/A" are dropped as
  `preprocess` does. Upstream prepends five chain-of-thought examples from the
  validation split; this zero-shot version sends the instruction and the question
  only (the validation split is not part of the items), so it is named as such.
- `gpqa.simple_evals@1`: openai/simple-evals `common.py` QUERY_TEMPLATE_MULTICHOICE
  at ee3b0318d8d1d9d72755a4120879be65f7c07e9e (a final line `Answer: $LETTER`).
  The options are used in the item's stored order (the items package fixes the
  permutation).
- `math.boxed@1`: the problem followed by the directive recommended for math in
  deepseek-ai/DeepSeek-R1 README.md ("Usage Recommendations", item 3, at
  00f3296a14392e787d4138b5a0d8ce0e55a25b23): "Please reason step by step, and put
  your final answer within \\boxed{}."
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from audit.errors import AuditError
from audit.fileio import dumps
from audit.models import LETTERS, ItemRow
from audit.registry import Registry, table


@dataclass(frozen=True)
class PromptTemplate:
    """One way of turning an item into the user message sent to the model."""

    name: str
    version: str
    description: str
    source: str
    """Where the wording comes from: repository, file and commit."""
    parts: tuple[tuple[str, str], ...]
    """The fixed text of the template, by part name; the fingerprint covers all of it."""
    render_fn: Callable[[PromptTemplate, ItemRow], str]

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def fingerprint(self) -> str:
        """sha256 over the name, version, the renderer's source and every fixed text part.

        tests/test_prompts.py pins each registered version's fingerprint: a change to the
        wording or the renderer under an unchanged version fails there.
        """
        try:
            code = inspect.getsource(self.render_fn)
        except (OSError, TypeError):
            code = self.render_fn.__qualname__
        blob = dumps({"key": self.key, "renderer": code, "parts": [list(p) for p in self.parts]})
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def part(self, name: str) -> str:
        return dict(self.parts)[name]

    def render(self, item: ItemRow) -> str:
        """The user message for `item`; raises AuditError naming the item when a field it needs is missing."""
        return self.render_fn(self, item)


def _need(item: ItemRow, value: Any, field: str, why: str) -> Any:
    if value is None or value == "" or value == []:
        raise AuditError(f"item {item.item_id!r} has no {field}, which {why}", field=field)
    return value


def _render_mmlu_pro(t: PromptTemplate, item: ItemRow) -> str:
    subject = _need(item, item.subject, "subject", "the MMLU-Pro instruction names")
    question = _need(item, item.question, "question", "the prompt needs")
    choices = [c for c in _need(item, item.choices, "choices", "the prompt lists") if c != "N/A"]
    if len(choices) > 10:
        raise AuditError(f"item {item.item_id!r} has {len(choices)} options; MMLU-Pro letters stop at J",
                         field="choices")
    options = "".join(f"{LETTERS[i]}. {opt}\n" for i, opt in enumerate(choices))
    return (t.part("instruction").format(subject=subject)
            + t.part("question").format(question=question, options=options))


def _render_multichoice4(t: PromptTemplate, item: ItemRow) -> str:
    question = _need(item, item.question, "question", "the prompt needs")
    choices = _need(item, item.choices, "choices", "the prompt lists")
    if len(choices) != 4:
        raise AuditError(f"item {item.item_id!r} has {len(choices)} options; this template asks for A-D",
                         field="choices")
    return t.part("template").format(Question=question, A=choices[0], B=choices[1], C=choices[2], D=choices[3])


def _render_question(t: PromptTemplate, item: ItemRow) -> str:
    question = _need(item, item.question, "question", "the prompt needs")
    return t.part("template").format(question=question)


REGISTRY: Registry[PromptTemplate] = table("prompt template", home=__name__)
"""Every registered template (`audit.registry`: the registry shared by every component kind)."""


REGISTRY.add(PromptTemplate(
    name="mmlu_pro.cot", version="1",
    description="MMLU-Pro chain-of-thought instruction asking for \"The answer is (X)\", zero-shot",
    source="TIGER-AI-Lab/MMLU-Pro evaluate_from_api.py@f418b116db00b065c2aea046518d8fcf74d39872 "
           "(single_request, format_example; the 5 validation CoT examples are not included)",
    parts=(
        ("instruction", "The following are multiple choice questions (with answers) about {subject}. "
                        "Think step by step and then output the answer in the format of "
                        "\"The answer is (X)\" at the end.\n\n"),
        ("question", "Question: {question}\nOptions: {options}Answer: Let's think step by step.\n\n"),
    ),
    render_fn=_render_mmlu_pro,
))

REGISTRY.add(PromptTemplate(
    name="gpqa.simple_evals", version="1",
    description="GPQA multiple choice (A-D) asking for a last line 'Answer: $LETTER'",
    source="openai/simple-evals common.py@ee3b0318d8d1d9d72755a4120879be65f7c07e9e (QUERY_TEMPLATE_MULTICHOICE)",
    parts=(
        ("template", "Answer the following multiple choice question. The last line of your response should "
                     "be of the following format: 'Answer: $LETTER' (without quotes) where LETTER is one of "
                     "ABCD. Think step by step before answering.\n\n{Question}\n\nA) {A}\nB) {B}\nC) {C}\nD) {D}"),
    ),
    render_fn=_render_multichoice4,
))

REGISTRY.add(PromptTemplate(
    name="math.boxed", version="1",
    description="Math problem followed by the step-by-step \\boxed{} directive",
    source="deepseek-ai/DeepSeek-R1 README.md@00f3296a14392e787d4138b5a0d8ce0e55a25b23 (Usage Recommendations, 3)",
    parts=(
        ("template", "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}."),
    ),
    render_fn=_render_question,
))

# --------------------------------------------------------------------------- what is sent


def chat_messages(text: str) -> list[dict[str, str]]:
    """The chat request's messages: one user turn, no system prompt (as the sources above send it)."""
    return [{"role": "user", "content": text}]


def prompt_sha256(mode: str, text: str) -> str:
    """sha256 of what is sent: the prompt text's UTF-8 (completion mode), or the
    messages as canonical JSON (`audit.fileio.dumps`: keys as given, no spaces, UTF-8 kept) in chat mode."""
    payload = text if mode == "completion" else dumps(chat_messages(text))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
