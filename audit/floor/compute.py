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
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

from audit.errors import AuditError
from audit.fileio import dumps, sha256_bytes
from audit.floor.arch import FULL, LINEAR, SLIDING, Shape, read_shape
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


def _check_experts(tensors: list[tuple[Tensor, str, str, frozenset[str]]], shape: Shape, notes: list[str]) -> None:
    """Cross-check the config's expert count with the experts the names and fused shapes show."""
    per_layer: dict[str, set[int]] = defaultdict(set)
    fused_counts: set[int] = set()
    for t, role, kind, _ in tensors:
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


def _shape_ref(shape: Shape) -> ShapeRef:
    lin = shape.linear
    return ShapeRef(
        model_type=shape.model_type, architectures=list(shape.architectures),
        num_hidden_layers=shape.num_hidden_layers, hidden_size=shape.hidden_size, vocab_size=shape.vocab_size,
        model_dtype=shape.model_dtype, routed_experts=shape.routed_experts,
        experts_per_token=shape.experts_per_token, shared_experts=shape.shared_experts,
        first_dense_layers=shape.first_dense_layers, attention=shape.attention,  # type: ignore[arg-type]
        num_kv_heads=shape.num_kv_heads, head_dim=shape.head_dim, kv_lora_rank=shape.kv_lora_rank,
        qk_rope_head_dim=shape.qk_rope_head_dim, layer_types=shape.layer_types,
        sliding_window=shape.sliding_window,
        linear_attention=None if lin is None else {
            "num_key_heads": lin.num_key_heads, "num_value_heads": lin.num_value_heads,
            "key_head_dim": lin.key_head_dim, "value_head_dim": lin.value_head_dim, "conv_kernel": lin.conv_kernel},
        mtp_layers=shape.mtp_layers, tie_word_embeddings=shape.tie_word_embeddings, fields=shape.fields)


def _caches(shape: Shape, opts: FloorOptions, engine: dict[str, str], notes: list[str]) -> list[CacheRow]:
    rows: list[CacheRow] = []
    kv_dtype = engine.get("kv_cache", shape.model_dtype)
    per = shape.kv_elements_per_token_layer
    full = shape.layer_types.get(FULL, 0) + (shape.mtp_layers if opts.with_mtp else 0)
    sliding = shape.layer_types.get(SLIDING, 0)
    part = "mla latent" if shape.attention == "mla" else "keys+values"
    if (full or sliding) and per is None:
        notes.append("config.json has no num_attention_heads/num_key_value_heads/head_dim: KV cache counted as 0")
    elif full or sliding:
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
    if shape.linear is not None:
        n = shape.layer_types[LINEAR]
        conv_dtype = engine.get("recurrent_state", shape.model_dtype)
        ssm_dtype = engine.get("recurrent_state", shape.ssm_dtype or shape.model_dtype)
        for label, elements, dtype in (("conv state", shape.linear.conv_elements, conv_dtype),
                                       ("ssm state", shape.linear.ssm_elements, ssm_dtype)):
            size = dtype_bytes(dtype, n * elements)
            if size is None:
                raise AuditError(f"--engine-dtype recurrent_state={dtype}: {n * elements:,} elements are not a "
                                 f"whole number of bytes")
            rows.append(CacheRow(role="recurrent_state", part=label, dtype=dtype, layers=n, tokens=1,
                                 elements_per_layer_token=elements, active_bytes=size))
    return rows


def compute_floor(ckpt: Checkpoint, bandwidth: Bandwidth, opts: FloorOptions) -> FloorReport:
    """The floor report of a checkpoint's headers (with `opts.report_version` 1, the FloorReportV1 an old
    package recorded); raises AuditError on an input the floor cannot use."""
    check_counts(opts.gpus, opts.context)
    shape = read_shape(ckpt.config, f"{ckpt.label}/config.json")
    notes = list(shape.notes)
    engine = dict(opts.engine_dtypes)
    if len(engine) != len(opts.engine_dtypes):
        raise AuditError("--engine-dtype names a role twice")
    classifier = Classifier(opts.role_table, opts.role_overrides, shape.num_hidden_layers)
    classified = [(t, *classifier.classify(t.name)) for t in ckpt.tensors]

    experts_fraction: Fraction | None = None
    if any(kind == "routed_experts" for _, _, kind, _ in classified):
        if not shape.routed_experts or not shape.experts_per_token:
            raise AuditError("has routed-expert tensors but no expert count or experts per token "
                             "(n_routed_experts / num_experts / num_local_experts, num_experts_per_tok)",
                             path=f"{ckpt.label}/config.json")
        experts_fraction = Fraction(shape.experts_per_token, shape.routed_experts)
        _check_experts(classified, shape, notes)
    elif shape.routed_experts:
        notes.append(f"config declares {shape.routed_experts} routed experts but no tensor was classified as "
                     f"routed_experts")

    used_roles: set[str] = set()
    acc: dict[tuple[str, str, str, str, str], _Acc] = defaultdict(_Acc)
    stored_by_dtype: dict[str, int] = defaultdict(int)
    has_head = False
    embeddings: list[tuple[Tensor, str]] = []
    for t, role, kind, overlays in classified:
        stored_by_dtype[t.dtype] += t.nbytes
        retype = engine.get(kind) or (engine.get(role) if role in OVERLAY_ROLES else None)
        retyped_key = kind if kind in engine else role
        e_dtype, e_bytes = t.dtype, t.nbytes
        dropped = False
        if retype is not None:
            used_roles.add(retyped_key)
            if "quant_scales" in overlays:
                e_bytes, dropped = 0, True
            elif len(t.shape) >= 2:
                if t.dtype not in FLOAT_DTYPES:
                    raise AuditError(f"--engine-dtype {retyped_key}={retype}: tensor {t.name!r} is {t.dtype}, "
                                     f"whose elements may be packed; only floating-point matrices can be re-typed")
                size = dtype_bytes(retype, t.elements)
                if size is None:
                    raise AuditError(f"--engine-dtype {retyped_key}={retype}: tensor {t.name!r} has {t.elements:,} "
                                     f"elements, not a whole number of bytes in {retype}")
                e_dtype, e_bytes = retype, size
        row_kind = kind
        if role == "mtp" and not opts.with_mtp:
            reading, frac, row_kind = "none: MTP (use --with-mtp)", Fraction(0), role
        elif role == "multimodal_encoder":
            reading, frac, row_kind = "none: multimodal encoder", Fraction(0), role
        elif dropped:
            reading, frac = f"none: {retyped_key} re-typed", Fraction(0)
        elif kind == "routed_experts":
            assert experts_fraction is not None
            reading, frac = f"{shape.experts_per_token}/{shape.routed_experts} experts", experts_fraction
        elif kind == "embeddings" and t.shape and t.shape[0] > 0:
            reading, frac = f"1 row of {t.shape[0]:,}", Fraction(1, t.shape[0])
        else:
            reading, frac = "all", Fraction(1)
        if kind == "output_head" and role != "mtp":
            has_head = True
        if kind == "embeddings" and role not in ("mtp", "multimodal_encoder"):
            embeddings.append((t, e_dtype))
        a = acc[(role, row_kind, t.dtype, e_dtype, reading)]
        a.tensors += 1
        a.elements += t.elements
        if "quant_scales" in overlays:
            a.scale_elements += t.elements
        a.stored += t.nbytes
        a.engine += e_bytes
        a.fraction = frac
    if not has_head and embeddings:
        # No output head stored: the head is the embedding matrix, read whole for every token.
        emb, e_dtype = max(embeddings, key=lambda x: x[0].nbytes)
        size = dtype_bytes(e_dtype, emb.elements)
        assert size is not None
        a = acc[("output_head", "output_head", emb.dtype, e_dtype, f"all: tied to {emb.name}")]
        a.engine += size
        if shape.tie_word_embeddings is False:
            notes.append("no output head tensor although tie_word_embeddings is false: the head is taken to be "
                         f"{emb.name}")
    for role in sorted(set(engine) - used_roles - set(CACHE_ROLES)):
        notes.append(f"--engine-dtype {role}={engine[role]} matched no tensor")

    caches = _caches(shape, opts, engine, notes)
    if "recurrent_state" in engine and shape.linear is None:
        notes.append(f"--engine-dtype recurrent_state={engine['recurrent_state']}: the model has no "
                     f"linear-attention layers")
    if "kv_cache" in engine and not any(c.role == "kv_cache" for c in caches):
        notes.append(f"--engine-dtype kv_cache={engine['kv_cache']}: no KV cache is read at --context 0")

    v1 = opts.report_version == 1
    if opts.report_version not in (1, FLOOR_REPORT_SCHEMA_VERSION):
        raise AuditError(f"floor.json schema_version {opts.report_version} is not one this audit writes")
    rows = sorted(acc.items(), key=lambda kv: (REPORT_ORDER.index(kv[0][0]), REPORT_ORDER.index(kv[0][1]),
                                               kv[0][2:]))
    weights: list[WeightRow] = [
        (WeightRow if v1 else partial(WeightRowV2, parameters=a.elements - a.scale_elements))(
            role=r, kind=k, dtype=d, engine_dtype=ed, tensors=a.tensors, elements=a.elements, stored_bytes=a.stored,
            engine_bytes=a.engine, reading=rd, active_bytes=float(a.active))
        for (r, k, d, ed, rd), a in rows]
    by_role: dict[str, Fraction] = defaultdict(Fraction)
    by_dtype: dict[str, Fraction] = defaultdict(Fraction)
    for (r, _, _, ed, _), a in acc.items():
        by_role[r] += a.active
        by_dtype[ed] += a.active
    for c in caches:
        by_role[c.role] += c.active_bytes
        by_dtype[c.dtype] += c.active_bytes
    total = sum(by_role.values(), Fraction(0))
    seconds = total / (opts.gpus * Fraction(bandwidth.tbps) * 10**12)
    if total == 0:
        raise AuditError("no bytes are read per token: the checkpoint has no tensors a decoded token reads",
                         path=ckpt.label)

    inputs = [InputRef(path=i.path, kind=i.kind, sha256=i.sha256, bytes=i.bytes) for i in ckpt.inputs()]
    digest = sha256_bytes(dumps(sorted([[i.path, i.sha256] for i in inputs])).encode())
    declared = sum(s.data_bytes for s in ckpt.shards)
    if ckpt.index_total_size is not None and ckpt.index_total_size != declared:
        notes.append(f"index metadata.total_size is {ckpt.index_total_size:,}; the headers declare "
                     f"{declared:,} bytes")
    table = classifier.describe()
    scales = sum(a.scale_elements for a in acc.values())
    extra = {} if v1 else {"total_parameters": sum(a.elements for a in acc.values()) - scales,
                           "quant_scale_elements": scales}
    return (FloorReportV1 if v1 else FloorReport)(  # type: ignore[return-value]
        checkpoint_digest=digest, inputs=inputs,
        shards=[ShardRef(file=s.file, tensors=len(s.tensors), header_bytes=len(s.header), data_bytes=s.data_bytes,
                         data_on_disk=s.data_on_disk, data=s.data_state, metadata=s.metadata) for s in ckpt.shards],
        index_total_size=ckpt.index_total_size,
        role_table=RoleTableRef(table=table["table"], sha256=table["sha256"],
                                rules=[RoleRule(**r) for r in table["rules"]],
                                overrides=[RoleRule(**r) for r in table["overrides"]]),
        options=Options(gpus=opts.gpus, context=opts.context, with_mtp=opts.with_mtp,
                        engine_dtypes=dict(sorted(engine.items()))),
        shape=_shape_ref(shape), weights=weights, caches=caches,
        by_role={r: float(by_role[r]) for r in REPORT_ORDER + CACHE_ROLES if r in by_role},
        by_dtype={d: float(v) for d, v in sorted(by_dtype.items())},
        stored_by_dtype=dict(sorted(stored_by_dtype.items())),
        total_stored_bytes=sum(stored_by_dtype.values()),
        total_elements=sum(t.elements for t, _, _, _ in classified),
        bandwidth=bandwidth.ref,
        floor=FloorFigures(gpus=opts.gpus, bytes_per_token=float(total), ms_per_token=float(seconds * 1000),
                           tokens_per_s=float(1 / seconds)),
        notes=notes, **extra,
    )
