"""What the run records about the model and the machine: generation_config.json, file hashes, GPUs."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from audit import procs
from audit.errors import AuditError
from audit.fileio import JsonError, document_bytes, loads_strict, sha256_file
from audit.generate.config import Sampling

SAMPLING_FROM_GENERATION_CONFIG = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")
"""The generation_config.json keys vLLM uses as request defaults (`get_diff_sampling_param`), but max_new_tokens."""
MAX_GENERATION_CONFIG_BYTES = 1 << 20
HASHED_MODEL_FILES = ("config.json", "generation_config.json", "tokenizer_config.json", "tokenizer.json",
                      "special_tokens_map.json", "chat_template.jinja", "model.safetensors.index.json")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")


def read_generation_config(model: str) -> dict[str, Any] | None:
    """The model's generation_config.json when `model` is a local directory holding one."""
    p = Path(model) / "generation_config.json"
    if not p.is_file():
        return None
    # A regular file of at most 1 MiB (a real one is under 1 KB), parsed strictly: a key twice is refused.
    data = document_bytes(p, MAX_GENERATION_CONFIG_BYTES, what="a generation_config.json")
    try:
        obj = loads_strict(data)
    except JsonError as e:
        raise AuditError(f"unreadable: {e}", path=str(p), field=e.field) from None
    if not isinstance(obj, dict):
        raise AuditError("expected a JSON object", path=str(p))
    return obj


def model_files(model: str) -> dict[str, Any] | None:
    """sha256 of a local model's config and tokenizer files, and the names and sizes of its weight files."""
    d = Path(model)
    if not d.is_dir():
        return None
    hashed = {name: sha256_file(d / name)[0] for name in HASHED_MODEL_FILES if (d / name).is_file()}
    weights = {p.name: p.stat().st_size for p in sorted(d.iterdir()) if p.is_file() and p.suffix in WEIGHT_SUFFIXES}
    return {"sha256": hashed, "weights_bytes": weights}


def apply_model_defaults(sampling: Sampling, given: set[str], gen: dict[str, Any] | None) -> Sampling:
    """Fill parameters not given on the command line from generation_config.json, as vLLM would."""
    if not gen:
        return sampling
    values = {k: gen[k] for k in SAMPLING_FROM_GENERATION_CONFIG if k not in given and gen.get(k) is not None}
    for k, v in values.items():  # (int("٣") is 3: a number given as text is refused, not read)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (k == "top_k" and v != int(v)):
            kind = "an integer" if k == "top_k" else "a number"
            raise AuditError(f"generation_config.json: {k} is {v!r}, not {kind}")
    if "top_k" in values:
        values["top_k"] = max(0, int(values["top_k"]))
    return replace(sampling, **values)


def generation_config_note(gen: dict[str, Any] | None, sampling: Sampling) -> str | None:
    """The line telling the user the model's own defaults differ from what is sent, or None when they agree."""
    if not gen:
        return None
    differs = {k: gen[k] for k in SAMPLING_FROM_GENERATION_CONFIG
               if gen.get(k) is not None and gen[k] != getattr(sampling, k)}
    if not differs:
        return None
    sent = ", ".join(f"{k}={getattr(sampling, k)}" for k in differs)
    return (f"note: the model's generation_config.json has {', '.join(f'{k}={v}' for k, v in differs.items())}; "
            f"sending {sent} explicitly (both are recorded)")


def detect_hardware() -> str | None:
    """`Nx GPU NAME` from nvidia-smi (honouring CUDA_VISIBLE_DEVICES by count), else None."""
    try:
        out = procs.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = [n.strip() for n in out.stdout.splitlines() if n.strip()]
    if out.returncode != 0 or not names:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        idx = [int(x) for x in visible.split(",") if x.strip().isascii() and x.strip().isdigit()]
        names = [names[i] for i in idx if i < len(names)] or names
    counts = Counter(names)
    return ", ".join(f"{n}x {name}" for name, n in counts.items())
