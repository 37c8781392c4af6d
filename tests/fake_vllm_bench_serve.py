"""TEST DOUBLE of `vllm bench serve` (v0.26.0) for runs without vLLM: the same flags, the same method,
the same result keys.

    python tests/fake_vllm_bench_serve.py bench serve --base-url URL --model M --random-input-len N
        --random-output-len M --num-prompts K --max-concurrency 1 --ignore-eos --temperature 0
        --num-warmups W --save-result --save-detailed --result-dir D --result-filename F [...]

Like `vllm/benchmarks/serve.py` with `--dataset-name random --backend vllm`: K streamed completions,
one at a time, each prompt N tokens long (here: words of the fake server's regex tokenizer, BOS
included) and a cap of M tokens; TTFT is the time to the first event with a non-empty `choices`
list (`lib/endpoint_request_func.py: async_request_openai_completions`), output tokens come from the
final usage, and `output_throughput` = total output tokens / benchmark duration (warm-ups excluded).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse
from pathlib import Path


def one(url: str, model: str, prompt: str, max_tokens: int, ignore_eos: bool) -> tuple[float, float, int, int]:
    """(ttft, latency, prompt tokens, output tokens) of one streamed completion."""
    p = urllib.parse.urlsplit(url)
    assert p.hostname is not None
    conn = http.client.HTTPConnection(p.hostname, p.port, timeout=600)
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0, "stream": True,
            "ignore_eos": ignore_eos, "stream_options": {"include_usage": True}, "repetition_penalty": 1.0}
    st = time.perf_counter()
    conn.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    ttft = None
    last = st
    pt = ot = 0
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        ev = json.loads(data)
        if ev.get("choices"):
            now = time.perf_counter()
            if ttft is None:
                ttft = now - st
            last = now
        elif ev.get("usage"):
            ot = ev["usage"]["completion_tokens"]
            pt = ev["usage"]["prompt_tokens"]
    conn.close()
    return ttft or 0.0, last - st, pt, ot


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("words", nargs="*")
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--random-input-len", type=int, default=1024)
    ap.add_argument("--random-output-len", type=int, default=128)
    ap.add_argument("--num-prompts", type=int, default=10)
    ap.add_argument("--num-warmups", type=int, default=0)
    ap.add_argument("--ignore-eos", action="store_true")
    ap.add_argument("--result-dir", default=".")
    ap.add_argument("--result-filename", required=True)
    args, _ = ap.parse_known_args(argv)
    assert args.words == ["bench", "serve"], args.words

    def prompt(i: int) -> str:
        return " ".join(f"w{i}x{j}" for j in range(args.random_input_len - 1))  # + BOS

    for i in range(args.num_warmups):
        one(args.base_url, args.model, prompt(10_000 + i), args.random_output_len, args.ignore_eos)
    t0 = time.perf_counter()
    outs = [one(args.base_url, args.model, prompt(i), args.random_output_len, args.ignore_eos)
            for i in range(args.num_prompts)]
    duration = time.perf_counter() - t0
    ttfts = [o[0] for o in outs]
    total_out = sum(o[3] for o in outs)
    result = {
        "backend": "vllm", "model_id": args.model, "num_prompts": args.num_prompts, "max_concurrency": 1,
        "duration": duration, "completed": len(outs), "failed": 0,
        "total_input_tokens": sum(o[2] for o in outs), "total_output_tokens": total_out,
        "request_throughput": len(outs) / duration, "output_throughput": total_out / duration,
        "total_token_throughput": (sum(o[2] for o in outs) + total_out) / duration,
        "input_lens": [o[2] for o in outs], "output_lens": [o[3] for o in outs], "ttfts": ttfts,
        "mean_ttft_ms": statistics.mean(ttfts) * 1000, "median_ttft_ms": statistics.median(ttfts) * 1000,
        "std_ttft_ms": statistics.pstdev(ttfts) * 1000, "fake": "tests/fake_vllm_bench_serve.py",
    }
    out = Path(args.result_dir) / args.result_filename
    out.write_text(json.dumps(result, indent=2))
    print(f"Output token throughput (tok/s): {result['output_throughput']:.2f}")
    print(f"Median TTFT (ms): {result['median_ttft_ms']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
