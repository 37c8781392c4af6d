"""Bytes read per decoded token, and the floor they set: bytes / (GPUs x bandwidth).

Per decoded token (one sequence, one step) an engine must read, at the least:
- every weight it holds, except: routed experts, of which `experts_per_token / routed_experts` (the
  token's experts; the scales of an expert go with it); embeddings, of which one row; MTP layers, only
  with `--with-mtp` (once per step); encoders of other modalities, none. A tied output head reads the
  whole embedding matrix.
- the KV cache of the tokens before it: per full-attention layer `context x 2 x kv_heads x head_dim`
  elements, MLA `context x (kv_lora_rank + qk_rope_head_dim)`, a sliding layer at most its window;
- the recurrent state of each linear-attention layer (conv and SSM state), whatever the context.

Everything left out (activations, writes of the new KV entry and state, replicated weights under
tensor parallelism, imperfect expert balance) only adds bytes, so the floor stays a lower bound on the
time per token. `--engine-dtype ROLE=DTYPE` models an engine that holds a role's matrices in another
dtype (FP8 attention projections dequantized to BF16): the matrices count at DTYPE and their
quantization scales drop out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Any

from audit.errors import AuditError
from audit.fileio import dumps, sha256_bytes
from audit.floor.arch import (
    FULL,
    LINEAR,
    SLIDING,
    ConfigShape,
    kv_elements_per_token_layer,
    linear_attention,
    read_shape,
)
from audit.floor.bandwidth import Bandwidth
from audit.floor.report import (
    FLOOR_REPORT_SCHEMA_VERSION,
    CacheRow,
    FloorFigures,
    FloorReport,
    FloorReportV1,
    InputRef,
    Options,
    RoleRule,
    RoleTableRef,
    ShapeRef,
    ShardRef,
    WeightRow,
    WeightRowV2,
)
from audit.floor.roles import DEFAULT_TABLE, OVERLAY_ROLES, REPORT_ORDER, ROLES, Classifier
from audit.floor.safetensors import DTYPE_BITS, FLOAT_DTYPES, Checkpoint, Tensor, dtype_bytes

CACHE_ROLES = ("kv_cache", "recurrent_state")
ENGINE_DTYPE_ROLES = tuple(r for r in ROLES if r != "quant_scales") + CACHE_ROLES

_EXPERT_INDEX = re.compile(r"(?:^|\.)layers\.(\d+)\..*?\.experts\.(\d+)\.")


@dataclass(frozen=True)
class FloorOptions:
    """How to compute the floor."""

    gpus: int = 1
    context: int = 0
    with_mtp: bool = False
    engine_dtypes: tuple[tuple[str, str], ...] = ()
    role_table: str = DEFAULT_TABLE
    role_overrides: tuple[tuple[str, str], ...] = ()
    report_version: int = FLOOR_REPORT_SCHEMA_VERSION
    """floor.json version to write: 1 recomputes an old package exactly (its parameters count scales)."""


MAX_GPUS = 2**20
MAX_CONTEXT = 2**40
"""Bounds on --gpus and --context: far past any machine, and they keep every figure a finite float."""


def _count(v: int) -> str:
    return f"{v}" if abs(v) < 10**30 else f"a {len(str(abs(v)))}-digit number"


def check_counts(gpus: int, context: int) -> None:
    """Refuse a --gpus or --context the floor cannot use, in one line."""
    if gpus < 1:
        raise AuditError(f"--gpus must be at least 1, got {_count(gpus)}")
    if gpus > MAX_GPUS:
        raise AuditError(f"--gpus must be at most {MAX_GPUS:,}, got {_count(gpus)}")
    if context < 0:
        raise AuditError(f"--context must be at least 0, got {_count(context)}")
    if context > MAX_CONTEXT:
        raise AuditError(f"--context must be at most {MAX_CONTEXT:,} tokens, got {_count(context)}")


def parse_engine_dtype(text: str) -> tuple[str, str]:
    """`ROLE=DTYPE` from the command line; raises AuditError naming what is wrong."""
    role, sep, dtype = text.partition("=")
    role, dtype = role.strip(), dtype.strip().upper()
    if not sep or not role or not dtype:
        raise AuditError(f"--engine-dtype {text!r}: expected ROLE=DTYPE, e.g. attention=BF16")
    if role not in ENGINE_DTYPE_ROLES:
        raise AuditError(f"--engine-dtype {text!r}: unknown role {role!r} (roles: {', '.join(ENGINE_DTYPE_ROLES)})")
    if dtype not in DTYPE_BITS:
        raise AuditError(f"--engine-dtype {text!r}: unknown dtype {dtype!r} (known: {', '.join(DTYPE_BITS)})")
    return role, dtype


@dataclass
class _Acc:
    tensors: int = 0
    elements: int = 0
    scale_elements: int = 0
    stored: int = 0
    engine: int = 0
    fraction: Fraction = Fraction(1)  # one per row: the row's key includes how it is read

    @property
    def active(self) -> Fraction:
        return self.engine * self.fraction


def _check_experts(tensors: list[_Classified], shape: ShapeRef, notes: list[str]) -> None:
    """Cross-check the config's expert count with the experts the names and fused shapes show."""
    per_layer: dict[str, set[int]] = defaultdict(set)
    fused_counts: set[int] = set()
    for t, _, kind, _ in tensors:
        if kind != "routed_experts":
            continue
        m = _EXPERT_INDEX.search(t.name)
        if m:
            per_layer[m.group(1)].add(int(m.group(2)))
        elif t.shape:
            fused_counts.add(t.shape[0])
    seen = {len(v) for v in per_layer.values()}
    e = shape.routed_experts
    if seen and seen != {e}:
        notes.append(f"config says {e} routed experts per layer; tensor names show {sorted(seen)} per layer")
    if fused_counts and fused_counts != {e}:
        notes.append(f"config says {e} routed experts per layer; fused expert tensors lead with "
                     f"{sorted(fused_counts)}")


def _caches(read: ConfigShape, opts: FloorOptions, engine: dict[str, str], notes: list[str]) -> list[CacheRow]:
    """What a decoded token reads besides weights: the KV cache of its context, the recurrent state."""
    return _kv_cache(read.shape, opts, engine, notes) + _recurrent_state(read, engine)


def _kv_cache(shape: ShapeRef, opts: FloorOptions, engine: dict[str, str], notes: list[str]) -> list[CacheRow]:
    full = shape.layer_types.get(FULL, 0) + (shape.mtp_layers if opts.with_mtp else 0)
    sliding = shape.layer_types.get(SLIDING, 0)
    if not (full or sliding):
        return []
    per = kv_elements_per_token_layer(shape)
    if per is None:
        notes.append("config.json has no num_attention_heads/num_key_value_heads/head_dim: KV cache counted as 0")
        return []
    kv_dtype = engine.get("kv_cache", shape.model_dtype)
    part = "mla latent" if shape.attention == "mla" else "keys+values"
    rows: list[CacheRow] = []
    for layers, tokens, label in ((full, opts.context, part),
                                  (sliding, min(opts.context, shape.sliding_window or opts.context),
                                   f"{part} (window {shape.sliding_window})")):
        if not layers:
            continue
        size = dtype_bytes(kv_dtype, layers * tokens * per)
        if size is None:
            raise AuditError(f"--engine-dtype kv_cache={kv_dtype}: {layers * tokens * per:,} elements are not "
                             f"a whole number of bytes")
        rows.append(CacheRow(role="kv_cache", part=label, dtype=kv_dtype, layers=layers, tokens=tokens,
                             elements_per_layer_token=per, active_bytes=size))
    return rows


def _recurrent_state(read: ConfigShape, engine: dict[str, str]) -> list[CacheRow]:
    shape = read.shape
    linear = linear_attention(shape)
    if linear is None:
        return []
    n = shape.layer_types[LINEAR]
    conv_dtype = engine.get("recurrent_state", shape.model_dtype)
    ssm_dtype = engine.get("recurrent_state", read.ssm_dtype or shape.model_dtype)
    rows: list[CacheRow] = []
    for label, elements, dtype in (("conv state", linear.conv_elements, conv_dtype),
                                   ("ssm state", linear.ssm_elements, ssm_dtype)):
        size = dtype_bytes(dtype, n * elements)
        if size is None:
            raise AuditError(f"--engine-dtype recurrent_state={dtype}: {n * elements:,} elements are not a "
                             f"whole number of bytes")
        rows.append(CacheRow(role="recurrent_state", part=label, dtype=dtype, layers=n, tokens=1,
                             elements_per_layer_token=elements, active_bytes=size))
    return rows


_Classified = tuple[Tensor, str, str, frozenset[str]]
"""A tensor with its role, its structural kind and its overlay roles (`Classifier.classify`)."""
_RowKey = tuple[str, str, str, str, str]
"""A weight row: (role, kind, stored dtype, engine dtype, reading)."""


def _engine_dtypes(opts: FloorOptions) -> dict[str, str]:
    """`--engine-dtype` as role -> dtype, each role once."""
    engine = dict(opts.engine_dtypes)
    if len(engine) != len(opts.engine_dtypes):
        raise AuditError("--engine-dtype names a role twice")
    return engine


def _experts_fraction(classified: list[_Classified], shape: ShapeRef, label: str,
                      notes: list[str]) -> Fraction | None:
    """The share of routed experts a token reads (None when no tensor is a routed expert)."""
    if any(kind == "routed_experts" for _, _, kind, _ in classified):
        if not shape.routed_experts or not shape.experts_per_token:
            raise AuditError("has routed-expert tensors but no expert count or experts per token "
                             "(n_routed_experts / num_experts / num_local_experts, num_experts_per_tok)",
                             path=f"{label}/config.json")
        _check_experts(classified, shape, notes)
        return Fraction(shape.experts_per_token, shape.routed_experts)
    if shape.routed_experts:
        notes.append(f"config declares {shape.routed_experts} routed experts but no tensor was classified as "
                     f"routed_experts")
    return None


@dataclass(frozen=True)
class _Held:
    """How the engine holds one tensor."""

    dtype: str
    nbytes: int
    retyped: str | None = None
    """The `--engine-dtype` role that re-typed it (its kind, or its overlay role)."""
    dropped: bool = False
    """A quantization scale of a re-typed role: the engine holds none of it."""


def _held(t: Tensor, role: str, kind: str, overlays: frozenset[str], engine: dict[str, str]) -> _Held:
    """The dtype and bytes the engine holds `t` in, under `--engine-dtype`."""
    retype = engine.get(kind) or (engine.get(role) if role in OVERLAY_ROLES else None)
    if retype is None:
        return _Held(t.dtype, t.nbytes)
    key = kind if kind in engine else role
    if "quant_scales" in overlays:
        return _Held(t.dtype, 0, key, dropped=True)
    if len(t.shape) < 2:
        return _Held(t.dtype, t.nbytes, key)
    if t.dtype not in FLOAT_DTYPES:
        raise AuditError(f"--engine-dtype {key}={retype}: tensor {t.name!r} is {t.dtype}, "
                         f"whose elements may be packed; only floating-point matrices can be re-typed")
    size = dtype_bytes(retype, t.elements)
    if size is None:
        raise AuditError(f"--engine-dtype {key}={retype}: tensor {t.name!r} has {t.elements:,} "
                         f"elements, not a whole number of bytes in {retype}")
    return _Held(retype, size, key)


def _reading(t: Tensor, role: str, kind: str, held: _Held, shape: ShapeRef, opts: FloorOptions,
             experts_fraction: Fraction | None) -> tuple[str, Fraction, str]:
    """(how much a decoded token reads of `t`, as words and as a fraction, the kind its row reports)."""
    if role == "mtp" and not opts.with_mtp:
        return "none: MTP (use --with-mtp)", Fraction(0), role
    if role == "multimodal_encoder":
        return "none: multimodal encoder", Fraction(0), role
    if held.dropped:
        return f"none: {held.retyped} re-typed", Fraction(0), kind
    if kind == "routed_experts":
        assert experts_fraction is not None
        return f"{shape.experts_per_token}/{shape.routed_experts} experts", experts_fraction, kind
    if kind == "embeddings" and t.shape and t.shape[0] > 0:
        return f"1 row of {t.shape[0]:,}", Fraction(1, t.shape[0]), kind
    return "all", Fraction(1), kind


@dataclass
class _Weights:
    """The checkpoint's tensors summed into weight rows."""

    rows: dict[_RowKey, _Acc] = field(default_factory=lambda: defaultdict(_Acc))
    stored_by_dtype: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    retyped: set[str] = field(default_factory=set)
    """`--engine-dtype` roles that matched a tensor."""
    has_head: bool = False
    """An output head is stored (else a tied head reads the embedding matrix)."""
    embeddings: list[tuple[Tensor, str]] = field(default_factory=list)
    """The model's embedding matrices with their engine dtypes (MTP and encoder ones left out)."""

    def add(self, t: Tensor, role: str, kind: str, overlays: frozenset[str], held: _Held,
            reading: tuple[str, Fraction, str]) -> None:
        words, fraction, row_kind = reading
        self.stored_by_dtype[t.dtype] += t.nbytes
        if held.retyped is not None:
            self.retyped.add(held.retyped)
        if kind == "output_head" and role != "mtp":
            self.has_head = True
        if kind == "embeddings" and role not in ("mtp", "multimodal_encoder"):
            self.embeddings.append((t, held.dtype))
        a = self.rows[(role, row_kind, t.dtype, held.dtype, words)]
        a.tensors += 1
        a.elements += t.elements
        if "quant_scales" in overlays:
            a.scale_elements += t.elements
        a.stored += t.nbytes
        a.engine += held.nbytes
        a.fraction = fraction


def _sum_weights(classified: list[_Classified], shape: ShapeRef, opts: FloorOptions, engine: dict[str, str],
                 experts_fraction: Fraction | None, notes: list[str]) -> _Weights:
    """Every tensor into its weight row, a tied output head added, unmatched `--engine-dtype` roles noted."""
    weights = _Weights()
    for t, role, kind, overlays in classified:
        held = _held(t, role, kind, overlays, engine)
        weights.add(t, role, kind, overlays, held, _reading(t, role, kind, held, shape, opts, experts_fraction))
    if not weights.has_head and weights.embeddings:
        # No output head stored: the head is the embedding matrix, read whole for every token.
        emb, e_dtype = max(weights.embeddings, key=lambda x: x[0].nbytes)
        size = dtype_bytes(e_dtype, emb.elements)
        assert size is not None
        weights.rows[("output_head", "output_head", emb.dtype, e_dtype, f"all: tied to {emb.name}")].engine += size
        if shape.tie_word_embeddings is False:
            notes.append("no output head tensor although tie_word_embeddings is false: the head is taken to be "
                         f"{emb.name}")
    for role in sorted(set(engine) - weights.retyped - set(CACHE_ROLES)):
        notes.append(f"--engine-dtype {role}={engine[role]} matched no tensor")
    return weights


def _cache_notes(read: ConfigShape, engine: dict[str, str], caches: list[CacheRow], notes: list[str]) -> None:
    """Note a cache `--engine-dtype` that re-types nothing."""
    if "recurrent_state" in engine and read.shape.linear_attention is None:
        notes.append(f"--engine-dtype recurrent_state={engine['recurrent_state']}: the model has no "
                     f"linear-attention layers")
    if "kv_cache" in engine and not any(c.role == "kv_cache" for c in caches):
        notes.append(f"--engine-dtype kv_cache={engine['kv_cache']}: no KV cache is read at --context 0")


def _weight_rows(acc: dict[_RowKey, _Acc], v1: bool) -> list[WeightRow]:
    """The weight rows in report order (a v1 report counts scales among parameters)."""
    rows = sorted(acc.items(), key=lambda kv: (REPORT_ORDER.index(kv[0][0]), REPORT_ORDER.index(kv[0][1]),
                                               kv[0][2:]))
    return [
        (WeightRow if v1 else partial(WeightRowV2, parameters=a.elements - a.scale_elements))(
            role=r, kind=k, dtype=d, engine_dtype=ed, tensors=a.tensors, elements=a.elements, stored_bytes=a.stored,
            engine_bytes=a.engine, reading=rd, active_bytes=float(a.active))
        for (r, k, d, ed, rd), a in rows]


def _active_by(acc: dict[_RowKey, _Acc], caches: list[CacheRow]) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    """Bytes a decoded token reads, by role and by engine dtype."""
    by_role: dict[str, Fraction] = defaultdict(Fraction)
    by_dtype: dict[str, Fraction] = defaultdict(Fraction)
    for (r, _, _, ed, _), a in acc.items():
        by_role[r] += a.active
        by_dtype[ed] += a.active
    for c in caches:
        by_role[c.role] += c.active_bytes
        by_dtype[c.dtype] += c.active_bytes
    return by_role, by_dtype


def _inputs(ckpt: Checkpoint, notes: list[str]) -> tuple[list[InputRef], str, list[ShardRef]]:
    """The input files pinned by sha256, the checkpoint digest over them, and the shards as their headers say."""
    inputs = [InputRef(path=i.path, kind=i.kind, sha256=i.sha256, bytes=i.bytes) for i in ckpt.inputs()]
    digest = sha256_bytes(dumps(sorted([[i.path, i.sha256] for i in inputs])).encode())
    declared = sum(s.data_bytes for s in ckpt.shards)
    if ckpt.index_total_size is not None and ckpt.index_total_size != declared:
        notes.append(f"index metadata.total_size is {ckpt.index_total_size:,}; the headers declare "
                     f"{declared:,} bytes")
    shards = [ShardRef(file=s.file, tensors=len(s.tensors), header_bytes=len(s.header), data_bytes=s.data_bytes,
                       data_on_disk=s.data_on_disk, data=s.data_state, metadata=s.metadata) for s in ckpt.shards]
    return inputs, digest, shards


def _role_table(classifier: Classifier) -> RoleTableRef:
    table = classifier.describe()
    return RoleTableRef(table=table["table"], sha256=table["sha256"], rules=[RoleRule(**r) for r in table["rules"]],
                        overrides=[RoleRule(**r) for r in table["overrides"]])


def compute_floor(ckpt: Checkpoint, bandwidth: Bandwidth, opts: FloorOptions) -> FloorReport:
    """The floor report of a checkpoint's headers (with `opts.report_version` 1, the FloorReportV1 an old
    package recorded); raises AuditError on an input the floor cannot use."""
    check_counts(opts.gpus, opts.context)
    read = read_shape(ckpt.config, f"{ckpt.label}/config.json")
    shape = read.shape
    notes = list(read.notes)
    engine = _engine_dtypes(opts)
    classifier = Classifier(opts.role_table, opts.role_overrides, shape.num_hidden_layers)
    classified = [(t, *classifier.classify(t.name)) for t in ckpt.tensors]
    experts_fraction = _experts_fraction(classified, shape, ckpt.label, notes)
    summed = _sum_weights(classified, shape, opts, engine, experts_fraction, notes)
    caches = _caches(read, opts, engine, notes)
    _cache_notes(read, engine, caches, notes)

    v1 = opts.report_version == 1
    if opts.report_version not in (1, FLOOR_REPORT_SCHEMA_VERSION):
        raise AuditError(f"floor.json schema_version {opts.report_version} is not one this audit writes")
    weights = _weight_rows(summed.rows, v1)
    by_role, by_dtype = _active_by(summed.rows, caches)
    total = sum(by_role.values(), Fraction(0))
    seconds = total / (opts.gpus * Fraction(bandwidth.tbps) * 10**12)
    if total == 0:
        raise AuditError("no bytes are read per token: the checkpoint has no tensors a decoded token reads",
                         path=ckpt.label)

    inputs, digest, shards = _inputs(ckpt, notes)
    role_table = _role_table(classifier)
    stored_by_dtype = summed.stored_by_dtype
    fields: dict[str, Any] = dict(
        checkpoint_digest=digest, inputs=inputs, shards=shards, index_total_size=ckpt.index_total_size,
        role_table=role_table,
        options=Options(gpus=opts.gpus, context=opts.context, with_mtp=opts.with_mtp,
                        engine_dtypes=dict(sorted(engine.items()))),
        shape=shape, weights=weights, caches=caches,
        by_role={r: float(by_role[r]) for r in REPORT_ORDER + CACHE_ROLES if r in by_role},
        by_dtype={d: float(v) for d, v in sorted(by_dtype.items())},
        stored_by_dtype=dict(sorted(stored_by_dtype.items())),
        total_stored_bytes=sum(stored_by_dtype.values()),
        total_elements=sum(t.elements for t, _, _, _ in classified),
        bandwidth=bandwidth.ref,
        floor=FloorFigures(gpus=opts.gpus, bytes_per_token=float(total), ms_per_token=float(seconds * 1000),
                           tokens_per_s=float(1 / seconds)),
        notes=notes,
    )
    if v1:
        return FloorReportV1(**fields)  # type: ignore[return-value]  # what an old package recorded
    scales = sum(a.scale_elements for a in summed.rows.values())
    return FloorReport(**fields, total_parameters=sum(a.elements for a in summed.rows.values()) - scales,
                       quant_scale_elements=scales)
