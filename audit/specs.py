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
from typing import Any, NamedTuple

import pydantic

from audit import extractors, graders, prompts  # noqa: F401  (they create the registries `lookup` reads)
from audit.errors import AuditError, field_errors, key_repr
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


class SpecRow(NamedTuple):
    """One row of `SPEC_TABLE`: a benchmark, the components that grade it, its prompt and its description."""

    name: str
    extractor: str
    grader: str
    prompt: str | None
    description: str
    mc_extractor: str | None = None
    """For mixed benchmarks (HLE): the extractor for items that have options."""
    mc_grader: str | None = None


SPEC_TABLE: tuple[SpecRow, ...] = (
    SpecRow("mmlu_pro", "mmlu_pro.official@f418b11", "choice@1", "mmlu_pro.cot",
            "MMLU-Pro: the official extraction cascade at TIGER-AI-Lab/MMLU-Pro@f418b11, letter match"),
    SpecRow("mmlu_pro_strict", "mmlu_pro.statements@1", "choice@1", "mmlu_pro.cot",
            "MMLU-Pro, answer statements only ('answer is (X)', 'Answer: X'; the official L3 fallback letter is not "
            "read), letter match: the sensitivity of a figure to fallback reads"),
    # @2, not @1: @1 reads an item without an option count over A-J ("(K)" as J), every such row a silent wrong.
    SpecRow("mmlu_pro_plus", "mmlu_pro.options@2", "choice@1", "mmlu_pro.cot",
            "MMLU-Pro+ (up to twelve options A-L): the official cascade over each item's own letters, letter match"),
    SpecRow("gpqa_diamond", "gpqa.final_line@1", "choice@1", "gpqa.simple_evals",
            "GPQA Diamond prompted for a final `Answer: X` line; truncated responses never credited"),
    SpecRow("math500", "math.final@1", "math.equiv@3", "math.boxed",
            "MATH-500: the final answer (last \\boxed{}, else a final-answer statement, math or number), exact "
            "symbolic equivalence"),
    SpecRow("hle", "hle.exact_answer@2", "exact.hle@1", None,
            "Humanity's Last Exam: strict exact match on the `Exact Answer:` line; letter match for "
            "multiple-choice items", mc_extractor="hle.choice_answer@2", mc_grader="choice@1"),
    SpecRow("choice", "choice.freeform@1", "choice@1", None,
            "Generic multiple choice: a free-form final answer statement, letter match"),
    SpecRow("math", "math.final@1", "math.equiv@3", "math.boxed",
            "Generic math: the final answer (last \\boxed{}, else a final-answer statement, math or number), exact "
            "symbolic equivalence"),
    # gsm8k.answer@2, not @1: @1 reads `#### 2/3` as 2 (as lm-eval's strict-match does) and credits it against a
    # gold of 2; @3 reads as @2 and marks a `####` line holding an equation (`#### 220 + 90 + 60 = 370`: 220) as a
    # weak read.
    SpecRow("gsm8k", "gsm8k.answer@3", "gsm8k.numeric@2", None,
            "GSM8K: the whole number on the `#### N` line (`2/3`, `-3`, `1,000.5`), else the last number; the "
            "reference is the value on the solution's `####` line; exact rationals"),
    SpecRow("selected_choice", "raw@1", "choice@1", None,
            "Multiple choice with the option already chosen (lm-eval log-likelihood samples, `audit import "
            "lm-eval`): the letter the response holds, letter match"),
    SpecRow("exact", "raw@1", "exact.hle@1", None, "Generic exact match of the whole (stripped) response"),
)
"""Every benchmark spec, one row each, in the order `audit benchmarks` lists them. A new benchmark is a row here
(with its golden tests); its components are registered versions, looked up when the spec is resolved."""

for _row in SPEC_TABLE:
    SPECS.add(_row.name, BenchmarkSpec(
        _row.description, GradeConfig(_row.name, extractor=_row.extractor, grader=_row.grader,
                                      mc_extractor=_row.mc_extractor, mc_grader=_row.mc_grader),
        prompt=_row.prompt), home=__name__)
del _row

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
        first = field_errors(e)[0]
        raise PolicyError(f"policy {first.field}: {first.message}") from None


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
