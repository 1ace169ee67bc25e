"""Copilot's Responses over WebSocket (``wss://{api}/responses``), emulated on a loopback
port of its own, and the connect seam that carries a client there.

A socket is opened with ``GET /responses`` and ``Upgrade: websocket`` on a Copilot API host
(any path else: 404), held to every Copilot request's checks (the bearer, the editor
headers: the handshake's own headers, as VS Code sends them); a refused handshake is the
HTTP answer the same request would get. Then, per text message (docs/EMULATOR.md has the
source of each rule and marks the assumed ones):

* ``{"type": "response.create", ...}``: a Responses request, one at a time, answered with
  the same events the HTTP stream carries, one JSON object per text frame, ending with
  ``response.completed`` (which carries ``copilot_quota_snapshots``); ``initiator``
  (``user``/``agent``) in the body stands for ``X-Initiator``;
* ``previous_response_id``: must name the last completed response on this socket, whose
  input and output the request then continues (only the new items are sent); any other id
  is ``previous_response_not_found``;
* refusals and failures are error frames in the service's nested shape,
  ``{"type": "error", "error": {"code", "message"}, "copilot_quota_snapshots": {...}}``,
  and the socket goes on; a model whose entry does not list ``ws:/responses``, a session
  that expired while the socket lived (``session_expired``, then a close) and a socket past
  its age (``websocket_connection_limit_reached``, then a close) likewise.

Each message is recorded (method ``WS``, endpoint :data:`SOCKET_ENDPOINT`, the handshake's
headers with ``x-initiator`` from the body, the message as sent), and answered by the
``/responses`` handler as the whole request it stands for: every rule of the HTTP path holds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ._accounts import Logins, copilot_gate
from ._answers import Answer, copilot_text, github_request_id
from ._catalog import Catalog
from ._inference import answer_model
from ._quota import Quota
from ._record import RecordedRequest
from ._routes import COPILOT_HOSTS
from ._state import EmulatorState

__all__ = ["SOCKET_ENDPOINT", "SOCKET_PATH", "SocketServer", "socket_connector"]

SOCKET_ENDPOINT = "responses_socket"
SOCKET_PATH = "/responses"
# What a model's entry lists when it serves this socket.
LISTED = "ws:/responses"
# Fields of a socket message that are not the Responses request's own.
_SOCKET_ONLY = frozenset({"type", "previous_response_id", "initiator"})
_INITIATORS = frozenset({"user", "agent"})
_answer = answer_model("responses")


class _Counters:
    """The scripted failures of ``Scenario(sockets=...)`` used so far
    (``state.part(_Counters)``)."""

    def __init__(self, state: EmulatorState) -> None:
        self.handshakes = 0
        self.closes = 0
        self.forgets = 0
        self.breaks = 0

    def take(self, state: EmulatorState, name: str, limit: int) -> int | None:
        """The number (from 0) of the scripted failure named ``name`` now due, counted;
        None when all ``limit`` of them were used."""
        with state.lock:
            used: int = getattr(self, name)
            if used >= limit:
                return None
            setattr(self, name, used + 1)
            return used


def quota_snapshots(state: EmulatorState) -> dict[str, dict[str, object]]:
    """``copilot_quota_snapshots``: the quota headers of an HTTP answer as the socket
    reports them (microsoft/vscode-copilot-chat ``QuotaSnapshot``: ``entitlement`` as text,
    ``percent_remaining``, ``overage_permitted``, ``overage_count``, ``reset_date``)."""
    found: dict[str, dict[str, object]] = {}
    for name, value in state.part(Quota).headers():
        if not name.startswith("x-quota-snapshot-"):
            continue
        fields = dict(urllib.parse.parse_qsl(value))
        found[name.removeprefix("x-quota-snapshot-")] = {
            "entitlement": fields.get("ent", "0"),
            "percent_remaining": float(fields.get("rem", "0")),
            "overage_permitted": fields.get("ovPerm") == "true",
            "overage_count": float(fields.get("ov", "0")),
            "reset_date": fields.get("rst", ""),
        }
    return found


def _error(state: EmulatorState, code: str, message: str) -> dict[str, object]:
    return {
        "type": "error",
        "error": {"code": code, "message": message},
        "copilot_quota_snapshots": quota_snapshots(state),
    }


# An HTTP refusal's status -> its code on the socket, when its body names none (the codes
# VS Code's chatMLFetcher.ts tells apart).
_CODES = {400: "bad_request", 401: "unauthorized", 404: "not_found", 413: "request_too_large"}


def _error_of(state: EmulatorState, answer: Answer) -> dict[str, object]:
    """The error frame for an HTTP refusal of the request the message stands for."""
    try:
        value = json.loads(answer.body)
    except (ValueError, RecursionError):
        value = None
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str) and error["code"]:
        message = str(error.get("message", ""))
        return _error(state, error["code"], message)
    code = _CODES.get(answer.status, "internal_error" if answer.status >= 500 else "bad_request")
    return _error(state, code, answer.body.decode("utf-8", "replace").strip())


class _Socket:
    """One open socket: its handshake, its age, the conversation it holds."""

    def __init__(self, state: EmulatorState, connection: Any, record: RecordedRequest) -> None:
        self._state = state
        self._connection = connection
        self._record = record
        self._opened = time.monotonic()
        self._last: str | None = None
        self._items: list[Any] = []

    def serve(self) -> None:
        from websockets.exceptions import ConnectionClosed

        with contextlib.suppress(ConnectionClosed):
            while not self._state.stopping.is_set():
                message = self._connection.recv()
                if not self._message(message):
                    return

    def _send(self, frame: Mapping[str, object]) -> None:
        self._connection.send(json.dumps(frame, separators=(",", ":")))

    def _close(self, code: int, reason: str) -> bool:
        self._connection.close(code, reason)
        return False

    def _message(self, message: str | bytes) -> bool:
        state = self._state
        if isinstance(message, bytes):
            self._send(_error(state, "bad_request", "binary frames are not supported"))
            return self._close(1003, "text frames only")
        try:
            value = json.loads(message)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict) or value.get("type") != "response.create":
            self._send(_error(state, "bad_request", "expected a response.create message"))
            return True
        initiator = value.get("initiator")
        headers = dict(self._record.headers)
        if isinstance(initiator, str) and initiator in _INITIATORS:
            headers["x-initiator"] = initiator
        record = dataclasses.replace(
            self._record,
            method="WS",
            headers=MappingProxyType(headers),
            body=message.encode("utf-8", "surrogatepass"),
            at=time.monotonic(),
            request_id=github_request_id(),
            status=0,
        )
        where = state.remember(record)
        stop = self._stop_reason(record)
        if stop is not None:
            code, text, close = stop
            state.update(where, status=400 if code != "session_expired" else 401)
            self._send(_error(state, code, text))
            return self._close(*close) if close else True
        counters = state.part(_Counters)
        if counters.take(state, "closes", state.scenario.sockets.closes) is not None:
            state.update(where, disconnected=True)
            self._connection.close_socket()
            return False
        refusal = self._refusal(value, initiator)
        if refusal is not None:
            code, text = refusal
            state.update(where, status=400, refusal="socket", refusal_detail=code)
            self._send(_error(state, code, text))
            return True
        whole = self._whole(value)
        if whole is None:
            state.update(where, status=400, refusal="socket", refusal_detail="previous")
            self._send(
                _error(
                    state,
                    "previous_response_not_found",
                    f"Previous response with id '{value.get('previous_response_id')}' not found.",
                )
            )
            return True
        answered = _answer(state, dataclasses.replace(record, body=whole))
        notes = dict(answered.notes)
        state.update(where, status=answered.status, **notes)
        if answered.status >= 400 or answered.events is None:
            self._send(_error_of(state, answered))
            return True
        return self._stream(answered.events, json.loads(whole)["input"], where)

    def _stop_reason(self, record: RecordedRequest) -> tuple[str, str, tuple[int, str]] | None:
        state = self._state
        if time.monotonic() - self._opened >= state.scenario.sockets.max_age:
            return (
                "websocket_connection_limit_reached",
                "Responses websocket connection limit reached. Create a new websocket "
                "connection to continue.",
                (1000, "connection limit reached"),
            )
        if not state.part(Logins).session_ok(record):
            return ("session_expired", "the session token has expired", (1008, "session expired"))
        return None

    def _refusal(self, value: Mapping[str, Any], initiator: object) -> tuple[str, str] | None:
        """What the socket refuses of a message before the request it stands for is read."""
        if initiator is not None and initiator not in _INITIATORS:
            return "bad_request", 'initiator is "user" or "agent"'
        model = value.get("model")
        paths = self._state.part(Catalog).served.get(model) if isinstance(model, str) else None
        if paths is not None and LISTED not in paths:
            return (
                "unsupported_api_for_model",
                f"model {model} is not supported via Responses WebSocket.",
            )
        return None

    def _whole(self, value: Mapping[str, Any]) -> bytes | None:
        """The whole request the message stands for (None: it chains on a response this
        socket does not hold, or the scenario forgets it)."""
        previous = value.get("previous_response_id")
        prior: list[Any] = []
        if previous is not None:
            state = self._state
            forgets = state.part(_Counters).take(state, "forgets", state.scenario.sockets.forgets)
            if forgets is not None or previous != self._last:
                return None
            prior = self._items
        given = value.get("input", [])
        if isinstance(given, str):
            given = [{"role": "user", "content": given}]
        new = given if isinstance(given, list) else []
        body = {key: item for key, item in value.items() if key not in _SOCKET_ONLY}
        body["input"] = [*prior, *new]
        body["stream"] = True
        return json.dumps(body, separators=(",", ":")).encode()

    def _stream(self, events: Sequence[bytes], given: list[Any], where: tuple[int, int]) -> bool:
        state = self._state
        replies = state.scenario.replies
        breaks = state.part(_Counters).take(state, "breaks", state.scenario.sockets.breaks)
        outputs: list[Any] = []
        for index, event in enumerate(events):
            if index == replies.stream_cut:
                state.update(where, disconnected=True)
                self._connection.close_socket()
                return False
            if index and breaks is not None:
                # A server error after the answer began (VS Code's chatWebSocketManager.ts
                # takes an error event at any point); nothing is kept to chain on.
                self._send(_error(state, "internal_error", "the answer broke off"))
                return True
            if index and replies.stream_pause:
                time.sleep(replies.stream_pause)
            for line in event.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                frame = json.loads(line[5:])
                kind = frame.get("type")
                if kind == "response.output_item.done":
                    outputs.append(frame.get("item"))
                elif kind == "response.completed":
                    frame["copilot_quota_snapshots"] = quota_snapshots(state)
                    self._last = frame["response"]["id"]
                    self._items = [*given, *outputs]
                self._send(frame)
        return True


def _handshake(state: EmulatorState) -> Callable[[Any, Any], Any]:
    """The handshake's checks (``process_request``): the HTTP answer that refuses it, or
    None to take it."""
    from websockets.datastructures import Headers
    from websockets.http11 import Response

    def check(connection: Any, request: Any) -> Any:
        host = (request.headers.get("Host") or "").split(":")[0].lower()
        path = request.path.partition("?")[0]
        headers = {name.lower(): value for name, value in request.headers.raw_items()}
        record = RecordedRequest(
            method="GET",
            host=host,
            path=path,
            endpoint=SOCKET_ENDPOINT,
            headers=MappingProxyType(headers),
            form=None,
            body=b"",
            at=time.monotonic(),
            request_id=github_request_id(),
        )
        where = state.remember(record)
        answer: Answer | None = None
        if host not in COPILOT_HOSTS or path != SOCKET_PATH:
            answer = copilot_text(404, "404 page not found")
        else:
            refused = state.scenario.sockets.refused
            due = state.part(_Counters).take(state, "handshakes", len(refused))
            if due is not None:
                answer = copilot_text(refused[due], "websocket upgrade refused")
            else:
                answer = copilot_gate(state, record)
        if answer is None:
            state.update(where, status=101)
            connection.copilot_record = record
            return None
        state.update(where, status=answer.status, **dict(answer.notes))
        found = Headers(answer.headers)
        found["X-GitHub-Request-Id"] = record.request_id
        found["Content-Length"] = str(len(answer.body))
        reason = "Refused"
        return Response(answer.status, reason, found, answer.body)

    return check


class SocketServer:
    """The socket side of one emulator, on 127.0.0.1 (its own port), in threads."""

    def __init__(self, state: EmulatorState) -> None:
        from websockets.sync.server import serve

        self._state = state

        def handler(connection: Any) -> None:
            _Socket(state, connection, connection.copilot_record).serve()

        self._server = serve(
            handler,
            "127.0.0.1",
            0,
            process_request=_handshake(state),
            # Copilot's messages are Codex-sized: tens of KB, a long history more.
            max_size=64 * 1024 * 1024,
            ping_interval=None,
        )
        self.port = int(self._server.socket.getsockname()[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="github-emulator-sockets", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)


# Socket ids a connector made, for nothing but telling connections apart in a repr.
_serials = itertools.count(1)


def socket_connector(
    port: int, routed: frozenset[str], refuse: Callable[[str], None]
) -> Callable[..., Any]:
    """An async ``connect(url, headers, **options)`` that opens a websockets client
    connection to the emulator's socket port for a ``wss://`` URL on a Copilot API host,
    without TLS, keeping the real host in ``Host`` (as the transports do for HTTPS); any
    other URL fails like an unreachable host and is noted with ``refuse``."""

    async def connect(url: str, headers: Sequence[tuple[str, str]], **options: Any) -> Any:
        from websockets.asyncio.client import connect as open_socket

        split = urllib.parse.urlsplit(url)
        if split.scheme != "wss" or split.hostname not in routed or split.port not in (None, 443):
            shown = (split.scheme, split.hostname or "", split.path, "", "")
            refuse(urllib.parse.urlunsplit(shown))
            raise OSError(f"the GitHub emulator does not route {split.scheme}://{split.hostname}")
        plain = urllib.parse.urlunsplit(("ws", split.hostname, split.path, split.query, ""))
        options.pop("proxy", None)
        options.pop("ssl", None)
        return await open_socket(
            plain,
            additional_headers=list(headers),
            host="127.0.0.1",
            port=port,
            proxy=None,
            user_agent_header=None,
            **options,
        )

    connect.__name__ = f"emulator_socket_connector_{next(_serials)}"
    return connect
