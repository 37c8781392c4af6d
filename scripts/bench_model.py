"""A Llama-3.1-8B model directory without weights, for `vllm serve --load-format dummy` (issue 13).

    python scripts/bench_model.py OUTDIR --tokenizer-model llama3/tokenizer.model [--check TEXTS.jsonl]

- `config.json`: Llama-3.1-8B's published configuration (meta-llama/Llama-3.1-8B, config.json:
  32 layers, hidden 4096, 32 query and 8 key-value heads, MLP 14336, vocabulary 128,256, RoPE theta
  500,000 with the `llama3` scaling, bf16). `param_count` gives 8,030,261,248 parameters from it,
  the published figure. vLLM's dummy loader fills the weights at full size, so kernels, memory
  traffic and CUDA graphs are those of the real model; the text is gibberish.
- `tokenizer.json` (+ `tokenizer_config.json`): the Llama 3 tokenizer, converted from the tiktoken
  BPE file `llama3/tokenizer.model` that Meta's `llama-models` package on PyPI ships (0.3.0), with
  transformers' `TikTokenConverter`, the Llama 3 split pattern and Llama 3.1's 256 special tokens
  (`<|begin_of_text|>` = 128000 added at the start, as the released tokenizer does). `--check`
  encodes real texts with tiktoken and with the converted tokenizer and requires identical ids.
  Written gzip'd too (`tokenizer.json.gz`, 2 MB) for carrying to the GPU host.

Needs transformers, tokenizers and tiktoken (`scripts/h200_bench_prepare.sh` makes a venv for it);
`write_config` and `param_count` need nothing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}
"""meta-llama/Llama-3.1-8B config.json, as published (transformers reads `transformers_version`: without it,
5.x warns about a Mistral regex and suggests changing the tokenizer)."""

PUBLISHED_PARAMS = 8_030_261_248

PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
           r"\s+(?!\S)|\s+")
"""Llama 3's pre-tokenization pattern (llama_models/llama3/tokenizer.py: `pat_str`)."""

SPECIAL = (["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
            "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
            "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
           + [f"<|reserved_special_token_{i}|>" for i in range(3, 248)])
"""Llama 3.1's special tokens, ids 128000..128255, in order."""


def param_count(cfg: dict) -> int:
    """Parameters of a Llama decoder from its config: embeddings, per-layer attention, MLP and norms, head."""
    h, v, inter, layers = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    head_dim = h // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * head_dim
    attn = h * h + 2 * h * kv + h * h
    mlp = 3 * h * inter
    per_layer = attn + mlp + 2 * h
    head = 0 if cfg["tie_word_embeddings"] else v * h
    return v * h + layers * per_layer + h + head


def write_config(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")


def build_tokenizer(tokenizer_model: Path, out: Path) -> None:
    from tokenizers import processors
    from transformers.convert_slow_tokenizer import TikTokenConverter

    assert len(SPECIAL) == 256
    tok = TikTokenConverter(vocab_file=str(tokenizer_model), pattern=PATTERN,
                            extra_special_tokens=SPECIAL).converted()
    bos = SPECIAL[0]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, 128000)])
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": bos, "eos_token": "<|end_of_text|>",
        "clean_up_tokenization_spaces": False, "model_max_length": 131072,
        "model_input_names": ["input_ids", "attention_mask"]}, indent=2) + "\n")
    with open(out / "tokenizer.json", "rb") as src, gzip.GzipFile(out / "tokenizer.json.gz", "wb", mtime=0) as dst:
        dst.write(src.read())


def check(out: Path, tokenizer_model: Path, texts: list[str]) -> int:
    """Encode each text with tiktoken (the reference) and with the converted tokenizer; return mismatches."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from transformers import AutoTokenizer

    ranks = load_tiktoken_bpe(str(tokenizer_model))
    ref = tiktoken.Encoding("llama3", pat_str=PATTERN, mergeable_ranks=ranks,
                            special_tokens={t: len(ranks) + i for i, t in enumerate(SPECIAL)})
    hf = AutoTokenizer.from_pretrained(str(out))
    bad = 0
    for text in texts:
        want = [128000, *ref.encode(text, disallowed_special=())]
        got = hf(text)["input_ids"]
        if got != want:
            bad += 1
            if bad <= 3:
                print(f"mismatch on {text[:60]!r}: {got[:12]} vs {want[:12]}", file=sys.stderr)
        if hf.decode(got[1:]) != text:
            bad += 1
    assert len(hf) == 128256, len(hf)
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--tokenizer-model", type=Path, help="llama_models/llama3/tokenizer.model")
    ap.add_argument("--check", type=Path, metavar="TEXTS.jsonl",
                    help="JSONL whose string fields are encoded both ways (e.g. MATH-500 test.jsonl)")
    args = ap.parse_args(argv)
    write_config(args.out)
    print(f"config.json: Llama-3.1-8B, {param_count(CONFIG):,} parameters")
    if args.tokenizer_model:
        build_tokenizer(args.tokenizer_model, args.out)
        print(f"tokenizer.json from {args.tokenizer_model}")
    if args.check:
        texts = []
        for line in args.check.read_text(encoding="utf-8").splitlines():
            texts += [v for v in json.loads(line).values() if isinstance(v, str) and v]
        bad = check(args.out, args.tokenizer_model, texts)
        print(f"check: {len(texts)} texts encoded by tiktoken and by tokenizer.json: {bad} mismatches")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
