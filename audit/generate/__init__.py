"""`audit generate`: responses from a vLLM server, with a record of what really happened.

    prompts      versioned prompt templates and the sha256 of what is sent
    openai_http  a small client for the OpenAI-compatible HTTP API (streaming, token counts)
    vllm_server  launching vLLM, and reading its log and command line
    runner       a run: plan, budgets, journal, resume, and the package written at the end

`audit bench` uses `openai_http` and `vllm_server` too. Nothing is imported here, so
`audit.generate.prompts` (which grading specs name) does not load the runner.
"""
