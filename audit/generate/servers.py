"""The servers a session sends to: a launched vLLM or running ones, described, pinned and stopped."""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from audit.errors import AuditError
from audit.fileio import read_regular
from audit.generate.config import RunConfig, Runtime
from audit.generate.openai_http import OpenAIServer, ServerError
from audit.generate.progress import note
from audit.generate.state import LaunchRecord, RunState, ServerIdentity, ServerInfo, Session, save_state
from audit.generate.vllm_server import (
    LaunchedServer,
    LogWatcher,
    kill_stale,
    parse_default_overrides,
    parse_launch_args,
)

MAX_LOG_HEAD_BYTES = 16 << 20
"""vLLM logs its start-up (arguments, model loading, the defaults line) in well under 1 MiB."""


@dataclass
class ServerSlot:
    """One server of the session, and whether it still takes requests."""

    index: int
    client: OpenAIServer
    launched: LaunchedServer | None = None
    dead: bool = False
    info: ServerInfo | None = None

    def check_alive(self, err: Exception) -> None:
        """Raise the launched server's death (with its log's tail) if a failed request was that."""
        if self.launched is not None and not self.launched.alive():
            raise self.launched.died(f"request failed ({err})")


def _log_head(path: Path) -> str:
    """The start of a launched server's log, where vLLM announces its sampling defaults: at most
    MAX_LOG_HEAD_BYTES (a log of days of requests, or one a server padded, is not read whole)."""
    try:
        return read_regular(path, follow_links=True, limit=MAX_LOG_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def _identity(info: ServerInfo) -> ServerIdentity:
    return ServerIdentity(version=info["version"], model=info["model"], max_model_len=info["max_model_len"])


class Servers:
    """The session's servers: `connect` begins the session (launching or attaching), `stop` ends it."""

    def __init__(self, cfg: RunConfig, rt: Runtime, state: RunState, work: Path, log: IO[str]):
        self.cfg = cfg
        self.rt = rt
        self.state = state
        self.work = work
        self.log = log
        self.index = len(state.sessions)
        """This session's index in the run's sessions."""
        self.session: Session | None = None
        """This session's record, once `connect` began it."""
        self.slots: list[ServerSlot] = []
        self.watchers: list[LogWatcher] = []
        """Readers of the server logs, one per log; none when the log check is off or no log is at hand."""
        self.served_name = ""
        self.context_window = 0

    def connect(self) -> None:
        """Begin the session: launch or attach to the servers, describe each, and check they agree."""
        session = Session(index=self.index, started_at=time.time())
        self.session = session
        self.state.sessions.append(session)
        if self.cfg.launch:
            self._launch(session, self.cfg.launch)
        else:
            self._attach()
        for slot in self.slots:
            slot.info = self._describe(slot)
            session.servers.append(slot.info)
        self._check_servers_agree()
        save_state(self.work, self.state)

    def _launch(self, session: Session, launch_args: str) -> None:
        cfg = self.cfg
        for prev in self.state.sessions[:-1]:
            pid = (prev.launch or {}).get("pid")
            if pid and kill_stale(pid, f"--model {cfg.model}"):
                note(self.log, f"stopped server pid {pid} left by an earlier, killed run")
        args = parse_launch_args(launch_args, cfg.model)
        program = [sys.executable if p == "{python}" else p for p in shlex.split(cfg.launch_program)]
        log_rel = f"logs/server-{self.index}.log"
        srv = LaunchedServer(program=program, model=cfg.model, args=args, log_path=self.work / log_rel,
                             log_requests=cfg.log_check)
        launch: LaunchRecord = {"command": srv.command, "log": log_rel}
        session.launch = launch
        note(self.log, f"starting the server: {' '.join(srv.command)}")
        srv.start()
        # In the slots from now on, so that stop() stops it whatever happens next.
        self.slots = [ServerSlot(0, self._client(srv.url), launched=srv)]
        launch["pid"] = srv.pid
        save_state(self.work, self.state)
        t0 = time.monotonic()
        srv.wait_ready(self.rt.launch_timeout)
        launch["ready_s"] = round(time.monotonic() - t0, 3)
        note(self.log, f"server ready at {srv.url} after {time.monotonic() - t0:.1f} s")
        if cfg.log_check:
            self.watchers = [LogWatcher(srv.log_path)]

    def _attach(self) -> None:
        cfg = self.cfg
        urls = self.state.server_override or cfg.servers
        self.slots = [ServerSlot(i, self._client(u)) for i, u in enumerate(urls)]
        if cfg.log_check and cfg.server_logs:
            self.watchers = [LogWatcher(Path(p)) for p in cfg.server_logs]

    def _client(self, url: str) -> OpenAIServer:
        # --request-timeout bounds each read and each request in all (a server dripping bytes is cut).
        return OpenAIServer(url, timeout=self.rt.request_timeout, deadline=self.rt.request_timeout)

    def _describe(self, slot: ServerSlot) -> ServerInfo:
        c = slot.client
        try:
            if not c.health(timeout=10):
                raise AuditError(f"{c.url}/health does not answer 200")
            version = c.version()
            models = c.models()
        except ServerError as e:
            raise AuditError(f"server {c.url}: {e}") from None
        card = self._model_card(c.url, models)
        mml = card.get("max_model_len")
        if not isinstance(mml, int) or mml < 1:
            raise AuditError(f"server {c.url}: /v1/models reports no max_model_len for {card['id']!r}")
        info: ServerInfo = {"url": c.url, "version": version, "model": card["id"], "root": card.get("root"),
                            "max_model_len": mml}
        server_config = c.server_info()
        if server_config:
            info["server_config"] = server_config
        return info

    def _model_card(self, url: str, models: list[dict[str, Any]]) -> dict[str, Any]:
        """The `/v1/models` entry of the model the run asks for: by served name, else by path, else a
        launched server's only model."""
        want = self.cfg.served_model_name or self.cfg.model
        card = next((m for m in models if m["id"] == want), None)
        if card is None:
            card = next((m for m in models if m.get("root") == self.cfg.model), None)
        if card is None and len(models) == 1 and self.cfg.launch:
            card = models[0]
        if card is None:
            ids = [m["id"] for m in models]
            raise AuditError(f"server {url} does not serve {want!r} (it serves: {', '.join(ids) or 'nothing'}); "
                             "give --served-model-name")
        return card

    def _check_servers_agree(self) -> None:
        first = self._info(self.slots[0])
        now = _identity(first)
        for slot in self.slots[1:]:
            info = self._info(slot)
            mine, theirs = now.to_json(), _identity(info).to_json()
            for k, v in mine.items():
                if theirs[k] != v:
                    raise AuditError(f"servers disagree on {k}: {first['url']} has {v!r}, "
                                     f"{info['url']} has {theirs[k]!r}")
        pinned = self.state.server
        if pinned is None:
            self.state.server = now
        elif pinned != now:
            was, new = pinned.to_json(), now.to_json()
            diff = ", ".join(f"{k} {was[k]!r} -> {new[k]!r}" for k in new if was[k] != new[k])
            raise AuditError(f"the server differs from the one this run started with ({diff}); the rows would mix "
                             "two setups")
        self.served_name = first["model"]
        self.context_window = first["max_model_len"]

    @staticmethod
    def _info(slot: ServerSlot) -> ServerInfo:
        assert slot.info is not None, "described in connect()"
        return slot.info

    def stop(self) -> None:
        """End the session: stop a launched server (recording its exit code and announced defaults)."""
        session = self.session
        if session is None:
            return
        for slot in self.slots:
            if slot.launched is not None:
                code = slot.launched.stop()
                if session.launch is None:
                    session.launch = {}
                session.launch["exit_code"] = code
                overrides = parse_default_overrides(_log_head(slot.launched.log_path))
                if overrides:
                    session.server_default_sampling = overrides
        session.finished_at = time.time()
        save_state(self.work, self.state)
