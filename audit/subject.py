"""What a piece of GPU evidence measured: the model by its public name and its config's digest, the engine
and its version, the hardware, whether the weights were random, and the run it belongs to.

One gate for the three commands that package GPU evidence (`audit trace`, `audit bench throughput`,
`audit floor`): `subject_options` adds the same flags to each, `resolve_subject` builds the `Subject` or
refuses with one line naming what is missing. The manifest records it as `provenance.subject`, covered
by the package digest (manifest schema_version 2), so a package read alone says what it measured.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from audit.errors import AuditError

if TYPE_CHECKING:  # the CLI adds these flags at start; pydantic's models load when a package is written
    from audit.models import Subject

ENGINE = re.compile(r"^([a-z][a-z0-9_.-]{0,39})==([0-9A-Za-z][0-9A-Za-z.+_-]{0,63})$")
"""`--engine NAME==VERSION`, e.g. `vllm==0.26.0`."""

MAX_CONFIG_BYTES = 16 * 1024 * 1024

@dataclass(frozen=True)
class SubjectArgs:
    """The subject flags as given on the command line (None: not given)."""

    model_name: str | None = None
    model_config: Path | None = None
    engine: str | None = None
    hardware: str | None = None
    weights: str | None = None
    run: str | None = None
    unattributed: bool = False

    def given(self) -> list[str]:
        return [flag for flag, v in self._flags() if v is not None]

    def _flags(self) -> list[tuple[str, Any]]:
        return [("--model-name", self.model_name), ("--model-config", self.model_config),
                ("--engine", self.engine), ("--hardware", self.hardware), ("--weights", self.weights),
                ("--run", self.run)]


F = TypeVar("F", bound=Callable[..., Any])


def subject_options(*, weights: bool = True, hardware: bool = True, unattributed: bool = False
                    ) -> Callable[[F], F]:
    """The subject flags of a command that packages GPU evidence (`SubjectArgs.from_kwargs` reads them)."""
    import click

    def add(f: F) -> F:
        if unattributed:
            f = click.option("--unattributed", is_flag=True,
                             help="Package a trace whose model, engine and run you cannot name (someone else's): "
                                  "the package records no subject.")(f)
        f = click.option("--run", "subject_run", metavar="ID",
                         help="The run this evidence belongs to (shared by the packages of one device run).")(f)
        if weights:
            f = click.option("--weights", "subject_weights", type=click.Choice(["random", "checkpoint"]),
                             help="random: full-size random weights (vLLM --load-format dummy); checkpoint: "
                                  "the published weights.")(f)
        if hardware:
            f = click.option("--hardware", "subject_hardware", metavar="TEXT",
                             help="Hardware measured (default: the GPUs NVML or the trace names).")(f)
        f = click.option("--engine", "subject_engine", metavar="NAME==VERSION",
                         help="Engine and version that ran the model, e.g. vllm==0.26.0.")(f)
        f = click.option("--model-config", "subject_model_config", metavar="CONFIG.json",
                         type=click.Path(path_type=Path, dir_okay=False),
                         help="The config.json that was served or read; recorded by its sha256.")(f)
        f = click.option("--model-name", "subject_model_name", metavar="OWNER/NAME",
                         help="The model's public name, e.g. Qwen/Qwen3-30B-A3B-FP8 (never a local path).")(f)
        return f

    return add


def args_from(kwargs: dict[str, Any]) -> SubjectArgs:
    """Pop the subject flags out of a command's keyword arguments."""
    return SubjectArgs(model_name=kwargs.pop("subject_model_name", None),
                       model_config=kwargs.pop("subject_model_config", None),
                       engine=kwargs.pop("subject_engine", None), hardware=kwargs.pop("subject_hardware", None),
                       weights=kwargs.pop("subject_weights", None), run=kwargs.pop("subject_run", None),
                       unattributed=bool(kwargs.pop("unattributed", False)))


def gpus_visible() -> int:
    """How many GPUs NVML sees here (0 without NVML): evidence measured here is GPU evidence when any."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no library, no driver: nothing measured here is GPU evidence
        return 0
    try:
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return 0
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


_DUMMY = re.compile(r"--load[-_]format(?:=|\s+)['\"]?dummy\b")


def check_launch_weights(launch: str | None, weights: str | None) -> None:
    """Refuse --weights that contradicts a launch line: `--load-format dummy` loads random weights."""
    if launch is None or weights is None:
        return
    dummy = bool(_DUMMY.search(launch))
    if dummy and weights != "random":
        raise AuditError(f"--weights {weights}: the launch line loads random weights (--load-format dummy); "
                         f"give --weights random")
    if not dummy and weights == "random":
        raise AuditError("--weights random: the launch line has no --load-format dummy, so vLLM loads the "
                         "checkpoint's weights; give --weights checkpoint")


def config_sha256(path: Path) -> str:
    """sha256 of a config.json's bytes (a regular file of at most 16 MiB, read once)."""
    from audit.fileio import document_bytes, sha256_bytes

    return sha256_bytes(document_bytes(path, label="model config", max_bytes=MAX_CONFIG_BYTES, what="a config.json"))


def resolve_subject(args: SubjectArgs, *, what: str, gpu_evidence: bool, default_config: Path | None = None,
                    default_engine: str | None = None, default_hardware: str | None = None,
                    weights: str | None = None) -> Subject | None:
    """The Subject of the flags and the defaults the command found, or None when it needs none.

    GPU evidence must name all of it: a missing part is refused with one line listing every flag still
    needed. A partial subject is refused too, GPU evidence or not. `--unattributed` (trace only) gives
    None and refuses any subject flag beside it."""
    if args.unattributed:
        if args.given():
            raise AuditError(f"--unattributed records no subject: drop {', '.join(args.given())}")
        return None
    if not args.given() and not gpu_evidence:
        return None
    config = args.model_config or (default_config if default_config is not None and default_config.is_file()
                                   else None)
    engine = args.engine or default_engine
    hardware = args.hardware or default_hardware
    weights = args.weights or weights
    missing = [flag for flag, v in (("--model-name OWNER/NAME", args.model_name),
                                    ("--model-config CONFIG.json", config),
                                    ("--engine NAME==VERSION", engine), ("--hardware TEXT", hardware),
                                    ("--weights random|checkpoint", weights), ("--run ID", args.run)) if not v]
    if missing:
        hint = " (or --unattributed for a trace you did not make)" if what == "profile" else ""
        lead = "of GPU evidence must say what it measured" if gpu_evidence else "names part of what it measured"
        raise AuditError(f"{what} package {lead}: give {', '.join(missing)}{hint}")
    assert args.model_name and config and engine and hardware and weights and args.run
    from audit.models import PUBLIC_MODEL_NAME, Subject

    if not PUBLIC_MODEL_NAME.match(args.model_name):
        raise AuditError(f"--model-name {args.model_name!r}: give the model's public name OWNER/NAME "
                         f"(e.g. Qwen/Qwen3-30B-A3B-FP8), not a local path")
    m = ENGINE.match(engine)
    if not m:
        raise AuditError(f"--engine {engine!r}: give NAME==VERSION, e.g. vllm==0.26.0")
    try:
        return Subject(model=args.model_name, model_config_sha256=config_sha256(config), engine=m.group(1),
                       engine_version=m.group(2), hardware=hardware, weights=weights,  # type: ignore[arg-type]
                       run=args.run)
    except ValueError as e:  # pydantic's ValidationError
        first = e.errors()[0] if hasattr(e, "errors") else None
        field = first["loc"][0] if first else "subject"
        raise AuditError(f"subject field {field}: {first['msg'] if first else e}") from None


def describe(subject: Subject | None) -> str:
    """One line for output: what the package says it measured."""
    if subject is None:
        return "subject: unattributed (no model, engine or run recorded)"
    return (f"subject: {subject.model} (config sha256 {subject.model_config_sha256[:12]}…), "
            f"{subject.engine} {subject.engine_version}, {subject.hardware}, {subject.weights} weights, "
            f"run {subject.run}")
