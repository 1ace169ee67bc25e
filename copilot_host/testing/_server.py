"""The emulated GitHub served by a threaded stdlib server: each request is found in the
routing table, recorded, and answered by its row's handler (or by a scripted fault).

Each rule below models what the real service was seen to do; docs/EMULATOR.md lists the
facts and where they were observed.
"""

from __future__ import annotations

import email.utils
import json
import selectors
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType
from typing import Any

from ._answers import Answer, copilot_request_id, copilot_text, github_json, github_request_id
from ._groups import RawAnswer
from ._record import RecordedRequest
from ._routes import COPILOT_HOSTS, GITHUB_HOST, route_of
from ._state import EmulatorState

__all__ = ["make_server"]

_MALFORMED = b'{"this is": not JSON at all'

# poll() where there is one: no descriptor of its own and no limit on descriptor numbers.
_Watch: type[selectors.BaseSelector] = getattr(selectors, "PollSelector", selectors.DefaultSelector)


class _ClientGone(Exception):
    """The client closed the connection while the emulator was still answering."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm and the client's
    # delayed ACK each keep-alive answer would stall ~40 ms.
    disable_nagle_algorithm = True
    server: _Server
    _where: tuple[int, int] | None = None

    def log_message(self, format: str, *args: Any) -> None:
        # Silent: the emulator must not print anything, canaries included.
        return

    def date_time_string(self, timestamp: float | None = None) -> str:
        # The server's Date follows its (possibly skewed) clock, like a real server would.
        return email.utils.formatdate(self.server.state.now(), usegmt=True)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        state = self.server.state
        split = urllib.parse.urlsplit(self.path)
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        body = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        betas = self.headers.get_all("anthropic-beta")
        if betas:
            # A list header sent on several lines means the same as one comma-joined line.
            headers["anthropic-beta"] = ",".join(betas)
        form: Mapping[str, str] | None = None
        kind = headers.get("content-type", "")
        if kind.startswith("application/x-www-form-urlencoded"):
            form = MappingProxyType(dict(urllib.parse.parse_qsl(body.decode("latin-1"))))
        elif host == GITHUB_HOST and kind.startswith("application/json"):
            # github.com's OAuth endpoints take a JSON body as well as a form.
            try:
                value = json.loads(body or b"{}")
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict):
                form = MappingProxyType({str(k): str(v) for k, v in value.items()})
        route = route_of(self.command, host, split.path)
        record = RecordedRequest(
            method=self.command,
            host=host,
            path=split.path,
            endpoint="" if route is None else route.endpoint,
            headers=MappingProxyType(headers),
            form=form,
            body=body,
            at=time.monotonic(),
            request_id=github_request_id(),
        )
        self._where = state.remember(record)
        if route is None:
            if host in COPILOT_HOSTS:
                # The Copilot API's Go router: plain text for an unknown path.
                self._answer(copilot_text(404, "404 page not found"), record)
            else:
                self._answer(github_json(404, "Not Found"), record)
            return
        # The scripted faults of this endpoint come before its handler.
        faults, endpoint = state.scenario.faults, route.endpoint
        delay = faults.slow.get(endpoint)
        if delay:
            self._pause(delay)
        raw = faults.answers.get(endpoint)
        if raw is not None:
            self._answer(_raw(raw), record)
        elif endpoint in faults.malformed:
            self._answer(Answer(200, (("Content-Type", "application/json"),), _MALFORMED), record)
        elif endpoint in faults.oversized:
            self._send_unsized(route.oversize, record)
        else:
            self._answer(route.handler(state, record), record, faults.drip.get(endpoint))

    def _start(
        self,
        status: int,
        headers: tuple[tuple[str, str], ...],
        record: RecordedRequest,
        notes: tuple[tuple[str, object], ...] = (),
    ) -> None:
        self.send_response(status)
        named = {name.lower() for name, _ in headers}
        for name, value in headers:
            self.send_header(name, value)
        # Every GitHub and Copilot answer carries GitHub's request id (clients show it and
        # treat an error without one as coming from a proxy); Copilot hosts add their own.
        if "x-github-request-id" not in named:
            self.send_header("X-GitHub-Request-Id", record.request_id)
        if record.host in COPILOT_HOSTS and "x-request-id" not in named:
            self.send_header("X-Request-Id", copilot_request_id())
        if self._where is not None:
            self.server.state.update(self._where, status=status, **dict(notes))

    def _answer(self, answer: Answer, record: RecordedRequest, drip: float | None = None) -> None:
        self._start(answer.status, answer.headers, record, answer.notes)
        if answer.events is None:
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self._write(answer.body, drip)
            return
        # A stream: chunked, each event flushed on its own as the real server sends them.
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        replies = self.server.state.scenario.replies
        pause, cut = replies.stream_pause, replies.stream_cut
        for index, event in enumerate(answer.events):
            if index == cut:
                # Dropped mid-answer: no terminating chunk, and the connection goes.
                self.wfile.flush()
                self.close_connection = True
                return
            if index and pause:
                self._pause(pause)
            if drip:
                self._write(event, drip, chunked=True)
            else:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")

    def _write(self, data: bytes, drip: float | None, *, chunked: bool = False) -> None:
        if not drip:
            self.wfile.write(data)
            return
        for index in range(len(data)):
            if index:
                self._pause(drip)
            byte = data[index : index + 1]
            self.wfile.write(b"1\r\n%s\r\n" % byte if chunked else byte)

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds``, noticing a client that hangs up meanwhile (a cancelled stream
        is seen at once, not at the next write)."""
        deadline = time.monotonic() + seconds
        stopping = self.server.state.stopping
        # Not select(): it fails on a descriptor numbered 1,024 or above, which a load test
        # with many connections open reaches.
        with _Watch() as watch:
            watch.register(self.connection, selectors.EVENT_READ)
            self._watch(watch, deadline, stopping)

    def _watch(
        self, watch: selectors.BaseSelector, deadline: float, stopping: threading.Event
    ) -> None:
        while (left := deadline - time.monotonic()) > 0:
            if stopping.is_set():
                raise _ClientGone
            readable = watch.select(min(left, 0.1))
            if readable:
                try:
                    waiting = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    raise _ClientGone from None
                if not waiting:
                    raise _ClientGone
                # A pipelined request is waiting: nothing to watch until the answer is out.
                time.sleep(max(0.0, deadline - time.monotonic()))
                return

    def _send_unsized(self, size: int, record: RecordedRequest) -> None:
        # No Content-Length: the client must stop reading at its own cap.
        self._start(200, (("Content-Type", "application/json"),), record)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk = b"[" + b"0," * 32767 + b"0"
        sent = 0
        while sent < size:
            self.wfile.write(chunk)
            sent += len(chunk)

    def _guarded(self) -> None:
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError, _ClientGone):
            # The client gave up (a timeout test, a size cap, a cancelled stream).
            self.close_connection = True
            if self._where is not None:
                self.server.state.update(self._where, disconnected=True)
        finally:
            self._where = None  # the next request on this keep-alive connection

    do_GET = _guarded
    do_POST = _guarded
    do_PUT = _guarded
    do_DELETE = _guarded


def _raw(raw: RawAnswer) -> Answer:
    return Answer(raw.status, tuple(raw.headers), raw.body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Tests fire dozens of concurrent requests; the stdlib default backlog of 5 would reset
    # some of them before a thread accepts them.
    request_queue_size = 256
    # Requests in flight when the emulator stops are abandoned, not waited for.
    block_on_close = False

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer (a timeout test, a cancelled task) is part of
        # what the emulator is for, not an error worth a traceback on the test's stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def make_server(state: EmulatorState) -> _Server:
    return _Server(state)
