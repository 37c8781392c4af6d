#!/usr/bin/env bash
# CPU side of the H100 run (issue 32): everything the device calls need, staged in one folder that the
# device tool carries beside one part of vLLM's wheels per call.
#   bash scripts/h100_prepare.sh [STAGE]     # default STAGE: .dev/h100-stage
# Three folders, carried separately so that each call stays under 64 MiB:
# STAGE/run: a copy of this checkout's source (audit, extractors, graders, pyproject, README, scripts, the two
#   test doubles and the trace builder for DRY runs), and in STAGE/run/.dev:
#     h100/models/qwen3-30b-a3b-fp8, h100/models/mimo-7b   config.json (scripts/h200_moe_models.py);
#     h100/items/math500     the first 10 MATH-500 problems (scripts/make_items.py);
#     h100/whl               compressed-tensors 0.17.0 + loguru 0.7.3 (vLLM 0.26.0's quantization package imports
#                            compressed_tensors at module level, even for quant_method fp8);
#     vllm-smoke             ../shared/device/vllm-smoke (install-on-device.sh, env.sh);
# STAGE/tok: the Llama 3 tokenizer of scripts/h200_bench_prepare.sh, gzip'd (NOT the models' own: with random
#   weights and ignore_eos only the token count matters; its 128,256 ids are all inside both vocabularies);
#   the scripts copy it into each model folder (TOKENIZER=DIR, default .dev/h100/tokenizer);
# STAGE/pyd: pydantic's 4 wheels (vLLM's pins) for the floor call, before vLLM is installed (PYD=DIR).
# The wheels themselves: ../shared/device/prepare-vllm-wheels OUTDIR 40 (five parts of at most 40 MiB, so that a
# part, the stage and the checkout stay under the 64 MiB a device call carries). Needs ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
STAGE=${1:-.dev/h100-stage}
DATA=${DATA:-../shared/data}
PY=${PYTHON:-.venv/bin/python}
[ -f .dev/llama-3.1-8b-shape/tokenizer.json.gz ] || bash scripts/h200_bench_prepare.sh
rm -rf "$STAGE/run" "$STAGE/tok" "$STAGE/pyd"
TOK="$STAGE/tok"; PYD="$STAGE/pyd"; STAGE="$STAGE/run"
mkdir -p "$STAGE/tests" "$STAGE/.dev/h100" "$TOK" "$PYD"
git ls-files -z audit extractors graders scripts pyproject.toml README.md | xargs -0 cp --parents -t "$STAGE"
cp scripts/h100_*.sh scripts/device_lib.sh "$STAGE/scripts/"  # also when not committed yet
cp tests/fake_openai_server.py tests/fake_vllm_bench_serve.py tests/trace_builders.py "$STAGE/tests/"
touch "$STAGE/tests/__init__.py"
"$PY" scripts/h200_moe_models.py "$STAGE/.dev/h100/models" --only qwen3-30b-a3b-fp8 mimo-7b --tokenizer /nonexistent
cp .dev/llama-3.1-8b-shape/tokenizer* "$TOK/"
mkdir -p "$STAGE/.dev/h100/items"
"$PY" scripts/make_items.py math500 "$DATA/math500/test.jsonl" "$STAGE/.dev/h100/items/math500" --first 10 --force
mkdir -p "$STAGE/.dev/h100/whl"
dl() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$@"; }
dl "$STAGE/.dev/h100/whl" compressed-tensors==0.17.0 loguru==0.7.3
dl "$PYD" pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
cp -r ../shared/device/vllm-smoke "$STAGE/.dev/vllm-smoke"
sha256sum "$STAGE"/.dev/h100/models/*/config.json
du -sh "$STAGE" "$TOK" "$PYD"
