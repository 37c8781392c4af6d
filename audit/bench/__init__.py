"""`audit bench`: decode throughput and GPU counters, measured into packages anyone can re-check.

- `throughput`: the run: a synthetic prompt of exact token length, greedy decoding to a cap, a
  discarded warm-up, then timed windows of streamed requests with per-token arrival times.
- `figures`: every figure recomputed from the raw rows (tok/s per window, decode rate, TTFT,
  speculative decoding), and `compare` of two arms paired by window.
- `telemetry`: a sampler thread reading NVML counters (and GPM metrics on Hopper and newer)
  through a small device layer that tests replace.
- `report`: the figures as text and a PNG timeline.
"""
