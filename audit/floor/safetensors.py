"""safetensors headers, read and checked without touching the weights.

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON
(`{name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}`), then the
data. Only the first 8 + N bytes are read. Every check the reference reader
(huggingface/safetensors) makes on the header is made here, each failure
naming the file and the tensor: the offsets, sorted, must tile the data from 0
without gap or overlap, and each tensor's span must equal shape x dtype bits / 8.

A file may be shorter than the data its header declares: a header-only copy
(data absent) or a truncated one (data partial). Sizes come from the offsets,
so the floor is the same; the shard records which it was.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from audit.errors import AuditError
from audit.fileio import DuplicateKey, document_bytes, open_regular, reject_constant, sha256_bytes, unique_pairs
from audit.models import unsafe_path_reason

MAX_HEADER_BYTES = 100_000_000
"""Largest header read, as in the reference implementation (`MAX_HEADER_SIZE`)."""

U64_MAX = 2**64 - 1
"""Offsets, dimensions, element counts and sizes in bits are `usize` in the reference reader: past this,
it refuses the file (a parse error or `ValidationOverflow`), so the floor does too."""

DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,  # MXFP4 element (OCP microscaling), two per byte
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,  # MX shared scale
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
"""Bits per element of every dtype the safetensors format defines (huggingface/safetensors `Dtype::bitsize`)."""

FLOAT_DTYPES = frozenset({"F4", "F6_E2M3", "F6_E3M2", "F8_E5M2", "F8_E4M3", "F16", "BF16", "F32", "F64"})
"""Dtypes whose element count is the tensor's true element count (integer dtypes may hold packed values)."""

INDEX_FILE = "model.safetensors.index.json"
CONFIG_FILE = "config.json"

DataState = Literal["complete", "absent", "partial"]


@dataclass(frozen=True, slots=True)
class Tensor:
    """One tensor as its header declares it."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int
    file: str

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor's data: `data_offsets` span (checked equal to shape x dtype)."""
        return self.end - self.begin

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class ShardHeader:
    """The parsed header of one safetensors file."""

    file: str
    """File name relative to the checkpoint directory."""
    header: bytes
    """The header's JSON bytes exactly as stored (its sha256 pins the shard)."""
    tensors: tuple[Tensor, ...]
    """Tensors sorted by offset."""
    metadata: dict[str, str] | None
    """The `__metadata__` map, when present."""
    file_bytes: int
    """Size of the file on disk."""

    @property
    def header_sha256(self) -> str:
        return sha256_bytes(self.header)

    @property
    def header_only(self) -> bytes:
        """The file's first 8 + N bytes (header length, header): its header-only copy."""
        return struct.pack("<Q", len(self.header)) + self.header

    @property
    def data_bytes(self) -> int:
        """Bytes of data the header declares."""
        return self.tensors[-1].end if self.tensors else 0

    @property
    def data_on_disk(self) -> int:
        return self.file_bytes - 8 - len(self.header)

    @property
    def data_state(self) -> DataState:
        """`complete`, `absent` (a header-only copy) or `partial` (shorter than declared)."""
        if self.data_on_disk == self.data_bytes:
            return "complete"
        return "absent" if self.data_on_disk == 0 else "partial"


def dtype_bytes(dtype: str, elements: int) -> int | None:
    """Bytes of `elements` values of `dtype`, or None when that is not a whole number of bytes."""
    bits = DTYPE_BITS[dtype] * elements
    return bits // 8 if bits % 8 == 0 else None


def parse_json(data: bytes, what: str) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, no duplicate keys. Raises ValueError with a one-line reason."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} is not valid UTF-8 (byte {e.start})") from None
    try:
        # A name given twice would let one tensor hide another: refuse it.
        return json.loads(text, object_pairs_hook=unique_pairs, parse_constant=reject_constant)
    except DuplicateKey as e:
        raise ValueError(f"{what} is not valid JSON: key {e.key!r} appears twice") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise ValueError(f"{what} is not valid JSON: nested too deeply") from None
    except ValueError as e:
        raise ValueError(f"{what} is not valid JSON: {e}") from None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _tensor(file: str, label: str, name: str, entry: Any) -> Tensor:
    def bad(msg: str) -> AuditError:
        return AuditError(f"tensor {name!r}: {msg}", path=label)

    if not isinstance(entry, dict):
        raise bad(f"expected an object, found {type(entry).__name__}")
    missing = [k for k in ("dtype", "shape", "data_offsets") if k not in entry]
    if missing:
        raise bad(f"missing {', '.join(missing)}")
    extra = sorted(set(entry) - {"dtype", "shape", "data_offsets"})
    if extra:
        raise bad(f"unknown field {extra[0]!r}")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise bad(f"unknown dtype {dtype!r} (known: {', '.join(DTYPE_BITS)})")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise bad(f"shape must be a list of non-negative integers, found {shape!r}")
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(_is_int(o) and o >= 0 for o in offsets)):
        raise bad(f"data_offsets must be [begin, end] of non-negative integers, found {offsets!r}")
    begin, end = offsets
    if begin > U64_MAX or end > U64_MAX:
        raise bad(f"data_offsets [{begin}, {end}] are past 2^64")
    if any(d > U64_MAX for d in shape):
        raise bad(f"shape {shape} has a dimension past 2^64")
    elements = 1
    for d in shape:  # in order, as the reference reader's checked multiplication: [2^40, 2^40, 0] overflows
        elements *= d
        if elements > U64_MAX:
            raise bad(f"shape {shape}: the element count overflows 64 bits")
    if elements * DTYPE_BITS[dtype] > U64_MAX:
        raise bad(f"shape {shape} x {dtype}: the size in bits overflows 64 bits")
    if end < begin:
        raise bad(f"data_offsets [{begin}, {end}] are out of order (end before begin)")
    size = dtype_bytes(dtype, elements)
    if size is None:
        raise bad(f"{elements:,} elements of {dtype} ({DTYPE_BITS[dtype]} bits) are not a whole number of bytes")
    if end - begin != size:
        raise bad(f"data_offsets [{begin}, {end}] span {end - begin:,} bytes but shape {shape} x {dtype} "
                  f"is {size:,} bytes")
    return Tensor(name, dtype, tuple(shape), begin, end, file)


def read_header(path: Path, file: str, label: str | None = None) -> ShardHeader:
    """Read and check one file's header; `file` is its name in the checkpoint, `label` the name in errors."""
    label = label or str(path)
    try:
        # A regular file (a link to one is followed: a Hugging Face cache links every shard to its blob), its
        # size as opened: a FIFO or device is refused rather than waited on.
        fh, size = open_regular(path, follow_links=True)
        with fh:
            head = fh.read(8)
            if len(head) < 8:
                raise AuditError(f"file is {len(head)} bytes, too short for the 8-byte header length", path=label)
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER_BYTES:
                raise AuditError(f"header length {n:,} bytes is over the {MAX_HEADER_BYTES:,}-byte limit", path=label)
            if 8 + n > size:
                raise AuditError(f"header length {n:,} bytes runs past the end of the file ({size:,} bytes)",
                                 path=label)
            header = b""
            while len(header) < n and (chunk := fh.read(n - len(header))):  # unbuffered: reads may be short
                header += chunk
    except OSError as e:
        raise AuditError(f"unreadable: {e.strerror or e}", path=label) from None
    if len(header) != n:  # the file shrank while being read
        raise AuditError(f"header length {n:,} bytes runs past the end of the file", path=label)
    if not header.startswith(b"{"):  # the reference reader's InvalidHeaderStart
        raise AuditError("header does not start with '{'", path=label)
    try:
        obj = parse_json(header, "header")
    except ValueError as e:
        raise AuditError(str(e), path=label) from None
    if not isinstance(obj, dict):
        raise AuditError(f"header is not a JSON object (found {type(obj).__name__})", path=label)
    metadata = obj.pop("__metadata__", None)
    if metadata is not None and (not isinstance(metadata, dict)
                                 or not all(isinstance(v, str) for v in metadata.values())):
        raise AuditError("__metadata__ must map strings to strings", path=label)
    tensors = sorted((_tensor(file, label, name, entry) for name, entry in obj.items()),
                     key=lambda t: (t.begin, t.end, t.name))
    at = 0
    prev: Tensor | None = None
    for t in tensors:
        if t.begin < at:
            assert prev is not None
            raise AuditError(f"tensor {t.name!r}: data_offsets [{t.begin}, {t.end}] overlap tensor {prev.name!r} "
                             f"[{prev.begin}, {prev.end}]", path=label)
        if t.begin > at:
            after = f"after tensor {prev.name!r}" if prev else "before the first tensor"
            raise AuditError(f"tensor {t.name!r}: data_offsets [{t.begin}, {t.end}] leave a gap of "
                             f"{t.begin - at:,} bytes {after}", path=label)
        at = t.end
        prev = t
    shard = ShardHeader(file, header, tuple(tensors), metadata, size)
    if shard.data_on_disk > shard.data_bytes:
        raise AuditError(f"file has {shard.data_on_disk - shard.data_bytes:,} bytes after the last tensor's data "
                         f"(header declares {shard.data_bytes:,})", path=label)
    return shard


# --------------------------------------------------------------------------- checkpoint


@dataclass(frozen=True, slots=True)
class InputFile:
    """One file the floor was computed from, pinned by sha256 (for shards: of the header bytes)."""

    path: str
    kind: Literal["config", "index", "header"]
    sha256: str
    bytes: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint's config, index and shard headers; never its weights."""

    label: str
    config_bytes: bytes
    config: dict[str, Any]
    index_bytes: bytes | None
    index_total_size: int | None
    shards: tuple[ShardHeader, ...]

    @property
    def tensors(self) -> list[Tensor]:
        """Every tensor, sorted by name."""
        return sorted((t for s in self.shards for t in s.tensors), key=lambda t: t.name)

    def inputs(self) -> list[InputFile]:
        out = [InputFile(CONFIG_FILE, "config", sha256_bytes(self.config_bytes), len(self.config_bytes))]
        if self.index_bytes is not None:
            out.append(InputFile(INDEX_FILE, "index", sha256_bytes(self.index_bytes), len(self.index_bytes)))
        out += [InputFile(s.file, "header", s.header_sha256, len(s.header)) for s in self.shards]
        return out


def _read_json_file(path: Path, label: str) -> tuple[bytes, Any]:
    data = document_bytes(path, label=label)
    try:
        return data, parse_json(data, "file")
    except ValueError as e:
        raise AuditError(str(e).replace("file is", "is", 1), path=label) from None


def _index_shards(root: Path, label: str, obj: Any) -> tuple[dict[str, list[str]], int | None]:
    where = f"{label}/{INDEX_FILE}"
    if not isinstance(obj, dict) or not isinstance(obj.get("weight_map"), dict):
        raise AuditError("has no weight_map object", path=where, field="weight_map")
    total = None
    meta = obj.get("metadata")
    if isinstance(meta, dict) and meta.get("total_size") is not None:
        total = meta["total_size"]
        if not _is_int(total) or not 0 <= total <= U64_MAX:
            raise AuditError(f"must be an integer from 0 to 2^64 - 1, found {total!r:.40}",
                             path=where, field="metadata.total_size")
    by_shard: dict[str, list[str]] = {}
    for name, shard in obj["weight_map"].items():
        if not isinstance(shard, str):
            raise AuditError(f"tensor {name!r} maps to {shard!r}, not a file name", path=where, field="weight_map")
        reason = unsafe_path_reason(shard)
        if reason:
            raise AuditError(f"tensor {name!r} maps to {shard!r}: {reason}", path=where, field="weight_map")
        by_shard.setdefault(shard, []).append(name)
    for shard in by_shard:
        # Symbolic links are followed: a Hugging Face cache snapshot links every shard to its blob.
        if not (root / shard).is_file():
            raise AuditError(f"names shard {shard!r}, which is missing", path=where, field="weight_map")
    return by_shard, total


def read_checkpoint(directory: str | os.PathLike[str]) -> Checkpoint:
    """Read `config.json`, the index when there is one, and every shard's header. Raises AuditError."""
    root = Path(directory)
    label = str(directory)
    if not root.is_dir():
        raise AuditError("not a checkpoint directory" if root.exists() else "no such directory", path=label)
    if not (root / CONFIG_FILE).is_file():
        raise AuditError(f"no {CONFIG_FILE} (the floor needs the model's shape)", path=label)
    config_bytes, config = _read_json_file(root / CONFIG_FILE, f"{label}/{CONFIG_FILE}")
    if not isinstance(config, dict):
        raise AuditError("is not a JSON object", path=f"{label}/{CONFIG_FILE}")
    index_bytes = None
    total = None
    if (root / INDEX_FILE).is_file():
        index_bytes, index = _read_json_file(root / INDEX_FILE, f"{label}/{INDEX_FILE}")
        by_shard, total = _index_shards(root, label, index)
        files = sorted(by_shard)
    else:
        by_shard = {}
        files = sorted(p.name for p in root.glob("*.safetensors") if p.is_file())
        if not files:
            raise AuditError(f"no *.safetensors files and no {INDEX_FILE}", path=label)
    shards = tuple(read_header(root / f, f, f"{label}/{f}") for f in files)
    seen: dict[str, str] = {}
    for s in shards:
        names = {t.name for t in s.tensors}
        for t in s.tensors:
            if t.name in seen:
                raise AuditError(f"tensor {t.name!r} is also in {seen[t.name]}", path=f"{label}/{s.file}")
            seen[t.name] = s.file
        if by_shard:
            absent = sorted(set(by_shard[s.file]) - names)
            if absent:
                raise AuditError(f"maps {absent[0]!r} to {s.file}, whose header has no such tensor",
                                 path=f"{label}/{INDEX_FILE}", field="weight_map")
            unindexed = sorted(names - set(by_shard[s.file]))
            if unindexed:
                raise AuditError(f"tensor {unindexed[0]!r} is not in {INDEX_FILE}", path=f"{label}/{s.file}")
    return Checkpoint(root.resolve().name or label, config_bytes, config, index_bytes, total, shards)
