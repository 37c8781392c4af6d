#!/usr/bin/env python3
"""Write a header-only safetensors checkpoint for a Hugging Face config.json.

    python scripts/make_header_only_checkpoint.py CONFIG.json OUTDIR [--dtype-mix ROLE=DTYPE,...]
        [--fp8-scales block128|tensor|none] [--shard-gb 5] [--sparse]

OUTDIR gets config.json (a verbatim copy), one or more .safetensors files holding the 8-byte length and
the header of every tensor a checkpoint of that shape stores (names and shapes as the family's HF
checkpoints have them), and model.safetensors.index.json when there is more than one shard. The data
section is absent (each file is 8 + header bytes) unless --sparse, which gives every file its full
declared length as a sparse file (holes, no disk blocks). `audit floor OUTDIR` reads either.

Dtypes start from the config's torch_dtype; a quantization_config converts every linear layer of attention
and MLPs but the modules it keeps, as the real checkpoint stores them: fp8 (DeepSeek-V3, Qwen FP8: F8_E4M3,
`weight_scale_inv` blocks of weight_block_size, --fp8-scale-dtype F32 or BF16), compressed-tensors FP8
(GLM-4.5-Air-FP8: per-channel `weight_scale`), bitsandbytes 8-bit (I8 + F32 `SCB` + U8 `weight_format`).
Any other quant_method (GPTQ, AWQ, bitsandbytes 4-bit, ...) is refused in one line.
--dtype-mix re-types linear-layer weights by role (the roles `audit floor` reports: attention, dense_mlp,
shared_experts, routed_experts, router, embeddings, output_head, mtp), e.g.
    --dtype-mix routed_experts=F8_E4M3,shared_experts=F8_E4M3,attention=BF16

Shapes whose configs are committed (published values, see scripts/shapes/README.md):
    scripts/shapes/llama-3.1-8b.config.json    dense BF16, 8,030,261,248 parameters
    scripts/shapes/qwen3-30b-a3b.config.json   128 experts, 8 per token
    scripts/shapes/deepseek-v3.config.json     MLA, 256 experts + 1 shared, FP8 with block scales, 1 MTP layer
    scripts/shapes/qwen3-next-80b-a3b-fp8.config.json  gated DeltaNet + full attention, 512 experts, FP8, mtp.*
    scripts/shapes/glm-4.5-air-fp8.config.json  128 experts + 1 shared, compressed-tensors FP8, 1 MTP layer
    scripts/shapes/mimo-7b.config.json         dense Qwen2-style with model.mtp_layers.0
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audit.errors import AuditError  # noqa: E402
from audit.floor.synth import assign_dtypes, tensor_specs, write_header_only  # noqa: E402
from audit.floor.safetensors import DTYPE_BITS, parse_json  # noqa: E402


def parse_mix(text: str | None) -> dict[str, str]:
    mix: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        role, sep, dtype = part.partition("=")
        if not sep or dtype.upper() not in DTYPE_BITS:
            raise AuditError(f"--dtype-mix {part!r}: expected ROLE=DTYPE with DTYPE one of {', '.join(DTYPE_BITS)}")
        mix[role.strip()] = dtype.upper()
    return mix


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", type=Path, help="Hugging Face config.json")
    ap.add_argument("outdir", type=Path, help="directory to write (must not exist, or be empty)")
    ap.add_argument("--dtype-mix", metavar="ROLE=DTYPE,...", help="dtype of linear-layer weights per role")
    ap.add_argument("--fp8-scales", choices=("config", "block128", "tensor", "none"), default="config",
                    help="scale tensors of FP8 weights (default: config, what its quantization_config says; "
                         "block128 for FP8 weights it does not quantize)")
    ap.add_argument("--fp8-scale-dtype", choices=("F32", "BF16"), default="F32",
                    help="dtype of FP8 block scales (default F32, as DeepSeek-V3's weight_scale_inv)")
    ap.add_argument("--shard-gb", type=float, default=5.0, help="declared data per shard, in 1e9 bytes (default 5)")
    ap.add_argument("--sparse", action="store_true", help="give files their full declared length (sparse)")
    args = ap.parse_args(argv)
    try:
        if args.outdir.exists() and any(args.outdir.iterdir()):
            raise AuditError("exists and is not empty", path=str(args.outdir))
        raw = args.config.read_bytes()
        try:
            config = parse_json(raw, "file")
        except ValueError as e:
            raise AuditError(str(e), path=str(args.config)) from None
        if not isinstance(config, dict):
            raise AuditError("is not a JSON object", path=str(args.config))
        tensors = assign_dtypes(config, tensor_specs(config), parse_mix(args.dtype_mix), args.fp8_scales,
                                args.fp8_scale_dtype)
        names = write_header_only(args.outdir, raw, tensors, shard_bytes=int(args.shard_gb * 1e9), sparse=args.sparse)
    except (AuditError, OSError) as e:
        print(f"make_header_only_checkpoint: error: {e}", file=sys.stderr)
        return 2
    params = sum(math.prod(s) for _, _, s in tensors)
    by_dtype: dict[str, int] = {}
    for _, dtype, shape in tensors:
        by_dtype[dtype] = by_dtype.get(dtype, 0) + math.prod(shape) * DTYPE_BITS[dtype] // 8
    print(f"wrote {args.outdir}: {len(names)} file(s), {len(tensors):,} tensors, {params:,} elements, "
          f"{sum(by_dtype.values()):,} bytes declared ({', '.join(f'{d} {b:,}' for d, b in sorted(by_dtype.items()))})"
          f"{'' if args.sparse else '; data absent (header-only)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
