"""`floor.json`: the typed record of a bandwidth floor and everything it was computed from."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from audit.models import Record
from audit.schemas import register

FLOOR_REPORT_SCHEMA_VERSION = 2
"""v2 (round 3) reports parameters apart from quantization side tensors (`WeightRowV2.parameters`,
`total_parameters`, `quant_scale_elements`); v1 reports are still read and recomputed as v1."""


class InputRef(Record):
    """One input file, pinned by sha256. Shards are pinned by their header bytes: the weights are never read."""

    path: str
    """File name relative to the checkpoint directory."""
    kind: Literal["config", "index", "header"]
    """`config` (config.json), `index` (model.safetensors.index.json) or `header` (a shard's header JSON)."""
    sha256: str
    """sha256 of the file's bytes; for `header`, of the header JSON bytes (after the 8-byte length)."""
    bytes: int
    """Size of what the sha256 covers."""


class ShardRef(Record):
    """One safetensors file as its header describes it."""

    file: str
    """File name relative to the checkpoint directory."""
    tensors: int
    """Tensors in the header."""
    header_bytes: int
    """Length of the header JSON."""
    data_bytes: int
    """Bytes of data the header declares (the last tensor's end offset)."""
    data_on_disk: int
    """Bytes after the header in the file as read."""
    data: Literal["complete", "absent", "partial"]
    """`complete`; `absent` for a header-only copy; `partial` when the file is shorter than declared.
    Sizes come from the header either way."""
    metadata: dict[str, str] | None = None
    """The header's `__metadata__` map."""


class RoleRule(Record):
    """One rule of a role table: tensors whose name matches `pattern` get `role`."""

    role: str
    """Role given to matching tensors."""
    pattern: str
    """Python regular expression searched in the tensor name, or `layer_index>=num_hidden_layers`."""


class RoleTableRef(Record):
    """The role table the tensors were classified with."""

    table: str
    """Table `name@version` (published tables never change)."""
    sha256: str
    """sha256 of the table's rules as canonical JSON."""
    rules: list[RoleRule]
    """The table's rules in order; the first match wins."""
    overrides: list[RoleRule]
    """User rules (`--role-pattern`), tried before the table's."""


class ShapeRef(Record):
    """What the floor read from config.json."""

    model_type: str | None
    """`model_type`."""
    architectures: list[str]
    """`architectures`."""
    num_hidden_layers: int
    """Decoder layers (MTP layers not included)."""
    hidden_size: int | None
    """`hidden_size`."""
    vocab_size: int | None
    """`vocab_size`."""
    model_dtype: str
    """The model's dtype as a safetensors dtype name (default for the KV cache and recurrent state)."""
    routed_experts: int | None
    """Routed experts per MoE layer; null for dense models."""
    experts_per_token: int | None
    """Routed experts each token is sent to."""
    shared_experts: int | None
    """Shared experts per MoE layer."""
    first_dense_layers: int | None
    """Leading dense layers (`first_k_dense_replace`), for the record."""
    attention: Literal["mla", "kv_heads"]
    """`mla`: a compressed latent is cached; `kv_heads`: keys and values per KV head."""
    num_kv_heads: int | None
    """KV heads per attention layer."""
    head_dim: int | None
    """Head dimension."""
    kv_lora_rank: int | None
    """MLA latent width."""
    qk_rope_head_dim: int | None
    """MLA rotary key width, cached beside the latent."""
    layer_types: dict[str, int]
    """Layers per type: `full_attention`, `sliding_attention`, `linear_attention`, ..."""
    sliding_window: int | None
    """Window of sliding-attention layers, in tokens."""
    linear_attention: dict[str, int] | None
    """Gated DeltaNet dimensions of linear-attention layers."""
    mtp_layers: int
    """Multi-token-prediction layers the config declares."""
    tie_word_embeddings: bool | None
    """`tie_word_embeddings` when the config sets it."""
    fields: dict[str, str]
    """Which config field each value came from (families name them differently)."""


class WeightRow(Record):
    """Weights of one role, kind and dtype, and what one decoded token reads of them."""

    role: str
    """Reported role (see the role table)."""
    kind: str
    """Structural kind: equals `role` except for overlay roles (`quant_scales`, `mtp`, `multimodal_encoder`)."""
    dtype: str
    """dtype as stored in the checkpoint."""
    engine_dtype: str
    """dtype the engine holds it in (differs from `dtype` only under `--engine-dtype`)."""
    tensors: int
    """Tensors in this row."""
    elements: int
    """Elements (parameters) in this row."""
    stored_bytes: int
    """Bytes in the checkpoint (from `data_offsets`)."""
    engine_bytes: int
    """Bytes the engine holds (0 for scales of a re-typed role)."""
    reading: str
    """How much a decoded token reads: `all`, `k/E experts`, `1 row of N`, `none: ...`, `tied to ...`."""
    active_bytes: float
    """Bytes read per decoded token (engine bytes x the fraction `reading` names)."""


class WeightRowV2(WeightRow):
    """A v2 weight row: `elements` split into parameters and quantization side tensors."""

    parameters: int
    """Elements that are model parameters: `elements` less those of quantization side tensors (FP8 and
    INT8 scales, zero points, bitsandbytes `SCB`/`weight_format`), which are not parameters."""


class CacheRow(Record):
    """Cache bytes read per decoded token: the KV cache at the context length, or a recurrent state."""

    role: Literal["kv_cache", "recurrent_state"]
    """`kv_cache` or `recurrent_state`."""
    part: str
    """What is cached: `keys+values`, `mla latent`, `conv state`, `ssm state`."""
    dtype: str
    """dtype of the cache."""
    layers: int
    """Layers holding it."""
    tokens: int
    """Cached tokens read per layer (the context, capped by a sliding window; 1 for a recurrent state)."""
    elements_per_layer_token: int
    """Elements per layer and token (per layer for a recurrent state)."""
    active_bytes: int
    """Bytes read per decoded token."""


class NvmlDevice(Record):
    """One GPU as NVML reports it."""

    index: int
    """NVML device index (NVML ignores CUDA_VISIBLE_DEVICES)."""
    name: str
    """Device name."""
    bus_width_bits: int
    """`nvmlDeviceGetMemoryBusWidth`."""
    max_memory_clock_mhz: int
    """`nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)`."""
    tbps: float
    """bus width / 8 x clock x 2 (double data rate), in 1e12 bytes per second."""


class Options(Record):
    """The options the floor was computed with."""

    gpus: int
    """GPUs the bytes are divided over."""
    context: int
    """Tokens already in the KV cache when the token is decoded."""
    with_mtp: bool
    """Whether MTP layers (and their KV cache) are read."""
    engine_dtypes: dict[str, str]
    """`--engine-dtype` ROLE: DTYPE, sorted by role."""


class BandwidthRef(Record):
    """The memory bandwidth the floor divides by, with its source."""

    tbps_per_gpu: float
    """Terabytes (1e12 bytes) per second per GPU."""
    source: Literal["flag", "nvml"]
    """`flag`: given with --hbm-tbps; `nvml`: bus width x max memory clock x 2 read through NVML."""
    devices: list[NvmlDevice] = Field(default_factory=list)
    """For `nvml`: each device read."""


class FloorFigures(Record):
    """The floor itself."""

    gpus: int
    """GPUs the bytes are spread over (an ideal split: replication only makes decoding slower)."""
    bytes_per_token: float
    """Weights and caches read per decoded token (all GPUs together)."""
    ms_per_token: float
    """bytes_per_token / (gpus x bandwidth), in milliseconds: no decode step can be faster."""
    tokens_per_s: float
    """1000 / ms_per_token: the ceiling on single-sequence decode speed."""


class FloorReportV1(Record):
    """`floor.json` v1: a decode bandwidth floor from safetensors headers and config.json, reproducible from
    them (its parameter figures count quantization scales: v2 reports them apart)."""

    schema_version: int = 1
    """Version of this format."""
    kind: Literal["floor_report"] = "floor_report"
    """Always `floor_report`."""
    checkpoint_digest: str
    """sha256 over the inputs' paths and sha256s, sorted by path: the checkpoint's identity for the floor."""
    inputs: list[InputRef]
    """config.json, the index, and each shard's header, by sha256."""
    shards: list[ShardRef]
    """Every safetensors file read."""
    index_total_size: int | None
    """`metadata.total_size` of the index, when present (compare: the sum of `data_bytes`)."""
    role_table: RoleTableRef
    """How tensors were classified."""
    options: Options
    """Options as used."""
    shape: ShapeRef
    """What was read from config.json."""
    weights: list[WeightRow]
    """Weights by role, kind and dtype."""
    caches: list[CacheRow]
    """KV cache and recurrent state."""
    by_role: dict[str, float]
    """Bytes per decoded token by role (caches included)."""
    by_dtype: dict[str, float]
    """Bytes per decoded token by engine dtype (caches included)."""
    stored_by_dtype: dict[str, int]
    """Checkpoint bytes by stored dtype."""
    total_stored_bytes: int
    """All bytes in the checkpoint."""
    total_elements: int
    """All elements (parameters) in the checkpoint."""
    bandwidth: BandwidthRef
    """Bandwidth and its source."""
    floor: FloorFigures
    """ms per token and tokens per second."""
    notes: list[str]
    """Everything a reader must know: assumptions taken, fields missing, checks that disagreed."""


class FloorReport(FloorReportV1):
    """`floor.json`: a decode bandwidth floor from safetensors headers and config.json, reproducible from them."""

    schema_version: int = FLOOR_REPORT_SCHEMA_VERSION
    """Version of this format."""
    weights: list[WeightRowV2]  # type: ignore[assignment]
    """Weights by role, kind and dtype."""
    total_parameters: int
    """Elements of every tensor but quantization side tensors: the model's parameter count."""
    quant_scale_elements: int
    """Elements of quantization side tensors (scales, zero points, bitsandbytes state), not parameters."""


register("floor_report.v1", FloorReportV1)
register("floor_report.v2", FloorReport)
