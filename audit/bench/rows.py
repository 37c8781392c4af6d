"""The rows of the `throughput` and `telemetry` package kinds (registered in `audit.bench.store`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from audit.models import MAX_COUNT, Count, Int64, Record

# --------------------------------------------------------------------------- bench rows (audit bench)


class BenchRequestRow(Record):
    """One streamed request of `audit bench throughput`: a row of a `throughput` package.

    Times share one run clock (Unix seconds, from a single monotonic reference), as do the
    telemetry samples, so token arrivals and GPU counters line up on one axis.
    """

    request: Count
    """Sequence number in the run, from 0, in the order requests were sent."""
    phase: Literal["warmup", "timed"]
    """`warmup`: sent before the first window and left out of every figure; `timed`: sent during the windows."""
    server: Count = 0
    """Index of the server it went to (the order of `--server`, or 0 for the launched one)."""
    slot: Count = 0
    """Which of the `--concurrency` request loops of that server sent it."""
    prompt_index: Count
    """Which prompt of the run's pool was sent (each has its own marker word, so no prefix-cache hits)."""
    started_at: float
    """Run-clock time (Unix seconds) just before the request was sent."""
    first_token_at: float | None = None
    """Run-clock time of the first event that carried a generated token (by the per-chunk usage count,
    not the first chunk: an event without a token does not count); null when no token came."""
    finished_at: float
    """Run-clock time the stream ended: `[DONE]`, an error, or the client closing it after the last window."""
    prompt_tokens: Count | None = None
    """Prompt length as the server's usage reported it (checked against the `/tokenize` count)."""
    output_tokens: Count
    """Tokens received: the sum of the per-chunk usage increments (`continuous_usage_stats`)."""
    max_tokens: Annotated[int, Field(ge=1, le=MAX_COUNT)]
    """The output ceiling sent."""
    token_times: list[float]
    """Seconds after `started_at` at which each generated token arrived, one entry per token, in order;
    the tokens of a bundled chunk share its arrival time."""
    chunks: Count
    """Stream events that carried at least one token."""
    bundled_chunks: Count
    """Events that carried more than one token (detected from the usage increments)."""
    finish_reason: str | None = None
    """Why generation stopped, as the server reported (`length` at the cap); null when the stream was cut."""
    ended: Literal["done", "cut", "error"]
    """`done`: the stream ended with `[DONE]`; `cut`: the client closed it because the last window was over;
    `error`: see `error`."""
    error: str | None = None
    """What went wrong (server error, stall past the read timeout, malformed reply); null otherwise."""

    @model_validator(mode="after")
    def _consistent(self) -> BenchRequestRow:
        if len(self.token_times) != self.output_tokens:
            raise ValueError(f"token_times has {len(self.token_times)} entries for {self.output_tokens} output tokens")
        if any(b < a for a, b in zip(self.token_times, self.token_times[1:], strict=False)) or \
                (self.token_times and self.token_times[0] < 0):
            raise ValueError("token_times must be non-negative and non-decreasing")
        if (self.first_token_at is None) != (not self.token_times):
            raise ValueError("first_token_at must be set exactly when tokens arrived")
        if self.first_token_at is not None and abs(self.first_token_at - self.started_at - self.token_times[0]) > 2e-6:
            raise ValueError("first_token_at differs from started_at + token_times[0]")
        if self.finished_at < self.started_at:
            raise ValueError("finished_at is before started_at")
        if (self.ended == "error") != (self.error is not None):
            raise ValueError("error must be set exactly when ended is 'error'")
        if self.bundled_chunks > self.chunks or self.chunks > self.output_tokens:
            raise ValueError("need bundled_chunks <= chunks <= output_tokens")
        return self


class BenchWindowRow(Record):
    """One timed window of `audit bench throughput`: a row of a `throughput` package."""

    window: Count
    """Window index, from 0."""
    start: float
    """Run-clock time (Unix seconds) the window began."""
    end: float
    """Run-clock time the window ended; the next window begins here."""
    server_counters_start: dict[str, float] | None = None
    """The server's Prometheus counters read at `start` (`GET /metrics`; each summed over its label sets,
    e.g. `vllm:spec_decode_num_draft_tokens_total`), summed over servers; null when unreadable."""
    server_counters_end: dict[str, float] | None = None
    """The same counters read at `end`; a window's figure is the difference."""
    counters_error: str | None = None
    """Why the server's counters could not be read, when they could not."""

    @model_validator(mode="after")
    def _ordered(self) -> BenchWindowRow:
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


class GpuSampleRow(Record):
    """One reading of one GPU's NVML counters: a row of a `telemetry` package.

    A null value is a counter that was not read: unsupported on this GPU (see the manifest's
    `counters`) or failed at this sample (see `error`); never a stand-in zero.
    """

    t: float
    """Run-clock time (Unix seconds) of the reading."""
    gpu: Count
    """NVML device index."""
    kernel_running_pct: float | None = None
    """`utilization.gpu` (nvmlDeviceGetUtilizationRates().gpu): percent of the driver's last sample period
    during which at least one kernel was running. Not how much of the GPU was busy: one kernel on one SM
    reads 100."""
    memory_busy_pct: float | None = None
    """`utilization.memory`: percent of the driver's last sample period during which device memory was read
    or written."""
    power_w: float | None = None
    """Power draw in watts (nvmlDeviceGetPowerUsage)."""
    energy_j: float | None = None
    """Energy counter in joules since the driver loaded (nvmlDeviceGetTotalEnergyConsumption): a window's
    energy is the difference."""
    sm_clock_mhz: Int64 | None = None
    """SM clock, MHz."""
    mem_clock_mhz: Int64 | None = None
    """Memory clock, MHz."""
    temperature_c: Int64 | None = None
    """GPU temperature, degrees C."""
    error: str | None = None
    """NVML error of this reading (e.g. `GPU is lost`); the counters it prevented are null."""


class GpmSampleRow(Record):
    """NVML GPM metrics of one GPU between two GPM samples: a row of a `telemetry` package.

    GPM (Hopper and newer) computes each metric over the interval between two samples; intervals
    are at least 100 ms (shorter ones return zeros or NaN while reporting success).
    """

    t_start: float
    """Run-clock time of the first sample of the pair."""
    t_end: float
    """Run-clock time of the second sample of the pair."""
    gpu: Count
    """NVML device index."""
    sm_util_pct: float | None = None
    """NVML_GPM_METRIC_SM_UTIL: percent of SMs that were busy over the interval."""
    sm_occupancy_pct: float | None = None
    """NVML_GPM_METRIC_SM_OCCUPANCY: resident warps as a percent of the theoretical maximum."""
    any_tensor_util_pct: float | None = None
    """NVML_GPM_METRIC_ANY_TENSOR_UTIL: percent of SM time spent on any tensor-core operation."""
    dram_bw_util_pct: float | None = None
    """NVML_GPM_METRIC_DRAM_BW_UTIL: DRAM bandwidth used as a percent of the theoretical maximum."""
    error: str | None = None
    """NVML error of this interval; the metrics it prevented are null."""

    @model_validator(mode="after")
    def _interval(self) -> GpmSampleRow:
        if self.t_end <= self.t_start:
            raise ValueError("t_end must be after t_start")
        return self
