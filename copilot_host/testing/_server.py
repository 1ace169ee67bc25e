"""The emulated GitHub: state, routing and answers, served by a threaded stdlib server."""

from __future__ import annotations

import email.utils
import json
import secrets
import sys
import threading
import time
import urllib.parse
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType
from typing import Any

from .._origin import default_allowlist
from ..github._oauth import DEVICE_CODE_GRANT_TYPE
from ._record import RecordedRequest
from ._scenario import RawAnswer, Scenario

__all__ = ["COPILOT_HOSTS", "EmulatorState", "ROUTED_HOSTS", "make_server"]

GITHUB_HOST = "github.com"
API_HOST = "api.github.com"
COPILOT_HOSTS = frozenset(origin.partition("://")[2] for origin in default_allowlist().origins)
ROUTED_HOSTS = frozenset({GITHUB_HOST, API_HOST, *COPILOT_HOSTS})

_SMALL_OVER = 64 * 1024 + 4096
_LARGE_OVER = 8 * 1024 * 1024 + 4096
_MALFORMED = b'{"this is": not JSON at all'

_Answer = tuple[int, dict[str, str], bytes]


def _json(status: int, value: object, **headers: str) -> _Answer:
    body = json.dumps(value).encode()
    return status, {"Content-Type": "application/json", **headers}, body


class EmulatorState:
    """Everything the emulated GitHub remembers, behind one lock."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.lock = threading.Lock()
        self.github_token = "gho_" + secrets.token_hex(18)
        self.device_codes: list[str] = []
        self.session_tokens: list[str] = []
        self.requests: list[RecordedRequest] = []
        self.refused: list[str] = []
        self._polls: dict[str, int] = {}
        self._decision: str | None = None
        self._revoked_login = scenario.revoked
        self._valid_sessions: dict[str, float] = {}
        self._exchange_failures = list(scenario.exchange_failures)
        self._models_failures = list(scenario.models_failures)
        self._serial = 0

    # -- controls used by GitHubEmulator ---------------------------------------------------

    def decide(self, decision: str) -> None:
        with self.lock:
            self._decision = decision

    def revoke_login(self) -> None:
        with self.lock:
            self._revoked_login = True

    def revoke_sessions(self) -> None:
        with self.lock:
            self._valid_sessions.clear()

    def now(self) -> float:
        return time.time() + self.scenario.clock_skew

    # -- routing ---------------------------------------------------------------------------

    @staticmethod
    def endpoint_of(method: str, host: str, path: str) -> str | None:
        route = (method, host, path)
        if route == ("POST", GITHUB_HOST, "/login/device/code"):
            return "device_code"
        if route == ("POST", GITHUB_HOST, "/login/oauth/access_token"):
            return "access_token"
        if route == ("GET", API_HOST, "/copilot_internal/v2/token"):
            return "copilot_token"
        if route == ("GET", API_HOST, "/user"):
            return "user"
        if host in COPILOT_HOSTS:
            if (method, path) == ("GET", "/models"):
                return "models"
            if (method, path) == ("POST", "/chat/completions"):
                return "chat"
            if (method, path) == ("POST", "/responses"):
                return "responses"
        return None

    def answer(self, endpoint: str, request: RecordedRequest) -> _Answer:
        handler = getattr(self, f"_{endpoint}")
        result: _Answer = handler(request)
        return result

    # -- GitHub ----------------------------------------------------------------------------

    def _device_code(self, request: RecordedRequest) -> _Answer:
        form = request.form or {}
        if not form.get("client_id"):
            return _json(200, {"error": "unauthorized_client"})
        code = secrets.token_hex(20)
        with self.lock:
            self.device_codes.append(code)
            self._polls[code] = 0
        s = self.scenario
        value: dict[str, object] = {
            "device_code": code,
            "user_code": s.user_code,
            "verification_uri": s.verification_uri,
            "expires_in": s.expires_in,
        }
        if s.interval is not None:
            value["interval"] = s.interval
        return _json(200, value)

    def _access_token(self, request: RecordedRequest) -> _Answer:
        form = request.form or {}
        s = self.scenario
        if form.get("grant_type") != DEVICE_CODE_GRANT_TYPE:
            return _json(200, {"error": "unsupported_grant_type"})
        code = form.get("device_code", "")
        with self.lock:
            if code not in self._polls or not form.get("client_id"):
                return _json(200, {"error": "incorrect_device_code"})
            count = self._polls[code]
            self._polls[code] = count + 1
            decision = self._decision
        interval = s.interval if s.interval is not None else 5
        if count < s.slow_down_polls:
            return _json(200, {"error": "slow_down", "interval": interval + 5 * (count + 1)})
        if count < s.slow_down_polls + s.pending_polls:
            return _json(200, {"error": "authorization_pending"})
        result = s.login_result if s.auto_approve else decision
        if result is None:
            return _json(200, {"error": "authorization_pending"})
        if result != "approved":
            return _json(
                200,
                {
                    "error": result,
                    "error_description": f"emulated {result}",
                    "error_uri": "https://docs.github.com/developers/apps",
                },
            )
        with self.lock:
            del self._polls[code]  # a device code is good for one token
        return _json(
            200, {"access_token": self.github_token, "token_type": "bearer", "scope": "read:user"}
        )

    def _github_auth_ok(self, request: RecordedRequest) -> bool:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        with self.lock:
            revoked = self._revoked_login
        return (
            scheme.lower() in ("token", "bearer")
            and secrets.compare_digest(value.encode(), self.github_token.encode())
            and not revoked
        )

    def _copilot_token(self, request: RecordedRequest) -> _Answer:
        s = self.scenario
        if not self._github_auth_ok(request):
            return _json(401, {"message": "Bad credentials", "status": "401"})
        with self.lock:
            failure = self._exchange_failures.pop(0) if self._exchange_failures else None
        if failure is not None:
            return self._failure(failure)
        if s.entitlement is not None:
            return _json(
                403,
                {
                    "error_details": {
                        "url": "https://github.com/settings/copilot",
                        "message": f"Emulated refusal for {s.account}.",
                        "title": "Emulated Copilot refusal",
                        "notification_id": s.entitlement,
                    },
                    "message": "Resource not accessible by integration",
                },
            )
        now = self.now()
        expires_at = int(now + s.session_lifetime)
        token = (
            f"tid={secrets.token_hex(16)};exp={expires_at};sku={s.sku};"
            f"proxy-ep=proxy.emulated:1:{secrets.token_hex(32)}"
        )
        with self.lock:
            self.session_tokens.append(token)
            self._valid_sessions[token] = expires_at
        value: dict[str, object] = {
            "token": token,
            "expires_at": expires_at,
            "endpoints": {"api": s.api_endpoint, "telemetry": "https://telemetry.invalid"},
            "sku": s.sku,
            "chat_enabled": True,
        }
        if s.refresh_in is not None:
            value["refresh_in"] = s.refresh_in
        return _json(200, value)

    def _user(self, request: RecordedRequest) -> _Answer:
        if not self._github_auth_ok(request):
            return _json(401, {"message": "Bad credentials", "status": "401"})
        return _json(200, {"login": self.scenario.account, "id": 583231, "type": "User"})

    def _failure(self, status: int) -> _Answer:
        headers = {}
        if self.scenario.retry_after is not None:
            headers["Retry-After"] = self.scenario.retry_after
        if status == 429:
            return _json(429, {"message": "API rate limit exceeded"}, **headers)
        return _json(status, {"message": "emulated failure"}, **headers)

    # -- the Copilot API -------------------------------------------------------------------

    def _session_ok(self, request: RecordedRequest) -> bool:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        with self.lock:
            expires_at = self._valid_sessions.get(value)
        return expires_at is not None and self.now() < expires_at

    def _eligible(self) -> dict[str, str]:
        """Model id -> "chat" / "responses" for the models the API would serve."""
        served: dict[str, str] = {}
        for item in self.scenario.models:
            model_id = item.get("id")
            endpoints = item.get("supported_endpoints")
            if not isinstance(model_id, str):
                continue
            if isinstance(endpoints, list):
                if "/responses" in endpoints:
                    served[model_id] = "responses" if "/chat/completions" not in endpoints else "*"
                elif "/chat/completions" in endpoints:
                    served[model_id] = "chat"
            else:
                served[model_id] = "chat"
        return served

    def _models(self, request: RecordedRequest) -> _Answer:
        if not self._session_ok(request):
            return _json(401, {"error": {"message": "unauthorized: token expired"}})
        with self.lock:
            failure = self._models_failures.pop(0) if self._models_failures else None
        if failure is not None:
            return self._failure(failure)
        return _json(200, {"data": [dict(m) for m in self.scenario.models], "object": "list"})

    def _inference(self, request: RecordedRequest, kind: str) -> tuple[int, Any]:
        if not self._session_ok(request):
            return 401, {"error": {"message": "unauthorized: token expired or invalid"}}
        if not request.headers.get("copilot-integration-id"):
            return 400, {"error": {"message": "missing Copilot-Integration-Id"}}
        try:
            payload = json.loads(request.body or b"{}")
        except ValueError:
            return 400, {"error": {"message": "the body is not JSON"}}
        model = payload.get("model") if isinstance(payload, dict) else None
        served = self._eligible().get(model) if isinstance(model, str) else None
        if served is None or served not in (kind, "*"):
            return 400, {"error": {"message": "model not supported", "code": "model_not_supported"}}
        with self.lock:
            self._serial += 1
            serial = self._serial
        return 200, {"model": model, "serial": serial, "payload": payload}

    def _chat(self, request: RecordedRequest) -> _Answer:
        status, value = self._inference(request, "chat")
        if status != 200:
            return _json(status, value)
        messages = value["payload"].get("messages") or [{}]
        last = messages[-1] if isinstance(messages[-1], dict) else {}
        text = f"echo: {last.get('content', '')}"
        return _json(
            200,
            {
                "id": f"chatcmpl-emu-{value['serial']}",
                "object": "chat.completion",
                "created": int(self.now()),
                "model": value["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    def _responses(self, request: RecordedRequest) -> _Answer:
        status, value = self._inference(request, "responses")
        if status != 200:
            return _json(status, value)
        given = value["payload"].get("input", "")
        text = f"echo: {given if isinstance(given, str) else json.dumps(given)[:200]}"
        serial = value["serial"]
        return _json(
            200,
            {
                "id": f"resp_emu_{serial}",
                "object": "response",
                "created_at": int(self.now()),
                "status": "completed",
                "model": value["model"],
                "output": [
                    {
                        "type": "message",
                        "id": f"msg_emu_{serial}",
                        "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                ],
                "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
            },
        )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm and the client's
    # delayed ACK each keep-alive answer would stall ~40 ms.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        # Silent: the emulator must not print anything, canaries included.
        return

    def date_time_string(self, timestamp: float | None = None) -> str:
        # The server's Date follows its (possibly skewed) clock, like a real server would.
        return email.utils.formatdate(self.server.state.now(), usegmt=True)

    def _serve(self) -> None:
        state = self.server.state
        split = urllib.parse.urlsplit(self.path)
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        form: Mapping[str, str] | None = None
        if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = MappingProxyType(dict(urllib.parse.parse_qsl(body.decode("latin-1"))))
        endpoint = state.endpoint_of(self.command, host, split.path)
        record = RecordedRequest(
            method=self.command,
            host=host,
            path=split.path,
            endpoint=endpoint or "",
            headers=MappingProxyType(headers),
            form=form,
            body=body,
            at=time.monotonic(),
        )
        with state.lock:
            state.requests.append(record)
        if endpoint is None:
            self._send(404, {"Content-Type": "application/json"}, b'{"message":"Not Found"}')
            return
        scenario = state.scenario
        delay = scenario.slow.get(endpoint)
        if delay:
            time.sleep(delay)
        raw = scenario.answers.get(endpoint)
        if raw is not None:
            self._send_raw(raw)
        elif endpoint in scenario.malformed:
            self._send(200, {"Content-Type": "application/json"}, _MALFORMED)
        elif endpoint in scenario.oversized:
            self._send_unsized(_LARGE_OVER if endpoint == "models" else _SMALL_OVER)
        else:
            self._send(*state.answer(endpoint, record))

    def _send(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_raw(self, raw: RawAnswer) -> None:
        self._send(raw.status, dict(raw.headers), raw.body)

    def _send_unsized(self, size: int) -> None:
        # No Content-Length: the client must stop reading at its own cap.
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
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
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (a timeout test, a size cap): nothing to answer.
            self.close_connection = True

    do_GET = _guarded
    do_POST = _guarded
    do_PUT = _guarded
    do_DELETE = _guarded


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
