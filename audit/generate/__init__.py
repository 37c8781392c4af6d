"""`audit generate`: responses from a vLLM server, with a record of what really happened.

    openai_http  a small client for the OpenAI-compatible HTTP API (streaming, token counts)
    vllm_server  launching vLLM, and reading its log and command line
    runner       a run, start to end (`start`, `resume`): sequences the steps below
    config       what a run sends (Sampling, RunConfig) and how (Runtime)
    state        the run record (run.json): sessions, servers, items package
    model_info   the model's generation_config.json and file hashes, the GPUs
    journal      rows kept as requests finish, read back by --resume; the run's lock
    plan         the items and their prompts, and which requests are left
    servers      launching or attaching to the servers of a session
    requests     one request: token count, budget, streamed reply, retries, row
    pool         a round of requests on worker threads; the server-log check
    progress     notes and the progress line
    provenance   the package's provenance (extra: run record, checks, counts)
    package      writing the responses package

`audit bench` uses `openai_http` and `vllm_server` too. The versioned prompt templates a run renders
are `audit.prompts`, beside the specs that name them. Nothing is imported here.
"""
