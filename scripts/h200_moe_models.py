"""Model directories without weights for the MoE + MTP measurement on one H200 (issue 22).

    python scripts/h200_moe_models.py OUTDIR [--tokenizer DIR]

Writes OUTDIR/<shape>/config.json for each shape below, in the order issue 22 asks to try them, and
copies the tokenizer files of DIR (default `.dev/llama-3.1-8b-shape`: the Llama 3 tokenizer of
`scripts/h200_bench_prepare.sh`, 128,256 ids) beside each. The tokenizer is NOT the model's own: every
shape's vocabulary is larger (151,552-151,936), so every id it produces is a valid row of the model's
embedding; with `--load-format dummy` and `ignore_eos` the token ids only need to be in range.

Shapes (published values, from the model cards' config.json as recorded here; the FP8 quantization
configs are rebuilt, see each entry):
- qwen3-next-80b-a3b-fp8: Qwen/Qwen3-Next-80B-A3B-Instruct(-FP8). 48 layers, 3 of each 4 Gated DeltaNet
  (linear attention: recurrent state) and 1 gated full attention (16 q / 2 kv heads of 256); 512
  experts, 10 routed + 1 shared of 512 per token; one MTP layer (`mtp.*`). FP8 with 128x128 block
  scales (`quant_method: fp8`, `weight_block_size: [128, 128]`, dynamic activations), as the FP8 model
  card describes; `modules_to_not_convert` rebuilt from vLLM 0.26.0's layer shapes: the router and the
  shared-expert gate (vLLM builds them unquantized anyway), `linear_attn.in_proj_ba` (64 output rows,
  not a multiple of the 128 block), embeddings, head and `mtp.fc`.
- glm-4.5-air-fp8: zai-org/GLM-4.5-Air. 46 layers (first dense), 128 experts, 8 routed + 1 shared,
  one MTP layer (`num_nextn_predict_layers: 1`). The published FP8 checkpoint uses compressed-tensors,
  which the wheels do not ship; the same shape is given vLLM's own block FP8 (`quant_method: fp8`).
- qwen3-30b-a3b: Qwen/Qwen3-30B-A3B, BF16 as published (no MTP head), with
- mimo-7b: XiaomiMiMo/MiMo-7B-RL, dense BF16 with one MTP layer.
- qwen3-30b-a3b-fp8: Qwen/Qwen3-30B-A3B-FP8 (the H100 run, issue 32): qwen3-30b-a3b with the FP8 block
  quantization Qwen publishes for its Qwen3 MoE FP8 checkpoints (`quant_method: fp8`, e4m3, dynamic
  activations, 128x128 blocks; `modules_to_not_convert`: lm_head and, per layer, both norms and the
  router `mlp.gate`), rebuilt from the sibling Qwen3-30B-A3B-Thinking-2507-FP8's config as transformers
  5.7 prints it, not copied from Qwen/Qwen3-30B-A3B-FP8 itself. About 31 GB of weights: fits 78 GiB.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

_BLOCK_FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128]}


def _qwen3_next() -> dict:
    layers = 48
    skip = ["lm_head", "model.embed_tokens", "mtp.fc"]
    for i in [*range(layers)]:
        skip += [f"model.layers.{i}.mlp.gate", f"model.layers.{i}.mlp.shared_expert_gate"]
        if (i + 1) % 4:
            skip.append(f"model.layers.{i}.linear_attn.in_proj_ba")
    skip += ["mtp.layers.0.mlp.gate", "mtp.layers.0.mlp.shared_expert_gate"]
    return {
        "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "decoder_sparse_step": 1,
        "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048,
        "initializer_range": 0.02, "intermediate_size": 5120, "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
        "linear_value_head_dim": 128, "max_position_embeddings": 262144, "mlp_only_layers": [],
        "moe_intermediate_size": 512, "norm_topk_prob": True, "num_attention_heads": 16, "num_experts": 512,
        "num_experts_per_tok": 10, "num_hidden_layers": layers, "num_key_value_heads": 2,
        "output_router_logits": False, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 10000000, "router_aux_loss_coef": 0.001,
        "shared_expert_intermediate_size": 512, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
        "quantization_config": {**_BLOCK_FP8, "modules_to_not_convert": skip},
    }


def _glm45_air() -> dict:
    layers = 46
    skip = ["lm_head", "model.embed_tokens"] + [f"model.layers.{i}.mlp.gate" for i in range(layers + 1)]
    return {
        "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "attention_bias": True,
        "attention_dropout": 0.0, "pad_token_id": 151329, "eos_token_id": [151329, 151336, 151338],
        "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "partial_rotary_factor": 0.5,
        "initializer_range": 0.02, "intermediate_size": 10944, "max_position_embeddings": 131072,
        "moe_intermediate_size": 1408, "norm_topk_prob": True, "num_attention_heads": 96, "n_group": 1,
        "topk_group": 1, "n_routed_experts": 128, "n_shared_experts": 1, "routed_scaling_factor": 1.0,
        "num_experts_per_tok": 8, "first_k_dense_replace": 1, "num_hidden_layers": layers,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000,
        "num_nextn_predict_layers": 1, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_cache": True, "use_qk_norm": False, "vocab_size": 151552,
        "quantization_config": {**_BLOCK_FP8, "modules_to_not_convert": skip},
    }


def _qwen3_30b() -> dict:
    return {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "decoder_sparse_step": 1,
        "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
        "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48,
        "mlp_only_layers": [], "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32,
        "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
        "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.001, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
    }


def _mimo_7b() -> dict:
    return {
        "architectures": ["MiMoForCausalLM"], "model_type": "qwen2", "attention_bias": True,
        "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
        "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
        "max_position_embeddings": 32768, "max_window_layers": 36, "num_attention_heads": 32,
        "num_hidden_layers": 36, "num_key_value_heads": 8, "num_nextn_predict_layers": 1,
        "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 640000, "sliding_window": None,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False,
        "vocab_size": 151680,
    }


def _qwen3_30b_fp8() -> dict:
    skip = ["lm_head"]
    for i in range(48):
        skip += [f"model.layers.{i}.input_layernorm", f"model.layers.{i}.mlp.gate",
                 f"model.layers.{i}.post_attention_layernorm"]
    return {**_qwen3_30b(), "quantization_config": {**_BLOCK_FP8, "modules_to_not_convert": skip}}


SHAPES = {"qwen3-next-80b-a3b-fp8": _qwen3_next, "glm-4.5-air-fp8": _glm45_air, "qwen3-30b-a3b": _qwen3_30b,
          "mimo-7b": _mimo_7b, "qwen3-30b-a3b-fp8": _qwen3_30b_fp8}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--tokenizer", type=Path, default=Path(".dev/llama-3.1-8b-shape"))
    ap.add_argument("--only", nargs="*", choices=sorted(SHAPES), help="Write only these shapes.")
    a = ap.parse_args()
    tok = [p for p in sorted(a.tokenizer.iterdir()) if p.name.startswith("tokenizer") or p.name.endswith(".jinja")] \
        if a.tokenizer.is_dir() else []  # none: the H100 scripts copy one tokenizer into each model folder
    for name, make in SHAPES.items():
        if a.only and name not in a.only:
            continue
        d = a.outdir / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(make(), indent=2, sort_keys=True) + "\n")
        for p in tok:
            shutil.copy(p, d / p.name)
        print(name, sorted(x.name for x in d.iterdir()))


if __name__ == "__main__":
    main()
