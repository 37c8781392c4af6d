"""The synthetic prompt: a marker word, then one filler word repeated, to an exact token count.

The count is the server's own (`POST /tokenize` with the completions endpoint's defaults, special
tokens included), so it is the count the server will see. Each prompt of a run gets its own
marker (`#00000`, `#00001`, ...): the marker leads the prompt, so no two prompts share a first
KV-cache block and prefix caching cannot serve one request from another's prefill.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from audit.errors import AuditError

MAX_TRIES = 12


@dataclass(frozen=True)
class PromptSpec:
    """What every prompt of a run is made of."""

    tokens: int
    """Exact prompt length in tokens, counted by the server."""
    filler: str = "the"
    """The word repeated after the marker."""
    marker: str = "#{index:05d}"
    """The leading marker, formatted with the prompt's index."""

    def text(self, index: int, fillers: int) -> str:
        return self.marker.format(index=index) + f" {self.filler}" * fillers


@dataclass(frozen=True)
class Prompt:
    index: int
    text: str
    fillers: int
    tokens: int


class PromptBuilder:
    """Builds prompts of exactly `spec.tokens` tokens with a token counter (the server's `/tokenize`).

    The filler count is adjusted from the measured counts until exact; the next prompt starts from
    the count that worked, so one `/tokenize` call per prompt is the usual cost.
    """

    def __init__(self, spec: PromptSpec, count: Callable[[str], int]):
        if spec.tokens < 1:
            raise AuditError("--prompt-tokens must be >= 1")
        if not spec.filler.strip() or any(c.isspace() for c in spec.filler):
            raise AuditError(f"--filler must be one word, got {spec.filler!r}")
        self.spec = spec
        self.count = count
        self._fillers = max(0, spec.tokens - 2)
        self.max_fillers = 4 * spec.tokens + 64
        """Most filler words a prompt may have: a word of text is at least a quarter of a token."""
        self.calls = 0

    def build(self, index: int) -> Prompt:
        spec = self.spec
        k = self._fillers
        seen: dict[int, int] = {}
        for _ in range(MAX_TRIES):
            text = spec.text(index, k)
            n = self.count(text)
            self.calls += 1
            seen[k] = n
            if n == spec.tokens:
                self._fillers = k
                return Prompt(index, text, k, n)
            # Tokens per filler word, from two measurements when there are two.
            per = 1.0
            others = [(kk, nn) for kk, nn in seen.items() if kk != k and nn != n]
            if others:
                kk, nn = others[-1]
                per = max(1e-9, (n - nn) / (k - kk)) if k != kk else 1.0
            step = round((spec.tokens - n) / per) or (1 if spec.tokens > n else -1)
            nxt = max(0, k + step)
            if nxt in seen:
                break
            if nxt > self.max_fillers:  # counts that fall as the prompt grows would ask for 10**11 words
                raise AuditError(f"cannot build a prompt of {spec.tokens} tokens: the server's /tokenize counts "
                                 f"({', '.join(f'{nn} tokens for {kk} filler words' for kk, nn in seen.items())}) "
                                 f"ask for more than {self.max_fillers:,} filler words")
            k = nxt
        below = max((nn for nn in seen.values() if nn < spec.tokens), default=None)
        above = min((nn for nn in seen.values() if nn > spec.tokens), default=None)
        raise AuditError(f"cannot build a prompt of exactly {spec.tokens} tokens from marker "
                         f"{spec.marker.format(index=index)!r} and filler {spec.filler!r}: the server counted "
                         f"{below} and {above} around it; choose another --filler or --prompt-tokens")
