"""Benchmarks as specs, and the one resolver from names to components.

A spec is a small typed object, not logic in configuration: which extractor, grader,
reference field and policies grade a benchmark, and which prompt template generates
its responses. Every grading part can be overridden on the command line (`--extractor`,
`--grader`, `--policy key=value`, `--reference-field`) and the verdict file records what
was actually used. `resolve_config` turns a benchmark and its overrides into a
`ResolvedConfig`: the settings by name (`GradeConfig`, what a verdict file records) and
the registered components they name, which is what `audit.grade.grade_package` runs.
`lookup` is the one place where a `name[@version]` becomes a component, or a one-line error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pydantic

from audit import extractors, graders  # noqa: F401  (they create the registries `lookup` reads)
from audit.errors import AuditError, key_repr
from audit.generate import prompts  # noqa: F401
from audit.registry import Catalog, RegistryError, UnknownError, catalog, registry_of
from audit.verdicts.models import Policies, VerdictFile


def lookup(kind: str, spec: str) -> Any:
    """The registered `kind` (`extractor`, `grader`, `prompt template`) named `spec` (`name@version`, or `name`
    for its latest version)."""
    try:
        return registry_of(kind).get(spec)
    except RegistryError as e:
        raise AuditError(str(e.args[0] if e.args else e)) from None


@dataclass(frozen=True)
class GradeConfig:
    """Everything that decides a grading besides the input packages, by name; recorded in the verdict file."""

    benchmark: str
    extractor: str
    """Extractor `name@version` for the benchmark's answer format."""
    grader: str
    """Grader `name@version`."""
    mc_extractor: str | None = None
    """For mixed benchmarks (HLE): extractor for items that have options."""
    mc_grader: str | None = None
    """For mixed benchmarks (HLE): grader for items that have options."""
    reference_field: str = "reference"
    """Item field holding the gold answer: `reference` or `extra.KEY`."""
    policies: Policies = field(default_factory=Policies)

    @classmethod
    def recorded_in(cls, vf: VerdictFile) -> GradeConfig:
        """The settings a verdict file records (imported verdicts name no extractor or grader: AuditError)."""
        if vf.extractor is None or vf.grader is None:
            raise AuditError("records no extractor or grader (imported verdicts cannot be re-graded)")
        return cls(benchmark=vf.benchmark, extractor=vf.extractor.key, grader=vf.grader.key,
                   mc_extractor=vf.mc_extractor.key if vf.mc_extractor else None,
                   mc_grader=vf.mc_grader.key if vf.mc_grader else None,
                   reference_field=vf.reference_field, policies=vf.policies)


@dataclass(frozen=True)
class ResolvedConfig:
    """A grading's settings with the components they name: what `grade_package` runs.

    Tests and other callers may build one from their own component objects (anything with
    `name`, `version`, `fingerprint` and `extract` or `grade`).
    """

    config: GradeConfig
    extractor: Any
    grader: Any
    mc_extractor: Any = None
    mc_grader: Any = None

    @property
    def benchmark(self) -> str:
        return self.config.benchmark

    @property
    def policies(self) -> Policies:
        return self.config.policies

    @property
    def reference_field(self) -> str:
        return self.config.reference_field


@dataclass(frozen=True)
class BenchmarkSpec:
    """A benchmark's default grading and prompt, with a one-line description."""

    description: str
    config: GradeConfig
    prompt: str | None = None
    """The prompt template `audit generate` uses unless `--prompt` names another."""

    @property
    def name(self) -> str:
        return self.config.benchmark


SPECS: Catalog[BenchmarkSpec] = catalog("benchmark")
"""Every benchmark spec by name (`audit.registry`), registered below."""


def _add(spec: BenchmarkSpec) -> None:
    SPECS.add(spec.name, spec, home=__name__)


_add(BenchmarkSpec(
    "MMLU-Pro: the official extraction cascade at TIGER-AI-Lab/MMLU-Pro@f418b11, letter match",
    GradeConfig("mmlu_pro", extractor="mmlu_pro.official@f418b11", grader="choice@1"),
    prompt="mmlu_pro.cot"))
_add(BenchmarkSpec(
    "MMLU-Pro, answer statements only ('answer is (X)', 'Answer: X'; the official L3 fallback letter is not read), "
    "letter match: the sensitivity of a figure to fallback reads",
    GradeConfig("mmlu_pro_strict", extractor="mmlu_pro.statements@1", grader="choice@1"),
    prompt="mmlu_pro.cot"))
_add(BenchmarkSpec(
    "MMLU-Pro+ (up to twelve options A-L): the official cascade over each item's own letters, letter match",
    GradeConfig("mmlu_pro_plus", extractor="mmlu_pro.options@1", grader="choice@1"),
    prompt="mmlu_pro.cot"))
_add(BenchmarkSpec(
    "GPQA Diamond prompted for a final `Answer: X` line; truncated responses never credited",
    GradeConfig("gpqa_diamond", extractor="gpqa.final_line@1", grader="choice@1"),
    prompt="gpqa.simple_evals"))
_add(BenchmarkSpec(
    "MATH-500: the final answer (last \\boxed{}, else a final-answer statement, math or number), exact "
    "symbolic equivalence",
    GradeConfig("math500", extractor="math.final@1", grader="math.equiv@3"),
    prompt="math.boxed"))
_add(BenchmarkSpec(
    "Humanity's Last Exam: strict exact match on the `Exact Answer:` line; letter match for "
    "multiple-choice items",
    GradeConfig("hle", extractor="hle.exact_answer@2", grader="exact.hle@1",
                mc_extractor="hle.choice_answer@2", mc_grader="choice@1")))
_add(BenchmarkSpec(
    "Generic multiple choice: a free-form final answer statement, letter match",
    GradeConfig("choice", extractor="choice.freeform@1", grader="choice@1")))
_add(BenchmarkSpec(
    "Generic math: the final answer (last \\boxed{}, else a final-answer statement, math or number), exact "
    "symbolic equivalence",
    GradeConfig("math", extractor="math.final@1", grader="math.equiv@3"),
    prompt="math.boxed"))
_add(BenchmarkSpec(
    "GSM8K: the whole number on the `#### N` line (`2/3`, `-3`, `1,000.5`), else the last number; the "
    "reference is the value on the solution's `####` line; exact rationals",
    # @2, not @1: @1 reads `#### 2/3` as 2 (as lm-eval's strict-match does) and credits it against a gold of 2.
    GradeConfig("gsm8k", extractor="gsm8k.answer@2", grader="gsm8k.numeric@2")))
_add(BenchmarkSpec(
    "Multiple choice with the option already chosen (lm-eval log-likelihood samples, `audit import lm-eval`): the "
    "letter the response holds, letter match",
    GradeConfig("selected_choice", extractor="raw@1", grader="choice@1")))
_add(BenchmarkSpec(
    "Generic exact match of the whole (stripped) response",
    GradeConfig("exact", extractor="raw@1", grader="exact.hle@1")))

GENERATION_ONLY: dict[str, str] = {"gpqa": "gpqa.simple_evals"}
"""Benchmarks `audit generate` knows a prompt for that have no grading spec of their own (the full GPQA set)."""


def spec_named(task: str | None) -> str | None:
    """`task` when it is a registered spec's name, else None: what an importer records as the benchmark of a run
    named after its task (lm-eval's `copa` is a task, not a spec; the task itself goes to the provenance)."""
    return task if task in SPECS else None


def get_spec(name: str) -> BenchmarkSpec:
    """The spec `name`; AuditError listing the known benchmarks otherwise."""
    try:
        return SPECS[name]
    except UnknownError as e:
        raise AuditError(str(e)) from None


# --------------------------------------------------------------------------- resolving


class PolicyError(AuditError):
    """A policy override that does not parse (the CLI names its flag, `--policy`, in front)."""


def parse_policy_overrides(base: Policies, overrides: Iterable[str]) -> Policies:
    """Apply `key=value` overrides (`exclude=a,b` for lists) to a spec's policies; one-line errors."""
    data = base.model_dump()
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in Policies.model_fields:
            known = ", ".join(Policies.model_fields)
            raise PolicyError(f"policy {key_repr(item)}: expected KEY=VALUE with KEY one of {known}")
        if key == "exclude":
            data[key] = [v for v in value.split(",") if v]
        elif key == "guess_seed":
            try:
                if not value.strip().isascii():  # (int() reads "٣" as 3)
                    raise ValueError
                data[key] = int(value)
            except ValueError:
                raise PolicyError(f"policy {item!r}: guess_seed must be an integer") from None
        else:
            data[key] = value
    try:
        return Policies.model_validate(data)
    except pydantic.ValidationError as e:
        err = e.errors(include_url=False)[0]
        raise PolicyError(f"policy {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def resolve(config: GradeConfig) -> ResolvedConfig:
    """The components a config names, looked up in the registry."""
    return ResolvedConfig(
        config, lookup("extractor", config.extractor), lookup("grader", config.grader),
        lookup("extractor", config.mc_extractor) if config.mc_extractor else None,
        lookup("grader", config.mc_grader) if config.mc_grader else None)


def resolve_config(benchmark: str, *, extractor: str | None = None, grader: str | None = None,
                   policies: Iterable[str] = (), reference_field: str | None = None) -> ResolvedConfig:
    """The spec of `benchmark` with command-line overrides applied, and its components."""
    base = get_spec(benchmark).config
    return resolve(dataclasses.replace(
        base,
        extractor=extractor or base.extractor,
        grader=grader or base.grader,
        # An overridden extractor or grader applies to every item, multiple choice included.
        mc_extractor=None if extractor else base.mc_extractor,
        mc_grader=None if grader else base.mc_grader,
        reference_field=reference_field or base.reference_field,
        policies=parse_policy_overrides(base.policies, policies),
    ))


def prompt_for(benchmark: str, prompt: str | None = None) -> Any:
    """The prompt template named by `prompt`, else the benchmark's."""
    if prompt:
        return lookup("prompt template", prompt)
    spec = SPECS.get(benchmark)
    default = spec.prompt if spec is not None else GENERATION_ONLY.get(benchmark)
    if default is None:
        raise AuditError(f"no default prompt for benchmark {benchmark!r}; give --prompt "
                         f"(one of {', '.join(sorted(prompts.REGISTRY.keys()))})")
    return lookup("prompt template", default)
