#!/usr/bin/env bash
# CPU side of the H200 proof of `audit bench` (issue 13). From the checkout root:
#   bash scripts/h200_bench_prepare.sh        # -> .dev/llama-3.1-8b-shape (about 2.5 MB)
# Llama-3.1-8B's published config.json and the real Llama 3 tokenizer: the tiktoken BPE file that Meta's
# `llama-models` package ships on PyPI (0.3.0: llama_models/llama3/tokenizer.model), converted to
# tokenizer.json with transformers (a venv in .dev/tokvenv with the host's transformers 5.17.0 and
# tokenizers 0.23.2), checked against tiktoken on the 2,500 MATH-500 texts, and stored gzip'd
# (scripts/h200_bench.sh unpacks it). Needs ../shared/data for the check.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-.dev/llama-3.1-8b-shape}
DATA=${DATA:-${AUDIT_SHARED_DATA:-../shared/data}}
mkdir -p .dev/wheels
python3 -m pip download -q --no-deps -d .dev/wheels llama-models==0.3.0
python3 - <<'PY'
import glob, hashlib, zipfile
z = zipfile.ZipFile(glob.glob(".dev/wheels/llama_models-0.3.0-*.whl")[0])
data = z.read("llama_models/llama3/tokenizer.model")
open(".dev/llama3-tokenizer.model", "wb").write(data)
print("llama3/tokenizer.model sha256", hashlib.sha256(data).hexdigest(), len(data), "bytes")
PY
if [ ! -x .dev/tokvenv/bin/python ]; then
  python3 -m venv .dev/tokvenv
  .dev/tokvenv/bin/pip install -q transformers==5.17.0 tokenizers==0.23.2 tiktoken==0.14.0
fi
rm -rf "$OUT"
.dev/tokvenv/bin/python scripts/bench_model.py "$OUT" --tokenizer-model .dev/llama3-tokenizer.model \
  --check "$DATA/math500/test.jsonl"
rm "$OUT/tokenizer.json"  # carried gzip'd
ls -la "$OUT"
