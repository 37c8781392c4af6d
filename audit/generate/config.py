"""What a run sends (`Sampling`, `RunConfig`: fixed for the run, recorded) and how it sends it (`Runtime`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from audit.generate.vllm_server import DEFAULT_PROGRAM

GREEDY_EPS = 1e-5
"""vLLM's `_SAMPLING_EPS`: temperatures below it are greedy."""
MIN_TEMPERATURE = 1e-2
"""vLLM's `_MAX_TEMP`: positive temperatures below it are raised to it."""
MODES = ("chat", "completion")
NEUTRAL_WHEN_GREEDY = (("top_p", 1.0), ("top_k", 0), ("min_p", 0.0))
"""What vLLM resets these to at a greedy temperature."""


@dataclass(frozen=True)
class Sampling:
    """The sampling parameters sent, all of them, with every request."""

    temperature: float
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    min_tokens: int = 0
    stop: tuple[str, ...] = ()

    def problems(self) -> list[str]:
        """Settings vLLM would change or reject: refused, so the record stays true."""
        return self._temperature_problems() + self._range_problems()

    def _temperature_problems(self) -> list[str]:
        out = []
        t = self.temperature
        if not 0.0 <= t <= 2.0:
            out.append(f"temperature {t} is outside [0, 2]")
        elif 0 < t < MIN_TEMPERATURE:
            out.append(f"temperature {t} would be raised to {MIN_TEMPERATURE} by vLLM; use 0 or >= {MIN_TEMPERATURE}")
        if t < GREEDY_EPS:
            for name, neutral in NEUTRAL_WHEN_GREEDY:
                if getattr(self, name) != neutral:
                    out.append(f"at temperature 0 vLLM resets {name} to {neutral}; leave {name} at {neutral}")
        return out

    def _range_problems(self) -> list[str]:
        out = []
        if not 0.0 < self.top_p <= 1.0:
            out.append(f"top_p {self.top_p} is outside (0, 1]")
        if self.top_k < 0:
            out.append(f"top_k {self.top_k}: use 0 to disable")
        if not 0.0 <= self.min_p <= 1.0:
            out.append(f"min_p {self.min_p} is outside [0, 1]")
        if self.repetition_penalty <= 0:
            out.append(f"repetition_penalty {self.repetition_penalty} must be > 0")
        for name in ("presence_penalty", "frequency_penalty"):
            if not -2.0 <= getattr(self, name) <= 2.0:
                out.append(f"{name} {getattr(self, name)} is outside [-2, 2]")
        if self.min_tokens < 0:
            out.append("min_tokens must be >= 0")
        if any(not s for s in self.stop):
            out.append("a stop string is empty")
        return out

    def request_fields(self) -> dict[str, Any]:
        """The sampling fields of every request body (`n` is always 1: one reply per request)."""
        return {
            "temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k, "min_p": self.min_p,
            "repetition_penalty": self.repetition_penalty, "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty, "min_tokens": self.min_tokens, "stop": list(self.stop),
            "n": 1,
        }


@dataclass(frozen=True)
class RunConfig:
    """Everything that fixes what a run sends; stored in the work directory and the manifest."""

    benchmark: str
    items: str
    model: str
    sampling: Sampling
    max_tokens: int
    mode: str = "chat"
    prompt: str | None = None
    samples: int = 1
    seed: int = 0
    resample_truncated: int = 0
    resample_budget: int | None = None
    limit: int | None = None
    servers: tuple[str, ...] = ()
    launch: str | None = None
    launch_program: str = DEFAULT_PROGRAM
    served_model_name: str | None = None
    server_logs: tuple[str, ...] = ()
    log_check: bool = True
    hardware: str | None = None
    package_id: str | None = None
    use_model_defaults: bool = False

    def problems(self) -> list[str]:
        """Everything wrong with this configuration, sampling first, in one list."""
        out = [f"sampling: {p}" for p in self.sampling.problems()]
        if self.mode not in MODES:
            out.append(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.max_tokens < 1:
            out.append("--max-tokens must be >= 1")
        if self.samples < 1:
            out.append("--samples must be >= 1")
        if self.seed < 0:
            out.append("--seed must be >= 0 (vLLM reads -1 as no seed)")
        if self.resample_truncated < 0:
            out.append("--resample-truncated must be >= 0")
        if self.resample_truncated and (self.resample_budget is None or self.resample_budget <= self.max_tokens):
            out.append("--resample-truncated needs --resample-budget larger than --max-tokens")
        if bool(self.servers) == bool(self.launch):
            out.append("give either --server URL (one or more) or --launch ARGS")
        if self.limit is not None and self.limit < 1:
            out.append("--limit must be >= 1")
        return out

    def seed_for(self, sample: int, attempt: int) -> int:
        """Distinct for every (sample, attempt) of an item: seed + attempt * samples + sample."""
        return self.seed + attempt * self.samples + sample

    def to_json(self) -> dict[str, Any]:
        """The configuration as JSON (tuples as lists), in field order."""
        d = asdict(self)
        d["sampling"]["stop"] = list(self.sampling.stop)
        for k in ("servers", "server_logs"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunConfig:
        """The configuration `to_json` wrote."""
        d = dict(d)
        s = dict(d.pop("sampling"))
        s["stop"] = tuple(s.get("stop", ()))
        for k in ("servers", "server_logs"):
            d[k] = tuple(d.get(k, ()))
        return cls(sampling=Sampling(**s), **d)


@dataclass(frozen=True)
class Runtime:
    """Settings that may change between a run and its resumption: they do not change what is sent."""

    concurrency: int = 1
    """Requests in flight at once on each server."""
    retries: int = 4
    backoff_s: float = 0.5
    """First retry waits this long; each further retry twice as long (with jitter)."""
    request_timeout: float = 3600.0
    """Seconds one request may take in all (connect, headers, the whole stream); a request past it is cut."""
    launch_timeout: float = 900.0
    progress: bool = True
