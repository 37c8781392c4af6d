"""Tensor roles by name: a versioned default pattern table that users can override.

Each tensor gets a *role* (the row it is reported under) and a *kind* (the
structural part it belongs to, which decides how much of it a decoded token
reads). They differ only for overlay roles: a quantization scale of a routed
expert has role `quant_scales` and kind `routed_experts` (it is read when its
expert is); a tensor of an MTP layer has role `mtp` and the kind of what it is
inside that layer. Rules are tried in order; the first that matches wins.

A published table is immutable: a change is a new version beside the old
(`default@2`), and every report names the table, its version, its sha256 and
every override, so an old floor stays reproducible.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from audit.errors import AuditError
from audit.registry import Catalog, catalog, unknown_error

STRUCTURAL_ROLES = ("routed_experts", "shared_experts", "router", "dense_mlp", "attention", "embeddings",
                    "output_head", "norms", "other")
"""Roles that say what a tensor is; every tensor has exactly one as its kind."""

OVERLAY_ROLES = ("multimodal_encoder", "mtp", "quant_scales")
"""Roles reported on their own row whose reading depends on the structural kind underneath."""

ROLES = OVERLAY_ROLES + STRUCTURAL_ROLES

REPORT_ORDER = ("embeddings", "attention", "dense_mlp", "router", "shared_experts", "routed_experts", "norms",
                "output_head", "other", "quant_scales", "mtp", "multimodal_encoder")
"""Order of rows in reports: roughly the order a token meets them."""

MTP_LAYER_RULE = "layer_index>=num_hidden_layers"
"""A rule that is not a pattern: `model.layers.{i}.` with i at or past `num_hidden_layers` (DeepSeek-V3,
GLM-4.5 store their MTP modules as extra layers) is an MTP layer."""

_LAYER_INDEX = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_INDEX_COMPONENT = re.compile(r"(?<=\.)\d+(?=\.)")

_DEFAULT_1: tuple[tuple[str, str], ...] = (
    # Encoders of other modalities run once per image or clip, not per decoded token.
    ("multimodal_encoder", r"(?:^|\.)(?:visual|vision_tower|vision_model|vision_encoder|multi_modal_projector|"
                           r"audio_tower|audio_encoder)\."),
    # Multi-token prediction modules: Qwen3-Next / Qwen3.5 name them `mtp.*`.
    ("mtp", r"(?:^|\.)mtp\."),
    ("mtp", MTP_LAYER_RULE),
    # Quantization side tensors: FP8 block scales (DeepSeek `weight_scale_inv`), compressed-tensors / ModelOpt
    # scales and zero points, GPTQ/AWQ `scales`/`qzeros`/`g_idx`, MXFP4 `*_scales`, bitsandbytes state.
    ("quant_scales", r"(?:\.|_)(?:weight_scale_inv|weight_scale|weight_scale_2|input_scale|input_scale_inv|"
                     r"output_scale|k_scale|v_scale|q_scale|weight_global_scale|input_global_scale|"
                     r"weight_zero_point|input_zero_point|scales|qzeros|g_idx|absmax|quant_map|SCB)$"),
    ("quant_scales", r"\.quant_state\.[^.]+$"),
    # Routed experts: one module per expert (`mlp.experts.7.down_proj`, Mixtral `block_sparse_moe.experts.7.w1`)
    # or fused over experts (`mlp.experts.gate_up_proj`, gpt-oss `mlp.experts.gate_up_proj_blocks`).
    ("routed_experts", r"\.experts\.\d+\."),
    ("routed_experts", r"\.experts\.[A-Za-z_][A-Za-z0-9_]*$"),
    # Shared experts (DeepSeek `shared_experts`, Qwen-MoE `shared_expert` and its gate).
    ("shared_experts", r"\.shared_experts?\."),
    ("shared_experts", r"\.shared_expert_gate\."),
    # Routers: DeepSeek/Qwen/GLM `mlp.gate`, its correction bias, Mixtral `block_sparse_moe.gate`, `router`.
    ("router", r"\.(?:mlp|block_sparse_moe|feed_forward|moe)\.gate\."),
    ("router", r"\.router\."),
    ("dense_mlp", r"\.(?:mlp|feed_forward|ffn|block_sparse_moe)\."),
    # Attention, softmax or linear (Qwen3-Next gated DeltaNet `linear_attn`, Mamba-style `mixer`).
    ("attention", r"\.(?:self_attn|attn|attention|linear_attn|mixer|cross_attn)\."),
    ("embeddings", r"(?:^|\.)(?:embed_tokens|wte|wpe|tok_embeddings|word_embeddings|position_embeddings)\.weight$"),
    ("output_head", r"(?:^|\.)(?:lm_head|embed_out)\."),
    ("output_head", r"(?:^|\.)shared_head\.head\."),
    ("output_head", r"^output\.weight$"),
    ("norms", r"(?:norm|ln_f|ln_\d+)[^.]*\.(?:weight|bias)$"),
    ("other", r""),
)

def _default_2() -> tuple[tuple[str, str], ...]:
    """default@1 and: MiMo's MTP module `model.mtp_layers.{i}.*` (its own namespace, not an extra layer);
    bitsandbytes' LLM.int8() side tensor `weight_format` as a quantization scale, not as the layer's weight."""
    rules = []
    for role, pattern in _DEFAULT_1:
        if role == "quant_scales" and pattern.endswith("|SCB)$"):
            pattern = pattern.replace("|SCB)$", "|SCB|weight_format)$")
        rules.append((role, pattern))
        if pattern == r"(?:^|\.)mtp\.":
            rules.append(("mtp", r"(?:^|\.)mtp_layers\.\d+\."))
    return tuple(rules)


TABLES: Catalog[tuple[tuple[str, str], ...]] = catalog("role table")
"""Published role tables by `name@version` (`audit.registry`); never edited once published."""
TABLES.add("default@1", _DEFAULT_1, home=__name__)
TABLES.add("default@2", _default_2(), home=__name__)

DEFAULT_TABLE = "default@2"


@dataclass(frozen=True)
class Rule:
    role: str
    pattern: str
    regex: re.Pattern[str] | None = field(default=None, compare=False)


def table_sha256(rules: tuple[tuple[str, str], ...]) -> str:
    return hashlib.sha256(json.dumps([list(r) for r in rules], separators=(",", ":")).encode()).hexdigest()


def parse_override(text: str) -> tuple[str, str]:
    """`ROLE=REGEX` from the command line; raises AuditError naming what is wrong."""
    role, sep, pattern = text.partition("=")
    role = role.strip()
    if not sep or not role:
        raise AuditError(f"--role-pattern {text!r}: expected ROLE=REGEX")
    if role not in ROLES:
        raise AuditError(f"--role-pattern {text!r}: unknown role {role!r} (roles: {', '.join(ROLES)})")
    try:
        re.compile(pattern)
    except re.error as e:
        raise AuditError(f"--role-pattern {text!r}: not a regular expression: {e}") from None
    return role, pattern


@dataclass
class Classifier:
    """Overrides first, then the table; `classify(name)` gives (role, kind)."""

    table: str
    overrides: tuple[tuple[str, str], ...]
    num_hidden_layers: int | None
    rules: list[Rule] = field(init=False)
    _cache: dict[tuple[str, bool], tuple[str, str, frozenset[str]]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        if self.table not in TABLES:
            raise AuditError(str(unknown_error(TABLES.kind, self.table, TABLES)))
        self._cacheable = not any(re.search(r"[0-9]", p) for _, p in self.overrides)
        self.rules = [Rule(r, p, re.compile(p)) for r, p in self.overrides]
        self.rules += [Rule(r, p, None if p == MTP_LAYER_RULE else re.compile(p))
                       for r, p in TABLES[self.table]]

    def _past_layers(self, name: str) -> bool:
        """Whether `name` is in `layers.{i}.` with i at or past `num_hidden_layers` (MTP_LAYER_RULE)."""
        m = _LAYER_INDEX.search(name)
        return bool(m and self.num_hidden_layers is not None and int(m.group(1)) >= self.num_hidden_layers)

    def _matches(self, rule: Rule, name: str) -> bool:
        if rule.regex is not None:
            return rule.regex.search(name) is not None
        return self._past_layers(name)

    def classify(self, name: str) -> tuple[str, str, frozenset[str]]:
        """(role, kind, every overlay role that matches): a scale inside an MTP layer has role `mtp`
        and is still a scale."""
        # Layer and expert numbers (`.17.`) matter only to the MTP rule, unless an override names one: a
        # checkpoint's 90,000 names then reduce to a few hundred distinct ones.
        if self._cacheable:
            key = (_INDEX_COMPONENT.sub("0", name), self._past_layers(name))
            hit = self._cache.get(key)
            if hit is None:
                hit = self._cache[key] = self._classify(name)
            return hit
        return self._classify(name)

    def _classify(self, name: str) -> tuple[str, str, frozenset[str]]:
        role = None
        overlays = set()
        for rule in self.rules:
            if rule.role in OVERLAY_ROLES:
                if rule.role not in overlays and self._matches(rule, name):
                    overlays.add(rule.role)
                    role = role or rule.role
            elif self._matches(rule, name):
                return (role or rule.role), rule.role, frozenset(overlays)
        return (role or "other"), "other", frozenset(overlays)

    def describe(self) -> dict[str, Any]:
        rules = TABLES[self.table]
        return {"table": self.table, "sha256": table_sha256(rules),
                "rules": [{"role": r, "pattern": p} for r, p in rules],
                "overrides": [{"role": r, "pattern": p} for r, p in self.overrides]}
