#!/usr/bin/env bash
# CPU side of the H200 proof of `audit generate` (issue 7). Run from the checkout root on your machine:
#   bash scripts/h200_prepare.sh            # items packages into .dev/gen-items
#   GRADE_WHEELS=1 bash scripts/h200_prepare.sh   # also .whl/ with what `audit grade` needs on the host
# .dev/ and .whl/ are in .gitignore. Needs ../shared/data and the tiny model of
# ../shared/device/VLLM.md at .dev/tiny-llama (make-tiny-llama.py).
#
# The MMLU-Pro subset was chosen with the tiny model's own tokenizer (.dev/tiny-llama/tokenizer.json,
# chat template applied; counts of the whole chat prompt):
#   70 business 378, 883 law 333, 1988 psychology 317, 2804 biology 235, 3526 chemistry 248,
#   4669 history 223 tokens: fit a 1024-token context;
#   946 law 1019 tokens: fits with 5 tokens of room (max_tokens = 1024 - 1019 < the cap);
#   6718 health 2003, 6329 health 2060 tokens: do not fit (recorded as excluded, never sent).
# MATH-500: the first 10 problems (46 to 381 tokens).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
DATA=${DATA:-../shared/data}
mkdir -p .dev/gen-items
"$PY" scripts/make_items.py math500 "$DATA/math500/test.jsonl" .dev/gen-items/math500 --first 10 --force
"$PY" scripts/make_items.py mmlu_pro "$DATA/mmlu_pro/mmlu_pro_test_questions.jsonl" .dev/gen-items/mmlu_pro \
  --ids 70,883,1988,2804,3526,4669,946,6718,6329 --force
[ -d .dev/tiny-llama ] || echo "note: .dev/tiny-llama is missing: build it with ../shared/device/make-tiny-llama.py" >&2

if [ "${GRADE_WHEELS:-0}" = 1 ]; then
  # `audit generate/validate/show/bundle` need nothing beyond the host image and vLLM's wheels
  # (pydantic comes with vLLM; click, pandas, pyarrow, numpy, scipy, sympy are in the image).
  # `audit grade` also imports these pure-Python wheels (about 1 MB):
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl math-verify==0.9.0 latex2sympy2_extended==1.11.0 antlr4-python3-runtime==4.13.2
  ls -la .whl
fi
du -sh .dev/gen-items .dev/tiny-llama 2>/dev/null || true
