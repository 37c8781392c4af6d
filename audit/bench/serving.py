"""The generation module's server handling, as `audit bench` uses it: one place to import it from.

`OpenAIServer` (the HTTP client), `LaunchedServer` (start, watch and stop `vllm serve`) and the
`--launch` argument parsing are shared with `audit generate`.
"""

from __future__ import annotations

from audit.generate.openai_http import Malformed, OpenAIServer, Rejected, ServerError, Transient
from audit.generate.vllm_server import DEFAULT_PROGRAM, LaunchedServer, ServerDied, parse_launch_args

__all__ = ["DEFAULT_PROGRAM", "LaunchedServer", "Malformed", "OpenAIServer", "Rejected", "ServerDied",
           "ServerError", "Transient", "parse_launch_args"]
